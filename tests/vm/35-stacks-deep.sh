# Deep stacks (issue 50 item 7): tests/progs/deepstack D N writes N fresh pages at the
# bottom of a recursion of D frames of dive().
# - stack_depth=127, the most (by frame pointers, no tables): at D=150, every fault line of
#   the window has exactly 127 entries, touch then 126 of dive, and stack_end=depth; at
#   --stacks 64 through memmon record, 64 entries and stack_end=depth.
# - The defaults (the module loaded with no parameter, `memmon record` with no option): at
#   D=100, every fault line has its stack whole: touch, the 100 frames of dive, main and
#   the C library's start-up to _start, no stack_end=.
. /host/lib.sh
load stack_depth=127
expect_eq "stack_depth" "$(cat /sys/module/memmon/parameters/stack_depth)" 127
run_measured /tmp/out /tmp/ev -- /progs/deepstack 150 16
w=$(window /tmp/ev "$(pid_of_run /tmp/ev)")
range() { value_of "$1" "$(cat /tmp/out)"; }
# entries: for each fault line on stdin, "ENTRIES TOUCH DIVE END": the number of entries of
# its stack, 1 if the first is in touch, how many of the others lie in dive, and the end.
entries() {
    t=$(range touch) d=$(range dive)
    while read -r line; do
        stack=$(printf '%s\n' "$line" | field stack)
        end=$(printf '%s\n' "$line" | field stack_end)
        n=0 first=0 dive=0
        for a in $(echo "$stack" | tr ',' ' '); do
            n=$((n + 1))
            if [ $n -eq 1 ]; then
                [ $((a)) -ge $((${t%-*})) ] && [ $((a)) -lt $((${t#*-})) ] && first=1
            elif [ $((a)) -ge $((${d%-*})) ] && [ $((a)) -lt $((${d#*-})) ]; then
                dive=$((dive + 1))
            fi
        done
        echo "$n $first $dive ${end:-complete}"
    done
}
expect_eq "fault lines at stack_depth=127, D=150" \
    "$(printf '%s\n' "$w" | grep ' fault type=anon access=W ' | entries | sort | uniq -c | sed 's/^ *//')" \
    "16 127 1 126 depth"
unload

load
expect_eq "stack_depth with no parameter" "$(cat /sys/module/memmon/parameters/stack_depth)" 0
memmon record -o /tmp/d.cap -- /progs/deepstack 100 16 > /tmp/out 2> /tmp/d.err ||
    { cat /tmp/d.err; fail "memmon record -- deepstack 100 16"; }
w=$(window /tmp/d.cap "$(pid_of_run /tmp/d.cap)")
expect_eq "stack_depth restored after record" "$(cat /sys/module/memmon/parameters/stack_depth)" 0
lines=$(printf '%s\n' "$w" | grep ' fault type=anon access=W ' | entries | sort | uniq -c | sed 's/^ *//')
echo "deepstack 100 at the defaults: COUNT ENTRIES TOUCH DIVE END: $lines"
set -- $lines
[ $# -eq 5 ] && [ "$1" = 16 ] && [ "$3" = 1 ] && [ "$4" = 100 ] && [ "$5" = complete ] ||
    fail "deepstack 100 at the defaults: want 16 whole stacks through touch and 100 dive frames, got: $lines"
[ "$2" -ge 102 ] && [ "$2" -le 110 ] || fail "deepstack 100: $2 entries, not 102 to 110 (touch, dive x 100, main, start-up)"
# The outermost frames: main and the start-up to _start (the static binary's tables).
printf '%s\n' "$w" | grep -q ' stack_end=' && fail "a stack of the window ends early"

memmon record --stacks 64 -o /tmp/d64.cap -- /progs/deepstack 100 16 > /tmp/out 2> /tmp/d64.err ||
    { cat /tmp/d64.err; fail "memmon record --stacks 64 -- deepstack 100 16"; }
w=$(window /tmp/d64.cap "$(pid_of_run /tmp/d64.cap)")
expect_eq "fault lines at --stacks 64" \
    "$(printf '%s\n' "$w" | grep ' fault type=anon access=W ' | entries | sort | uniq -c | sed 's/^ *//')" \
    "16 64 1 63 depth"
unload
