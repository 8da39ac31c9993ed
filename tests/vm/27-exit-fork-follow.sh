# A watched process that exits leaves the set with an exit line; follow-children watches a
# shell's children from their first instruction.
. /host/lib.sh
load buflen=4194304
/progs/watchexec sh -c 'exit 3'
expect_eq "exit status passed through" "$?" 3
/progs/drain > /tmp/ev
expect_match "exit line" "$(grep ' exit ' /tmp/ev)" ' exit code=768$'
expect_eq "the exited process left the set" "$(cat /proc/memmon/watch-pids)" ""
sleep 100 &
s=$!
echo $s > /proc/memmon/watch-pids
kill -9 $s; wait $s 2>/dev/null
/progs/drain > /tmp/ev
expect_match "killed process" "$(grep " $s/$s exit" /tmp/ev)" ' exit code=9$'
expect_eq "set empty again" "$(cat /proc/memmon/watch-pids)" ""
rmmod memmon && load buflen=4194304
/progs/watchexec -f sh -c '/progs/memtest anon 10 > /tmp/o1; /progs/memtest anon 20 > /tmp/o2; true' \
    || fail "followed run"
/progs/drain > /tmp/ev
expect_eq "fork lines of the shell" "$(grep -c ' fork child=[0-9]* watched=1$' /tmp/ev)" 2
for c in $(grep ' fork child=' /tmp/ev | field child); do
    grep -q " $c/$c exec comm=memtest filename=/progs/memtest$" /tmp/ev || fail "no exec line for child $c"
    grep -q " $c/$c exit code=0$" /tmp/ev || fail "no exit line for child $c"
done
c1=$(grep ' fork child=' /tmp/ev | field child | head -n 1)
c2=$(grep ' fork child=' /tmp/ev | field child | tail -n 1)
expect_eq "first child's anon faults" "$(window /tmp/ev $c1 | grep -c ' fault type=anon access=W ')" 10
expect_eq "second child's anon faults" "$(window /tmp/ev $c2 | grep -c ' fault type=anon access=W ')" 20
expect_match "the child's first line comes after its fork line" \
    "$(grep -n " fork child=$c1 \| $c1/" /tmp/ev | head -n 1)" " fork child=$c1 "
expect_eq "all gone from the set" "$(cat /proc/memmon/watch-pids)" ""
unload
