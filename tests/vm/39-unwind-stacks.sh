# User stacks through code without frame pointers, with the unwind tables memmon record
# loads (tests/unwind/): chains built with -fomit-frame-pointer and with frame pointers gives
# the same chain of functions down to main (or the thread's start) for every site of its
# own: a frameless leaf, static glibc's memset and malloc, a recursion 10 deep, alloca, a
# second thread; with --no-unwind-tables the frameless build's leaf loses its caller.
. /host/lib.sh
load buflen=8388608
# folded CAPTURE: the report's folded stacks (function chains) that pass through chains'
# own functions, without their weights, sorted.
folded() {
    memmon report --format folded "$1" | sed 's/ [0-9]*$//' |
        grep -E 'leaf_touch|memset_region|malloc_region|recurse|alloca_frame|thread_main' | sort -u
}
for build in nofp fp; do
    memmon record -q -o /tmp/cap-$build -- /progs/chains-$build 16 > /dev/null || fail "record $build"
    folded /tmp/cap-$build > /tmp/chains-$build
done
cat /tmp/chains-nofp
expect_eq "chains: the same function chains with and without frame pointers" \
    "$(cat /tmp/chains-nofp)" "$(cat /tmp/chains-fp)"
start='_start;__libc_start_main_impl;__libc_start_call_main;main'
r='recurse;recurse;recurse;recurse;recurse;recurse;recurse;recurse;recurse;recurse;recurse'
for chain in "$start;leaf_touch" "$start;memset_region;__memset_avx2_unaligned_erms" \
        "$start;malloc_region;__malloc;_int_malloc" "$start;$r;leaf_touch" "$start;alloca_frame" \
        "__clone3;start_thread;thread_main;leaf_touch"; do
    grep -qxF "$chain" /tmp/chains-nofp || fail "no stack $chain in the frameless build"
done
echo "ok: every site's chain reaches main or the thread's start"
# The whole stacks: in the window between the markers, only the thread's first faults
# (before its stack is known to the tables) may end early.
ended=$(sed -n '/fsync fd=1001/,/fsync fd=1002/p' /tmp/cap-nofp | grep ' fault ' | grep -c 'stack_end=')
[ "$ended" -le 2 ] || fail "$ended faults between the markers have stacks that end early"
memmon record -q --no-unwind-tables -o /tmp/cap-plain -- /progs/chains-nofp 16 > /dev/null
folded /tmp/cap-plain > /tmp/chains-plain
grep -qx "leaf_touch" /tmp/chains-plain || fail "without tables the frameless leaf kept its caller?"
expect_match "without tables the stacks say why they end" "$(cat /tmp/cap-plain)" 'stack_end=no_table'
expect_match "and the report says so" "$(memmon report /tmp/cap-plain)" \
    'stacks: [0-9]+ of [0-9]+ ended early \(.*no_table [0-9]+'
unload
