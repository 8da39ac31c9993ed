# rss lines: a process that maps, touches and exits gets one at=exit line equal, within one
# page per counter, to what it read from its own /proc/self/status just before; a mark while
# two processes are watched gives one at=mark line for each; exit code= is what wait(2)
# reports, also when the last thread to exit is not the leader.
. /host/lib.sh
load buflen=4194304
/progs/watchexec /progs/syscalls rss > /tmp/out
expect_eq "watchexec status" "$?" 3
/progs/drain > /tmp/ev
pid=$(awk '$3 == "exec" && / filename=\/progs\/syscalls$/ { split($2, ids, "/"); p = ids[1] } END { print p }' /tmp/ev)
line=$(grep " $pid/[0-9]* rss .* at=exit$" /tmp/ev)
echo "$line"
expect_eq "rss at=exit lines" "$(printf '%s\n' "$line" | grep -c .)" 1
for k in anon file shmem swap peak; do
    got=$(printf '%s\n' "$line" | field $k)
    want=$(value_of $k "$(cat /tmp/out)")
    d=$((got - want)); [ $d -lt 0 ] && d=$((-d))
    [ $d -le 4096 ] || fail "$k: rss line $got, status $want"
    echo "ok: $k $got (status $want)"
done
expect_eq "exit code" "$(grep " $pid/[0-9]* exit " /tmp/ev | field code)" 768
# the rss line comes before the exit line
expect_match "last two lines of the process" "$(grep " $pid/" /tmp/ev | tail -n 2 | awk '{ print $3 }' | tr '\n' ' ')" '^rss exit $'

# A mark while two processes are watched.
sleep 30 & a=$!
sleep 30 & b=$!
sleep 0.5  # both have exec'd
echo "$a $b" > /proc/memmon/watch-pids
echo hello > /proc/memmon/marker
/progs/drain > /tmp/ev2
expect_eq "rss lines after the mark" "$(sed -n '/ mark text=hello$/,$p' /tmp/ev2 | grep -c ' rss .* at=mark$')" 2
for p in $a $b; do
    # (the initramfs is tmpfs: the program's pages count as shmem)
    grep -q " $p/$p rss anon=[1-9][0-9]* file=[0-9]* shmem=[1-9][0-9]* .* at=mark$" /tmp/ev2 || fail "no rss line for $p"
done
kill $a $b

# The last thread to exit is not the leader (the leader called pthread_exit, the other thread
# exit(7)): the code is the status wait(2) gave watchexec, 7 << 8.
/progs/watchexec /progs/syscalls lastthread
expect_eq "lastthread status" "$?" 7
/progs/drain > /tmp/ev3
pid=$(awk '$3 == "exec" && / filename=\/progs\/syscalls$/ { split($2, ids, "/"); p = ids[1] } END { print p }' /tmp/ev3)
expect_eq "exit code of lastthread" "$(grep " $pid/[0-9]* exit " /tmp/ev3 | field code)" 1792
unload
