# The guest side of scripts/bench.sh (busybox sh). REPS, N and PAIRS come from the
# environment. Every repetition runs every set-up once per workload, in turn, so that the
# set-ups are compared inside one boot under the same conditions; the order of the set-ups
# rotates from one repetition to the next, so that none always runs first or after the same
# one, and an untimed pass of each workload comes first (the guest's memory touched once, the
# emulator's code translated).
set -u
REPS=${REPS:-5} N=${N:-16384} PAIRS=${PAIRS:-4096} READN=${READN:-100000}
SPAGES=${SPAGES:-16384} SROUNDS=${SROUNDS:-10}
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs tracefs $T
res=/tmp/results
: > $res
echo 1 > $T/options/event-fork

loaded() { [ -d /proc/memmon ]; }
unload() { loaded && rmmod memmon; true; }
load() { loaded || insmod /memmon/memmon.ko "$@"; }
stat_of() { awk -v k="$1" '$1 == k { print $2 }' /proc/memmon/stats; }
lost_in() { awk '$3 == "lost" { sub(/count=/, "", $4); n += $4 } END { print n + 0 }' "$1"; }
ftrace_overrun() { cat $T/per_cpu/cpu*/stats | awk '$1 == "overrun:" { n += $2 } END { print n + 0 }'; }

# ftrace_events WORKLOAD: the ftrace events that see the workload's events
ftrace_events() {
    case $1 in
    mapunmap) echo syscalls/sys_enter_mmap syscalls/sys_exit_mmap syscalls/sys_enter_munmap syscalls/sys_exit_munmap ;;
    *) echo exceptions/page_fault_user ;;
    esac
}

# wait_drained: the single reader has read or been told of every event produced
wait_drained() {
    i=0
    while [ $((i += 1)) -lt 100 ]; do
        [ $(($(stat_of delivered) + $(stat_of lost_reported))) -ge "$(stat_of produced)" ] && return 0
        sleep 0.05
    done
    echo "warning: the reader did not catch up" >&2
}

# run SETUP WORKLOAD ARGS...: one timed run; appends "WORKLOAD SETUP NS LOST" to $res
run() {
    setup=$1 workload=$2
    shift 2
    lost=0
    case $setup in
    none)
        unload
        out=$(sh -c 'exec "$@"' sh /progs/bench "$@") ;;
    ftrace)
        unload
        echo > $T/trace
        for e in $(ftrace_events $workload); do echo 1 > $T/events/$e/enable; done
        cat $T/trace_pipe > /dev/null &
        reader=$!
        out=$(sh -c "echo \$\$ > $T/set_event_pid; exec /progs/bench \"\$@\"" sh "$@")
        sleep 0.2
        kill $reader
        wait $reader 2>/dev/null
        for e in $(ftrace_events $workload); do echo 0 > $T/events/$e/enable; done
        echo > $T/set_event_pid
        lost=$(ftrace_overrun) ;;
    unwatched)
        # Loaded afresh: nothing has been watched, so the syscall probes are disarmed.
        unload; load
        out=$(sh -c 'exec "$@"' sh /progs/bench "$@") ;;
    other-watched)
        # Another (sleeping) process watched: the syscall probes are armed, and the
        # workload's calls go through them to be told apart.
        unload; load
        sleep 1000 &
        other=$!
        echo $other > /proc/memmon/watch-pids
        out=$(sh -c 'exec "$@"' sh /progs/bench "$@")
        kill $other
        wait $other 2>/dev/null ;;
    watched)
        unload; load
        cat /proc/memmon/events > /dev/null &
        reader=$!
        out=$(/progs/watchexec /progs/bench "$@")
        wait_drained
        kill $reader
        wait $reader 2>/dev/null
        lost=$(stat_of lost_reported) ;;
    record|record-fp)
        # record: user stacks unwound with the tables memmon record loads; record-fp: by
        # frame pointers only, as without tables.
        unload; load
        opts=""
        [ $setup = record-fp ] && opts=--no-unwind-tables
        out=$(memmon record $opts -o /tmp/cap -- /progs/bench "$@" 2>/dev/null)
        lost=$(lost_in /tmp/cap)
        # Entries per stack of the workload's events, for the cost per frame.
        frames=$(awk '/ stack=/ { s = $0; sub(/.* stack=/, "", s); sub(/ .*/, "", s); n += split(s, a, ","); e++ } END { printf "%.2f", e ? n / e : 0 }' /tmp/cap)
        echo "frames $workload $setup $frames" >> $res
        # The stream's bytes per event: the capture's event lines (not its # lines), with
        # their newlines, over their number.
        bytes=$(awk '!/^#/ { n++; b += length($0) + 1 } END { printf "%.1f", n ? b / n : 0 }' /tmp/cap)
        echo "bytes $workload $setup $bytes" >> $res ;;
    esac
    ns=$(printf '%s\n' "$out" | sed -n 's/^ns=//p')
    echo "$workload $setup ${ns:-0} $lost" >> $res
}

# Untimed warm-up.
/progs/bench faults 1 "$N" > /dev/null
/progs/bench faults 2 "$N" > /dev/null
/progs/bench mapunmap "$PAIRS" > /dev/null

setups="none ftrace unwatched other-watched watched record-fp record"
nsetups=$(echo $setups | wc -w)
rep=0
while [ $((rep += 1)) -le "$REPS" ]; do
    # This repetition's order: the list rotated by (rep - 1) places.
    order=$(echo $setups $setups | awk -v r=$(((rep - 1) % nsetups)) -v n=$nsetups '{ for (i = 1; i <= n; i++) printf "%s ", $(i + r) }')
    for setup in $order; do
        run $setup faults-1thread faults 1 "$N"
        run $setup faults-2threads faults 2 "$N"
        run $setup mapunmap mapunmap "$PAIRS"
    done
done

# The cost of a stack walk per entry: N first-touch faults at the bottom of a chain of 130
# calls (bench deep), the workload watched and no reader while it runs (the rings hold every
# event), so that only the recording side is timed:
#   stacks-off         stack_depth=0
#   stacks-fp          stack_depth=64 (record's default before 127), walked by frame pointers
#                      (the bench is built with them)
#   stacks-tables      stack_depth=64, walked with the bench's unwind table, loaded by
#                      `memmon unwind PID` before the faults (docs/unwind.md)
#   stacks-fp-127      stack_depth=127 (record's default), by frame pointers
#   stacks-tables-127  stack_depth=127, with the unwind table
# "stackwalk SETUP NS ENTRIES LOST": ns per fault, and the entries of most faults' stacks.
stackwalk() {
    setup=$1
    case $setup in
    stacks-off) depth=0 ;;
    *-127) depth=127 ;;
    *) depth=64 ;;
    esac
    unload
    insmod /memmon/memmon.ko buflen=33554432 stack_depth=$depth
    rm -f /tmp/go /tmp/go.ready
    /progs/watchexec /progs/bench deep 130 "$N" /tmp/go > /tmp/deep.out &
    job=$!
    i=0
    until [ -e /tmp/go.ready ]; do
        [ $((i += 1)) -le 6000 ] || { echo "error: bench deep did not start in 60 s" >&2; exit 1; }
        sleep 0.01
    done
    case $setup in
    stacks-tables*)
        memmon unwind "$(pidof bench)" > /dev/null || echo "warning: memmon unwind failed" >&2 ;;
    esac
    touch /tmp/go
    wait $job
    # The entries of most stacks: the deep faults' (the program's start-up has a few more).
    entries=$(/progs/drain | awk '/ fault / { n = 0; if (match($0, / stack=[^ ]*/)) n = split(substr($0, RSTART + 7, RLENGTH - 7), a, ",")
        c[n]++ } END { for (n in c) if (c[n] > best) { best = c[n]; mode = n } printf "%.2f", mode }')
    echo "stackwalk $setup $(sed -n 's/^ns=//p' /tmp/deep.out) $entries $(stat_of lost_reported)" >> $res
}
walks="stacks-off stacks-fp stacks-tables stacks-fp-127 stacks-tables-127"
nwalks=$(echo $walks | wc -w)
rep=0
while [ $((rep += 1)) -le "$REPS" ]; do
    # This repetition's order: the list rotated by (rep - 1) places.
    order=$(echo $walks $walks | awk -v r=$(((rep - 1) % nwalks)) -v n=$nwalks '{ for (i = 1; i <= n; i++) printf "%s ", $(i + r) }')
    for setup in $order; do stackwalk $setup; done
done

# The cost of the Python walk per frame (issue 43): python3.11 (when the guest has it)
# touches N pages of an anonymous mmap in a Python function at the bottom of a chain of 24
# Python calls, the workload watched with stack_depth=64 and its unwind tables loaded
# (`memmon unwind PID`), no reader while it runs:
#   py-native  its interpreter's description forgotten (a SET_PYTHON of version 0): native
#              stacks only
#   py-python  described (what `memmon unwind` gives): native stacks and Python frames, the
#              thread found in the interpreter's thread list
# "pywalk SETUP NS ENTRIES PYFRAMES LOST": ns per fault, the native entries and the Python
# frames of most faults' stacks.
cat > /tmp/pydeep.py <<'PYEOF'
import mmap
import os
import sys
import time

depth, count, go = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
pages = mmap.mmap(-1, count * 4096)


def bottom():
    t0 = time.perf_counter_ns()
    for at in range(0, count * 4096, 4096):
        pages[at] = 1
    return time.perf_counter_ns() - t0


def chain(level):
    if level == 0:
        return bottom()
    return chain(level - 1)


open(go + ".ready", "w").close()
while not os.path.exists(go):
    time.sleep(0.01)
print("ns=%d" % (chain(depth) // count))
PYEOF
# le VALUE BYTES: VALUE as BYTES little-endian bytes
le() {
    v=$(($1)) n=$2 out=""
    while [ "$n" -gt 0 ]; do
        out="$out\\$(printf '%03o' $((v & 255)))"
        v=$((v >> 8)) n=$((n - 1))
    done
    printf "$out"
}
pywalk() {
    setup=$1
    unload
    insmod /memmon/memmon.ko buflen=33554432 stack_depth=64
    rm -f /tmp/go /tmp/go.ready
    /progs/watchexec /usr/bin/python3.11 /tmp/pydeep.py 24 "$N" /tmp/go > /tmp/pydeep.out &
    job=$!
    i=0
    until [ -e /tmp/go.ready ]; do
        [ $((i += 1)) -le 6000 ] || { echo "error: pydeep did not start in 60 s" >&2; exit 1; }
        sleep 0.01
    done
    pid=$(pidof python3.11)
    memmon unwind "$pid" > /dev/null || echo "warning: memmon unwind failed" >&2
    if [ $setup = py-native ]; then
        { printf MMUW; le 1 2; le 4 2; le 64 4; le 0 4; le "$pid" 4; head -c 44 /dev/zero; } > /tmp/forget
        cat /tmp/forget > /proc/memmon/unwind || echo "warning: the forget was refused" >&2
    fi
    touch /tmp/go
    wait $job
    /progs/drain | awk '/ fault / {
            n = 0; p = 0
            if (match($0, / stack=[^ ]*/)) n = split(substr($0, RSTART + 7, RLENGTH - 7), a, ",")
            if (match($0, / pystack=[^ ]*/)) p = split(substr($0, RSTART + 9, RLENGTH - 9), b, ",")
            c[n " " p]++ }
        END { for (k in c) if (c[k] > best) { best = c[k]; mode = k } print mode }' > /tmp/pydeep.shape
    echo "pywalk $setup $(sed -n 's/^ns=//p' /tmp/pydeep.out) $(cat /tmp/pydeep.shape) $(stat_of lost_reported)" >> $res
}
if [ -x /usr/bin/python3.11 ]; then
    rep=0
    while [ $((rep += 1)) -le "$REPS" ]; do
        if [ $((rep % 2)) = 1 ]; then order="py-native py-python"; else order="py-python py-native"; fi
        for setup in $order; do pywalk $setup; done
    done
fi

# Reader throughput: a full buffer of READN fault events read and formatted at once.
unload
rep=0
while [ $((rep += 1)) -le "$REPS" ]; do
    insmod /memmon/memmon.ko buflen=67108864
    /progs/watchexec /progs/bench faults 1 "$READN" > /dev/null
    memmon_lps=$(/progs/bench read /proc/memmon/events | sed -n 's/.*lines_per_s=//p')
    rmmod memmon
    echo 65536 > $T/buffer_size_kb
    echo > $T/trace
    echo 1 > $T/events/exceptions/page_fault_user/enable
    sh -c "echo \$\$ > $T/set_event_pid; exec /progs/bench faults 1 $READN" > /dev/null
    echo 0 > $T/events/exceptions/page_fault_user/enable
    echo > $T/set_event_pid
    ftrace_lps=$(/progs/bench read $T/trace | sed -n 's/.*lines_per_s=//p')
    echo > $T/trace
    echo 1408 > $T/buffer_size_kb
    echo "reader memmon $memmon_lps 0" >> $res
    echo "reader ftrace $ftrace_lps 0" >> $res
done

# Latencies that functional tests bound only loosely (tests/vm/23, 29, 50), measured here
# with memmon loaded with no parameter: a lone event's wake-up of a reader sleeping in read,
# poll, select or epoll (LATN trials each: "latency wake-HOW US"), and the unwind store's
# writes while a reader lists /proc/memmon/unwind ("latency unwind-write-median US",
# "latency unwind-write-max US", one per repetition, and the same alone).
LATN=${LATN:-11}
load
for how in read poll select epoll; do
    i=0
    while [ $((i += 1)) -le "$LATN" ]; do
        us=$(/progs/readers wake-latency $how | tr ' ' '\n' | sed -n "s/^${how}_us=//p")
        [ -n "$us" ] && echo "latency wake-$how $us" >> $res
    done
done
rep=0
while [ $((rep += 1)) -le "$REPS" ]; do
    out=$(taskset 1 /progs/unwind-bounds listing 2000 8 4096 5 | tr ' ' '\n')
    for k in noop_reading_median_us noop_reading_max_us noop_alone_median_us noop_alone_max_us; do
        v=$(printf '%s\n' "$out" | sed -n "s/^$k=//p")
        [ -n "$v" ] && echo "latency unwind-$k $v" >> $res
    done
done
unload

# Access sampling: only with patches/0002 (not on a stock kernel).
[ -d $T/events/mm/mm_fault ] || REPS=0
# Access sampling: a process with SPAGES pages resident writes 10 % of them, a random set,
# once per 100 ms generation (sample_ms=100, synchronised on the generation counter), against
# the same with sampling off (sample_ms=0, 100 ms pauses); memmon loaded and the process
# watched in both, `cat` as the reader. "sampling on|off NS": ns per page written;
# "sampling-arm NS PAGES": arming time and pages armed per generation (stats).
rep=0
while [ $((rep += 1)) -le "$REPS" ]; do
    for s in off on; do
        if [ $s = on ]; then ms=100 mode=sync; else ms=0 mode=sleep; fi
        insmod /memmon/memmon.ko buflen=4194304 sample_ms=$ms
        cat /proc/memmon/events > /dev/null &
        reader=$!
        out=$(/progs/watchexec /progs/bench sample "$SPAGES" 10 "$SROUNDS" $mode)
        wait_drained
        kill $reader
        wait $reader 2>/dev/null
        echo "sampling $s $(printf '%s\n' "$out" | sed -n 's/^ns=\([0-9]*\).*/\1/p') $(stat_of lost_reported)" >> $res
        if [ $s = on ]; then
            g=$(stat_of generations)
            [ "$g" -gt 0 ] && echo "sampling-arm $(($(stat_of sample_arm_ns) / g)) $(($(stat_of sample_armed) / g))" >> $res
        fi
        rmmod memmon
    done
done

echo "=== results ==="
cat $res
