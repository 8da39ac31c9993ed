#!/usr/bin/env bash
# Shows, without memmon, the emulator fault behind the narrow retry rule of scripts/check.sh
# (scripts/tcg-race-signature): in QEMU's multi-threaded TCG, live patching of kernel text
# that another vCPU is executing can leave that vCPU running the old bytes. A 2-thread
# mmap/munmap storm runs while the fentry sites of __x64_sys_munmap and __x64_sys_mmap are
# patched over and over, each patch going through an int3 (smp_text_poke_batch_finish()).
# On real CPUs and under single-threaded TCG the guest survives; under multi-threaded TCG a
# vCPU sometimes executes an int3 the patching had already removed and no longer handles.
#
#   scripts/tcg-text-poke-race.sh [--mode MODE] [SWITCHES] [ACCEL]   (defaults ftrace, 2000, tcg)
#   e.g. scripts/tcg-text-poke-race.sh 2000 tcg,thread=single
#        scripts/tcg-text-poke-race.sh --mode kprobe-off 2000
# MODE (what one switch is):
#   ftrace        ftrace's function tracer on and off on the two functions (set_ftrace_filter):
#                 "Oops: int3" at __x64_sys_munmap+0x5 (or mmap's) within seconds
#   kprobe-off    the same, with a kprobe event on __x64_sys_munmap registered through tracefs
#                 (`p:memmon_race __x64_sys_munmap` in kprobe_events) and left disabled: a
#                 registered kprobe is found by the int3 handler even when disabled, and an
#                 ftrace-based one has no copied instruction (ainsn.insn NULL)
#   kprobe-toggle that kprobe event enabled and disabled (arming an ftrace-based kprobe
#                 patches the fentry site as the function tracer does), no function tracer
#   jump-label    the sched_wakeup tracepoint enabled and disabled (its static key's jump
#                 labels in the scheduler's wake-up path are patched through an int3 each
#                 time), with a third thread sleeping 1 ms at a time so that wake-ups run on
#                 both vCPUs; no function tracer, no kprobe
# Measured on 2026-12-07 (QEMU 10.0, the patched kernel, a loaded 2-core host), multi-threaded
# TCG: ftrace, the int3 form after 90-100 switches; kprobe-off, 3 runs of 3 oopsed: twice the
# jump to 0 ("BUG: kernel NULL pointer dereference, address: 0", "#PF: supervisor instruction
# fetch in kernel mode", "RIP: 0010:0x0", EFLAGS 0x2, call trace only "? do_syscall_64+0x72"
# and "? entry_SYSCALL_64_after_hwframe+0x4b", on both storm threads) after 240-250 and
# 260-270 switches, once the int3 form at __x64_sys_mmap+0x5 after 40-50; kprobe-toggle, 400
# switches without an oops (stopped there); jump-label, the int3 form at
# __do_trace_sched_wakeup+0x37 (the tracepoint's static call: the text holds the call, e8, where
# the int3 was) in a timer interrupt's wake-up, after 410-420 switches. Single-threaded TCG:
# kprobe-off survived 1000.
# Prints how many switches the guest survived and, if it died, the first oops (its first
# line, RIP and call trace); exits 0 if it survived them all. Kernel log:
# build/vm/tcg-text-poke-race.MODE.ACCEL.kernel.log.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mode=ftrace
if [ "${1:-}" = --mode ]; then mode=$2; shift 2; fi
case $mode in ftrace|kprobe-off|kprobe-toggle|jump-label) ;; *) echo "tcg-text-poke-race: unknown mode '$mode'" >&2; exit 2 ;; esac
switches=${1:-2000}
accel=${2:-tcg}
log="$top/build/vm/tcg-text-poke-race.$mode.${accel//[,=]/-}.kernel.log"
mkdir -p "$top/build/vm"
case $mode in
ftrace) setup='' switch='echo function > current_tracer; echo nop > current_tracer' ;;
kprobe-off)
    setup='echo "p:memmon_race __x64_sys_munmap" >> kprobe_events || exit 1'
    switch='echo function > current_tracer; echo nop > current_tracer' ;;
kprobe-toggle)
    setup='echo "p:memmon_race __x64_sys_munmap" >> kprobe_events || exit 1'
    switch='echo 1 > events/kprobes/memmon_race/enable; echo 0 > events/kprobes/memmon_race/enable' ;;
jump-label)
    setup='(while :; do usleep 1000; done) &'
    switch='echo 1 > events/sched/sched_wakeup/enable; echo 0 > events/sched/sched_wakeup/enable' ;;
esac
guest='
mount -t tracefs none /sys/kernel/tracing 2>/dev/null
cd /sys/kernel/tracing
echo 0 > tracing_on
'"$setup"'
/progs/stress storm 2 100000 > /dev/null &
echo "__x64_sys_munmap __x64_sys_mmap" > set_ftrace_filter
i=1
while [ $i -le '"$switches"' ]; do
    '"$switch"'
    if [ $((i % 10)) -eq 0 ]; then
        echo "tcg-text-poke-race: switched $i" > /dev/kmsg
        dmesg | grep -Eq "Oops|BUG:" && { echo "oopsed by $i switches"; exit 0; }
    fi
    i=$((i + 1))
done
echo "survived '"$switches"' switches"
'
set +e
out=$(MEMMON_ACCEL=$accel "$top/scripts/vm-run" --timeout 3000 --log "$log" -- "$guest" 2>&1)
status=$?
set -e
if [ $status -eq 0 ] && ! grep -Eq 'Oops|BUG:' "$log"; then
    echo "mode=$mode accel=$accel: $(printf '%s\n' "$out" | tail -1), no Oops"
    exit 0
fi
# The switches done before the first report (the guest stops switching at the first report:
# the storm's threads die with it and nothing races any more).
done=$(sed -n '/Oops\|BUG:/q; s/.*tcg-text-poke-race: switched \([0-9]*\).*/\1/p' "$log" | tail -1)
echo "mode=$mode accel=$accel: first oops after ${done:-0} to $((${done:-0} + 10)) switches," \
    "$(grep -c 'Oops: ' "$log") oops(es) in all, guest $([ $status -eq 0 ] && echo "alive" || echo "died (status $status)"); kernel log: $log"
# The first report: from its first line to the end of its call trace.
sed 's/^\[[ 0-9.]*\] //' "$log" | awk '
    !on && /Oops|BUG:|kernel BUG/ { on = 1 }
    on { print "  " $0; if (/^ *<\/TASK>/ || ++n > 60) exit }'
exit 1
