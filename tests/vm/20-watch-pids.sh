# watch-pids: add, remove, clear, several pids in one write, ranges in the read-back.
. /host/lib.sh
load
w=/proc/memmon/watch-pids
expect_eq "empty at load" "$(cat $w)" ""
echo 1 > $w
expect_eq "one pid" "$(cat $w)" "1"
echo "2 3 5" > $w
expect_eq "several in one write, with a range" "$(cat $w)" "1-3,5"
printf '4\n' > $w
expect_eq "a gap filled" "$(cat $w)" "1-5"
echo -3 > $w
expect_eq "remove" "$(cat $w)" "1-2,4-5"
echo "-1 -4" > $w
expect_eq "remove several" "$(cat $w)" "2,5"
echo -9999 > $w
expect_eq "removing an unwatched pid is a no-op" "$(cat $w)" "2,5"
echo 0 > $w
expect_eq "clear" "$(cat $w)" ""
echo "1 0 2" > $w
expect_eq "0 clears what came before it" "$(cat $w)" "2"
expect_eq "watched in stats" "$(stat_of watched)" 1
echo "+1" > $w
expect_eq "+N watches too" "$(cat $w)" "1-2"
# a pid seen from a child pid namespace is taken in the writer's namespace
echo 0 > $w
# (it stays until killed: on a slow debug kernel a 1 s sleep ended before the check)
unshare -p -f sh -c 'echo 1 > /proc/memmon/watch-pids; sleep 60' &
wait_until "the write from the namespace" grep -q . $w
got=$(cat $w)
[ -n "$got" ] && [ "$got" != 1 ] || fail "pid 1 of a child namespace was taken as '$got'"
expect_match "namespace pid 1 is the global $got" "$(grep NSpid /proc/$got/status)" "NSpid:[[:space:]]+$got[[:space:]]+1$"
# the namespace's init: only SIGKILL reaches it from outside
kill -9 "$got"
wait
unload
