# memmon agent on Debian's stock kernel (memory controller, loopback networking), scraped by
# Debian's prometheus (build/stock/prometheus: scripts/stock/prometheus). The agent watches
# jobs/* by glob (--cgroup), pre/ by the mount's own path (--cgroup /sys/fs/cgroup/pre), and
# a glob that matches nothing; it serves /metrics on 127.0.0.1:9464; prometheus scrapes it
# every 2 s. Workloads (hold N: N anonymous pages): pre/ filled before the agent starts
# (4096 pages), jobs/a from the start (8192 pages), jobs/b made after the agent started
# (4096 pages), other/ outside the glob (2048 pages). Checks:
#   - the glob matching nothing: one log line naming it and /sys/fs/cgroup, not repeated;
#   - pre/'s process, already running, is adopted when pre/ is watched (issue 51):
#     memmon_processes 1 and memmon_processes_adopted_total 1 at once, and
#     memmon_adopted_resident_bytes (what it held then, not seen faulting) within 5 % of
#     its memory.stat anon + file;
#   - jobs/s, whose holder starts as the agent starts (8192 pages, 256 every 10 ms): each
#     page is either seen faulting or held when the process was adopted, none in between
#     (memmon_resident_bytes + memmon_adopted_resident_bytes at least 95 % of memory.stat
#     anon + file, memmon_resident_bytes at most 105 %);
#   - through prometheus's HTTP API (PromQL sum by (cgroup) (memmon_resident_bytes)), each
#     job's resident bytes are within 5 % of its memory.stat anon + file;
#   - other/ has no series (count(memmon_resident_bytes{cgroup="/other"}) is empty);
#   - jobs/c, with memory.max 24 MiB and no swap, grows by 1 MiB every 300 ms to 48 MiB: its
#     near-limit snapshot is in the spool before the OOM kill (memory.events oom_kill);
#   - /metrics answers throughout, the agent's RSS under 64 MiB; SIGTERM: exit 0;
#   - restarted with --cgroup pre --cgroup /jobs/a (paths relative to the root): the same
#     c:/sys/fs/cgroup/pre and c:/sys/fs/cgroup/jobs/a items, both processes adopted again.
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
mkdir -p $cg/jobs/a $cg/jobs/s $cg/other $cg/pre || fail "mkdir in $cg"
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

# metric_value SERIES: its value in /metrics (the line that starts with it)
metric_value() {
    metrics | awk -v s="$1" 'index($0, s " ") == 1 { print $2 }'
}
# within PERCENT GOT WANT: |GOT - WANT| <= PERCENT % of WANT, WANT > 0
within() {
    awk -v p="$1" -v g="$2" -v k="$3" 'BEGIN { d = g - k; if (d < 0) d = -d; exit !(k > 0 && d <= p / 100 * k) }'
}

# pre/ holds its memory before the agent starts.
hold p $cg/pre 4096
wait_until "holder p" grep -q held= /tmp/hold-p.out
memmon agent --cgroup "$cg/pre" --cgroup 'jobs/*' --cgroup 'none-*' --listen 127.0.0.1:9464 \
    --spool /tmp/spool --interval 5 --label group=stock 2>/tmp/agent.err &
ap=$!
# Started with the agent: watched before it starts, or adopted during its fill.
hold s $cg/jobs/s 8192 10
wait_until "the agent watching pre, given as $cg/pre" grep -qx "c:$cg/pre" $w
wait_until "the agent watching jobs/a" grep -qx "c:$cg/jobs/a" $w
hold a $cg/jobs/a 8192
mkdir $cg/jobs/b || fail "mkdir jobs/b"
wait_until "the agent watching jobs/b, made after it started" grep -qx "c:$cg/jobs/b" $w
hold b $cg/jobs/b 4096
hold o $cg/other 2048
for n in a b o s; do
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

# pre/: adopted when watched, with what it held then.
expect_eq "processes of pre" "$(metric_value 'memmon_processes{cgroup="/pre"}')" 1
expect_eq "processes adopted in pre" "$(metric_value 'memmon_processes_adopted_total{cgroup="/pre"}')" 1
got=$(metric_value 'memmon_adopted_resident_bytes{cgroup="/pre"}')
want=$(kernel_bytes $cg/pre)
echo "pre: memmon_adopted_resident_bytes $got, memory.stat anon+file $want"
within 5 "$got" "$want" || fail "pre: adopted bytes $got not within 5 % of $want"
echo "ok: pre's adopted bytes within 5 %"
# jobs/s: no page in a window between its start and the agent's watch.
seen=$(metrics | awk 'index($0, "memmon_resident_bytes{cgroup=\"/jobs/s\",") == 1 { s += $2 } END { print s + 0 }')
adopted=$(metric_value 'memmon_adopted_resident_bytes{cgroup="/jobs/s"}')
want=$(kernel_bytes $cg/jobs/s)
echo "jobs/s: memmon_resident_bytes $seen + memmon_adopted_resident_bytes $adopted, memory.stat anon+file $want"
awk -v s="$seen" -v a="${adopted:-0}" -v k="$want" 'BEGIN { exit !(k > 0 && s + a >= 0.95 * k && s <= 1.05 * k) }' ||
    fail "jobs/s: $seen seen + ${adopted:-0} adopted against $want"
echo "ok: jobs/s counted from its first fault or from its adoption"
none_lines=$(grep -c 'cgroup glob' /tmp/agent.err)
expect_eq "log lines about globs" "$none_lines" 1
expect_eq "the glob matching nothing" "$(grep 'cgroup glob' /tmp/agent.err)" \
    "memmon agent: cgroup glob none-*: matches no cgroup under $cg (said again when one appears)"
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
cat /tmp/agent.err

# Restarted with paths relative to the root: the same cgroups, their processes adopted again.
memmon agent --cgroup pre --cgroup /jobs/a --listen 127.0.0.1:9464 --spool /tmp/spool \
    --interval 5 2>/tmp/agent.err &
ap=$!
wait_until "the agent watching pre, given as pre" grep -qx "c:$cg/pre" $w
wait_until "the agent watching jobs/a, given as /jobs/a" grep -qx "c:$cg/jobs/a" $w
wait_until "pre adopted again" sh -c "wget -qO- http://127.0.0.1:9464/metrics | grep -qx 'memmon_processes_adopted_total{cgroup=\"/pre\"} 1'"
for n in pre jobs/a; do
    expect_eq "processes adopted in $n after the restart" "$(metric_value "memmon_processes_adopted_total{cgroup=\"/$n\"}")" 1
    got=$(metric_value "memmon_adopted_resident_bytes{cgroup=\"/$n\"}")
    want=$(kernel_bytes $cg/$n)
    echo "$n after the restart: memmon_adopted_resident_bytes $got, memory.stat anon+file $want"
    within 5 "$got" "$want" || fail "$n: adopted bytes $got not within 5 % of $want"
done
expect_eq "no glob matching nothing" "$(grep -c 'cgroup glob' /tmp/agent.err)" 0
kill -TERM $ap
wait $ap
expect_eq "restarted agent exit status" $? 0
touch /tmp/stop-a /tmp/stop-b /tmp/stop-o /tmp/stop-c /tmp/stop-p /tmp/stop-s
wait
cat /tmp/agent.err
unload
echo "PASS"
