# Runs in the test VM (see make-fixtures.sh): records the fixture captures and prints
# them, each after a line "=== NAME".
set -u
insmod /memmon/memmon.ko buflen=4194304 || { echo "FAIL: insmod"; exit 1; }
if [ -e /sys/module/memmon/parameters/stack_depth ]; then
    echo 16 > /sys/module/memmon/parameters/stack_depth
fi
# Without pages= in the stream (an older module), one file fault may map 16
# pages that the capture cannot count: turn fault-around off so that every page is one
# fault line. THP off so that the amounts are made of base pages.
mount -t debugfs none /sys/kernel/debug 2>/dev/null
if ! grep -q 'pages=' /memmon/memmon.ko 2>/dev/null; then
    echo 4096 > /sys/kernel/debug/fault_around_bytes || echo "note: fault_around_bytes not set"
fi
echo never > /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
echo 64M > /sys/block/zram0/disksize || { echo "FAIL: zram0"; exit 1; }
mkswap /dev/zram0 >/dev/null && swapon /dev/zram0 || { echo "FAIL: swapon"; exit 1; }
cd /tmp
memmon record -o /tmp/base.cap -- /host/alloc_sites || echo "FAIL: record base"
memmon record -o /tmp/grown.cap -- /host/alloc_sites5 || echo "FAIL: record grown"
# A capture that starts after the allocations.
/host/alloc_sites --wait /tmp/go > /tmp/ready 2>&1 &
p=$!
i=0
until grep -q ready /tmp/ready; do
    i=$((i + 1)); [ $i -lt 100 ] || { echo "FAIL: not ready"; exit 1; }
    sleep 0.1
done
memmon record -o /tmp/late.cap -p $p &
r=$!
sleep 1
touch /tmp/go
wait $p
wait $r
for f in base grown late; do
    echo "=== $f"
    cat /tmp/$f.cap
done
echo "=== done"
