#!/usr/bin/env bash
# `make bench`: memmon's cost against ftrace's, measured in one VM boot (not a test: it
# prints figures and asserts nothing about speed).
#
# Set-ups, interleaved in every repetition (scripts/bench-guest.sh):
#   none       nothing traced, memmon not loaded
#   ftrace     ftrace on the workload's pid (set_event_pid, event-fork), `cat trace_pipe`
#              as the reader: exceptions:page_fault_user for faults,
#              syscalls:sys_{enter,exit}_{mmap,munmap} for the mmap+munmap pairs
#   unwatched  memmon loaded afresh (default buflen), nothing watched: the syscall
#              probes are disarmed
#   other-watched  memmon loaded, another (sleeping) process watched, the workload not:
#              the syscall probes are armed
#   watched    memmon loaded (default buflen), the workload watched, `cat` as the reader
#   record-fp  memmon loaded (default buflen), `memmon record --no-unwind-tables -- WORKLOAD`,
#              which turns on user call stacks (stack_depth=127, its default) for its duration, walked
#              by frame pointers
#   record     the same with the unwind tables `memmon record` loads (docs/unwind.md); the
#              entries per stack of both are printed, and the cost per entry
# The stack walk alone (no reader while the workload runs; scripts/bench-guest.sh): faults at
# the bottom of 130 calls with stack_depth 0, and 64 or 127 (record's default) walked by
# frame pointers or with tables; the cost per entry of each walk over stack_depth 0, and
# what the 63 entries from 64 to 127 add to a fault. The Python walk (issue 43): python3.11
# touching pages at the bottom of 24 Python calls, its interpreter described or not (its
# unwind tables loaded in both); the cost per Python frame against a native entry's with
# tables.
# Workloads (tests/progs/bench.c): 1 thread and 2 threads x N first-touch anonymous faults
# (ns per fault, wall time / faults), PAIRS mmap+munmap pairs (ns per pair), and reader
# throughput (lines per second formatting a full buffer of 100000 fault events: memmon's
# /proc/memmon/events against ftrace's `trace`).
# Access sampling (sample_ms): a process with 64 MiB resident writing 10 % of its pages, a
# random set, each 100 ms generation: ns per page written with sampling on and off (the
# difference: the cost of one access fault), arming time and pages per generation.
# Under TCG absolute figures are an emulated CPU's: compare set-ups as ratios.
# --icount runs the guest with QEMU's `-icount shift=0`: guest time counts instructions,
# 1 ns each, over both vCPUs in turn (one host thread), so figures are instructions executed,
# free of the host's noise, and include what the other vCPU executes meanwhile (a reader,
# the second thread). A reader then runs only in its vCPU's turn, so events lost there say
# nothing about a reader on a CPU of its own.
# --stock runs the same set-ups on Debian's stock kernel (make kernel-stock, module-stock),
# where memmon's faults come from its kprobe fault source: figures for it beside ftrace's
# exceptions:page_fault_user in that one boot (access sampling is left out: no patch 0002).
# Usage: scripts/bench.sh [--quick] [--icount] [--stock]   (REPS, N, PAIRS, READN override the sizes)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
quick="" icount="" stock=""
for arg in "$@"; do
    case $arg in
    --quick) quick=1 ;;
    --icount) icount=1 ;;
    --stock) stock=1 ;;
    *) echo "bench: unknown option '$arg' (--quick, --icount, --stock)" >&2; exit 2 ;;
    esac
done
if [ -n "$quick" ]; then
    REPS=${REPS:-1} N=${N:-2048} PAIRS=${PAIRS:-512} READN=${READN:-5000} SROUNDS=${SROUNDS:-3} LATN=${LATN:-3}
fi
unit="ns of emulated time"
if [ -n "$icount" ]; then
    export MEMMON_QEMU_OPTS="${MEMMON_QEMU_OPTS:-} -icount shift=0"
    unit="instructions (icount: 1 ns per instruction, both vCPUs)"
fi
REPS=${REPS:-7} N=${N:-16384} PAIRS=${PAIRS:-4096} READN=${READN:-100000}
SPAGES=${SPAGES:-16384} SROUNDS=${SROUNDS:-10} LATN=${LATN:-11}
name=bench${stock:+-stock}${icount:+-icount}
out="$top/build/vm/$name.out"
mkdir -p "$top/build/vm"
klog="$top/build/vm/$name.kernel.log"
vm_run="$top/scripts/vm-run"
[ -n "$stock" ] && vm_run="$top/scripts/stock/vm-run"
# Multi-threaded TCG sometimes runs kernel text that another vCPU has just live-patched
# (scripts/tcg-text-poke-race.sh shows it without memmon), and every set-up switch patches
# text: a guest whose kernel log shows that race's exact signature (scripts/tcg-race-signature:
# an int3 Oops at a syscall's ftrace site that no longer holds the int3, or the jump to 0 an
# ftrace-based kprobe's missing copied instruction makes there, on the syscall entry's stack)
# is booted again, from the start (figures are only compared inside one boot), at most 3
# boots in all; each retry is named ("bench: retried: WHAT") and its kernel log kept as
# $klog.attemptN. Any other failure ends the bench.
# The python walk's workload: the host's python3.11 (Debian bookworm's), its libraries and
# the standard library's modules it imports, as tests/vm/54-python.sh adds them.
python_adds=()
if [ -x /usr/bin/python3.11 ]; then
    for file in /usr/bin/python3.11 /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/libc.so.6 \
        /lib/x86_64-linux-gnu/libm.so.6 /lib/x86_64-linux-gnu/libz.so.1 \
        /lib/x86_64-linux-gnu/libexpat.so.1 /usr/lib/python3.11/os.py \
        /usr/lib/python3.11/encodings/__init__.py /usr/lib/python3.11/encodings/aliases.py \
        /usr/lib/python3.11/encodings/utf_8.py \
        /usr/lib/python3.11/lib-dynload/mmap.cpython-311-x86_64-linux-gnu.so; do
        python_adds+=(--add "$(readlink -f "$file"):$file")
    done
fi
attempt=1 retried=()
until "$vm_run" --timeout 3000 --log "$klog" \
    --add "$top/scripts/bench-guest.sh:/host/bench-guest.sh" ${python_adds[@]+"${python_adds[@]}"} -- \
    "REPS=$REPS N=$N PAIRS=$PAIRS READN=$READN SPAGES=$SPAGES SROUNDS=$SROUNDS LATN=$LATN sh /host/bench-guest.sh" > "$out"; do
    if [ $attempt -ge 3 ] || ! sig=$("$top/scripts/tcg-race-signature" "$klog"); then
        cat "$out"
        echo "bench: the guest failed (kernel log: $klog)" >&2
        exit 1
    fi
    echo "bench: retried: $sig (boot $attempt, kernel log kept as $klog.attempt$attempt); booting again" >&2
    retried+=("$sig")
    cp "$klog" "$klog.attempt$attempt"
    attempt=$((attempt + 1))
done
sed -n '/^=== results ===$/,$p' "$out" | tail -n +2 > "$out.results"
[ -s "$out.results" ] || { cat "$out"; echo "bench: no results" >&2; exit 1; }
echo "memmon bench: $REPS repetitions, $SROUNDS sampling generations, N=$N faults per thread, $PAIRS mmap+munmap pairs, reader $READN events ($(date -u +%Y-%m-%d), $(nproc) host CPUs, TCG guest with 2 vCPUs${icount:+, -icount shift=0}, $([ -n "$stock" ] && echo "Debian's stock kernel, fault source: kprobes" || echo "patched kernel, fault source: mm_fault"))"
for r in "${retried[@]+"${retried[@]}"}"; do echo "retried: bench ($r)"; done
awk '
    $1 == "frames" { fr[$2 " " $3] = $4; next }
    $1 == "bytes" { by[$2 " " $3] = $4; next }
    $1 == "stackwalk" { v["stackwalk " $2] = v["stackwalk " $2] " " $3; ent[$2] = ent[$2] " " $4; lost["stackwalk " $2] += $5; next }
    $1 == "pywalk" { v["pywalk " $2] = v["pywalk " $2] " " $3; ent[$2] = $4; pyf[$2] = $5; lost["pywalk " $2] += $6; next }
    $1 == "latency" { lat[$2] = lat[$2] " " $3; if (!($2 in lseen)) { lseen[$2] = 1; lorder[++nl] = $2 }; next }
    $1 == "sampling-arm" { v["sampling-arm"] = v["sampling-arm"] " " $2; armv = armv " " $3; next }
    { key = $1 " " $2; v[key] = v[key] " " $3; lost[key] += $4; runs[key]++
      if (!(($1) in seen)) { seen[$1] = 1; order[++nw] = $1 } }
    function stats(key,   n, a, i, j, t) {
        n = split(substr(v[key], 2), a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        med = (n % 2) ? a[(n + 1) / 2] : int((a[n / 2] + a[n / 2 + 1]) / 2); lo = a[1]; hi = a[n]
    }
    END {
        nsetups = split("none ftrace unwatched other-watched watched record-fp record", setups, " ")
        for (w = 1; w <= nw; w++) {
            wl = order[w]
            if (wl == "reader" || wl ~ /^sampling/) continue
            printf "\n%-16s %-13s %8s %8s %8s %10s %10s %8s\n", wl, "set-up", "median", "min", "max", "vs none", "vs ftrace", "lost"
            stats(wl " none"); none = med
            stats(wl " ftrace"); ft = med
            for (s = 1; s <= nsetups; s++) {
                key = wl " " setups[s]
                if (!(key in v)) continue
                stats(key)
                over = none ? sprintf("%+.1f%%", 100 * (med - none) / none) : "-"
                rel = (setups[s] != "none" && setups[s] != "ftrace" && ft != none) ? sprintf("%.2f", (med - none) / (ft - none)) : "-"
                printf "%-16s %-13s %8d %8d %8d %10s %10s %8d\n", "", setups[s], med, lo, hi, over, rel, lost[key]
            }
            if ((wl " record") in fr) {
                stats(wl " watched"); wat = med
                stats(wl " record-fp"); rfp = med
                stats(wl " record"); rt = med
                ffp = fr[wl " record-fp"]; ft2 = fr[wl " record"]
                printf "%-16s entries per stack: %s by frame pointers, %s with tables; per entry over watched: %s fp, %s tables\n", "", ffp, ft2, \
                    (ffp > 0 ? sprintf("%d", (rfp - wat) / ffp) : "-"), (ft2 > 0 ? sprintf("%d", (rt - wat) / ft2) : "-")
                printf "%-16s stream bytes per event: %s by frame pointers, %s with tables\n", "", by[wl " record-fp"], by[wl " record"]
            }
        }
        if (("stackwalk stacks-off") in v) {
            printf "\n%-16s %-13s %8s %8s %8s %8s %8s %10s\n", "stack walk", "set-up", "median", "min", "max", "entries", "lost", "per entry"
            stats("stackwalk stacks-off"); off = med
            nwalks = split("stacks-off stacks-fp stacks-tables stacks-fp-127 stacks-tables-127", walks, " ")
            for (s = 1; s <= nwalks; s++) {
                name = walks[s]
                if (!(("stackwalk " name) in v)) continue
                stats("stackwalk " name); mw[name] = med
                n = split(substr(ent[name], 2), ea, " "); e = ea[1]
                pe[name] = e > 0 ? (med - off) / e : 0
                printf "%-16s %-13s %8d %8d %8d %8.2f %8d %10s\n", "", name, med, lo, hi, e, lost["stackwalk " name], (e > 0 ? sprintf("%d", pe[name]) : "-")
            }
            printf "%-16s per entry: %d by frame pointers, %d with tables: %.2fx (the goal: at most 2x)\n", "", pe["stacks-fp"], pe["stacks-tables"], (pe["stacks-fp"] > 0 ? pe["stacks-tables"] / pe["stacks-fp"] : 0)
            if (("stackwalk stacks-fp-127") in v)
                printf "%-16s 127 entries against 64: %.2fx the fault by frame pointers (%+d), %.2fx with tables (%+d)\n", "", \
                    (mw["stacks-fp"] > 0 ? mw["stacks-fp-127"] / mw["stacks-fp"] : 0), mw["stacks-fp-127"] - mw["stacks-fp"], \
                    (mw["stacks-tables"] > 0 ? mw["stacks-tables-127"] / mw["stacks-tables"] : 0), mw["stacks-tables-127"] - mw["stacks-tables"]
        }
        if (("pywalk py-native") in v) {
            printf "\n%-16s %-13s %8s %8s %8s %8s %8s %8s %10s\n", "python walk", "set-up", "median", "min", "max", "entries", "python", "lost", "per frame"
            stats("pywalk py-native"); pnat = med
            printf "%-16s %-13s %8d %8d %8d %8d %8d %8d %10s\n", "", "py-native", med, lo, hi, ent["py-native"], pyf["py-native"], lost["pywalk py-native"], "-"
            stats("pywalk py-python"); ppy = med
            perpy = pyf["py-python"] > 0 ? (ppy - pnat) / pyf["py-python"] : 0
            printf "%-16s %-13s %8d %8d %8d %8d %8d %8d %10d\n", "", "py-python", med, lo, hi, ent["py-python"], pyf["py-python"], lost["pywalk py-python"], perpy
            printf "%-16s per Python frame (the thread list walk included): %d, per native entry with tables: %d: %.2fx (the goal: at most 1x)\n", "", perpy, pe["stacks-tables"], (pe["stacks-tables"] > 0 ? perpy / pe["stacks-tables"] : 0)
        }
        stats("reader memmon"); m = med; mlo = lo; mhi = hi
        stats("reader ftrace"); f = med
        printf "\nreader: memmon %d lines/s (min %d, max %d), ftrace %d lines/s: %.2fx\n", m, mlo, mhi, f, f ? m / f : 0
        print "(" unit " per fault or per pair; vs ftrace = (set-up - none) / (ftrace - none); lost = events lost over all runs)"
        if (nl > 0) {
            printf "\n%-34s %8s %8s %8s %8s %6s\n", "latency (us, no module parameter)", "median", "p90", "min", "max", "n"
            for (l = 1; l <= nl; l++) {
                n = split(substr(lat[lorder[l]], 2), a, " ")
                for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
                med = (n % 2) ? a[(n + 1) / 2] : int((a[n / 2] + a[n / 2 + 1]) / 2)
                p90 = a[int(0.9 * (n - 1)) + 1]
                printf "%-34s %8d %8d %8d %8d %6d\n", lorder[l], med, p90, a[1], a[n], n
            }
            print "(wake-HOW: a lone event to a reader asleep in HOW, tests/vm/29 bounds the median at 50 ms; unwind-noop_reading_*: ADD_TABLE writes while a reader lists the store, tests/vm/50 bounds the median at 50 ms and the slowest at 400 ms)"
        }
        if (("sampling on") in v) {
            stats("sampling on"); on = med; onlo = lo; onhi = hi
            stats("sampling off"); off = med
            printf "\naccess sampling, %d pages resident, 10 %% written per 100 ms generation:\n", spages
            printf "  per page written: %d ns sampled (min %d, max %d), %d ns not sampled: %+d ns per access fault\n", on, onlo, onhi, off, on - off
            stats("sampling-arm"); printf "  arming: %d us per generation (min %d, max %d)", med / 1000, lo / 1000, hi / 1000
            n = split(substr(armv, 2), a, " "); printf " for about %d pages\n", a[1]
        }
    }' spages="$SPAGES" unit="$unit" "$out.results"
