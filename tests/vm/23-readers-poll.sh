# poll and epoll wake readers; a poll wakes within 500 ms of an event (about 1 ms when the
# host is idle: the bound is generous, so that one sample on a busy host does not decide,
# and still fails a wake-up that waits for a later event).
. /host/lib.sh
load
out=$(/progs/readers poll-latency) || fail "poll-latency: $out"
lat=$(value_of latency_us "$out")
echo "poll woke $lat us after the event"
[ "$lat" -lt 500000 ] || fail "poll woke $lat us after the event (limit 500 ms)"
expect_eq "epoll" "$(/progs/readers epoll)" "epoll=ok"
unload
