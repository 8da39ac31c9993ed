#!/usr/bin/env bash
# memmon's test suite (run by `make check` after deps and the build):
#   - userspace: cargo test, clippy and rustfmt of the workspace (built in the background
#     while the VM scenarios run, tested after them)
#   - fleet: memmon-fleet (not a default member) built and tested without Ballista (the
#     embedded engine; make check-fleet: with Ballista, a loopback cluster and clippy)
#   - module: rustfmt --check and a clippy build (CLIPPY=1), both warning-free; the
#     parameters in .modinfo
#   - patches: checkpatch.pl
#   - docs: every path README.md, docs/*.md and userspace/README.md name exists
#   - every VM scenario tests/vm/NN-*.sh, run in the patched kernel by scripts/vm-run: it
#     passes when it exits 0 and the guest's kernel log has no BUG/WARNING/Oops/Call Trace;
#     a scenario with a line "# vm-accel: ACCEL" runs with QEMU's -accel ACCEL, one with
#     lines "# vm-add: HOST:GUEST" gets those files in the guest (HOST relative to the
#     repository's top, or absolute), one with a line
#     "# vm-append: ARGS" boots with ARGS added to the kernel command line, one with a
#     line "# vm-timeout: SECONDS" gets that long (default: scripts/vm-run's), and one with
#     a line "# vm-oom: expected" may have the OOM killer's reports in its kernel log
#     (their Call Trace is not a splat)
#   A VM scenario whose boot died of multi-threaded TCG's text-poke race (the exact
#   signatures of scripts/tcg-race-signature, reproduced without memmon by
#   scripts/tcg-text-poke-race.sh) is run again, at most twice, and the last result counts;
#   no other failure is retried.
# Ends with one line "retried: vm-NAME (WHAT)" per such retry, then one line: "N passed,
# N failed, N skipped", then "; N retried" when some were, then "; lints: N passed[, N
# failed]" when lints ran (formatting, clippy, modinfo, checkpatch, the docs' paths: counted
# apart from the tests).
# Usage: scripts/check.sh [PATTERN]   (only the items whose name contains PATTERN)
# Environment (scripts/check-debug.sh sets these; unset, the suite is the one above):
#   MEMMON_KERNEL, MEMMON_MODULE, MEMMON_VM_TIMEOUT  read by scripts/vm-run
#   MEMMON_CHECK_RESULTS=DIR      logs there instead of build/check
#   MEMMON_CHECK_VM_ONLY=1        only the VM scenarios (no userspace, lint, record, bench)
#   MEMMON_CHECK_SCENARIOS="F..." these scenario files instead of tests/vm/[0-9]*.sh
#   MEMMON_CHECK_VM_OPTS="..."    more scripts/vm-run options (e.g. --mem 2048)
#   MEMMON_CHECK_DEBUG=1          a debug kernel: also fail a scenario on lockdep, KASAN,
#                                 UBSAN, ODEBUG and kmemleak reports in the guest's log
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$HOME/.cargo/bin:$PATH"
linux="$top/build/linux"
results="${MEMMON_CHECK_RESULTS:-$top/build/check}"
filter=${1:-}
vm_only=${MEMMON_CHECK_VM_ONLY:-}
read -r -a vm_opts <<< "${MEMMON_CHECK_VM_OPTS:-}"
if [ -n "${MEMMON_CHECK_SCENARIOS:-}" ]; then
    read -r -a scenarios <<< "$MEMMON_CHECK_SCENARIOS"
else
    scenarios=("$top"/tests/vm/[0-9]*.sh)
fi
# What fails a scenario in the guest's kernel log. On the debug kernel also: lockdep's
# reports (they start with "WARNING:" or "BUG:" too, but not all of them, e.g. "INFO:"),
# KASAN/UBSAN/ODEBUG reports, list corruption, RCU stalls, and the guest init's kmemleak
# count after the command (scripts/guest/init) when it is not 0 (its baseline scan's
# count, of boot-time objects, is not). Lockdep's and ODEBUG's boot banners are not reports.
splats='BUG:|WARNING:|Oops|Call Trace|KASAN|kernel BUG'
if [ -n "${MEMMON_CHECK_DEBUG:-}" ]; then
    splats="$splats|possible circular locking|inconsistent lock state|possible recursive locking"
    splats="$splats|suspicious RCU usage|lockdep|sleeping function called from invalid context"
    splats="$splats|INFO: possible|INFO: trying to register non-static key|hardirqs last|softirqs last"
    splats="$splats|UBSAN|ODEBUG|list_add corruption|list_del corruption|stall|kmemleak|Unable to handle"
    splats="$splats|general protection fault|panic"
    not_splats='memmon-check: kmemleak: (baseline before the command: [0-9]+ boot|0 unreferenced objects after)'
    not_splats="$not_splats|new suspected memory leaks \(see /sys/kernel/debug/kmemleak\)"
    not_splats="$not_splats|kmemleak: Kernel memory leak detector initialized"
    not_splats="$not_splats|Lock dependency validator|MAX_LOCKDEP|LOCKDEP_|lock dependency info"
    not_splats="$not_splats|per task-struct memory footprint|ODEBUG: selftest passed|panic=-1"
    not_splats="$not_splats|RCU lockdep checking is enabled"
else
    not_splats='^$'
fi
mkdir -p "$results"
passed=0 failed=0 skipped=0 lints_passed=0 lints_failed=0 failures=() retries=()
# The items that check the code's form rather than what it does: counted apart ("lints").
lint_items=" userspace-fmt-clippy module-rustfmt module-clippy module-modinfo patches-checkpatch docs-paths "

# run_item NAME COMMAND...: run one check, output in build/check/NAME.log. A COMMAND that
# exits with 77 could not run (an input missing that nothing here provides): it is counted
# as skipped, never as passed, and its last line says why.
run_item() {
    local name=$1; shift
    [[ -z "$filter" || "$name" == *"$filter"* ]] || return 0
    local log="$results/$name.log" start=$SECONDS status=0 nretries=${#retries[@]} retried=""
    "$@" >"$log" 2>&1 || status=$?
    [ ${#retries[@]} = "$nretries" ] || retried="  (retried: ${retries[-1]#* (}"
    if [ "$status" = 0 ]; then
        if [[ "$lint_items" == *" $name "* ]]; then lints_passed=$((lints_passed + 1)); else passed=$((passed + 1)); fi
        printf 'PASS %-40s %3ds%s\n' "$name" $((SECONDS - start)) "$retried"
    elif [ "$status" = 77 ]; then
        skipped=$((skipped + 1))
        printf 'SKIP %-40s %3ds  (%s)\n' "$name" $((SECONDS - start)) "$(tail -n 1 "$log")"
    else
        if [[ "$lint_items" == *" $name "* ]]; then lints_failed=$((lints_failed + 1)); else failed=$((failed + 1)); fi
        failures+=("$name")
        printf 'FAIL %-40s %3ds  (log: %s)%s\n' "$name" $((SECONDS - start)) "${log#$top/}" "$retried"
        # A Rust test's panic message is far above the tail, behind its backtrace.
        grep -m 3 -A 3 ' panicked at ' "$log" | sed 's/^/     ! /'
        tail -n 15 "$log" | sed 's/^/     | /'
    fi
}

userspace_tests() {
    wait_userspace_prebuild
    cd "$top/userspace" && timeout --kill-after=30 2400 cargo test --quiet 2>&1
}
# fleet_tests: memmon-fleet's embedded engine (DataFusion) built and tested without
# Ballista's crates, which are most of its build: make check-fleet adds them, the loopback
# cluster's test and clippy. Bounded, so that a build or a test that does not end fails
# this item rather than the whole run.
fleet_tests() {
    wait_userspace_prebuild
    cd "$top/userspace" && timeout --kill-after=30 2400 cargo test --quiet -p memmon-fleet --no-default-features 2>&1
}
userspace_lint() {
    wait_userspace_prebuild
    cd "$top/userspace" && cargo fmt --check && cargo clippy --quiet --all-targets -- -D warnings
}
module_rustfmt() {
    find "$top/src" -name '*.rs' -exec rustfmt --check --edition 2021 --config-path "$linux/.rustfmt.toml" {} +
}
module_clippy() {
    local out="$top/build/module-clippy"
    rm -rf "$out" && mkdir -p "$out"
    make -C "$linux" LLVM=-19 M="$top" MO="$out" CLIPPY=1 modules 2>&1 | tee "$out/build.log"
    # objtool's warnings ("memmon.o: warning: objtool: ...") count too.
    ! grep -Eq '^(warning|error)|: warning: ' "$out/build.log"
}
# module_modinfo: what modinfo shows of each parameter (runtime_param! writes the two
# writable ones' strings itself): its type and description, in the module's .modinfo
module_modinfo() {
    local info
    info=$(objcopy -O binary --only-section=.modinfo "$top/build/module/memmon.ko" /dev/stdout | tr '\0' '\n')
    local want
    for want in 'parmtype=stack_depth:uint' 'parm=stack_depth:User stack entries per fault and syscall (0-127, 0: off)' \
        'parmtype=sample_ms:uint' 'parm=sample_ms:Access sampling period in ms (0: off, or 10-60000)' \
        'parmtype=buflen:u32' 'parmtype=unwind_max_kb:u32' 'parmtype=sample_pages:u32' \
        'parmtype=fault_kprobes:u32'; do
        grep -qxF "$want" <<< "$info" || { echo "no '$want' in .modinfo"; return 1; }
    done
    echo "all 6 parameters in .modinfo"
}
patches_checkpatch() {
    "$linux/scripts/checkpatch.pl" --no-tree --quiet --ignore FILE_PATH_CHANGES "$top"/patches/*.patch
}

# vm_scenario FILE: one scenario in a fresh VM; fails on a bad exit or a kernel splat. A
# boot that died of multi-threaded TCG's text-poke race (scripts/tcg-race-signature: the
# forms scripts/tcg-text-poke-race.sh reproduces without memmon, and nothing else) is run
# again, at most twice (such a boot is about 1 in 16 for the scenarios that switch ftrace
# events, vm-44 on Debian's kernel: 1 of 17 boots, 2026-12-07), each dead boot's kernel log
# kept as KLOG.race (then KLOG.race2); the last result counts, and each retry is named in
# the summary ("retried: vm-NAME (WHAT)") and counted.
vm_scenario() {
    local name klog sig attempt
    name=$(basename "$1" .sh)
    klog="$results/vm-$name.kernel.log"
    rm -f "$klog.race" "$klog.race2"
    vm_scenario_once "$1" && return 0
    for attempt in "" 2; do
        sig=$("$top/scripts/tcg-race-signature" "$klog") || return 1
        mv "$klog" "$klog.race$attempt"
        retries+=("vm-$name ($sig)")
        echo "retried: vm-$name ($sig; kernel log of the boot that died: $klog.race$attempt)"
        vm_scenario_once "$1" && return 0
    done
    return 1
}
vm_scenario_once() {
    # Files from Debian's packages (build/stock/root, vm-55's python3.13) come from the
    # stock preparation running in the background: wait for it first.
    if grep -q '^# vm-add: build/stock/' "$1"; then wait_stock_prepare || true; fi
    local script=$1 name klog accel append
    name=$(basename "$script" .sh)
    klog="$results/vm-$name.kernel.log"
    # A scenario may name its QEMU accelerator in a line "# vm-accel: ACCEL", and its time
    # limit in a line "# vm-timeout: SECONDS".
    accel=$(sed -n 's/^# vm-accel: //p' "$script")
    local timeout
    timeout=$(sed -n 's/^# vm-timeout: //p' "$script")
    # And files to copy into the guest, one "# vm-add: HOST:GUEST" line each (a link on the
    # host is copied as the file it names; a relative HOST is from the repository's top).
    local adds=() spec
    while read -r spec; do
        [ -n "$spec" ] && adds+=(--add "$(cd "$top" && readlink -f "${spec%%:*}"):${spec#*:}")
    done < <(sed -n 's/^# vm-add: //p' "$script")
    # And kernel parameters, in a line "# vm-append: ARGS".
    append=$(sed -n 's/^# vm-append: //p' "$script")
    [ -z "$append" ] || adds+=(--append "$append")
    MEMMON_ACCEL=${accel:-${MEMMON_ACCEL:-}} MEMMON_VM_TIMEOUT=${timeout:-${MEMMON_VM_TIMEOUT:-}} \
        "$top/scripts/vm-run" "${vm_opts[@]+"${vm_opts[@]}"}" "${adds[@]+"${adds[@]}"}" --log "$klog" \
        --add "$top/tests/vm/lib.sh:/host/lib.sh" --add "$script:/host/test.sh" -- sh /host/test.sh
    local status=$?
    # A scenario that makes the OOM killer act on purpose says so in a line "# vm-oom:
    # expected": the OOM killer's report (from "invoked oom-killer" to its "Killed process"
    # line, a Call Trace among them) is then not a splat; nothing else of the log is spared.
    local checked=$klog
    if grep -q '^# vm-oom: expected' "$script"; then
        checked="$results/vm-$name.kernel.checked.log"
        awk '/invoked oom-killer/ { skip = 1 } !skip { print } skip && /Killed process/ { skip = 0 }' \
            "$klog" > "$checked"
    fi
    if grep -En "$splats" "$checked" | grep -Ev "$not_splats"; then
        echo "the guest kernel log has a splat (see $klog)"
        return 1
    fi
    [ $status -eq 0 ] || { echo "scenario exited with $status (kernel log: $klog)"; return 1; }
}

# record_parsed_on_host: `memmon record` in the guest, its capture decoded on the host
record_parsed_on_host() {
    local capture="$results/record.capture" bin="$top/userspace/target/x86_64-unknown-linux-gnu/release/memmon"
    "$top/scripts/vm-run" --log "$results/vm-record.kernel.log" -- '
        insmod /memmon/memmon.ko buflen=4194304 &&
        memmon record -o /tmp/cap -- /progs/memtest anon 50 > /tmp/out &&
        echo "=== base ===" && grep "^base=" /tmp/out &&
        echo "=== capture ===" && cat /tmp/cap' > "$results/record.out" || return 1
    sed -n '/^=== capture ===$/,$p' "$results/record.out" | tail -n +2 > "$capture"
    grep -q '^# ' "$capture" || { echo "the capture has no header"; return 1; }
    grep -qx '# buflen 4194304' "$capture" || { echo "the capture header lacks the module's buflen"; return 1; }
    grep -q '^#| ' "$capture" || { echo "the capture has no snapshot"; return 1; }
    "$bin" tail --input "$capture" > "$results/record.decoded" || return 1
    # memtest's 50 writes, one to each fresh page of its 50-page buffer from base=: exactly
    # 50 anon W faults at those pages (the process's other anon faults, at start-up, are
    # elsewhere).
    local base n
    base=$(sed -n 's/^base=0x\([0-9a-f]*\)$/\1/p' "$results/record.out")
    [ -n "$base" ] || { echo "memtest printed no base="; return 1; }
    local a start=$((16#$base)); n=0
    for a in $(sed -n 's/.*: anon page @ *0x\([0-9a-f]*\) (W)$/\1/p' "$results/record.decoded"); do
        if [ $((16#$a)) -ge "$start" ] && [ $((16#$a)) -lt $((start + 50 * 4096)) ]; then n=$((n + 1)); fi
    done
    echo "decoded $n anon W faults in memtest's 50 pages"
    [ "$n" = 50 ]
}

# bench_quick: `make bench` with one small repetition, so that it cannot rot: it must run
# every set-up and workload and print its table (it asserts nothing about speed)
bench_quick() {
    "$top/scripts/bench.sh" --quick || return 1
    local n
    n=$(awk '$1 != "reader" && $1 != "frames" && $1 != "stackwalk" && $1 != "pywalk" && $1 != "bytes" && $1 != "latency" && $1 !~ /^sampling/' "$top/build/vm/bench.out.results" | wc -l)
    echo "$n results"
    [ "$n" -eq 21 ] || { echo "want 21 results (7 set-ups x 3 workloads)"; return 1; }
    # The latencies the functional tests bound loosely: 3 wake-ups per way of waiting, the
    # unwind store's writes during a listing (4 figures).
    n=$(awk '$1 == "latency" && $2 ~ /^wake-(read|poll|select|epoll)$/ && $3 > 0' "$top/build/vm/bench.out.results" | wc -l)
    [ "$n" -eq 12 ] || { echo "want 12 wake-up latencies (3 per read, poll, select, epoll), got $n"; return 1; }
    n=$(awk '$1 == "latency" && $2 ~ /^unwind-noop_/ && $3 > 0' "$top/build/vm/bench.out.results" | wc -l)
    [ "$n" -eq 4 ] || { echo "want 4 unwind-write latencies, got $n"; return 1; }
    # The stream's bytes per event of the two record set-ups, for each workload.
    n=$(awk '$1 == "bytes" && $4 > 0' "$top/build/vm/bench.out.results" | wc -l)
    [ "$n" -eq 6 ] || { echo "want 6 stream-bytes figures (2 record set-ups x 3 workloads), got $n"; return 1; }
    # The stack walk: 130 calls deep, no entry by stack_depth 0, 64 and 127 (the default
    # depth) both by frame pointers and with the unwind table.
    local walk
    walk=$(awk '$1 == "stackwalk" { printf "%s %s;", $2, $4 }' "$top/build/vm/bench.out.results")
    echo "stack walk entries: $walk"
    [ "$walk" = "stacks-off 0.00;stacks-fp 64.00;stacks-tables 64.00;stacks-fp-127 127.00;stacks-tables-127 127.00;" ] ||
        { echo "want stacks-off 0.00, stacks-fp 64.00, stacks-tables 64.00, stacks-fp-127 127.00, stacks-tables-127 127.00 entries per stack"; return 1; }
    # The Python walk: python3.11's frames walked only when described: 27 (chain(24)'s 25,
    # bottom and <module>), beside 13 native entries.
    local py
    py=$(awk '$1 == "pywalk" { printf "%s %s %s;", $2, $4, $5 }' "$top/build/vm/bench.out.results")
    echo "python walk entries and frames: $py"
    [ "$py" = "py-native 13 0;py-python 13 27;" ] ||
        { echo "want py-native 13 entries 0 Python frames, py-python 13 and 27"; return 1; }
    grep -q '^reader memmon [1-9]' "$top/build/vm/bench.out.results" || return 1
    grep -q '^sampling on [1-9]' "$top/build/vm/bench.out.results" || { echo "no sampling figure"; return 1; }
    grep -q '^sampling-arm [1-9]' "$top/build/vm/bench.out.results"
}

# The quick part of make check-stock needs Debian's kernel prepared and the module built for
# it (make module-stock: downloads, a build root, modules_prepare; about 5 minutes the first
# time, nothing after): started now in the background at low priority, so that its downloads
# and builds overlap the other items, and waited for before that part.
stock_prepare=
if [ -z "$vm_only" ] && [[ -z "$filter" || "stock-quick" == *"$filter"* ]]; then
    (cd "$top" && nice -n 10 make --no-print-directory module-stock) > "$results/stock-prepare.log" 2>&1 &
    stock_prepare=$!
fi
# wait_stock_prepare: waits for that preparation (once; its status kept for later calls)
stock_prepared=
wait_stock_prepare() {
    if [ -z "$stock_prepared" ]; then
        stock_prepared=1
        [ -n "$stock_prepare" ] && wait "$stock_prepare" && stock_prepared=0
    fi
    return "$stock_prepared"
}
# stock_quick: that part, once the preparation is done
stock_quick() {
    if ! wait_stock_prepare; then
        echo "make module-stock failed:"
        tail -n 30 "$results/stock-prepare.log"
        return 1
    fi
    STOCK_CHECK_QUICK=1 "$top/scripts/stock/check"
}

# The userspace builds of the items that test it (the workspace's tests, clippy's check,
# memmon-cli for the host-side items, memmon-fleet's embedded engine) are most of a first
# make check after make run: started in the background at low priority once the items
# before the VM scenarios have used cargo (install), so that they overlap the scenarios,
# whose vCPUs wait much of the time; the items that run them come after the scenarios and
# wait for it. The same commands, flags and profile as the items: their own runs then
# build nothing, and a build error shows in the item, which builds again.
userspace_prebuild=
start_userspace_prebuild() {
    [ -z "$vm_only" ] && [ -f "$top/userspace/Cargo.toml" ] || return 0
    [[ -z "$filter" || "userspace-cargo-test userspace-fmt-clippy fleet report-debuginfod top-tmux" == *"$filter"* ]] || return 0
    (cd "$top/userspace" && {
        nice -n 10 cargo test --quiet --no-run
        nice -n 10 cargo clippy --quiet --all-targets -- -D warnings
        nice -n 10 cargo build --quiet -p memmon-cli
        nice -n 10 cargo test --quiet -p memmon-fleet --no-default-features --no-run
    }) > "$results/userspace-prebuild.log" 2>&1 &
    userspace_prebuild=$!
}
wait_userspace_prebuild() {
    if [ -n "$userspace_prebuild" ]; then
        wait "$userspace_prebuild" || true
        userspace_prebuild=
    fi
}

if [ -z "$vm_only" ]; then
    run_item module-rustfmt module_rustfmt
    run_item module-clippy module_clippy
    run_item module-modinfo module_modinfo
    run_item patches-checkpatch patches_checkpatch
    # every path README.md, docs/ and userspace/README.md name exists
    run_item docs-paths "$top/scripts/check-doc-paths.sh"
    # which failed boots the VM items run once more, against logs of each form and near misses
    run_item tcg-race-signature "$top/tests/scripts/tcg-race-signature.sh"
    [ -f "$top/userspace/Cargo.toml" ] && run_item install "$top/tests/install/install.sh"
    start_userspace_prebuild
fi
for script in "${scenarios[@]}"; do
    run_item "vm-$(basename "$script" .sh)" vm_scenario "$script"
done
if [ -z "$vm_only" ]; then
    if [ -f "$top/userspace/Cargo.toml" ]; then
        run_item userspace-cargo-test userspace_tests
        run_item userspace-fmt-clippy userspace_lint
    fi
    [ -f "$top/userspace/Cargo.toml" ] && run_item vm-record-parsed-on-host record_parsed_on_host
    # host-side: a real debuginfod server (and a corrupt one) for `memmon report`
    [ -f "$top/userspace/Cargo.toml" ] && run_item report-debuginfod "$top/tests/report/debuginfod.sh"
    # `memmon top` under tmux on a replayed capture
    [ -f "$top/userspace/Cargo.toml" ] && run_item top-tmux "$top/tests/top/tmux.sh"
    # `make run`'s demo ends with the report of its workload (names, lines, the HTML page)
    [ -f "$top/userspace/Cargo.toml" ] && run_item vm-demo-report "$top/tests/report/demo-check.sh"
    [ -f "$top/userspace/Cargo.toml" ] && run_item vm-report-perf-map "$top/tests/report/run-vm-perf-map.sh"
    [ -f "$top/userspace/Cargo.toml" ] && run_item vm-report-symbolize "$top/tests/report/run-vm-symbolize.sh"
    [ -f "$top/userspace/Cargo.toml" ] && run_item vm-report-end-to-end "$top/tests/report/run-vm-scenario.sh"
    [ -f "$top/userspace/Cargo.toml" ] && run_item vm-report-access-end-to-end "$top/tests/report/run-vm-access.sh"
    run_item bench-quick bench_quick
    # Debian's kernels: which one make check takes from the archive's current index (and
    # what it says when the verified one has left it); then, on that kernel (make
    # kernel-stock, module-stock), the quick part of make check-stock, one item for all its
    # scenarios.
    run_item stock-choose "$top/tests/stock/host/choose.sh"
    run_item stock-quick stock_quick
    # memmon fleet (not built by make run): last, its build is the longest item
    [ -f "$top/userspace/Cargo.toml" ] && run_item fleet fleet_tests
fi

if [ ${#failures[@]} -gt 0 ]; then
    echo "failed: ${failures[*]}"
fi
for r in "${retries[@]+"${retries[@]}"}"; do echo "retried: $r"; done
summary="$passed passed, $failed failed, $skipped skipped"
[ ${#retries[@]} = 0 ] || summary="$summary; ${#retries[@]} retried"
if [ $((lints_passed + lints_failed)) -gt 0 ]; then
    summary="$summary; lints: $lints_passed passed"
    [ "$lints_failed" = 0 ] || summary="$summary, $lints_failed failed"
fi
echo "$summary"
[ "$failed" -eq 0 ] && [ "$lints_failed" -eq 0 ]
