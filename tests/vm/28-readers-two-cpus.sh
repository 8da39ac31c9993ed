# At the default buflen (1 MiB per CPU) with `cat` as the reader: one thread faulting 16384
# pages, then two threads faulting 16384 pages each on the two CPUs. For the reader, events
# read + events reported lost = events produced, exactly; nothing is lost (each CPU's ring
# holds tens of thousands of packed faults, seconds of one CPU's faulting under TCG, where
# the former 16 KiB default held some 20 ms and a reader that stalled that long lost events,
# which the test then ran again); each thread's faults come in their program order, the
# merged stream in time order, and the fault lines equal rusage. One run each: a loss fails.
. /host/lib.sh
drained() { [ $(($(stat_of delivered) + $(stat_of lost_reported))) -ge "$(stat_of produced)" ]; }

# storm_once MEMTEST_ARGS: one storm behind a fresh module and `cat`; sets $lost
storm_once() {
    storm=$1
    load
    cat /proc/memmon/events > /tmp/ev &
    reader=$!
    wait_until "the reader to open" has_events_open $reader
    /progs/watchexec /progs/memtest $storm > /tmp/out || fail "memtest $storm"
    wait_until "the reader to catch up" drained
    kill $reader
    wait $reader 2>/dev/null
    lost=$(awk '$3 == "lost" { sub(/count=/, "", $4); n += $4 } END { print n + 0 }' /tmp/ev)
    read=$(grep -vc ' lost count=' /tmp/ev)
    echo "$storm: $read events read, $lost lost, $(stat_of produced) produced"
    expect_eq "$storm: read + lost" $((read + lost)) "$(stat_of produced)"
    w=$(window /tmp/ev "$(pid_of_run /tmp/ev)")
    printf '%s\n' "$w" | awk '$3 == "fault" { split($2, ids, "/"); a = $6; sub(/addr=/, "", a); a = a + 0
            if ((ids[2] in last) && a <= last[ids[2]]) { print "out of program order: " $0; bad = 1 }
            last[ids[2]] = a; n[ids[2]]++ }
        END { for (t in n) printf "thread %s: %d faults\n", t, n[t]; exit bad }' || fail "$storm: a thread's faults are out of order"
    awk '$3 != "lost" { t = $1 + 0; if (t < last) { print "time went back: " prev " then " $0; exit 1 } last = t; prev = $0 }' /tmp/ev ||
        fail "$storm: the merged stream is not in time order"
    echo "ok: $storm: program order per thread, time order overall"
    crosscheck "$w" /tmp/out
    unload
}

for storm in "anon 16384" "threads 2 16384"; do
    storm_once "$storm"
    expect_eq "$storm: events lost behind cat at the default buflen" "$lost" 0
done
