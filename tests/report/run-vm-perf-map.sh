#!/bin/sh
# Runs the perf-map scenario (vm-perf-map.sh) in the test VM; exit status 0 when it
# passes. Needs the kernel and module (make) and the static userspace binary.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
mkdir -p "$top/build/vm"
gcc -static -O1 -o "$top/build/vm/jit" "$top/userspace/memmon-cli/tests/fixtures/jit.c"
status=0
out=$("$top/scripts/vm-run" --timeout 300 \
    --add "$top/build/vm/jit:/host/jit" \
    --add "$here/vm-perf-map.sh:/host/vm-perf-map.sh" \
    -- sh /host/vm-perf-map.sh 2>&1) || status=$?
printf '%s\n' "$out"
[ "$status" -eq 0 ] || { echo "FAIL: the perf-map scenario exited with $status"; exit 1; }
printf '%s\n' "$out" | grep -q '^ok: perf map recorded, site jit_touch 64 KiB, 16 faults' || exit 1
