# Two concurrent readers see identical streams.
. /host/lib.sh
load buflen=4194304
/progs/readers slow 0 /tmp/r1 > /tmp/c1 &
r1=$!
/progs/readers slow 1000 /tmp/r2 > /tmp/c2 &
r2=$!
wait_until "reader 1 to open" has_events_open $r1
wait_until "reader 2 to open" has_events_open $r2
/progs/watchexec /progs/memtest churn 10 100 > /tmp/out || fail "workload"
echo done > /proc/memmon/marker
touch /tmp/done
wait $r1 $r2
expect_eq "reader 1 lost nothing" "$(cat /tmp/c1)" "events=$(stat_of produced) lost=0"
cmp /tmp/r1 /tmp/r2 || fail "the two readers saw different streams"
echo "ok: both readers saw the same $(wc -l < /tmp/r1) lines"
unload
