#!/usr/bin/env bash
# Shows, without memmon, the emulator fault behind tests/stress/10's `vm-accel` line: in
# QEMU's multi-threaded TCG, live patching of kernel text that another vCPU is executing
# can leave that vCPU running the old bytes. Here ftrace's function tracer is turned on and
# off on __x64_sys_munmap and __x64_sys_mmap while a 2-thread mmap/munmap storm runs; each
# switch patches the two fentry sites through an int3 (smp_text_poke_batch_finish()). On
# real CPUs and under single-threaded TCG the guest survives; under multi-threaded TCG it
# takes an "Oops: int3" at __x64_sys_munmap+0x5 within seconds: a vCPU executed an int3
# the patching had already removed and no longer handles.
#
#   scripts/tcg-text-poke-race.sh [SWITCHES] [ACCEL]   (defaults 2000, tcg)
#   e.g. scripts/tcg-text-poke-race.sh 2000 tcg,thread=single
# Prints how many switches the guest survived; exits 0 if it survived them all.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
switches=${1:-2000}
accel=${2:-tcg}
log="$top/build/vm/tcg-text-poke-race.kernel.log"
mkdir -p "$top/build/vm"
guest='
mount -t tracefs none /sys/kernel/tracing 2>/dev/null
cd /sys/kernel/tracing
echo 0 > tracing_on
/progs/stress storm 2 100000 > /dev/null &
echo "__x64_sys_munmap __x64_sys_mmap" > set_ftrace_filter
i=1
while [ $i -le '"$switches"' ]; do
    echo function > current_tracer
    echo nop > current_tracer
    [ $((i % 10)) -eq 0 ] && echo "tcg-text-poke-race: switched $i" > /dev/kmsg
    i=$((i + 1))
done
echo "survived '"$switches"' switches"
'
set +e
out=$(MEMMON_ACCEL=$accel "$top/scripts/vm-run" --timeout 3000 --log "$log" -- "$guest" 2>&1)
status=$?
set -e
if [ $status -eq 0 ] && ! grep -q "Oops" "$log"; then
    echo "accel=$accel: $(printf '%s\n' "$out" | tail -1), no Oops"
    exit 0
fi
done=$(grep -o 'tcg-text-poke-race: switched [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
echo "accel=$accel: the guest died after ${done:-0} to $((${done:-0} + 10)) switches:" \
    "$(grep -m1 'Oops' "$log" | sed 's/^\[[ 0-9.]*\] //') at $(grep -m1 'RIP:' "$log" | sed 's/.*RIP: [0-9]*://'); kernel log: $log"
exit 1
