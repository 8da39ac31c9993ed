#!/usr/bin/env bash
# `memmon record --symbolize` on the record machine, `memmon report` on one without the
# binaries: the test VM records tests/report/alloc_sites with --symbolize; the host
# reports the capture with an empty sysroot (no binary, no debug file, no debuginfod)
# and must name the top sites with their lines from the capture's `# symbol` lines, as
# the guest's own report does. The control: the capture without those lines gives
# offsets. Needs the kernel and module (make) and the static userspace binary.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out="$top/build/vm/symbolize"
memmon="$top/userspace/target/x86_64-unknown-linux-gnu/release/memmon"
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$out" && mkdir -p "$out/empty"
gcc -static -O1 -g -fno-omit-frame-pointer -o "$out/alloc_sites" "$here/alloc_sites.c"
"$top/scripts/vm-run" --timeout 300 --add "$out/alloc_sites:/host/alloc_sites" -- '
set -e
insmod /memmon/memmon.ko buflen=4194304
echo never > /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true
echo 64M > /sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null && swapon /dev/zram0
cd /tmp
memmon record --quiet --symbolize -o /tmp/cap -- /host/alloc_sites 2>/tmp/record.err || { cat /tmp/record.err; exit 1; }
cat /tmp/record.err
memmon report --top 3 /tmp/cap > /tmp/report
echo "=== guest report ==="; cat /tmp/report
echo "=== capture ==="; cat /tmp/cap
' > "$out/vm.out" 2>&1 || { cat "$out/vm.out"; fail "the VM run failed"; }
tr -d '\r' < "$out/vm.out" > "$out/vm.txt"
grep -E '^memmon: [0-9]+ frames symbolised into /tmp/cap$' "$out/vm.txt" || fail "no symbolise line: $(head -20 "$out/vm.txt")"
sed -n '/^=== guest report ===$/,/^=== capture ===$/p' "$out/vm.txt" | sed '1d;$d' > "$out/guest.report"
sed '1,/^=== capture ===$/d' "$out/vm.txt" > "$out/cap"
n=$(grep -c '^# symbol ' "$out/cap")
echo "capture: $(wc -l < "$out/cap") lines, $n '# symbol' lines"
# top NAME FILE: the rows of the resident table
top_rows() { awk '/^Top sites by resident bytes/ { on = 1; getline; next } on && NF == 0 { exit } on' "$1"; }
"$memmon" report --top 3 --no-debuginfod --sysroot "$out/empty" "$out/cap" > "$out/host.report"
top_rows "$out/guest.report" > "$out/guest.top"
top_rows "$out/host.report" > "$out/host.top"
cat "$out/host.top"
diff "$out/guest.top" "$out/host.top" || fail "the host's report (names from the capture) differs from the guest's"
grep -Eq '^ +3\.0 MiB +3\.0 MiB +0 B +accumulating +keep_cache < main .*alloc_sites\.c:63\)$' "$out/host.top" || fail "keep_cache row"
grep -q 'note: /host/alloc_sites' "$out/host.report" && fail "a note about /host/alloc_sites: names were taken from the capture"
# The control: without the stored names, offsets.
grep -v '^# symbol ' "$out/cap" > "$out/cap.plain"
"$memmon" report --top 3 --no-debuginfod --sysroot "$out/empty" "$out/cap.plain" > "$out/plain.report"
top_rows "$out/plain.report" | head -n 1 | grep -q 'alloc_sites+0x' || fail "the control named the sites: $(top_rows "$out/plain.report")"
echo "ok: record --symbolize: $n names stored; the host names keep_cache (alloc_sites.c:63) without the binary"
