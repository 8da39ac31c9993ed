# 10 000 random writes to watch-pids (valid, invalid, huge, binary, ranges, signs, several
# per write, writes racing the exit of the process they name), each checked against a model
# of the watched set (the write's result and the read-back): 0 divergences. Then, the set
# cleared, a watched program's faults are all recorded: what the fuzz's writes, exits and
# clears left of the count the handlers look at first lets a watched process through.
. /host/lib.sh
load buflen=4194304
out=$(/progs/stress fuzz ${WRITES:-10000} ${SEED:-1}) || fail "$out"
echo "$out"
expect_match "fuzz" "$out" "^writes=${WRITES:-10000} divergences=0$"
echo 0 > /proc/memmon/watch-pids
expect_eq "processes watched after the clear" "$(stat_of watched)" 0
run_measured /tmp/out /tmp/ev -- /progs/memtest anon 1000
w=$(window /tmp/ev "$(pid_of_run /tmp/ev)")
expect_eq "anon W faults" "$(printf '%s\n' "$w" | grep -c ' fault type=anon access=W ')" 1000
crosscheck "$w" /tmp/out
unload
