# VM scenario (run by tests/report/run-vm-scenario.sh): record the fixture program, report
# on the capture inside the guest, check that the top sites and their bytes are right at
# the peak and at the end and that `memmon record` printed its summary. Sourced into the
# guest's busybox sh.
set -u
fail() { echo "FAIL: $*"; exit 1; }
insmod /memmon/memmon.ko buflen=4194304 || fail "insmod"
if [ -e /sys/module/memmon/parameters/stack_depth ]; then
    echo 16 > /sys/module/memmon/parameters/stack_depth
fi
mount -t debugfs none /sys/kernel/debug 2>/dev/null
echo never > /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
echo 64M > /sys/block/zram0/disksize || fail "zram0"
mkswap /dev/zram0 >/dev/null && swapon /dev/zram0 || fail "swapon"
cd /tmp
memmon record -o /tmp/cap -- /host/alloc_sites 2>/tmp/summary || fail "record: $(cat /tmp/summary)"
cat /tmp/summary
grep -q '^memmon: summary: ' /tmp/summary || fail "no summary"
grep -q 'keep_cache' /tmp/summary || fail "keep_cache not in the summary"
memmon report --top 5 /tmp/cap > /tmp/report || fail "report"
cat /tmp/report
# At the peak (the default): scratch's 8 MiB, before it freed them, then keep_cache's 3 MiB;
# the header says so, and what the end was.
sed -n 2p /tmp/report | grep -Eq '^at the peak, [0-9.]+ m?s: resident .*; at the end: [0-9.]+ MiB \(--at end\)$' ||
    fail "the moment's line: $(sed -n 2p /tmp/report)"
rows=$(awk '/^Top sites by resident bytes/ { getline; getline; print; getline; print; exit }' /tmp/report)
echo "$rows" | head -n 1 | grep -Eq '^ +8\.0 MiB .* temporary +scratch' || fail "top site: $rows"
echo "$rows" | tail -n 1 | grep -Eq '^ +3\.0 MiB .* accumulating +keep_cache' || fail "second site: $rows"
# At the end: keep_cache first.
memmon report --top 5 --at end /tmp/cap > /tmp/report-end || fail "report --at end"
first=$(awk '/^Top sites by resident bytes/ { getline; getline; print; exit }' /tmp/report-end)
echo "$first" | grep -Eq '^ +3\.0 MiB .* accumulating +keep_cache' || fail "top site at the end: $first"
grep -q 'warning:' /tmp/report && fail "reconciliation warning"
memmon run --quiet -- /host/alloc_sites > /tmp/run.out 2>/tmp/run.err || fail "run"
grep -q 'memmon: summary' /tmp/run.err && fail "--quiet printed a summary"
echo "ok: record, report, top sites scratch at the peak and keep_cache at the end"
