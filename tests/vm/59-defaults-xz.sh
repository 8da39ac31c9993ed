# vm-add: /usr/bin/xz:/usr/bin/xz
# vm-add: /lib/x86_64-linux-gnu/liblzma.so.5:/lib/x86_64-linux-gnu/liblzma.so.5
# vm-add: /lib64/ld-linux-x86-64.so.2:/lib64/ld-linux-x86-64.so.2
# vm-add: /lib/x86_64-linux-gnu/libc.so.6:/lib/x86_64-linux-gnu/libc.so.6
# Nothing lost with the defaults (issue 50), vm-59-defaults-busy's checks on Debian's
# `xz -9` (64 MiB dictionary: its match finder's tables are the bulk of its memory) of a
# 4 MiB text (busybox seq): the module loaded with no parameter, `memmon record` and
# `memmon report` with no option, on a guest kept busy by a CPU-bound loop per vCPU
# (single-threaded TCG). The run reads 0 events lost, 0 faults dropped, no stack shed; its
# first table leads with xz's own code (Debian's xz is stripped: its functions are named by
# offset, xz+0x...), and that row holds the same bytes as in a reference run in the same
# boot on rings grown to 16 MiB, within 5 % (about 390 s under TCG).
# vm-accel: tcg,thread=single
# vm-timeout: 1200
. /host/lib.sh
load
expect_eq "ring bytes with no parameter" "$(stat_of ring_bytes)" 1048576
seq 1 600000 > /tmp/xz.in
echo "input: $(wc -c < /tmp/xz.in) bytes"

# record NAME: `memmon record -o /tmp/NAME.cap -- xz -9`, no option; its reports
record() {
    memmon record -o "/tmp/$1.cap" -- xz -9 -c /tmp/xz.in > "/tmp/$1.xz" 2> "/tmp/$1.err" ||
        { cat "/tmp/$1.err"; fail "memmon record -- xz -9"; }
    xz -dc "/tmp/$1.xz" | cmp -s - /tmp/xz.in || fail "$1: xz's output does not decompress to its input"
    report_capture "$1"
}

for cpu in 1 2; do (while :; do :; done) & done

record xz
whole xz
expect_eq "stats: dropped faults" "$(stat_of dropped_faults)" 0
expect_eq "stats: stacks shed" "$(stat_of shed_stacks)" 0
expect_eq "stats: events lost" "$(stat_of lost_reported)" 0

# The reference, on rings of 8 MiB per CPU.
echo 16777216 > /proc/memmon/buflen || fail "the grow to 16 MiB"
record xz-ref
# xz's own code first (xz+0x5230 on Debian's 5.4.1: its call into lzma_code, 37 MiB of 39),
# holding the same bytes as in the reference, within 5 % (the rows after it are under
# 300 KiB: start-up, locale).
function=$(head -n 1 /tmp/xz.first | awk '{ print $5 }')
case $function in xz+0x*) ;; *) fail "xz: the first row is not xz's own code: $(head -n 1 /tmp/xz.first)" ;; esac
got=$(row_bytes /tmp/xz.json "$function")
want=$(row_bytes /tmp/xz-ref.json "$function")
[ -n "$got" ] && [ -n "$want" ] || fail "xz: no $function in the JSON reports ($got, $want)"
echo "xz: $function holds $got bytes, $want in the reference run"
[ "$want" -ge $((16 << 20)) ] || fail "xz-ref: $function holds only $want bytes"
[ $((got * 100)) -ge $((want * 95)) ] && [ $((got * 100)) -le $((want * 105)) ] ||
    fail "xz: $function holds $got bytes, not within 5 % of the reference's $want"
kill %1 %2 2>/dev/null
unload
