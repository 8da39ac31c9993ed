# rmmod while callers wait for what the events file never signals until it closes: select on
# exceptfds, select on writefds, poll for POLLPRI|POLLOUT. Unload wakes them with every poll
# bit and answers every bit from then on, so each returns and rmmod completes.
. /host/lib.sh
load
pids=""
for mode in selectex selectwr pollpri; do
    /progs/readers $mode > /tmp/$mode.out &
    pids="$pids $!"
done
for p in $pids; do
    wait_until "process $p to open the events file" has_events_open $p
done
sleep 0.3
timeout 10 rmmod memmon || fail "rmmod failed or hung"
for p in $pids; do
    timeout 5 sh -c "wait $p" 2>/dev/null
done
for mode in selectex selectwr pollpri; do
    expect_eq "$mode woke at unload" "$(cat /tmp/$mode.out)" "$mode=ok"
done
