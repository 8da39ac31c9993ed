#!/usr/bin/env bash
# The demo behind `make run`: boot the patched kernel, load memmon, watch a workload, show
# its events decoded (when the userspace tool is built) and raw, and the module's counters.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
exec "$top/scripts/vm-run" --log "$top/build/vm/demo.kernel.log" -- '
set -e
echo "== booted: $(uname -sr), $(nproc) CPUs"
insmod /memmon/memmon.ko buflen=1048576
dmesg | grep "memmon:" | tail -n 1
echo "== /proc/memmon:"; ls -l /proc/memmon
echo "== workload, watched from its first instruction: memtest malloc (12 KiB malloc, then 4..256 KiB malloc/free)"
/progs/watchexec /progs/memtest malloc
echo "== its events, as /proc/memmon/events gives them (fault lines folded):"
/progs/drain > /tmp/events
grep -v " fault " /tmp/events | head -n 40
echo "   ... and $(grep -c " fault " /tmp/events) fault lines, e.g.:"
grep " fault " /tmp/events | head -n 5
echo "== fault lines by type and access:"
grep " fault " /tmp/events | awk "{ print \$4, \$5 }" | sort | uniq -c
if command -v memmon >/dev/null; then
    echo "== decoded by the userspace tool (memmon tail --input):"
    memmon tail --input /tmp/events 2>&1 | head -n 20 || true
fi
echo "== /proc/memmon/stats:"; cat /proc/memmon/stats
rmmod memmon
dmesg | grep "memmon:" | tail -n 1
'
