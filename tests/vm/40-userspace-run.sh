# The userspace tool in the guest: `memmon run -- PROG` decodes the program's events and
# exits with its status; attach/list/detach/stats work on the live module.
. /host/lib.sh
load buflen=4194304
memmon run -- /progs/memtest anon 100 > /tmp/run.out 2>/tmp/run.err || fail "memmon run: exit $? ($(cat /tmp/run.err))"
head -n 5 /tmp/run.out
pid=$(awk -F: '/anon page @/ { print $1; exit }' /tmp/run.out)
[ -n "$pid" ] || fail "no decoded anon page lines"
grep -q "^$pid: fsync(1001) -> -EBADF" /tmp/run.out || fail "no decoded fsync marker"
expect_eq "decoded anon W faults between the markers" \
    "$(awk '/: fsync\(1001\)/ { on = 1; next } /: fsync\(1002\)/ { on = 0 } on' /tmp/run.out | grep -c ': anon page @0x[0-9a-f]* (W)$')" 100
memmon run -- sh -c 'exit 3' > /dev/null 2>&1
expect_eq "memmon run passes the exit status" "$?" 3
expect_eq "memmon run left nothing watched" "$(cat /proc/memmon/watch-pids)" ""
sleep 100 &
s=$!
memmon attach $s || fail "attach"
expect_eq "attach" "$(cat /proc/memmon/watch-pids)" "$s"
expect_match "list" "$(memmon list)" "$s"
memmon detach $s || fail "detach"
expect_eq "detach" "$(cat /proc/memmon/watch-pids)" ""
kill $s
# memmon stats shows the module's own figures: the records produced so far (nothing is
# watched now, so they stay), at least the 100 faults of the run above
produced=$(awk '$1 == "produced" { print $2 }' /proc/memmon/stats)
expect_eq "stats: produced, as the module says" "$(memmon stats | awk '$1 == "produced" { print $2 }')" "$produced"
[ "$produced" -ge 100 ] || fail "stats: produced $produced, not the run's 100 faults at least"
# which kernel memmon runs on, and which fault source the module chose there
expect_eq "stats: the kernel first" "$(memmon stats | head -n 1 | sed 's/^kernel  *//')" "$(uname -r) $(uname -v)"
expect_match "stats: the fault source" "$(memmon stats)" "fault_source +(mm_fault|kprobes)"
if memmon attach 99999 2>/tmp/err; then fail "attach of a missing pid worked"; fi
expect_match "attach error" "$(cat /tmp/err)" "memmon: error: .*99999"
# the live stream, decoded to JSON and filtered; Ctrl-C ends it cleanly
memmon tail --json --kind mark > /tmp/tail.out 2>/tmp/tail.err &
t=$!
sleep 0.5
echo "hello there" > /proc/memmon/marker
sleep 0.5
kill -INT $t
wait $t
expect_eq "tail exits 0 on Ctrl-C" "$?" 0
expect_match "tail --json --kind mark" "$(cat /tmp/tail.out)" '^\{"time":"[0-9]+\.[0-9]{9}","pid":[0-9]+,"tid":[0-9]+,"kind":"mark","text":"hello there"\}$'
unload
if memmon list 2>/tmp/err; then fail "memmon list without the module worked"; fi
expect_match "module missing" "$(cat /tmp/err)" "memmon: error: .*(not loaded|/proc/memmon)"
