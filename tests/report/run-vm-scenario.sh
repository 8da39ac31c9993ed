#!/bin/sh
# Runs the report scenario (vm-report.sh) in the test VM; exit status 0 when it passes.
# Needs the kernel and module (make) and the static userspace binary.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
[ -x "$here/alloc_sites" ] || "$here/build.sh"
# The guest's output is printed whatever its status, so that a failure shows why.
status=0
out=$("$top/scripts/vm-run" --timeout 300 \
    --add "$here/alloc_sites:/host/alloc_sites" \
    --add "$here/vm-report.sh:/host/vm-report.sh" \
    -- sh /host/vm-report.sh 2>&1) || status=$?
printf '%s\n' "$out"
[ "$status" -eq 0 ] || { echo "FAIL: the report scenario exited with $status"; exit 1; }
printf '%s\n' "$out" | grep -q '^ok: record, report, top sites scratch at the peak and keep_cache at the end$' || exit 1
