# Every fault memmon records from user mode is one the CPU raised: ftrace's
# exceptions:page_fault_user (the x86 exception, upstream in every kernel) sees the same
# processes at the same time, and the user-mode fault lines of every watched process equal
# its exceptions one to one (address, ip, access from the error code), from when memmon
# watches it to its exit; the measured windows equal the kernel's rusage counts. Runs with
# whichever fault source the kernel has (mm_fault on the patched kernel, kprobes on
# Debian's: make check-stock), so it checks the kprobe source against the hardware's view.
. /host/lib.sh
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs tracefs $T || fail "mount tracefs"
echo 64M > /sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null && swapon /dev/zram0 || fail "swap"
echo 4 > /proc/sys/vm/nr_hugepages
echo madvise > /sys/kernel/mm/transparent_hugepage/enabled
echo 16384 > $T/buffer_size_kb
load buflen=16777216
echo "fault source: $(stat_of fault_source)"
echo 1 > $T/options/event-fork
echo 1 > $T/options/record-tgid
echo $$ > $T/set_event_pid
echo 1 > $T/events/exceptions/page_fault_user/enable
echo 1 > $T/events/sched/sched_process_fork/enable
echo 1 > $T/events/syscalls/sys_exit_write/enable
i=0
for workload in "anon 300" "file /tmp/f 100" "swap 100" "race 1000" "hugetlb 2" "thp" \
        "populate 50" "cow 50" "exec /tmp/x" "malloc" "threads 4 200"; do
    i=$((i + 1))
    # Watched, with its children, from its own write to watch-pids: the first write() that
    # process makes, so that ftrace sees where watching starts (its return).
    sh -c 'echo +$$ > /proc/memmon/watch-pids && exec "$@"' sh /progs/memtest $workload \
        > /tmp/out$i || fail "memtest $workload exited with $?"
    # A new reader gets what the ring holds: every workload so far; this one's marker is last.
    /progs/drain > /tmp/all || fail "drain"
    pid=$(awk '$3 == "fsync" && $4 == "fd=1001" { split($2, ids, "/"); p = ids[1] } END { print p }' /tmp/all)
    [ -n "$pid" ] || fail "workload $i ($workload): no marker"
    w=$(window /tmp/all "$pid")
    echo "workload $i ($workload): $(printf '%s\n' "$w" | awk '$3 == "fault" { n[$4]++ } END { for (t in n) printf "%s:%d ", t, n[t] }')"
    crosscheck "$w" /tmp/out$i
done
echo 0 > $T/events/exceptions/page_fault_user/enable
cat $T/trace > /tmp/ft
expect_eq "ftrace lost events" "$(grep -c LOST /tmp/ft)" 0
expect_eq "lost lines" "$(grep -c ' lost ' /tmp/all)" 0
expect_eq "fault_missed" "$(stat_of fault_missed)" 0
# memmon: the user-mode fault lines (no user=0), as "pid addr ip access".
awk '$3 == "fault" && !/ user=0/ {
        split($2, ids, "/")
        for (i = 4; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
        print ids[1], f["addr"], f["ip"], f["access"]
    }' /tmp/all | sort > /tmp/mm
# ftrace: each watched process's exceptions from when memmon watches it: from the return of
# its first write() (to watch-pids), or from its fork by a watched process. Error code: 2
# write, 16 instruction fetch. Only the processes memmon watched.
awk '{ print $1 }' /tmp/mm | sort -u > /tmp/pids
awk '
    function hex(s,   n, i) { n = 0; s = tolower(s); sub(/^0x/, "", s); for (i = 1; i <= length(s); i++) n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return n }
    NR == FNR { watched[$1] = 1; next }
    { p = $0; sub(/^[^(]*\( */, "", p); sub(/\).*/, "", p) }
    !watched[p] { next }
    / sys_write -> / { started[p] = 1; next }
    / sched_process_fork: / {
        if (started[p]) for (i = 1; i <= NF; i++) if ($i ~ /^child_pid=/) started[substr($i, 11)] = 1
        next
    }
    !/ page_fault_user: / || !started[p] { next }
    {
        for (i = 1; i <= NF; i++) if ($i ~ /=/) { split($i, kv, "="); f[kv[1]] = kv[2] }
        e = hex(f["error_code"])
        a = (int(e / 2) % 2) ? "W" : (int(e / 16) % 2) ? "X" : "R"
        printf "%s %s %s %s\n", p, f["address"], f["ip"], a
    }' /tmp/pids /tmp/ft | sort > /tmp/ftw
echo "user-mode faults: memmon $(wc -l < /tmp/mm), exceptions $(wc -l < /tmp/ftw), processes $(wc -l < /tmp/pids)"
[ "$(wc -l < /tmp/mm)" -gt 2000 ] || fail "too few faults compared"
if ! cmp -s /tmp/ftw /tmp/mm; then
    diff /tmp/ftw /tmp/mm | head -n 40
    p1=$(diff /tmp/ftw /tmp/mm | awk '/^[-+][0-9]/ { print substr($1, 2); exit }')
    echo "ftrace lines of $p1:"; grep "( *$p1)" /tmp/ft | head -n 30
    echo "memmon lines of $p1:"; grep " $p1/" /tmp/all | head -n 20
    fail "memmon's user-mode faults differ from exceptions:page_fault_user ($(diff /tmp/ftw /tmp/mm | grep -c '^[<>]') lines)"
fi
echo "ok: every user-mode fault line is one exception"
unload
swapoff /dev/zram0
