#!/usr/bin/env bash
# Benchmark of the module's cost on the fault path (not a test: it prints figures).
# In the VM, `memtest churn 20 5000` (100000 first-touch anonymous faults, with mmap and
# munmap around every 5000) runs 5 times in each of three set-ups:
#   unloaded   memmon not loaded: the fault hook's static key is off
#   unwatched  memmon loaded, the process not watched: one bitmap test per fault/syscall
#   watched    memmon loaded and the process watched: every fault and call is recorded
# and the median time per fault is printed. Under TCG absolute figures are those of an
# emulated CPU; compare the set-ups with each other. MEMMON_ACCEL=kvm for real hardware.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
exec "$top/scripts/vm-run" --log "$top/build/vm/bench.kernel.log" --timeout 600 -- '
per_fault() { # per_fault LABEL [watchexec]: median ns per fault of 5 runs
    for i in 1 2 3 4 5; do
        $2 /progs/memtest churn 20 5000 | awk -F= "/^elapsed_ns=/ { print int(\$2 / 100000) }"
    done | sort -n | sed -n 3p | awk -v l="$1" "{ printf \"%-10s %6d ns per fault (median of 5 x 100000 faults)\\n\", l, \$1 }"
}
per_fault unloaded
insmod /memmon/memmon.ko buflen=67108864
per_fault unwatched
per_fault watched /progs/watchexec
echo "events recorded: $(awk "\$1 == \"produced\" { print \$2 }" /proc/memmon/stats)"
rmmod memmon
'
