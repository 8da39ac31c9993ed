#!/bin/sh
# Access sampling end to end: `memmon record --sample 100 --stacks 16` of tests/progs/access
# (4096 pages; hot_loop() writes pages 0..255 every generation, scan_once() reads 1024 others
# once, in its third generation) in the test VM, then `memmon report --access --cold 2` of
# the capture on the host, symbolized from build/progs: scan_once's 1024 pages are all cold,
# hot_loop touched 256 distinct pages in 5 generations (1280 accesses).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
bin="$top/userspace/target/x86_64-unknown-linux-gnu/release/memmon"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$top/scripts/vm-run" --timeout 300 -- '
    insmod /memmon/memmon.ko buflen=8388608 &&
    memmon record --quiet --sample 100 --stacks 16 -o /tmp/cap -- /progs/access gens 5 >/dev/null &&
    echo "=== capture ===" && cat /tmp/cap' > "$work/out"
sed -n '/^=== capture ===$/,$p' "$work/out" | tail -n +2 > "$work/cap"
mkdir -p "$work/root/progs"
cp "$top/build/progs/access" "$work/root/progs/"
"$bin" report --access --cold 2 --sysroot "$work/root" "$work/cap" > "$work/report"
sed -n '1,12p' "$work/report"
sites=$(sed -n '/^Sites that touch cold pages/,/^$/p' "$work/report")
printf '%s\n' "$sites" | grep -Eq '^ +1024 +1024 +1024 +1 +[0-9]+ +scan_once ' ||
    { echo "FAIL: scan_once did not touch 1024 cold pages once"; exit 1; }
printf '%s\n' "$sites" | grep -Eq '^ +256 +[0-9]+ +1280 +5 +[0-9-]+ +hot_loop ' ||
    { echo "FAIL: hot_loop did not touch 256 pages in 5 generations"; exit 1; }
echo "ok: scan_once 1024 cold pages, hot_loop 256 pages x 5 generations"
