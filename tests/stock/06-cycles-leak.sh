# 100 insmod/rmmod cycles (CYCLES) of memmon under a watched 2-thread fault and mmap storm,
# with four blocked readers each cycle (tests/stress/10's cycles), and what the kernel holds
# before and after: after one cycle to warm the kernel's own caches, and with the page cache
# dropped and the storm gone at both ends, unreclaimable slab (/proc/meminfo SUnreclaim),
# vmalloc (VmallocUsed) and per-CPU memory (Percpu) grow by less than 1 MiB, 1 MiB and
# 256 KiB, and no slab cache of /proc/slabinfo by more than 256 KiB: a leak of one object of
# memmon's per cycle would show as 100 of them.
# vm-accel: tcg,thread=single
. /host/lib.sh
cycles=${CYCLES:-100}
snapshot() { # NAME: meminfo and slabinfo, the page cache dropped first
    sync; echo 3 > /proc/sys/vm/drop_caches; sleep 1
    cat /proc/meminfo > "/tmp/$1.meminfo"
    awk 'NR > 2 { print $1, $3 * $4 }' /proc/slabinfo | sort > "/tmp/$1.slab"
}
kb() { awk -v k="$1:" '$1 == k { print $2 }' "/tmp/$2.meminfo"; }
cycle() { # N
    load
    echo $storm > /proc/memmon/watch-pids || fail "cycle $1: watch the storm"
    start_blocked_readers "cycle $1"
    timeout 20 rmmod memmon || fail "cycle $1: rmmod failed or hung"
    readers_ended_by_rmmod "cycle $1"
}
/progs/stress storm 2 100000 > /dev/null &
storm=$!
cycle 0
kill $storm; wait $storm 2>/dev/null
snapshot before
/progs/stress storm 2 100000 > /dev/null &
storm=$!
n=1
while [ $n -le $cycles ]; do cycle $n; n=$((n + 1)); done
kill -0 $storm || fail "the storm died"
kill $storm; wait $storm 2>/dev/null
snapshot after
for k in SUnreclaim:1024 VmallocUsed:1024 Percpu:256; do
    name=${k%:*} max=${k#*:}
    b=$(kb "$name" before) a=$(kb "$name" after)
    echo "$name: $b kB before, $a kB after $cycles cycles"
    [ $((a - b)) -lt "$max" ] || fail "$name grew by $((a - b)) kB over $cycles cycles (limit $max kB)"
done
# (busybox has no join.)
awk 'NR == FNR { b[$1] = $2; next } { print $2 - b[$1], $1 }' /tmp/before.slab /tmp/after.slab |
    sort -n | tail -n 5 > /tmp/grown
[ "$(grep -c . /tmp/grown)" = 5 ] || fail "no slab caches compared (/proc/slabinfo: $(grep -c . /tmp/after.slab) lines)"
echo "slab caches grown most (bytes): $(tr '\n' ' ' < /tmp/grown)"
worst=$(tail -n 1 /tmp/grown | awk '{ print $1 }')
[ "$worst" -lt 262144 ] || fail "slab cache $(tail -n 1 /tmp/grown | awk '{ print $2 }') grew by $worst bytes"
echo "ok: $cycles cycles: no leak in meminfo or slabinfo"
