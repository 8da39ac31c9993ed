# Under pressure the module sheds detail before it loses events (issue 50). A reader opens
# `events` and does not read while a watched process maps, writes and unmaps 2000 pages 20
# times with 64-entry stacks (30 frames of recursion over it), into two rings of 32 KiB. The module cuts the stacks short,
# then leaves them out, then stops recording faults and counts them per process, and keeps
# every call: the reader then reads no `lost` line; the child's `dropped` lines come before
# its exit line; all 20 mmap and 20 munmap lines are
# there; the process's fault lines plus its `dropped` lines' faults equal the faults the
# kernel counted for it (wait4), exactly; `stack_end=shed` and `dropped` lines agree with
# stats. Then the rings grow at run time through /proc/memmon/buflen under a reader that
# holds records: it reads both workloads whole, and no `lost` line for what the ring held
# before it opened.
. /host/lib.sh
load buflen=65536
expect_eq "buflen file" "$(cat /proc/memmon/buflen)" 65536
expect_eq "buflen file mode" "$(stat -c %a /proc/memmon/buflen)" 600
echo 64 > /sys/module/memmon/parameters/stack_depth

# watched_run EVENTS CMD...: run CMD watched from its fork under a reader opened before it,
# which reads only once CMD has exited; sets child and kernel_faults
watched_run() {
    events=$1
    shift
    exec 3</proc/memmon/events
    /progs/watchexec -s "$@" > /tmp/out 2>/tmp/err || fail "$*: $(cat /tmp/err)"
    child=$(sed -n 's/^child=\([0-9]*\) .*/\1/p' /tmp/err)
    kernel_faults=$(sed -n 's/.* child_faults=\([0-9]*\)$/\1/p' /tmp/err)
    [ -n "$child" ] && [ -n "$kernel_faults" ] || fail "watchexec said: $(cat /tmp/err)"
    /progs/drain -F 3 > "$events" || fail "drain"
    exec 3<&-
}

# The baseline, with no pressure: the kernel counts for the child the fault that copies its
# arguments to the new stack at exec (on the new mm, before it is the task's), which memmon
# does not see; every other fault is a line.
watched_run /tmp/ev0 /progs/memtest anon 1
base=$((kernel_faults - $(grep -c "^[0-9.]* $child/[0-9]* fault " /tmp/ev0)))
echo "faults the kernel counts and memmon does not see, at exec: $base"
expect_eq "dropped lines with no pressure" "$(grep -c ' dropped ' /tmp/ev0)" 0

watched_run /tmp/ev /progs/memtest churn 20 2000 30
echo "child $child: kernel faults $kernel_faults; stats: $(grep -E '^(produced|shed_stacks|dropped_faults|overwritten) ' /proc/memmon/stats | tr '\n' ' ')"

expect_eq "lost lines" "$(grep -c ' lost ' /tmp/ev)" 0
expect_eq "mmap lines of the churn" "$(grep -c "^[0-9.]* $child/$child mmap .*len=8192000 " /tmp/ev)" 20
expect_eq "munmap lines of the churn" "$(grep -c "^[0-9.]* $child/$child munmap .*len=8192000 " /tmp/ev)" 20
expect_eq "exit line" "$(grep -c "^[0-9.]* $child/$child exit " /tmp/ev)" 1
lines=$(grep -c "^[0-9.]* $child/[0-9]* fault " /tmp/ev)
dropped=$(awk -v p="$child/$child" '$2 == p && $3 == "dropped" { sub("faults=", "", $4); n += $4 } END { print n + 0 }' /tmp/ev)
echo "fault lines $lines, dropped $dropped"
[ "$dropped" -gt 0 ] || fail "no fault was dropped: the scenario did not reach the drop level"
# The ring was still seven eighths unread when the child exited: its drops were reported
# then, before its exit line, while readers know it.
expect_eq "dropped lines of the child after its exit line" \
    "$(awk -v p="$child/$child" '$2 == p && $3 == "exit" { gone = 1 } gone && $2 == p && $3 == "dropped" { n++ } END { print n + 0 }' /tmp/ev)" 0
[ "$lines" -gt 0 ] || fail "no fault line"
expect_eq "fault lines + dropped = the kernel's faults" $((lines + dropped + base)) "$kernel_faults"
shed=$(grep -c 'stack_end=shed' /tmp/ev)
[ "$shed" -gt 0 ] || fail "no stack was shed"
cut=$(grep ' fault .*stack=.*stack_end=shed' /tmp/ev | head -n 1)
[ -n "$cut" ] || fail "no stack was cut short (shallow level)"
entries=$(printf '%s\n' "$cut" | sed 's/.* stack=\([^ ]*\).*/\1/' | tr ',' '\n' | grep -c .)
expect_eq "a stack cut short has 16 entries" "$entries" 16
expect_eq "stats: shed_stacks" "$(stat_of shed_stacks)" "$(cat /tmp/ev0 /tmp/ev | grep -c 'stack_end=shed')"
expect_eq "stats: dropped_faults" "$(stat_of dropped_faults)" \
    "$(cat /tmp/ev0 /tmp/ev | awk '$3 == "dropped" { sub("faults=", "", $4); n += $4 } END { print n + 0 }')"
expect_eq "stats: lost_reported" "$(stat_of lost_reported)" 0

# A process unwatched after some of its faults were dropped, then exiting: its drops are
# reported as it exits, not left in a ring for a later read to write long after it is gone
# (a reader that had read everything and closed by then never got that line: stress/30's
# read + lost = produced - 1 on two vCPUs).
rm -f /tmp/go
exec 3</proc/memmon/events
sh -c 'echo $$ > /proc/memmon/watch-pids && exec /progs/hold 6000 /tmp/go' > /tmp/held &
holder=$!
wait_until "the holder to fault its 6000 pages" grep -q held=6000 /tmp/held
echo -$holder > /proc/memmon/watch-pids || fail "unwatching the holder"
touch /tmp/go
wait $holder || fail "the holder"
produced=$(stat_of produced)
/progs/drain -F 3 > /tmp/ev3 || fail "drain 3"
expect_eq "records produced while a reader read, after the unwatched holder exited" "$(stat_of produced)" "$produced"
exec 3<&-
held_drops=$(awk -v p="$holder/$holder" '$2 == p && $3 == "dropped" { sub("faults=", "", $4); n += $4 } END { print n + 0 }' /tmp/ev3)
echo "the holder ($holder): $(grep -c "^[0-9.]* $holder/[0-9]* fault " /tmp/ev3) fault lines, $held_drops dropped"
[ "$held_drops" -gt 0 ] || fail "none of the holder's faults was dropped: the case did not reach the drop level"

# Growing: a reader holds the first workload's records while the rings grow. It opens on
# a full ring, whose records it is not owed: their overwriting is no `lost` line.
echo 0 > /sys/module/memmon/parameters/stack_depth
taskset 1 /progs/watchexec /progs/memtest anon 3000 > /dev/null || fail "filling CPU 0's ring"
exec 3</proc/memmon/events
taskset 1 /progs/watchexec /progs/memtest anon 1000 > /tmp/out1 || fail "workload 1"
kmsg_mark
echo 4194304 > /proc/memmon/buflen || fail "the grow was refused"
expect_match "grow line" "$(kmsg_new)" 'memmon: buflen: rings grown from 32768 to 2097152 bytes per CPU \(2 rings\)'
expect_eq "buflen after the grow" "$(cat /proc/memmon/buflen)" 4194304
expect_eq "ring_bytes after the grow" "$(stat_of ring_bytes)" 2097152
/progs/watchexec /progs/memtest anon 3000 > /tmp/out2 || fail "workload 2"
/progs/drain -F 3 > /tmp/ev2 || fail "drain 2"
exec 3<&-
expect_eq "lost lines across the grow" "$(grep -c ' lost ' /tmp/ev2)" 0
for out in /tmp/out1 /tmp/out2; do
    pid=$(awk -v base="$(value_of base "$(cat $out)")" '$3 == "fault" && index($0, "addr=" base) { split($2, ids, "/"); print ids[1]; exit }' /tmp/ev2)
    [ -n "$pid" ] || fail "$out: no fault at its base"
    crosscheck "$(window /tmp/ev2 "$pid")" "$out"
done
# A smaller size changes nothing; a size out of range is refused, with a line saying why.
echo 65536 > /proc/memmon/buflen || fail "a smaller size was refused"
expect_eq "no shrink" "$(cat /proc/memmon/buflen)" 4194304
kmsg_mark
if echo 4096 > /proc/memmon/buflen 2>/dev/null; then fail "4096 was accepted"; fi
if echo 12x > /proc/memmon/buflen 2>/dev/null; then fail "12x was accepted"; fi
expect_match "refusal line" "$(kmsg_new)" 'memmon: buflen: refused a write: it takes a number of bytes from 8192 to 268435456'
unload
