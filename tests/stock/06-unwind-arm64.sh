# vm-add: build/stock/roots/trixie-gcc14-rustc1.85.1-arm64/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1:/lib/ld-linux-aarch64.so.1
# vm-add: build/stock/roots/trixie-gcc14-rustc1.85.1-arm64/usr/aarch64-linux-gnu/lib/libc.so.6:/lib/aarch64-linux-gnu/libc.so.6
# arm64 only (scenarios.txt's tag "arm64"): user stacks through Debian's arm64 glibc with the
# unwind tables memmon record compiles from .eh_frame (issue 54, item 2). /progs/chains-nofp
# is tests/unwind/chains.c built without frame pointers, shared, with
# -mbranch-protection=standard (make progs-arm64), run on Debian trixie's arm64 glibc and
# ld.so (the build root's, built with branch protection: its functions sign their return
# addresses, and QEMU's -cpu max authenticates them). Its functions save X30 alone
# (recurse: str x30, [sp, #-16]!), leave it in X30 (leaf_touch, glibc's memset), or save
# X29 and X30 without setting X29: a frame-record walk skips or loses callers, the tables'
# reach main. Between the markers every fault's stack is whole, and each site's chain of
# functions is exactly the one expected; with --no-unwind-tables the frameless leaf under
# the recursion loses its callers. glibc is stripped: its functions but the exported ones
# are libc.so.6+OFFSET.
. /host/lib.sh
expect_eq "machine" "$(uname -m)" aarch64
grep -qw paca /proc/cpuinfo || fail "no address authentication (paca) in /proc/cpuinfo"
load buflen=8388608
# folded CAPTURE: the report's folded stacks (function chains) that pass through chains'
# own functions, without their weights, sorted.
folded() {
    memmon report --format folded "$1" | sed 's/ [0-9]*$//' |
        grep -E 'leaf_touch|memset_region|malloc_region|recurse|alloca_frame|thread_main' | sort -u
}
memmon record -q -o /tmp/cap -- /progs/chains-nofp 16 > /dev/null || fail "record"
folded /tmp/cap > /tmp/chains
cat /tmp/chains
lib='libc\.so\.6\+0x[0-9a-f]+'
start="_start;__libc_start_main;$lib;main"
r='recurse;recurse;recurse;recurse;recurse;recurse;recurse;recurse;recurse;recurse;recurse'
for chain in "$start;leaf_touch" "$start;memset_region;$lib" \
        "$start;malloc_region;__libc_malloc;($lib;)*$lib" "$start;$r;leaf_touch" \
        "$start;alloca_frame" "$lib;$lib;thread_main;leaf_touch"; do
    grep -qxE "$chain" /tmp/chains || fail "no stack $chain"
done
# Every chain through the program's functions is one of those (nothing cut short, nothing
# skipped: a leaf's caller kept).
others=$(grep -vxE "$start;leaf_touch|$start;memset_region;$lib|$start;malloc_region;__libc_malloc;($lib;)*$lib|$start;$r;leaf_touch|$start;alloca_frame|$lib;$lib;thread_main;leaf_touch" /tmp/chains)
[ -z "$others" ] || fail "other chains: $others"
echo "ok: every site's chain reaches main or the thread's start"
# Each of the 16-page sites holds its 16 pages (65536 bytes) at the peak, all of them on its
# chain; memset's also the 16 pages of glibc's code its first call brought in (a file fault
# of pages=16 at its first instruction, whose stack is memset's caller's: the tables' row of
# a function's entry, the return address still in X30).
memmon report --format folded /tmp/cap > /tmp/weights
for site in "$start;leaf_touch 65536" "$start;memset_region;$lib 131072" \
        "$start;$r;leaf_touch 65536" "$lib;$lib;thread_main;leaf_touch 65536"; do
    chain=${site% *}
    bytes=$(grep -E "^$chain [0-9]+\$" /tmp/weights | awk '{ n += $NF } END { print n + 0 }')
    expect_eq "resident bytes of $chain" "$bytes" "${site##* }"
done
# The whole stacks: between the markers, no fault's stack ends early (the thread's first
# faults may, before its stack's range is known: at most 2, as on x86_64).
sed -n '/fsync fd=1001/,/fsync fd=1002/p' /tmp/cap | grep ' fault ' > /tmp/window
faults=$(wc -l < /tmp/window)
[ "$faults" -ge 96 ] || fail "only $faults faults between the markers"
ended=$(grep -c 'stack_end=' /tmp/window)
[ "$ended" -le 2 ] || fail "$ended of $faults faults between the markers have stacks that end early"
# Every entry a plain user address: signed return addresses stripped (the task's address
# space is 52 bits at most: LPA2).
bad=$(field stack < /tmp/window | tr ',' '\n' | awk 'length($0) > 15' | head -3)
[ -z "$bad" ] || fail "stack entries above the user address space: $bad"
echo "ok: $faults faults between the markers, $ended stacks ended early, every entry a user address"
memmon record -q --no-unwind-tables -o /tmp/cap-plain -- /progs/chains-nofp 16 > /dev/null
folded /tmp/cap-plain > /tmp/chains-plain
grep -qxE "$start;$r;leaf_touch" /tmp/chains-plain && fail "without tables the recursion's leaf kept its callers?"
expect_match "without tables the stacks say why they end" "$(cat /tmp/cap-plain)" 'stack_end=no_table'
# The table's architecture (docs/unwind.md): an x86_64 table is refused, before its rows are
# read, with a line that says so; the same rows as an arm64 table are taken.
dmesg -c > /dev/null
kmsg_mark
write_table_of_arch 0 && fail "an x86_64 table was taken by the arm64 module"
expect_match "an x86_64 table refused" "$(kmsg_new)" \
    'unwind: refused: an ADD_TABLE of x86_64 rows \(architecture 0\): this module walks arm64 stacks'
write_table_of_arch 1 || fail "the arm64 table of one row was refused"
grep -q '^table aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa rows=1 ' /proc/memmon/unwind ||
    fail "the arm64 table is not listed: $(grep '^table ' /proc/memmon/unwind)"
unload
