# rmmod while readers are blocked in read(), poll() and select(), and an epoll instance
# holds the file: all wake up, rmmod completes without a kernel warning, and the module
# loads again.
. /host/lib.sh
load
cat /proc/memmon/events > /tmp/cat.out &
reader=$!
/progs/readers pollwait > /tmp/poll.out &
poller=$!
/progs/readers selectwait > /tmp/select.out &
selecter=$!
/progs/readers epollhold 3 > /tmp/epoll.out &
epoller=$!
for p in $reader $poller $selecter $epoller; do
    wait_until "process $p to open the events file" has_events_open $p
done
sleep 0.3
timeout 10 rmmod memmon || fail "rmmod failed or hung"
timeout 5 sh -c "wait $reader" 2>/dev/null
sleep 0.2
kill -0 $reader 2>/dev/null && fail "the blocked reader is still there"
kill -0 $poller 2>/dev/null && fail "the poller is still there"
kill -0 $selecter 2>/dev/null && fail "the select caller is still there"
wait $poller
expect_match "the poller woke" "$(cat /tmp/poll.out)" '^revents=0x'
wait $selecter
expect_eq "the select caller woke" "$(cat /tmp/select.out)" "select=ok"
wait $epoller
expect_eq "the epoll holder is fine" "$(cat /tmp/epoll.out)" "epollhold=ok"
load
echo 1 > /proc/memmon/watch-pids
unload
