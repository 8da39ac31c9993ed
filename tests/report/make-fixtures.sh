#!/bin/sh
# Records the fixture captures of `memmon report`'s tests in the test VM and writes them
# to userspace/memmon/tests/fixtures/. Needs the kernel and module built (make) and the
# static userspace binary (see userspace/README.md). The programs are the checked-in
# alloc_sites and alloc_sites5 (build.sh rebuilds them; the fixtures name their paths
# /host/alloc_sites and /host/alloc_sites5).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out="$top/userspace/memmon/tests/fixtures"
mkdir -p "$out"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$top/scripts/vm-run" --timeout 300 \
    --add "$here/alloc_sites:/host/alloc_sites" \
    --add "$here/alloc_sites5:/host/alloc_sites5" \
    --add "$here/guest-capture.sh:/host/guest-capture.sh" \
    -- sh /host/guest-capture.sh > "$tmp"
grep -q '^=== done' "$tmp" || { cat "$tmp"; echo "make-fixtures: the VM run failed" >&2; exit 1; }
for name in base grown late; do
    awk -v n="$name" '/^=== / { on = ($2 == n); next } on' "$tmp" | tr -d '\r' > "$out/$name.cap"
    echo "$out/$name.cap: $(wc -l < "$out/$name.cap") lines"
done
gzip -9nc "$here/alloc_sites" > "$out/alloc_sites.gz"
gzip -9nc "$here/alloc_sites5" > "$out/alloc_sites5.gz"
