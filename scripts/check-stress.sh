#!/usr/bin/env bash
# memmon's stress scenarios (tests/stress/NN-*.sh), each in a fresh VM like the VM scenarios
# of make check, failing on a bad exit or any kernel warning: insmod/rmmod cycles under a
# storm with blocked readers (single-threaded TCG; and a multi-threaded twin, the storm
# stopped while memmon patches text), a watch-pids fuzzer checked against a model, 60 s of churn
# with exact per-reader accounting, pid reuse, non-root access. About 12 minutes under TCG.
# With MEMMON_KERNEL/MEMMON_MODULE (make check-stress DEBUG=1) on the debug kernel.
# Usage: scripts/check-stress.sh [PATTERN]   Ends with one line: "N passed, N failed".
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
export MEMMON_CHECK_VM_ONLY=1
export MEMMON_CHECK_SCENARIOS="$(echo "$top"/tests/stress/[0-9]*.sh)"
export MEMMON_CHECK_RESULTS="${MEMMON_CHECK_RESULTS:-$top/build/check-stress}"
export MEMMON_VM_TIMEOUT="${MEMMON_VM_TIMEOUT:-900}"
exec "$top/scripts/check.sh" "$@"
