# Cgroup churn under watch: four workers move themselves among 30 cgroups (20 of them below
# the two watched ones, 10 not), starting a short-lived memtest in each place, while a
# churner creates a cgroup below a watched one, moves itself in and out, and removes it, 50
# times. Exact: every memtest started below a watched cgroup has its 25 anon W faults and as
# many fault lines as its rusage, and one `cgroup` line naming where it was started; every one
# started elsewhere has no line; each worker's and the churner's `cgroup` lines are exactly
# their moves into the watched cgroups, in order, with each one's id and path; nothing lost;
# no cgroup left dying once all is removed.
# vm-timeout: 900
. /host/lib.sh
cg=/sys/fs/cgroup
grep -q "^[^ ]* $cg cgroup2 " /proc/mounts || mount -t cgroup2 none $cg || fail "cannot mount cgroup2 at $cg"
load buflen=8388608
w=/proc/memmon/watch-pids
runs=${MEMMON_CHURN_RUNS:-25}

for top in wa wb ua; do
    for i in 0 1 2 3 4 5 6 7 8 9; do mkdir -p $cg/$top/$i || fail "mkdir $cg/$top/$i"; done
done
echo "c:$cg/wa c:$cg/wb" > $w || fail "c:$cg/wa c:$cg/wb refused"
expect_eq "watched_cgroups" "$(stat_of watched_cgroups)" 2

# worker N: RUNS times, move itself to a cgroup other than its current one (chosen by a
# linear congruential sequence of its own), log "move DIR", start memtest anon 25 there in the
# background and log "run PID DIR"; waits for its children at the end. Moves into the watched
# cgroups give the worker a `cgroup` line each.
cat > /tmp/worker <<'EOF'
n=$1 runs=$2 cg=$3
log=/tmp/worker-$n.log
: > $log
seed=$((n * 7919 + 13)) cur=
i=0
while [ $i -lt $runs ]; do
    seed=$(( (seed * 1103515245 + 12345) % 2147483648 ))
    pick=$(( seed / 65536 % 30 ))
    dir=$(echo "wa wb ua" | cut -d' ' -f$((pick / 10 + 1)))/$((pick % 10))
    [ "$dir" = "$cur" ] && continue
    echo $$ > $cg/$dir/cgroup.procs || exit 99
    cur=$dir
    echo "move $dir" >> $log
    /progs/memtest anon 25 > /tmp/out-$n-$i &
    echo "run $! $dir $n-$i" >> $log
    i=$((i + 1))
done
wait
EOF
# churner: 50 times, mkdir wa/tK, move itself in, then to ua/9, rmdir wa/tK
cat > /tmp/churner <<'EOF'
cg=$1
log=/tmp/churner.log
: > $log
k=0
while [ $k -lt 50 ]; do
    mkdir $cg/wa/t$k || exit 98
    echo $$ > $cg/wa/t$k/cgroup.procs || exit 99
    echo "move wa/t$k $(stat -c %i $cg/wa/t$k)" >> $log
    echo $$ > $cg/ua/9/cgroup.procs || exit 97
    rmdir $cg/wa/t$k || exit 96
    k=$((k + 1))
done
EOF

/progs/drain > /dev/null
sh /tmp/churner $cg &
churner=$!
for n in 1 2 3 4; do
    sh /tmp/worker $n $runs $cg &
    eval worker_$n=$!
done
for n in 1 2 3 4; do
    eval "wait \$worker_$n" || fail "worker $n exited with $?"
done
wait $churner || fail "the churner exited with $?"
/progs/drain > /tmp/ev || fail "drain"
expect_eq "events overwritten" "$(stat_of overwritten)" 0
expect_eq "lost lines" "$(awk '$3 == "lost"' /tmp/ev | wc -l)" 0

# id_of DIR: the cgroup id (inode number) of $cg/DIR
id_of() {
    stat -c %i $cg/$1
}
# One pass over the events: per process "PID FAULTS ANON_W CGROUPS", FAULTS and ANON_W its
# fault lines and anon W ones between its markers (fsync 1001 and 1002), CGROUPS its `cgroup`
# lines as "id path" joined by ';', in order.
awk '
    { split($2, ids, "/"); p = ids[1]; seen[p] = 1 }
    $3 == "fsync" && $4 == "fd=1001" { inside[p] = 1; next }
    $3 == "fsync" && $4 == "fd=1002" { inside[p] = 0; next }
    $3 == "cgroup" { cg[p] = cg[p] (ncg[p]++ ? ";" : "") substr($4, 4) " " substr($5, 6) }
    inside[p] && $3 == "fault" { f[p]++; if ($4 == "type=anon" && $5 == "access=W") a[p]++ }
    END { for (p in seen) print p, f[p] + 0, a[p] + 0, cg[p] }' /tmp/ev > /tmp/summary
# summary PID: that process's line ("PID 0 0 " when it has none)
summary() {
    grep "^$1 " /tmp/summary || echo "$1 0 0 "
}

watched_runs=0 other_runs=0
for n in 1 2 3 4; do
    eval wpid=\$worker_$n
    log=/tmp/worker-$n.log
    # the worker's own cgroup lines: its moves into wa/ and wb/, in order
    want=$(awk '$1 == "move" && $2 !~ /^ua/ { print $2 }' $log | while read -r d; do
        printf '%s /%s;' "$(id_of $d)" "$d"; done)
    expect_eq "worker $n: its cgroup lines are its moves into the watched cgroups" \
        "$(summary $wpid | cut -d' ' -f4-)" "${want%;}"
    while read -r what pid dir tag; do
        [ "$what" = run ] || continue
        if ! grep -q "^$pid " /tmp/summary; then
            case $dir in ua/*) other_runs=$((other_runs + 1)); continue ;; esac
            fail "memtest $pid in $dir (watched) has no line"
        fi
        case $dir in ua/*) fail "memtest $pid in $dir (not watched) has lines" ;; esac
        set -- $(summary $pid)
        [ "$3" = 25 ] || fail "memtest $pid in $dir: $3 anon W faults, not 25"
        [ "$2" = "$(value_of faults "$(cat /tmp/out-$tag)")" ] ||
            fail "memtest $pid in $dir: $2 fault lines, rusage $(cat /tmp/out-$tag)"
        shift 3
        [ "$*" = "$(id_of $dir) /$dir" ] ||
            fail "memtest $pid in $dir: cgroup lines '$*', not '$(id_of $dir) /$dir'"
        watched_runs=$((watched_runs + 1))
    done < $log
done
expect_eq "memtests run" "$((watched_runs + other_runs))" $((4 * runs))
echo "ok: $watched_runs memtests below the watched cgroups exact (25 anon W faults, fault lines = rusage, one cgroup line naming where), $other_runs elsewhere with no line"
# The churner's: one per wa/tK it moved into (ids of removed cgroups, from its log).
expect_eq "the churner's cgroup lines" "$(summary $churner | cut -d' ' -f4-)" \
    "$(awk '{ printf "%s%s /%s", (NR > 1 ? ";" : ""), $3, $2 }' /tmp/churner.log)"
echo "ok: the churner's 50 moves into a new cgroup below wa each gave one cgroup line (then removed)"

# Everything removed: memmon holds no reference that keeps a cgroup dying.
echo 0 > $w
for top in wa wb ua; do
    for i in 0 1 2 3 4 5 6 7 8 9; do rmdir $cg/$top/$i || fail "rmdir $cg/$top/$i"; done
    rmdir $cg/$top || fail "rmdir $cg/$top"
done
wait_until "no dying cgroup left" grep -qx "nr_dying_descendants 0" $cg/cgroup.stat
echo "ok: 33 cgroups and the 50 removed ones freed, none left dying"
unload
