# poll and epoll wake readers; a poll wakes within 100 ms of an event.
. /host/lib.sh
load
out=$(/progs/readers poll-latency) || fail "poll-latency: $out"
lat=$(value_of latency_us "$out")
echo "poll woke $lat us after the event"
[ "$lat" -lt 100000 ] || fail "poll woke $lat us after the event (limit 100 ms)"
expect_eq "epoll" "$(/progs/readers epoll)" "epoll=ok"
unload
