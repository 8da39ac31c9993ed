# Shared helpers of the VM scenarios (sourced by each tests/vm/*.sh, in the guest's busybox sh).
set -u

fail() {
    echo "FAIL: $*"
    exit 1
}

# expect_eq WHAT GOT WANT
expect_eq() {
    [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
    echo "ok: $1 = $3"
}

# expect_match WHAT TEXT REGEX (grep -E)
expect_match() {
    printf '%s\n' "$2" | grep -Eq -- "$3" || fail "$1: '$2' does not match /$3/"
    echo "ok: $1 matches /$3/"
}

# Module parameters for every load from a kernel command line word memmon_load=P1,P2
# (scripts/check-debug.sh's MEMMON_DEBUG_APPEND): e.g. memmon_load=fault_kprobes=1 runs the
# scenarios on the ftrace-hook fault source of a kernel that has the tracepoint.
load_extra=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^memmon_load=//p' | tr , ' ')

# load [PARAMS...]: insmod the module, fail loudly if it does not load
load() {
    # shellcheck disable=SC2086 # the extra parameters are words
    insmod /memmon/memmon.ko "$@" $load_extra || fail "insmod memmon.ko $* $load_extra: exit $?"
}

unload() {
    rmmod memmon || fail "rmmod memmon: exit $?"
}

# kmsg_mark: remember where the kernel log ends now, for kmsg_new
kmsg_mark() {
    kmsg_mark_lines=$(dmesg | wc -l)
}

# kmsg_new: the memmon lines the kernel logged since kmsg_mark. Other kernel messages (the
# clocksource's, for one) arrive at any time, so "the last line of dmesg" is not memmon's.
kmsg_new() {
    dmesg | tail -n +$((kmsg_mark_lines + 1)) | grep 'memmon:'
}

# write_table_of_arch ARCH: writes to /proc/memmon/unwind, in one write, an ADD_TABLE of one
# row (the end marker at 0x1000) under the key 0xaa x 16, for architecture ARCH (0 x86_64, 1
# arm64); dd's status.
write_table_of_arch() {
    k='\252\252\252\252\252\252\252\252\252\252\252\252\252\252\252\252'
    printf "MMUW\001\000\001\000\060\000\000\000\000\000\000\000$k\001\000\000\000\00$1\000\000\000\000\020\000\000\000\000\003\000" > /tmp/table-of-arch
    [ "$(wc -c < /tmp/table-of-arch)" -eq 48 ] || fail "the table of architecture $1 is not 48 bytes"
    dd if=/tmp/table-of-arch of=/proc/memmon/unwind bs=48 count=1 2>/dev/null
}

# stat_of NAME: one counter of /proc/memmon/stats
stat_of() {
    awk -v k="$1" '$1 == k { print $2 }' /proc/memmon/stats
}

# metric SERIES: its value in the agent's metrics file $m (SERIES as written there, labels
# included)
metric() {
    awk -v k="$1" '$1 == k { print $2 }' "$m"
}

# metric_is SERIES VALUE: the series has that value now (read at each call)
metric_is() {
    [ "$(metric "$1")" = "$2" ]
}

# window FILE PID: the events of PID between its markers fsync(1001) and fsync(1002)
window() {
    awk -v pid="$2" '
        { split($2, ids, "/") }
        ids[1] != pid { next }
        $3 == "fsync" && $4 == "fd=1001" { inside = 1; next }
        $3 == "fsync" && $4 == "fd=1002" { inside = 0; next }
        inside' "$1"
}

# count_lines TEXT: number of non-empty lines
count_lines() {
    printf '%s' "$1" | grep -c .
}

# wait_until WHAT COMMAND...: run COMMAND every 0.1 s until it succeeds, for at most
# $wait_seconds s (default 10; the agent's scenarios set more, TCG being slow). On a timeout
# it runs on_wait_timeout where the scenario defines one (to print what it waited on), and
# fails.
wait_until() {
    what=$1
    shift
    i=0
    until "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -ge $((${wait_seconds:-10} * 10)) ]; then
            ! type on_wait_timeout >/dev/null 2>&1 || on_wait_timeout
            fail "timed out waiting for $what"
        fi
        sleep 0.1
    done
}

# has_events_open PID: process PID has /proc/memmon/events open
has_events_open() {
    ls -l "/proc/$1/fd" 2>/dev/null | grep -q 'memmon/events'
}

# value_of KEY OUTPUT: the value of KEY=... in a program's key=value output
value_of() {
    printf '%s\n' "$2" | sed -n "s/^$1=//p" | head -n 1
}

# pid_of_run FILE: the pid that memmon saw run the workload (first fsync fd=1001 line)
pid_of_run() {
    awk '$3 == "fsync" && $4 == "fd=1001" { split($2, ids, "/"); print ids[1]; exit }' "$1"
}

# run_measured OUT EVENTS [watchexec options] -- PROG ARGS...: run PROG watched, save its
# stdout in OUT and every event the ring holds afterwards in EVENTS
run_measured() {
    out=$1 events=$2 opts=""
    shift 2
    while [ "$1" != "--" ]; do opts="$opts $1"; shift; done
    shift
    /progs/watchexec $opts "$@" >"$out" || fail "$* exited with $?"
    /progs/drain >"$events" || fail "drain failed"
}

# field KEY: from event lines on stdin, the value of KEY=
field() {
    awk -v k="$1=" '{ for (i = 4; i <= NF; i++) if (index($i, k) == 1) print substr($i, length(k) + 1) }'
}

# crosscheck WINDOW OUT: the fault lines of a window, and those of them marked major=1,
# equal the kernel's own counts that the program printed in OUT (faults=, major_faults=)
crosscheck() {
    expect_eq "fault lines = kernel's minor+major faults" \
        "$(printf '%s\n' "$1" | grep -c ' fault ')" "$(value_of faults "$(cat "$2")")"
    expect_eq "major=1 lines = kernel's major faults" \
        "$(printf '%s\n' "$1" | grep -c ' fault .* major=1')" "$(value_of major_faults "$(cat "$2")")"
}

# check_expected OUT EVENTS PID: every "expect LINE" of a program's output OUT appears, in
# order, as the tail of an event line of process PID in EVENTS from its marker fsync(1001)
# on (with "expect-tid TID LINE", of thread TID); the lines' dur= is left out
check_expected() {
    awk -v pid="$3" '
        FNR == NR {
            if ($1 == "expect") { sub(/^expect /, ""); want[++n] = $0; tid[n] = "" }
            else if ($1 == "expect-tid") { t = $2; sub(/^expect-tid [0-9]+ /, ""); want[++n] = $0; tid[n] = t }
            next
        }
        {
            split($2, ids, "/")
            if (ids[1] != pid) next
            if ($3 == "fsync" && $4 == "fd=1001") started = 1
            if (!started) next
            line = $0; sub(/^[^ ]+ [^ ]+ /, "", line); sub(/ dur=[0-9]+/, "", line)
            for (i = 1; i <= n; i++)
                if (!seen[i] && line == want[i] && (tid[i] == "" || tid[i] == ids[2])) { seen[i] = NR; break }
            if (i <= n && tid[i] == "") {
                if (i < maxi) { print "out of order: " line; bad++ }
                if (i > maxi) maxi = i
            }
        }
        END {
            for (i = 1; i <= n; i++) if (!seen[i]) { print "missing: " want[i] (tid[i] ? " (tid " tid[i] ")" : ""); bad++ }
            printf "%d expected lines, %d found\n", n, n - bad
            exit bad > 0
        }' "$1" "$2"
}

# pages_sum TEXT: the pages the fault lines of TEXT mapped (pages=N, 1 when absent)
pages_sum() {
    printf '%s\n' "$1" | awk '$3 == "fault" { n = 1; for (i = 4; i <= NF; i++) if ($i ~ /^pages=/) n = substr($i, 7); s += n } END { print s + 0 }'
}

# report_capture NAME: `memmon report` of /tmp/NAME.cap, no option, as text (/tmp/NAME.txt)
# and JSON (/tmp/NAME.json); prints the recording's summary (/tmp/NAME.err, memmon record's
# stderr) and the report's lines up to its RSS tree; the first table's rows in /tmp/NAME.first
report_capture() {
    memmon report "/tmp/$1.cap" > "/tmp/$1.txt" 2> "/tmp/$1.report-err" ||
        { cat "/tmp/$1.report-err"; fail "memmon report of $1"; }
    memmon report --format json "/tmp/$1.cap" > "/tmp/$1.json" || fail "json report of $1"
    echo "== $1: record's summary and the report's first lines"
    cat "/tmp/$1.err"
    sed -n '1,/^RSS tree/p' "/tmp/$1.txt"
    first_table "/tmp/$1.txt" > "/tmp/$1.first"
}

# whole NAME: the capture /tmp/NAME.cap lost nothing: no lost or dropped line, no stack
# shed, and its report (/tmp/NAME.txt) does not say it is incomplete
whole() {
    expect_eq "$1: lost lines" "$(grep -c ' lost count=' "/tmp/$1.cap")" 0
    expect_eq "$1: dropped lines" "$(grep -c ' dropped faults=' "/tmp/$1.cap")" 0
    expect_eq "$1: stacks shed" "$(grep -c 'stack_end=shed' "/tmp/$1.cap")" 0
    grep -q '^incomplete:' "/tmp/$1.txt" && fail "$1: the report says it is incomplete"
    true
}

# first_table FILE: the rows of the report's "Your code" table (after its header line)
first_table() {
    awk '/^Your code:/ { on = 1; getline; next } on && /^$/ { exit } on' "$1"
}

# row_bytes JSON FUNCTION: the resident bytes of FUNCTION's row of "Your code", exact
row_bytes() {
    awk -v want="\"function\": \"$2\"," '
        /"your_code":/ { code = 1 }
        code && index($0, want) { found = 1; next }
        found && /"resident":/ { gsub(/[^0-9]/, ""); print; exit }' "$1"
}

# start_blocked_readers WHAT: one reader of the events file waiting in each of read, poll,
# select and epoll until the file ends (/progs/readers until-end HOW > /tmp/reader.HOW),
# their pids in $pids, returning once each has the file open
start_blocked_readers() {
    pids=""
    for how in read poll select epoll; do
        /progs/readers until-end $how > /tmp/reader.$how &
        pids="$pids $!"
    done
    for p in $pids; do
        wait_until "$1: reader $p to open the events file" has_events_open $p
    done
}

# readers_ended_by_rmmod WHAT: after rmmod, each reader of start_blocked_readers has ended
# within 10 s, exited 0, and printed its count and an end of file (eof or eio)
readers_ended_by_rmmod() {
    for p in $pids; do
        timeout 10 sh -c "while kill -0 $p 2>/dev/null; do sleep 0.05; done" ||
            fail "$1: reader $p did not end after rmmod"
        wait $p || fail "$1: reader $p exited with $?"
    done
    for how in read poll select epoll; do
        grep -Eq "^$how: events=[0-9]+ lost=[0-9]+ end=(eof|eio)$" /tmp/reader.$how ||
            fail "$1: the $how reader printed '$(cat /tmp/reader.$how)'"
    done
}
