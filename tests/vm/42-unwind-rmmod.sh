# rmmod while unwind tables are loaded and stacks are being unwound with them: a 2-thread
# storm (static glibc, tables loaded with memmon unwind) watched at stack_depth=16 with a
# reader; the module unloads cleanly (no warning: check.sh fails a scenario on any splat),
# and loads again with no table.
#
# Multi-threaded TCG, as tests/stress/10: watching the storm arms the syscall probes, which
# live-patches __x64_sys_mmap while the storm's other thread runs it on the other vCPU, and
# the rmmod races the handlers. Multi-threaded TCG sometimes runs the patched text stale
# (scripts/tcg-text-poke-race.sh): on the debug kernel it took an "Oops: int3" at
# __x64_sys_mmap+0x5 (2026-12-04), the race's int3 form, which scripts/check.sh boots
# again once.
. /host/lib.sh
load stack_depth=16
/progs/stress storm 2 30 > /dev/null &
storm=$!
echo $storm > /proc/memmon/watch-pids || fail "watching the storm"
out=$(memmon unwind $storm) || fail "memmon unwind: $out"
expect_match "memmon unwind" "$out" "^$storm: [0-9]+ ranges, [0-9]+ tables loaded"
expect_match "a table is loaded" "$(cat /proc/memmon/unwind)" "process $storm ranges=[1-9]"
cat /proc/memmon/events > /tmp/ev &
reader=$!
sleep 1
grep -q ' fault .* stack=0x[0-9a-f]*,0x' /tmp/ev || fail "no stack of two entries or more"
grep ' fault ' /tmp/ev | grep -v stack_end= | grep -q ',' || fail "no whole stack"
rmmod memmon || fail "rmmod"
wait $reader
kill $storm 2>/dev/null
wait $storm 2>/dev/null
load
expect_eq "tables after a reload" "$(grep -c '^table ' /proc/memmon/unwind)" 0
unload
