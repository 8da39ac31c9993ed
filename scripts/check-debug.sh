#!/usr/bin/env bash
# make check-debug: memmon's VM scenarios on kernels built to find what the production-style
# kernel lets pass (after `make check-debug` built them and the module against each):
#   - every tests/vm/[0-9]*.sh on build/linux-debug (lockdep with PROVE_LOCKING/PROVE_RCU,
#     DEBUG_ATOMIC_SLEEP, KASAN, UBSAN, DEBUG_LIST, DEBUG_OBJECTS, kmemleak:
#     scripts/kernel-debug.config), through scripts/check.sh; a scenario fails on a bad exit,
#     on any lockdep/KASAN/UBSAN/ODEBUG/BUG/WARNING/Oops/Call Trace line in the guest's
#     kernel log, and on any object kmemleak still reports after the scenario (the guest's
#     init scans before and after it: scripts/guest/init)
#   - tests/debug/noftrace-refuses.sh on build/linux-noftrace (kprobes without ftrace):
#     memmon must refuse to load
# Logs in build/check-debug/ (debug kernel) and build/check-noftrace/. Ends with one line:
# "N passed, N failed".
# Usage: scripts/check-debug.sh [PATTERN]   (only the scenarios whose name contains PATTERN)
# Environment: MEMMON_DEBUG_TIMEOUT (seconds per VM on the debug kernel, default 900),
# MEMMON_DEBUG_MEM (its guest memory in MB, default 2048), MEMMON_DEBUG_PARTS (default
# "debug noftrace": which of the two kernels to run), MEMMON_DEBUG_SCENARIOS (scenario
# files, in this order, instead of all of tests/vm/[0-9]*.sh on the debug kernel),
# MEMMON_DEBUG_APPEND (one more kernel command line word for the debug kernel's guests, e.g.
# memmon_load=fault_kprobes=1: tests/vm/lib.sh's load adds those module parameters, so the
# scenarios run on the ftrace-hook fault source).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build="$top/build"
filter=${1:-}
parts=" ${MEMMON_DEBUG_PARTS:-debug noftrace} "
for part in $parts; do
    for f in "$build/linux-$part/arch/x86/boot/bzImage" "$build/module-$part/memmon.ko"; do
        [ -f "$f" ] || { echo "check-debug: no $f: run 'make check-debug'" >&2; exit 2; }
    done
done
start=$SECONDS
passed=0 failed=0

# tally LOG: add a check.sh run's "N passed, N failed" line to the totals
tally() {
    local p f
    read -r p f < <(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed(, [0-9]+ skipped)?(;.*)?$/\1 \2/p' "$1" | tail -n 1)
    if [ -z "${p:-}" ]; then
        echo "check-debug: no result line in $1" >&2
        failed=$((failed + 1))
        return
    fi
    passed=$((passed + p)) failed=$((failed + f))
}

if [[ "$parts" == *" debug "* ]]; then
echo "== the VM scenarios on the debug kernel (build/linux-debug)"
# Under TCG the debug kernel runs the scenarios ~3-10 times slower than the production one;
# KASAN's shadow and kmemleak's metadata want more memory. no5lvl: with QEMU's -cpu max the
# guest would use 5-level paging, and then KASAN reports a wild-memory-access in
# rcu_is_watching() from the first timer interrupt at boot (before memmon exists), which
# taints the kernel and turns lockdep off for the whole run. MEMMON_CHECK_DEBUG lets the
# scenarios that measure time loosen their limits (see README).
MEMMON_KERNEL="$build/linux-debug/arch/x86/boot/bzImage" \
MEMMON_MODULE="$build/module-debug/memmon.ko" \
MEMMON_VM_TIMEOUT=${MEMMON_DEBUG_TIMEOUT:-900} \
MEMMON_CHECK_RESULTS="$build/check-debug" \
MEMMON_CHECK_VM_ONLY=1 \
MEMMON_CHECK_VM_OPTS="--mem ${MEMMON_DEBUG_MEM:-2048} --append no5lvl ${MEMMON_DEBUG_APPEND:+--append $MEMMON_DEBUG_APPEND}" \
MEMMON_CHECK_DEBUG=1 \
MEMMON_CHECK_SCENARIOS="${MEMMON_DEBUG_SCENARIOS:-}" \
    "$top/scripts/check.sh" "$filter" | tee "$build/check-debug.out"
tally "$build/check-debug.out"
fi

if [[ "$parts" == *" noftrace "* ]]; then
echo "== kprobes without ftrace (build/linux-noftrace)"
MEMMON_KERNEL="$build/linux-noftrace/arch/x86/boot/bzImage" \
MEMMON_MODULE="$build/module-noftrace/memmon.ko" \
MEMMON_CHECK_RESULTS="$build/check-noftrace" \
MEMMON_CHECK_VM_ONLY=1 \
MEMMON_CHECK_SCENARIOS="$(echo "$top"/tests/debug/noftrace-*.sh)" \
    "$top/scripts/check.sh" "$filter" | tee "$build/check-noftrace.out"
tally "$build/check-noftrace.out"
fi

echo "check-debug: $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
