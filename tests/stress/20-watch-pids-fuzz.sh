# 10 000 random writes to watch-pids (valid, invalid, huge, binary, ranges, signs, several
# per write, writes racing the exit of the process they name), each checked against a model
# of the watched set (the write's result and the read-back): 0 divergences.
. /host/lib.sh
load
out=$(/progs/stress fuzz ${WRITES:-10000} ${SEED:-1}) || fail "$out"
echo "$out"
expect_match "fuzz" "$out" "^writes=${WRITES:-10000} divergences=0$"
unload
