# rmmod while one reader is blocked in read() and one in poll(): both wake up, rmmod
# completes, and the module loads again.
. /host/lib.sh
load
cat /proc/memmon/events > /tmp/cat.out &
reader=$!
/progs/readers pollwait > /tmp/poll.out &
poller=$!
sleep 0.5
timeout 10 rmmod memmon || fail "rmmod failed or hung"
timeout 5 sh -c "wait $reader" 2>/dev/null
sleep 0.2
kill -0 $reader 2>/dev/null && fail "the blocked reader is still there"
kill -0 $poller 2>/dev/null && fail "the poller is still there"
wait $poller
expect_match "the poller woke" "$(cat /tmp/poll.out)" '^revents=0x'
load
echo 1 > /proc/memmon/watch-pids
unload
