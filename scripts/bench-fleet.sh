#!/usr/bin/env bash
# `make bench-fleet`: memmon fleet on synthetic fleets of 10 000, 30 000 and 100 000
# snapshots (memmon-fleet's example fleet-dataset: stacks of the real captures of
# memmon/tests/fixtures, 200 stacks a snapshot from a pool of 2 000, 24 clusters), the
# job of docs/fleet.md (--by model,version,group --top 50000 --diff group=baseline:test),
# embedded (DataFusion, its default 512 MiB pool) and on a loopback Ballista cluster (a
# scheduler and two executors of 1 slot each). Prints wall time and peak RSS (the client's;
# for Ballista also the executors'), and the slope between the sizes; then `memmon serve`
# on the largest: the home page's first answer (the queries and symbolisation, cold) and,
# over 20 requests each, the p95 of the home page, a cluster's page and a comparison (from
# its cache). Not a test: it prints figures (docs/performance.md has them).
# Usage: scripts/bench-fleet.sh [SIZES...]   (default 10000 30000 100000)
# Environment: BENCH_FLEET_DIR (default build/bench-fleet), BENCH_FLEET_NO_BALLISTA=1,
# BENCH_FLEET_NO_SERVE=1,
# CARGO_TARGET_DIR (cargo's; default userspace/target).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$HOME/.cargo/bin:$PATH"
dir=${BENCH_FLEET_DIR:-$top/build/bench-fleet}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 30000 100000)
cd "$top/userspace"
cargo build --quiet --profile fleet -p memmon-fleet --bins --examples
target=${CARGO_TARGET_DIR:-$top/userspace/target}
bin=$target/fleet/memmon-fleet
gen=$target/fleet/examples/fleet-dataset
mkdir -p "$dir/sysroot/host"
# The fixtures' binaries, for the symbolisation (each unique build ID + offset once).
for name in alloc_sites alloc_sites5; do
    gzip -dc "$top/userspace/memmon/tests/fixtures/$name.gz" > "$dir/sysroot/host/$name"
done
job=(--by model,version,group --top 50000 --diff group=baseline:test --sysroot "$dir/sysroot")

# measure NAME COMMAND...: runs it under /usr/bin/time, prints "seconds max_rss_kib"
measure() {
    local log="$dir/$1.time"; shift
    /usr/bin/time -f '%e %M' -o "$log" "$@" >"$dir/run.log" 2>&1 || {
        cat "$dir/run.log"; return 1; }
    cat "$log"
}

start_cluster() {
    local port=$1 logs=$dir/cluster
    mkdir -p "$logs"
    "$bin" scheduler --port "$port" >"$logs/scheduler.log" 2>&1 & pids=($!)
    for i in 0 1; do
        until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.2; done
        mkdir -p "$logs/work$i"
        "$bin" executor --port $((port + 1 + 2 * i)) --scheduler-port "$port" --slots 1 \
            --work-dir "$logs/work$i" >"$logs/executor$i.log" 2>&1 &
        pids+=($!)
    done
    sleep 4
}
stop_cluster() {
    local hwm=()
    for pid in "${pids[@]:1}"; do
        hwm+=("$(awk '/VmHWM/ {print $2}' /proc/"$pid"/status)")
    done
    kill "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
    echo "${hwm[*]}"
}

printf '%-9s %-9s %9s %12s %s\n' engine snapshots seconds peak_rss_MiB executors_peak_rss_MiB
results=()
for n in "${sizes[@]}"; do
    data=$dir/data-$n
    [ -f "$data/.done" ] || { rm -rf "$data"; "$gen" "$data" "$n" 2>/dev/null; touch "$data/.done"; }
    read -r secs kib < <(measure "local-$n" "$bin" "$data" "${job[@]}" -o "$dir/out-local-$n")
    printf '%-9s %-9s %9s %12s\n' local "$n" "$secs" $((kib / 1024))
    results+=("local $n $secs")
    if [ -z "${BENCH_FLEET_NO_BALLISTA:-}" ]; then
        start_cluster 51050
        read -r secs kib < <(measure "ballista-$n" "$bin" "$data" "${job[@]}" \
            --engine ballista://127.0.0.1:51050 -o "$dir/out-ballista-$n")
        executors=$(stop_cluster)
        printf '%-9s %-9s %9s %12s %s\n' ballista "$n" "$secs" $((kib / 1024)) \
            "$(for k in $executors; do printf '%s ' $((k / 1024)); done)"
        results+=("ballista $n $secs")
        cmp -s "$dir/out-local-$n/clusters.csv" "$dir/out-ballista-$n/clusters.csv" ||
            echo "bench-fleet: the Ballista run's clusters.csv differs from the local one's"
    fi
done
# The slope: seconds per 1 000 snapshots between the smallest and the largest size.
for engine in local ballista; do
    printf '%s\n' "${results[@]}" | awk -v e="$engine" '$1 == e {n[++k] = $2; s[k] = $3}
        END { if (k > 1) printf "%s: %.3f s per 1 000 snapshots (from %d to %d)\n", e,
              (s[k] - s[1]) / (n[k] - n[1]) * 1000, n[1], n[k] }'
done

# memmon serve on the largest dataset: seconds per request (curl's time_total).
# p95 URL: the 95th percentile (nearest rank) of 20 requests.
p95() {
    local url=$1 i
    for i in $(seq 20); do curl -s -o /dev/null -w '%{time_total}\n' "$url"; done |
        sort -n | awk '{ t[NR] = $1 } END { print t[int((95 * NR + 99) / 100)] }'
}
if [ -z "${BENCH_FLEET_NO_SERVE:-}" ]; then
    n=${sizes[-1]}
    port=51090
    "$bin" serve "$dir/data-$n" --listen 127.0.0.1:$port --by model,version,group \
        --top 50000 --sysroot "$dir/sysroot" >"$dir/serve.log" 2>&1 &
    serve_pid=$!
    until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.2; done
    base=http://127.0.0.1:$port
    cold=$(curl -s -o /dev/null -w '%{time_total}' "$base/")
    cluster=$(curl -s "$base/api/clusters" | grep -o '"cluster":"[^"]*-baseline"' | head -1 |
        sed 's/"cluster":"//; s/"$//')
    home=$(p95 "$base/")
    page=$(p95 "$base/cluster?c=$cluster")
    compare=$(p95 "$base/compare?base=$cluster&new=${cluster%-baseline}-test")
    kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
    printf 'serve %s snapshots: home cold %s s; p95 of 20: home %s s, cluster %s %s s, compare %s s\n' \
        "$n" "$cold" "$home" "$cluster" "$page" "$compare"
fi
