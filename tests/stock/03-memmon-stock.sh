# memmon.ko built for Debian's stock kernel (no patch): it loads, says in dmesg and in
# /proc/memmon/stats which fault source it uses, and refuses access sampling (patches/0002)
# with EOPNOTSUPP and a dmesg line, at load and at run time, leaving sample_ms at 0.
. /host/lib.sh
P=/sys/module/memmon/parameters/sample_ms

kmsg_mark
if insmod /memmon/memmon.ko sample_ms=100 2>/tmp/err; then fail "sample_ms=100 was accepted at load"; fi
expect_match "insmod error" "$(cat /tmp/err)" 'Operation not supported|not supported'
expect_match "dmesg says why (load)" "$(kmsg_new)" \
    'memmon: sample_ms=100: access sampling needs a kernel with patches/0002'

kmsg_mark
load
expect_match "load line names the fault source" "$(kmsg_new)" \
    'memmon: loaded: buflen=2097152 .*, fault source: kprobes$'
expect_eq "stats fault_source" "$(stat_of fault_source)" kprobes
kmsg_mark
if echo 100 > $P 2>/tmp/err; then fail "sample_ms=100 was accepted at run time"; fi
expect_match "write error" "$(cat /tmp/err)" 'Operation not supported|not supported'
expect_match "dmesg says why (run time)" "$(kmsg_new)" \
    'memmon: sample_ms=100: access sampling needs a kernel with patches/0002'
expect_eq "sample_ms unchanged" "$(cat $P)" 0
echo 0 > $P || fail "sample_ms=0 refused"
expect_eq "generations" "$(stat_of generations)" 0
unload
