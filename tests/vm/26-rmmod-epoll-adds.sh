# rmmod while two processes keep adding the events file to new epoll instances and select
# callers wait (unload sleeps until they have left the wait queue): entries that arrive
# while unload drains the queue must not keep it from emptying. Unload ends while the
# adders still run (they stop after 20 s): it took 0.2 to 1.2 s on a quiet host, 5.2 s once on
# a host at a load of 7 under multi-threaded TCG; the bound is 15 s, and the adder must
# still be running after it.
. /host/lib.sh
load
for i in 1 2 3 4; do
    /progs/readers selectex > /tmp/selectex.$i &
done
/progs/readers epolladd 20 > /tmp/epolladd.out &
adder=$!
/progs/readers epolladd 20 > /tmp/epolladd2.out &
adder2=$!
wait_until "the adder to open the events file" has_events_open $adder
wait_until "the second adder to open the events file" has_events_open $adder2
sleep 0.5
start=$(cut -d' ' -f1 /proc/uptime)
timeout 30 rmmod memmon || fail "rmmod failed"
took=$(awk -v s="$start" '{ printf "%d", ($1 - s) * 1000 }' /proc/uptime)
echo "rmmod took ${took} ms"
[ "$took" -lt 15000 ] || fail "rmmod took ${took} ms: it waited for the epoll adder"
kill -0 $adder 2>/dev/null || fail "the adder ended before rmmod (cat: $(cat /tmp/epolladd.out))"
kill $adder $adder2
echo "ok: rmmod completed in ${took} ms while epoll entries kept arriving"
