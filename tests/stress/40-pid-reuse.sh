# A watched process exits, its pid is reused (pid_max made small), and the newcomer is not
# watched: watch-pids does not list it and it has no events.
. /host/lib.sh
load
# pids wrap from pid_max back to 300 (RESERVED_PIDS): get past 300 first.
echo 400 > /proc/sys/kernel/pid_max || fail "set pid_max"
p=0
while [ $p -lt 300 ]; do true & p=$!; wait $p; done
sleep 100 &
victim=$!
echo $victim > /proc/memmon/watch-pids
expect_eq "watched" "$(cat /proc/memmon/watch-pids)" "$victim"
kill $victim
wait $victim 2>/dev/null
expect_eq "not watched after its exit" "$(cat /proc/memmon/watch-pids)" ""
tries=0 reused=""
while [ $tries -lt 300 ]; do
    /progs/memtest anon 20 > /dev/null &
    p=$!
    wait $p
    if [ $p -eq $victim ]; then reused=1; break; fi
    tries=$((tries + 1))
done
[ -n "$reused" ] || fail "pid $victim was not reused in $tries processes"
echo "pid $victim reused after $tries processes"
expect_eq "the newcomer is not watched" "$(cat /proc/memmon/watch-pids)" ""
/progs/drain > /tmp/ev
lines=$(awk -v p=$victim '{ split($2, ids, "/") } ids[1] == p' /tmp/ev)
printf '%s\n' "$lines" | tail -3
expect_eq "the victim's last line is its exit" "$(printf '%s\n' "$lines" | tail -1 | awk '{ print $3 }')" exit
expect_eq "one exit line for pid $victim" "$(printf '%s\n' "$lines" | grep -c ' exit ')" 1
unload
