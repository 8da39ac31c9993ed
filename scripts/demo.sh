#!/usr/bin/env bash
# The demo behind `make run`: boot the patched kernel, load memmon, watch a workload and
# show its raw events and the module's counters; then record a second workload
# (tests/report/alloc_sites: keep_cache keeps 3 MiB, scratch churns 8 MiB, load_table
# maps a 1 MiB file, reheat pages 1 MiB out and back in) with `memmon record` and end with
# the answer the tool exists for: `memmon report` of it at its peak (the RSS tree, the top
# sites with function names and lines, temporary vs accumulating; the end in the header),
# and the same report as one HTML
# page written on the host, at a path it prints (build/vm/demo-report.html).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out="$top/build/vm/demo"
mkdir -p "$out/root/host" "$out/root/usr/bin"
# The workload, as tests/report/build.sh builds it (static, DWARF, frame pointers).
gcc -static -O1 -g -fno-omit-frame-pointer -o "$out/root/host/alloc_sites" "$top/tests/report/alloc_sites.c"
memmon="$top/userspace/target/x86_64-unknown-linux-gnu/release/memmon"
# The guest's output is shown as it comes, up to the capture (which goes to the host's
# report below).
set +e
"$top/scripts/vm-run" --timeout 300 --log "$top/build/vm/demo.kernel.log" \
    --add "$out/root/host/alloc_sites:/host/alloc_sites" -- '
set -e
echo "== booted: $(uname -sr), $(nproc) CPUs"
insmod /memmon/memmon.ko buflen=4194304
dmesg | grep "memmon:" | tail -n 1
echo "== /proc/memmon:"; ls -l /proc/memmon
echo "== workload, watched from its first instruction: memtest malloc (12 KiB malloc, then 4..256 KiB malloc/free)"
/progs/watchexec /progs/memtest malloc
echo "== its events, as /proc/memmon/events gives them (fault lines folded):"
/progs/drain > /tmp/events
grep -v " fault " /tmp/events | head -n 20
echo "   ... and $(grep -c " fault " /tmp/events) fault lines, e.g.:"
grep " fault " /tmp/events | head -n 5
echo "== fault lines by type and access:"
grep " fault " /tmp/events | awk "{ print \$4, \$5 }" | sort | uniq -c
echo "== /proc/memmon/stats:"; cat /proc/memmon/stats
echo "== which code holds the memory: memmon record -o /tmp/cap -- /host/alloc_sites, then memmon report /tmp/cap"
echo never > /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true
echo 64M > /sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null && swapon /dev/zram0
cd /tmp
# On one CPU: reheat() writes 1 MiB and pages it out with MADV_PAGEOUT, which pages out only
# what is on the LRU lists; a page written on another CPU just before the process moved sits
# in the LRU batch of that CPU, which madvise does not drain, and stays resident (7 of 8 pages
# written before a migration, in a guest here). On one CPU the whole MiB goes out and comes
# back as swap-ins.
taskset 1 memmon record --quiet -o /tmp/cap -- /host/alloc_sites 2>/tmp/record.err || { cat /tmp/record.err; exit 1; }
memmon report --top 5 /tmp/cap
rmmod memmon
dmesg | grep "memmon:" | tail -n 1
echo "=== capture ==="
cat /tmp/cap
' 2>&1 | sed -u 's/\r$//' | tee "$out/vm.out" | awk '/^=== capture ===$/ { hide = 1 } !hide { print; fflush() }'
status=${PIPESTATUS[0]}
set -e
[ "$status" -eq 0 ] || { echo "demo: the VM run failed ($status; kernel log: build/vm/demo.kernel.log)"; exit 1; }
sed '1,/^=== capture ===$/d' "$out/vm.out" > "$out/cap"
# The HTML page, on the host, with the guest's binaries under a sysroot.
cp "$memmon" "$out/root/usr/bin/memmon"
"$memmon" report --format html --no-debuginfod --sysroot "$out/root" -o "$top/build/vm/demo-report.html" "$out/cap"
echo "== the same report as one HTML page: $top/build/vm/demo-report.html (capture: $out/cap)"
