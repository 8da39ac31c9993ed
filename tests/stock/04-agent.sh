# memmon agent on Debian's stock kernel (memory controller, loopback networking), scraped by
# Debian's prometheus (build/stock/prometheus: scripts/stock/prometheus). The agent watches
# jobs/* by glob (--cgroup), serves /metrics on 127.0.0.1:9464; prometheus scrapes it every
# 2 s. Workloads (hold N: N anonymous pages): jobs/a from the start (8192 pages), jobs/b
# made after the agent started (4096 pages), other/ outside the glob (2048 pages). Checks:
#   - through prometheus's HTTP API (PromQL sum by (cgroup) (memmon_resident_bytes)), each
#     job's resident bytes are within 5 % of its memory.stat anon + file;
#   - other/ has no series (count(memmon_resident_bytes{cgroup="/other"}) is empty);
#   - jobs/c, with memory.max 24 MiB and no swap, grows by 1 MiB every 300 ms to 48 MiB: its
#     near-limit snapshot is in the spool before the OOM kill (memory.events oom_kill);
#   - /metrics answers throughout, the agent's RSS under 64 MiB; SIGTERM: exit 0.
# vm-add: build/stock/prometheus/prometheus:/opt/prom/prometheus
# vm-add: build/stock/prometheus/ld-linux-x86-64.so.2:/opt/prom/ld-linux-x86-64.so.2
# vm-add: build/stock/prometheus/libc.so.6:/opt/prom/libc.so.6
# vm-timeout: 900
# jobs/c's OOM kill prints the OOM killer's report, a Call Trace in it:
# vm-oom: expected
. /host/lib.sh
cg=/sys/fs/cgroup
grep -q "^[^ ]* $cg cgroup2 " /proc/mounts || mount -t cgroup2 none $cg || fail "cannot mount cgroup2 at $cg"
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up || fail "no loopback"
echo +memory > $cg/cgroup.subtree_control || fail "no memory controller"
mkdir -p $cg/jobs/a $cg/other || fail "mkdir in $cg"
echo +memory > $cg/jobs/cgroup.subtree_control || fail "no memory controller in jobs"
load buflen=4194304
w=/proc/memmon/watch-pids
bound=$((64 << 20))

# wait_until's limit here, and what it prints on a timeout
wait_seconds=180
on_wait_timeout() {
    tail -20 /tmp/agent.err
}
hold() {
    sh -c "echo \$\$ > $2/cgroup.procs && exec /progs/hold $3 /tmp/stop-$1 ${4:-}" > /tmp/hold-$1.out 2>&1 &
}
metrics() {
    wget -qO- http://127.0.0.1:9464/metrics
}
rss_bounded() {
    v=$(metrics | awk '$1 == "memmon_agent_resident_bytes" { print $2 }')
    [ -n "$v" ] && [ "$v" -gt 0 ] && [ "$v" -lt $bound ] || fail "agent RSS '$v' not under $bound"
    echo "ok: agent RSS $v < $bound"
}
# promql QUERY: the JSON answer of prometheus's HTTP API (QUERY URL-encoded by hand)
promql() {
    wget -qO- "http://127.0.0.1:9090/api/v1/query?query=$1"
}
# value_for CGROUP JSON: the value of the series of that cgroup
value_for() {
    printf '%s' "$2" | tr '{' '\n' | grep -F "\"cgroup\":\"$1\"}" | sed -n 's/.*"value":\[[0-9.]*,"\([0-9.e+]*\)"\].*/\1/p' | head -1
}
# kernel_bytes CGROUP-DIR: anon + file of memory.stat
kernel_bytes() {
    awk '$1 == "anon" || $1 == "file" { s += $2 } END { print s }' "$1/memory.stat"
}

memmon agent --cgroup 'jobs/*' --listen 127.0.0.1:9464 --spool /tmp/spool --interval 5 \
    --label group=stock 2>/tmp/agent.err &
ap=$!
wait_until "the agent watching jobs/a" grep -qx "c:$cg/jobs/a" $w
hold a $cg/jobs/a 8192
mkdir $cg/jobs/b || fail "mkdir jobs/b"
wait_until "the agent watching jobs/b, made after it started" grep -qx "c:$cg/jobs/b" $w
hold b $cg/jobs/b 4096
hold o $cg/other 2048
for n in a b o; do
    wait_until "holder $n" grep -q held= /tmp/hold-$n.out
done
wait_until "/metrics" sh -c "wget -qO- http://127.0.0.1:9464/metrics | grep -q 'cgroup=\"/jobs/b\"'"

cat > /tmp/prom.yml <<EOF
global:
  scrape_interval: 2s
  evaluation_interval: 2s
scrape_configs:
  - job_name: memmon
    static_configs:
      - targets: ["127.0.0.1:9464"]
EOF
/opt/prom/ld-linux-x86-64.so.2 --library-path /opt/prom /opt/prom/prometheus \
    --config.file=/tmp/prom.yml --storage.tsdb.path=/tmp/tsdb \
    --web.listen-address=127.0.0.1:9090 >/tmp/prom.log 2>&1 &
pp=$!
wait_until "prometheus ready" sh -c "wget -qO- http://127.0.0.1:9090/-/ready | grep -qi ready"
q='sum%20by%20(cgroup)%20(memmon_resident_bytes)'
both() {
    json=$(promql "$q")
    [ -n "$(value_for /jobs/a "$json")" ] && [ -n "$(value_for /jobs/b "$json")" ]
}
wait_until "both jobs in prometheus" both
sleep 4
json=$(promql "$q")
echo "prometheus: $json"
for n in a b; do
    got=$(value_for /jobs/$n "$json")
    want=$(kernel_bytes $cg/jobs/$n)
    echo "jobs/$n: memmon_resident_bytes $got, memory.stat anon+file $want"
    awk -v g="$got" -v k="$want" 'BEGIN { d = g - k; if (d < 0) d = -d; exit !(k > 0 && d <= 0.05 * k) }' ||
        fail "jobs/$n: $got not within 5 % of $want"
    echo "ok: jobs/$n within 5 %"
done
expect_match "jobs/a holds at least its 8192 pages" "$(value_for /jobs/a "$json")" '^[0-9]'
other=$(promql 'count(memmon_resident_bytes%7Bcgroup%3D%22%2Fother%22%7D)')
expect_match "no series of other/" "$other" '"result":\[\]'
rss_bounded

# Near memory.max: a snapshot before the OOM kill.
mkdir $cg/jobs/c || fail "mkdir jobs/c"
echo $((24 << 20)) > $cg/jobs/c/memory.max || fail "memory.max"
echo 0 > $cg/jobs/c/memory.swap.max 2>/dev/null
wait_until "the agent watching jobs/c" grep -qx "c:$cg/jobs/c" $w
hold c $cg/jobs/c 12288 300
oom_seen() {
    [ "$(awk '$1 == "oom_kill" { print $2 }' $cg/jobs/c/memory.events)" -ge 1 ]
}
i=0
until oom_seen; do
    i=$((i + 1))
    [ $i -lt 1200 ] || fail "no OOM kill in jobs/c"
    sleep 0.1
done
oom_at=$(date +%s)
near=$(ls /tmp/spool | grep -- '-jobs_c-near-limit.pb.gz$' | head -1)
[ -n "$near" ] || { cat /tmp/agent.err; fail "no near-limit snapshot of jobs/c before the OOM kill"; }
taken=${near%%.*}
taken=$((10#$taken))
echo "near-limit snapshot $near, OOM kill seen at $oom_at"
[ "$taken" -le "$oom_at" ] || fail "the near-limit snapshot ($taken) is after the OOM kill ($oom_at)"
expect_eq "near-limit log lines of jobs/c" "$(grep -c '/jobs/c: memory.current' /tmp/agent.err)" 1
rss_bounded

kill $pp
kill -TERM $ap
wait $ap
expect_eq "agent exit status" $? 0
expect_eq "watched after SIGTERM" "$(cat $w)" ""
touch /tmp/stop-a /tmp/stop-b /tmp/stop-o /tmp/stop-c
wait
cat /tmp/agent.err
unload
echo "PASS"
