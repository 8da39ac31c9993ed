# buflen=8192 and 100000+ events with two slow readers: for each reader, events read plus
# events reported lost equals events produced, exactly; stats agrees.
. /host/lib.sh
load buflen=8192
/progs/readers slow 2000 /tmp/r1 > /tmp/c1 &
r1=$!
/progs/readers slow 5000 /tmp/r2 > /tmp/c2 &
r2=$!
wait_until "reader 1 to open" has_events_open $r1
wait_until "reader 2 to open" has_events_open $r2
/progs/watchexec /progs/memtest churn 100 1000 > /tmp/out || fail "workload"
touch /tmp/done
wait $r1 $r2
produced=$(stat_of produced)
echo "produced=$produced reader1: $(cat /tmp/c1) reader2: $(cat /tmp/c2)"
[ "$produced" -gt 100000 ] || fail "only $produced events produced"
for c in /tmp/c1 /tmp/c2; do
    e=$(value_of events "$(tr ' ' '\n' < $c)")
    l=$(value_of lost "$(tr ' ' '\n' < $c)")
    [ "$l" -gt 0 ] || fail "$c: the reader was not slow enough to lose events"
    expect_eq "$c: read + lost" $((e + l)) "$produced"
done
e1=$(value_of events "$(tr ' ' '\n' < /tmp/c1)"); e2=$(value_of events "$(tr ' ' '\n' < /tmp/c2)")
l1=$(value_of lost "$(tr ' ' '\n' < /tmp/c1)"); l2=$(value_of lost "$(tr ' ' '\n' < /tmp/c2)")
expect_eq "stats: delivered" "$(stat_of delivered)" $((e1 + e2))
expect_eq "stats: lost_reported" "$(stat_of lost_reported)" $((l1 + l2))
ow=$(stat_of overwritten)
[ "$ow" -gt 0 ] && [ "$ow" -lt "$produced" ] || fail "stats: overwritten $ow of $produced"
echo "ok: $ow of $produced events overwritten"
# a lost line is never followed by an older event
awk '{ t = $1 + 0; if (t < last && $3 != "lost") { print "time went back: " $0; exit 1 } if ($3 != "lost") last = t }' /tmp/r1 || fail "order"
unload
