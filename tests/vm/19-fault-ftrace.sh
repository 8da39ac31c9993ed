# The same workloads seen by ftrace through the mm:mm_fault tracepoint (set_event_pid with
# event-fork, record-tgid, trace buffer) and by memmon: in every measured window, the same number of
# faults of each type, and as many as the kernel counted.
. /host/lib.sh
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs tracefs $T || fail "mount tracefs"
[ -d $T/events/mm/mm_fault ] || fail "no mm:mm_fault event"
echo 64M > /sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null && swapon /dev/zram0 || fail "swap"
echo 4 > /proc/sys/vm/nr_hugepages
echo madvise > /sys/kernel/mm/transparent_hugepage/enabled
echo 4096 > $T/buffer_size_kb
load buflen=16777216
echo 1 > $T/options/event-fork
# Lines then carry the thread group id too: "comm-TID (TGID) [cpu] ..."
echo 1 > $T/options/record-tgid
echo $$ > $T/set_event_pid
echo 1 > $T/events/mm/mm_fault/enable
echo 1 > $T/events/syscalls/sys_enter_fsync/enable
i=0
pids=""
for workload in "anon 300" "file /tmp/f 100" "swap 100" "race 1000" "hugetlb 2" "thp" "populate 50" "-f cow 50"; do
    i=$((i + 1))
    case $workload in
    -f*) run_measured /tmp/out$i /tmp/ev -f -- /progs/memtest ${workload#-f }
         pid=$(value_of child "$(cat /tmp/out$i)") ;;
    *) run_measured /tmp/out$i /tmp/ev -- /progs/memtest $workload
       pid=$(awk '$3 == "fsync" && $4 == "fd=1001" { split($2, ids, "/"); p = ids[1] } END { print p }' /tmp/ev) ;;
    esac
    pids="$pids $i:$pid"
done
echo 0 > $T/events/mm/mm_fault/enable
cat $T/trace > /tmp/ft
lost=$(grep -c 'LOST' /tmp/ft)
expect_eq "ftrace lost events" "$lost" 0
for entry in $pids; do
    i=${entry%%:*} pid=${entry#*:}
    window /tmp/ev "$pid" | awk '$3 == "fault" { sub(/^type=/, "", $4); n[$4]++ } END { for (t in n) print t, n[t] }' | sort > /tmp/mm
    awk -v pid="$pid" '
        { p = $0; sub(/^[^(]*\( */, "", p); sub(/\).*/, "", p) }
        p != pid { next }
        / sys_fsync\(fd: (0x)?3e9\)/ { inside = 1; next }
        / sys_fsync\(fd: (0x)?3ea\)/ { inside = 0; next }
        inside && / mm_fault: / { for (f = 1; f <= NF; f++) if ($f ~ /^type=/) { t = substr($f, 6); n[t]++ } }
        END { for (t in n) print t, n[t] }' /tmp/ft | sort > /tmp/ftc
    echo "workload $i (pid $pid): memmon $(tr '\n' ' ' < /tmp/mm)| ftrace $(tr '\n' ' ' < /tmp/ftc)"
    [ -s /tmp/mm ] || fail "workload $i: no fault lines"
    cmp -s /tmp/mm /tmp/ftc || fail "workload $i: memmon and ftrace differ"
    crosscheck "$(window /tmp/ev "$pid")" /tmp/out$i
done
unload
swapoff /dev/zram0
