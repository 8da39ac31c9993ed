# memmon agent on Debian's stock kernel (memory controller, loopback networking), scraped by
# Debian's prometheus (build/stock/prometheus: scripts/stock/prometheus), started before the
# agent and kept through its restart. The agent watches jobs/* by glob (--cgroup), pre/ by the
# mount's own path (--cgroup /sys/fs/cgroup/pre), and a glob that matches nothing; it serves
# /metrics on 127.0.0.1:9464 with --interval 5; prometheus scrapes it every 2 s. Workloads
# (hold N: N anonymous pages): pre/ filled before the agent starts (4096 pages), jobs/s
# joined as the agent starts (8192 pages, 256 every 10 ms), jobs/a from the start (8192
# pages), jobs/b made after the agent started (4096 pages), other/ outside the glob (2048).
#
# The kernel's figure memmon_resident_bytes is compared with ("kernel" below): memory.stat's
# anon plus the RssFile + RssShmem of the cgroup's processes (/proc/PID/status). Why not
# memory.stat anon + file: memmon_resident_bytes is what the cgroup's processes have mapped
# (their RSS, by class), memory.stat what the cgroup is charged for. Anonymous pages are
# charged to the cgroup of the process that faults them, so for these single-process
# cgroups memory.stat anon is the processes' anonymous RSS. A file or shmem page is charged
# to the cgroup that first brought it into the page cache, whoever maps it later: here
# /progs/hold (static) lives on the initramfs (tmpfs), whose pages the kernel unpacked at
# boot, charged to no workload cgroup: each holder maps 162 of them (RssShmem 663552) while
# its cgroup's memory.stat says file_mapped 0, shmem 4096; memmon counts them as the
# kernel's RSS does (+3.9 % over memory.stat anon + file for pre's 16 MiB, +2.0 % for
# jobs/s's 32 MiB). memory.stat file in turn counts page cache charged to the cgroup that
# no process maps. memmon cannot exclude the pages charged elsewhere: the
# module's fault events do not say which cgroup a page is charged to (only an adoption's
# pagemap read, as root, could, through /proc/kpagecgroup), and excluding them from the
# adopted pages only would make a restarted agent disagree with the one that saw the
# faults. So the file part is compared with the kernel's own count of mapped file pages,
# and the anonymous classes (heap + anon_mmap + stack) with memory.stat anon on their own
# (memmon's classes are the mappings': the few written pages of the binary's data, anon to
# the kernel, are in its file class, 5 pages short of memory.stat anon here).
# Checks:
#   - the glob matching nothing: one log line naming it and /sys/fs/cgroup, not repeated;
#   - pre/ (filled before the agent) and jobs/s (joined during its start): within one
#     interval (5 s) of the agent finding them (their c: line in watch-pids), prometheus's
#     sum by (cgroup) (memmon_resident_bytes) within 2 % of the kernel's figure and the
#     anonymous classes within 2 % of memory.stat anon; again three intervals later;
#   - pre/'s process, already running, is adopted when pre/ is watched (issue 51):
#     memmon_processes 1 and memmon_processes_adopted_total 1 at once, and
#     memmon_adopted_resident_bytes (what it held then, not seen faulting) within 5 % of
#     the kernel's figure;
#   - jobs/s: each page is either seen faulting or held when the process was adopted, none
#     in between (memmon_resident_bytes + memmon_adopted_resident_bytes at least 95 % of the
#     kernel's figure, memmon_resident_bytes at most 105 %);
#   - jobs/a and jobs/b (seen faulting from their start): within 2 % as above;
#   - other/ has no series (count(memmon_resident_bytes{cgroup="/other"}) is empty);
#   - jobs/c, with memory.max 24 MiB and no swap, grows by 1 MiB every 300 ms to 48 MiB: its
#     near-limit snapshot is in the spool before the OOM kill (memory.events oom_kill);
#   - /metrics answers throughout, the agent's RSS under 64 MiB; SIGTERM: exit 0;
#   - restarted, once prometheus has marked the first agent's series stale, with --cgroup
#     pre --cgroup /jobs/a --cgroup jobs/s (paths relative to the root): the same
#     c:/sys/fs/cgroup/... items, the processes adopted again, and pre/ and jobs/s within
#     2 % within one interval of being found and three intervals later, as above.
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
# status_kb CGROUP-DIR FIELDS: the sum of those /proc/PID/status fields (kB, FIELDS an awk
# regex such as "RssFile|RssShmem") over the cgroup's processes
status_kb() {
    for pid in $(cat "$1/cgroup.procs"); do cat /proc/$pid/status 2>/dev/null; done |
        awk -v f="^($2):\$" '$1 ~ f { s += $2 } END { print s + 0 }'
}
# stat_of_cg CGROUP-DIR KEY: one memory.stat value
stat_of_cg() {
    awk -v k="$2" '$1 == k { print $2 }' "$1/memory.stat"
}
# kernel_bytes CGROUP-DIR: the kernel's figure for memmon_resident_bytes (the header says
# why): memory.stat anon + the cgroup's processes' RssFile + RssShmem
kernel_bytes() {
    echo $(($(stat_of_cg "$1" anon) + $(status_kb "$1" 'RssFile|RssShmem') * 1024))
}
# classes CGROUP: memmon_resident_bytes of the cgroup by class, from /metrics
classes() {
    metrics | awk -v p="memmon_resident_bytes{cgroup=\"$1\",class=\"" '
        index($0, p) == 1 { c = substr($0, length(p) + 1); sub(/".*/, "", c); printf "%s%s=%s", sep, c, $2; sep = " " }'
}
# anon_classes CGROUP: memmon's anonymous classes of the cgroup (heap + anon_mmap + stack)
anon_classes() {
    metrics | awk -v p="memmon_resident_bytes{cgroup=\"$1\",class=\"" '
        index($0, p) == 1 && ($0 ~ /class="(heap|anon_mmap|stack)"/) { s += $2 } END { print s + 0 }'
}
# figures CGROUP: memmon's classes and the kernel's counters, for the log
figures() {
    echo "  $1 memmon: $(classes "/$1")"
    echo "  $1 memory.stat: anon=$(stat_of_cg $cg/$1 anon) file=$(stat_of_cg $cg/$1 file) file_mapped=$(stat_of_cg $cg/$1 file_mapped) shmem=$(stat_of_cg $cg/$1 shmem)"
    echo "  $1 status: RssAnon=$(($(status_kb $cg/$1 RssAnon) * 1024)) RssFile=$(($(status_kb $cg/$1 RssFile) * 1024)) RssShmem=$(($(status_kb $cg/$1 RssShmem) * 1024))"
}
# now: seconds since boot
now() {
    cut -d' ' -f1 /proc/uptime
}
# ratio GOT WANT
ratio() {
    awk -v g="$1" -v k="$2" 'BEGIN { printf "%.4f", (k > 0 ? g / k : 0) }'
}
# agree CGROUP: prometheus's sum of memmon_resident_bytes for the cgroup within 2 % of the
# kernel's figure, and memmon's anonymous classes within 2 % of memory.stat anon; says so
# (WHEN its first argument) when they do
agree() {
    a_got=$(value_for "/$1" "$(promql "$q")")
    a_want=$(kernel_bytes $cg/$1)
    a_anon=$(anon_classes "/$1")
    a_kanon=$(stat_of_cg $cg/$1 anon)
    [ -n "$a_got" ] && within 2 "$a_got" "$a_want" && within 2 "$a_anon" "$a_kanon" || return 1
    echo "ok: $1 $2: memmon_resident_bytes $a_got, kernel $a_want (ratio $(ratio "$a_got" "$a_want"));" \
        "anon classes $a_anon, memory.stat anon $a_kanon (ratio $(ratio "$a_anon" "$a_kanon"))"
    figures "$1"
}
# debug_dump CGROUP: its processes' maps, its series in /metrics and the agent's log
debug_dump() {
    for pid in $(cat $cg/$1/cgroup.procs); do echo "maps of $pid:"; cat /proc/$pid/maps; done
    metrics | grep "cgroup=\"/$1\""
    cat /tmp/agent.err
}
# settle CGROUP FOUND [CGROUP FOUND...]: each cgroup agrees (agree) by FOUND (uptime when the
# agent was seen finding it) + one interval, polled
settle() {
    while [ $# -gt 0 ]; do
        set -- "$@" ""
        pending=
        while [ "$1" != "" ]; do
            if agree "$1" "$(awk -v t="$(now)" -v f="$2" 'BEGIN { printf "%.1f s after being found", t - f }')"; then
                :
            elif awk -v t="$(now)" -v f="$2" -v i=$interval 'BEGIN { exit !(t > f + i) }'; then
                echo "$1: memmon_resident_bytes ${a_got:-none}, kernel $a_want; anon classes $a_anon, memory.stat anon $a_kanon"
                figures "$1"
                debug_dump "$1"
                fail "$1: memmon's figures not within 2 % of the kernel's one interval after being found"
            else
                pending="$pending $1 $2"
            fi
            shift 2
        done
        shift
        # shellcheck disable=SC2086 # the pending pairs are words
        set -- $pending
        [ $# -eq 0 ] || sleep 0.3
    done
}
# still CGROUP...: each agrees now
still() {
    for c in "$@"; do
        agree "$c" "$((3 * interval)) s later" || {
            echo "$c: memmon_resident_bytes ${a_got:-none}, kernel $a_want; anon classes $a_anon, memory.stat anon $a_kanon"
            figures "$c"
            fail "$c: memmon's figures no longer within 2 % of the kernel's"
        }
    done
}

# metric_value SERIES: its value in /metrics (the line that starts with it)
metric_value() {
    metrics | awk -v s="$1" 'index($0, s " ") == 1 { print $2 }'
}
# within PERCENT GOT WANT: |GOT - WANT| <= PERCENT % of WANT, WANT > 0
within() {
    awk -v p="$1" -v g="$2" -v k="$3" 'BEGIN { d = g - k; if (d < 0) d = -d; exit !(k > 0 && d <= p / 100 * k) }'
}

# pre/ holds its memory before the agent starts; prometheus scrapes before it starts too.
hold p $cg/pre 4096
wait_until "holder p" grep -q held= /tmp/hold-p.out
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
# Ready is not scraping: its discovery hands the target over up to 5 s later. Scraping once
# the target's up series exists (0 until the agent listens).
scraping() {
    promql up | grep -q '"__name__":"up"'
}
wait_until "prometheus scraping 127.0.0.1:9464" scraping
q='sum%20by%20(cgroup)%20(memmon_resident_bytes)'
interval=5
memmon agent --cgroup "$cg/pre" --cgroup 'jobs/*' --cgroup 'none-*' --listen 127.0.0.1:9464 \
    --spool /tmp/spool --interval $interval --label group=stock 2>/tmp/agent.err &
ap=$!
# Started with the agent: watched before it starts, or adopted during its fill.
hold s $cg/jobs/s 8192 10
wait_seen() {
    i=0
    until grep -qx "c:$cg/$1" $w; do
        i=$((i + 1))
        [ $i -lt 1800 ] || { on_wait_timeout; fail "timed out waiting for the agent watching $1"; }
        sleep 0.1
    done
    now
}
found_pre=$(wait_seen pre) || fail "$found_pre"
found_s=$(wait_seen jobs/s) || fail "$found_s"
echo "the agent found pre at $found_pre s and jobs/s at $found_s s (uptime)"
settle pre "$found_pre" jobs/s "$found_s"
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
    echo "jobs/$n: memmon_resident_bytes $got, kernel $want (ratio $(ratio "$got" "$want"))"
    figures jobs/$n
    within 2 "$got" "$want" || fail "jobs/$n: $got not within 2 % of $want"
    echo "ok: jobs/$n within 2 %"
done
expect_match "jobs/a holds at least its 8192 pages" "$(value_for /jobs/a "$json")" '^[0-9]'

# pre/: adopted when watched, with what it held then.
expect_eq "processes of pre" "$(metric_value 'memmon_processes{cgroup="/pre"}')" 1
expect_eq "processes adopted in pre" "$(metric_value 'memmon_processes_adopted_total{cgroup="/pre"}')" 1
got=$(metric_value 'memmon_adopted_resident_bytes{cgroup="/pre"}')
want=$(kernel_bytes $cg/pre)
echo "pre: memmon_adopted_resident_bytes $got, kernel $want"
within 5 "$got" "$want" || fail "pre: adopted bytes $got not within 5 % of $want"
echo "ok: pre's adopted bytes within 5 %"
# jobs/s: no page in a window between its start and the agent's watch.
seen=$(metrics | awk 'index($0, "memmon_resident_bytes{cgroup=\"/jobs/s\",") == 1 { s += $2 } END { print s + 0 }')
adopted=$(metric_value 'memmon_adopted_resident_bytes{cgroup="/jobs/s"}')
want=$(kernel_bytes $cg/jobs/s)
echo "jobs/s: memmon_resident_bytes $seen + memmon_adopted_resident_bytes $adopted, kernel $want"
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
# pre/ and jobs/s stay so: three intervals after they were found, or more.
while awk -v t="$(now)" -v f="$found_s" -v i=$interval 'BEGIN { exit !(t < f + 3 * i) }'; do sleep 0.5; done
still pre jobs/s

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

kill -TERM $ap
wait $ap
expect_eq "agent exit status" $? 0
expect_eq "watched after SIGTERM" "$(cat $w)" ""
cat /tmp/agent.err
# Its series stale in prometheus (its scrape failed), so what follows is the new agent's.
stale() {
    promql "$q" | grep -q '"result":\[\]'
}
wait_until "prometheus marking the stopped agent's series stale" stale

# Restarted with paths relative to the root while pre/ and jobs/s hold their memory: the
# same cgroups, their processes adopted again, counted within one interval.
memmon agent --cgroup pre --cgroup /jobs/a --cgroup jobs/s --listen 127.0.0.1:9464 \
    --spool /tmp/spool --interval $interval 2>/tmp/agent.err &
ap=$!
found_pre=$(wait_seen pre) || fail "$found_pre"
found_s=$(wait_seen jobs/s) || fail "$found_s"
wait_until "the agent watching jobs/a, given as /jobs/a" grep -qx "c:$cg/jobs/a" $w
echo "the restarted agent found pre at $found_pre s and jobs/s at $found_s s (uptime)"
settle pre "$found_pre" jobs/s "$found_s"
wait_until "pre adopted again" sh -c "wget -qO- http://127.0.0.1:9464/metrics | grep -qx 'memmon_processes_adopted_total{cgroup=\"/pre\"} 1'"
for n in pre jobs/a jobs/s; do
    expect_eq "processes adopted in $n after the restart" "$(metric_value "memmon_processes_adopted_total{cgroup=\"/$n\"}")" 1
    got=$(metric_value "memmon_adopted_resident_bytes{cgroup=\"/$n\"}")
    want=$(kernel_bytes $cg/$n)
    echo "$n after the restart: memmon_adopted_resident_bytes $got, kernel $want"
    within 5 "$got" "$want" || fail "$n: adopted bytes $got not within 5 % of $want"
done
expect_eq "no glob matching nothing" "$(grep -c 'cgroup glob' /tmp/agent.err)" 0
while awk -v t="$(now)" -v f="$found_s" -v i=$interval 'BEGIN { exit !(t < f + 3 * i) }'; do sleep 0.5; done
still pre jobs/s
kill $pp
kill -TERM $ap
wait $ap
expect_eq "restarted agent exit status" $? 0
touch /tmp/stop-a /tmp/stop-b /tmp/stop-o /tmp/stop-c /tmp/stop-p /tmp/stop-s
wait
cat /tmp/agent.err
unload
echo "PASS"
