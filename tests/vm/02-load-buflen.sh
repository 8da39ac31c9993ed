# insmod buflen=65536: the load line shows it; buflen=4096 and a huge one are refused;
# fault_kprobes is 0 or 1.
. /host/lib.sh
load buflen=65536
expect_match "load line" "$(dmesg | grep 'memmon: loaded')" 'buflen=65536 '
expect_eq "buflen in stats" "$(stat_of buflen)" 65536
unload
kmsg_mark
if insmod /memmon/memmon.ko buflen=4096 2>/tmp/err; then fail "buflen=4096 was accepted"; fi
expect_match "insmod error" "$(cat /tmp/err)" 'Invalid (argument|parameters)'
expect_match "dmesg says why" "$(kmsg_new)" 'memmon: buflen=4096 is out of range: it must be 0 \(1 MiB per CPU\) or 8192 to'
[ ! -e /proc/memmon ] || fail "/proc/memmon exists after a refused insmod"
if insmod /memmon/memmon.ko buflen=4294967295 2>/dev/null; then fail "buflen=4294967295 was accepted"; fi
load buflen=8192
unload
# fault_kprobes is 0 or 1 (a u32: 7.2's module! has no bool parameters, so Y and N are
# refused too, by the kernel's parameter parsing, with no memmon line)
kmsg_mark
if insmod /memmon/memmon.ko fault_kprobes=2 2>/tmp/err; then fail "fault_kprobes=2 was accepted"; fi
expect_match "insmod error (fault_kprobes=2)" "$(cat /tmp/err)" 'Invalid (argument|parameters)'
expect_match "dmesg says why (fault_kprobes=2)" "$(kmsg_new)" 'memmon: fault_kprobes=2 is out of range: it must be 0 or 1'
if insmod /memmon/memmon.ko fault_kprobes=Y 2>/dev/null; then fail "fault_kprobes=Y was accepted"; fi
[ ! -e /proc/memmon ] || fail "/proc/memmon exists after a refused insmod"
# (fault_kprobes=1 runs the scenarios on the hook fault source on the debug kernel:
# MEMMON_DEBUG_APPEND=memmon_load=fault_kprobes=1 make check-debug; this kernel inlines
# do_anonymous_page, which that source hooks, and refuses it with ENOENT.)
# fault_kprobes=0 is the default: the mm:mm_fault tracepoint where the kernel has it (the
# patched kernel), the kprobe fault source where it does not (Debian's).
source=kprobes
grep -q ' __traceiter_mm_fault$' /proc/kallsyms && source=mm_fault
load fault_kprobes=0
expect_match "load line (fault_kprobes=0)" "$(dmesg | grep 'memmon: loaded' | tail -n 1)" "fault source: $source\$"
unload
