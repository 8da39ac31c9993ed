# The state at start, exactly (issue 51): a process already holds anonymous memory (written,
# 256 pages of it swapped out, and a mapping it only read: the shared zero page, mapped, not
# resident), a file's pages (on ramfs: RssFile) and a heap (brk) when `memmon record -p`
# attaches. The report at a mark written then counts all of it, as the site "[resident
# before memmon started]", equal to the kernel's own accounting to the page: smaps_rollup's
# Rss and Anonymous, the status's RssShmem (the program's own pages: the initramfs is tmpfs)
# and the rest as file, VmSwap; and by class, smaps' Rss of the heap, of the anonymous
# mappings, of the stack and of the data file. The process then frees half of each (unmaps
# half its anonymous mapping with half the swapped pages, and half the file's mapping;
# shrinks the heap by half): the report at a second mark, and at the end (its exit), equals
# the kernel's figures again, read just before. The module with no parameter (the defaults).
. /host/lib.sh
wait_seconds=120
echo 64M > /sys/block/zram0/disksize || fail "zram0"
mkswap /dev/zram0 >/dev/null && swapon /dev/zram0 || fail "swapon"
load
dir=/mnt/ramfs
mkdir -p $dir && mount -t ramfs ramfs $dir || fail "mount ramfs"

# kernel_state NAME: the kernel's figures of the workload now, as "KEY BYTES" lines in
# /tmp/state.NAME: rss and anon (smaps_rollup's Rss and Anonymous), shmem and swap (status's
# RssShmem and VmSwap), file (the rest of Rss), and smaps' Rss of the heap, the anonymous
# mappings, the stack and the data file.
kernel_state() {
    {
        awk '$1 == "Rss:" { print "rss", $2 * 1024 } $1 == "Anonymous:" { print "anon", $2 * 1024 }' \
            /proc/$pid/smaps_rollup
        awk '$1 == "RssShmem:" { print "shmem", $2 * 1024 } $1 == "VmSwap:" { print "swap", $2 * 1024 }' \
            /proc/$pid/status
        awk -v data=$dir/resident.data '
            /^[0-9a-f]+-[0-9a-f]+ / {
                class = ""
                if ($6 == "[heap]") class = "heap"
                else if ($6 == "[stack]") class = "stack"
                else if ($6 == data) class = "data"
                else if (NF == 5 && substr($2, 4, 1) == "p") class = "anon_mmap"
                next
            }
            $1 == "Rss:" && class != "" { sum[class] += $2 * 1024 }
            END { for (c in sum) print c, sum[c] }' /proc/$pid/smaps
    } > /tmp/state.$1
    rss=$(state_of $1 rss) anon=$(state_of $1 anon) shmem=$(state_of $1 shmem)
    echo "file $((rss - anon - shmem))" >> /tmp/state.$1
    echo "== the kernel's figures, $1:"
    cat /tmp/state.$1
}

# state_of NAME KEY: a figure kernel_state read
state_of() {
    awk -v k="$2" '$1 == k { print $2 }' /tmp/state.$1
}

# json_total JSON KIND: the report's total of KIND (anon, file, shmem, swap) at its moment
json_total() {
    awk -v k="\"$2\":" '
        /^  "totals": \{/ { on = 1; next }
        on && /^  \}/ { exit }
        on && $1 == k { gsub(/[^0-9]/, "", $2); print $2; exit }' "$1"
}

# json_class JSON KIND LABEL: the resident bytes of the RSS tree's row of KIND and LABEL
json_class() {
    awk -v kind="$2" -v label="$3" '
        /^  "tree": \[/ { on = 1; next }
        on && /^  \]/ { exit }
        on && $1 == "\"kind\":" { k = $2; gsub(/[",]/, "", k) }
        on && $1 == "\"label\":" { l = $0; sub(/^ *"label": "/, "", l); sub(/",?$/, "", l) }
        on && $1 == "\"resident\":" && k == kind && l == label { r = $2; gsub(/[^0-9]/, "", r); s += r }
        END { print s + 0 }' "$1"
}

# json_value JSON KEY: the first number of KEY in the report
json_value() {
    awk -v k="\"$2\":" '$1 == k { gsub(/[^0-9]/, "", $2); print $2; exit }' "$1"
}

# check_report NAME AT: the report at AT (a mark, or end) equals kernel_state NAME
check_report() {
    memmon report --at "$2" /tmp/resident.cap > /tmp/report.$1.txt 2>&1 ||
        { cat /tmp/report.$1.txt; fail "memmon report --at $2"; }
    memmon report --format json --at "$2" /tmp/resident.cap > /tmp/report.$1.json ||
        fail "memmon report --format json --at $2"
    echo "== the report at $2:"
    sed -n '1,/^Top sites by resident bytes/p' /tmp/report.$1.txt
    json=/tmp/report.$1.json
    for kind in anon file shmem swap; do
        expect_eq "$1, at $2: $kind bytes" "$(json_total $json $kind)" "$(state_of $1 $kind)"
    done
    expect_eq "$1, at $2: resident bytes = Rss" \
        "$(($(json_total $json anon) + $(json_total $json file) + $(json_total $json shmem)))" \
        "$(state_of $1 rss)"
    expect_eq "$1, at $2: heap (brk)" "$(json_class $json anon 'heap (brk)')" "$(state_of $1 heap)"
    expect_eq "$1, at $2: anonymous mmap" "$(json_class $json anon 'anonymous mmap')" \
        "$(state_of $1 anon_mmap)"
    expect_eq "$1, at $2: stacks" "$(json_class $json anon stacks)" "$(state_of $1 stack)"
    expect_eq "$1, at $2: the data file" "$(json_class $json file $dir/resident.data)" \
        "$(state_of $1 data)"
    # The model and the process's counters (the status snapshots at the marks, the rss
    # line at exit) agree: no warning.
    reconciliation=$(sed -n '/^Reconciliation/,/^$/p' /tmp/report.$1.txt)
    printf '%s\n' "$reconciliation"
    printf '%s\n' "$reconciliation" | grep -q '^  ok: ' || fail "$1: no reconciliation"
    printf '%s\n' "$reconciliation" | grep -v '^Reconciliation' | grep -v '^  ok: ' | grep -q . &&
        fail "$1: the reconciliation warns"
}

/progs/resident 2560 1280 1536 256 $dir > /tmp/resident.out 2>&1 &
pid=$!
wait_until "the workload's memory" grep -q '^ready' /tmp/resident.out
cat /tmp/resident.out
memmon record -o /tmp/resident.cap -p $pid > /tmp/record.out 2> /tmp/record.err &
rec=$!
wait_until "record's start snapshots" grep -q "^# snapshot status $pid .* start" /tmp/resident.cap
grep "^# snapshot pages $pid " /tmp/resident.cap || fail "no pages snapshot"
sed -n "/^# snapshot pages $pid /,/^# snapshot status/p" /tmp/resident.cap | head -n 40
# marked N: record has written the status snapshots of N marks (taken when it reads a mark:
# the process must not change before)
marked() {
    [ "$(grep -c "^# snapshot status $pid .* mark" /tmp/resident.cap)" -ge "$1" ]
}
kernel_state attached
echo attached > /proc/memmon/marker
wait_until "the first mark's snapshots" marked 1
touch $dir/go1
wait_until "the frees" grep -q '^freed' /tmp/resident.out
kernel_state freed
echo freed > /proc/memmon/marker
wait_until "the second mark's snapshots" marked 2
touch $dir/go2
wait $rec || fail "memmon record: exit $? ($(cat /tmp/record.err))"
cat /tmp/record.err
wait $pid

# The swapped pages, the zero pages and half of each were there to count.
[ "$(state_of attached swap)" = $((256 * 4096)) ] || fail "not 256 pages swapped out: the zram swap"
[ "$(state_of freed swap)" = $((128 * 4096)) ] || fail "the swapped pages unmapped stayed counted"

check_report attached attached
# At the attach, everything resident is the process's own from before.
expect_eq "attached: resident before memmon started" \
    "$(json_value /tmp/report.attached.json before_start)" "$(state_of attached rss)"
grep -q "was resident before memmon started" /tmp/report.attached.txt ||
    fail "the report does not say what was resident before memmon started"
check_report freed freed
check_report freed end
grep -q "resident before memmon started" /tmp/record.err ||
    fail "record's summary does not say what was resident before memmon started"
swapoff /dev/zram0
unload
