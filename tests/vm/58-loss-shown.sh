# A loss forced on the defaults is shown wherever the figures are (issue 50): the module is
# loaded with no parameter, and a reader that opened `events` and never reads holds the
# rings, so that the faults of a churn (40 rounds of 4000 pages, 30 frames deep) fill them
# past seven eighths and the module drops faults, counted per process (`dropped` lines),
# until it gives that reader up after 5 s. Then, with the same count N (the sum of the
# capture's `dropped` lines, equal to the module's `dropped_faults`):
#   - `memmon record`: every mmap and munmap line of the churn is in the capture (the maps
#     stay whole), and its summary's `incomplete:` line gives N;
#   - `memmon report`: the header's `incomplete:` line, and the page's first screen
#     (`<p id="loss">`), give N;
#   - `memmon top -i` of the capture: its last status line gives N;
#   - `memmon agent` watching a cgroup where the same churn runs under a reader that does
#     not read: `memmon_faults_dropped_total` of that cgroup is the module's count of
#     faults dropped during the run.
# vm-timeout: 900
. /host/lib.sh
load

# grouped N: N as memmon writes counts (groups of three digits apart)
grouped() {
    echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\| \)/\1 \2\3/' -e 'ta'
}
# dropped_in FILE: the faults of FILE's `dropped` lines
dropped_in() {
    awk '$3 == "dropped" { sub("faults=", "", $4); n += $4 } END { print n + 0 }' "$1"
}

exec 3</proc/memmon/events
before=$(stat_of dropped_faults)
memmon record -o /tmp/cap -- /progs/memtest churn 40 4000 30 >/tmp/rec.out 2>/tmp/rec.err ||
    fail "memmon record: $(cat /tmp/rec.err)"
exec 3<&-
sed 's/^/record: /' /tmp/rec.err
n=$(dropped_in /tmp/cap)
echo "faults dropped: $n; module: $(($(stat_of dropped_faults) - before)); stats: $(grep -E '^(shed_stacks|dropped_faults|overwritten|lost_reported) ' /proc/memmon/stats | tr '\n' ' ')"
[ "$n" -gt 0 ] || fail "no fault was dropped: the scenario did not reach the drop level"
expect_eq "dropped in the capture = the module's count" "$n" $(($(stat_of dropped_faults) - before))
child=$(awk '$3 == "exec" { split($2, ids, "/"); print ids[1]; exit }' /tmp/cap)
expect_eq "mmap lines of the churn" "$(grep -c "^[0-9.]* $child/$child mmap .*len=16384000 " /tmp/cap)" 40
expect_eq "munmap lines of the churn" "$(grep -c "^[0-9.]* $child/$child munmap .*len=16384000 " /tmp/cap)" 40
expect_eq "lost lines" "$(grep -c ' lost ' /tmp/cap)" 0
g=$(grouped "$n")
expect_match "record's summary" "$(grep '^memmon: incomplete:' /tmp/rec.err)" \
    "^memmon: incomplete: $g faults? of $child \\(memtest\\) not recorded"
expect_eq "record's own line for the drop (the summary says it)" \
    "$(grep -c 'faults were not recorded' /tmp/rec.err)" 0

memmon report /tmp/cap >/tmp/report.txt 2>/tmp/report.err || fail "memmon report: $(cat /tmp/report.err)"
expect_match "report's header" "$(grep '^incomplete:' /tmp/report.txt)" \
    "^incomplete: $g faults? of $child \\(memtest\\) not recorded"
memmon report --format html -o /tmp/report.html /tmp/cap 2>/tmp/report.err ||
    fail "memmon report --format html: $(cat /tmp/report.err)"
expect_match "page's loss banner" "$(grep -o '<p id="loss"[^>]*><b>Incomplete capture:</b> [^<]*' /tmp/report.html)" \
    "Incomplete capture:</b> $g faults? of $child \\(memtest\\) not recorded"

memmon top -i /tmp/cap --speed 1000 --interval 0.5 >/tmp/top.out 2>/tmp/top.err ||
    fail "memmon top -i: $(cat /tmp/top.err)"
expect_match "top's last status line" "$(grep 'faults not recorded' /tmp/top.out | tail -n 1)" \
    "faults not recorded $g( |\$)"

# The agent.
cg=/sys/fs/cgroup
grep -q "^[^ ]* $cg cgroup2 " /proc/mounts || mount -t cgroup2 none $cg || fail "cannot mount cgroup2 at $cg"
mkdir -p $cg/lossy || fail "mkdir $cg/lossy"
m=/tmp/metrics.prom
cat > /tmp/agent.toml <<EOF
cgroups = ["lossy"]
interval = 1
listen = ""
metrics_file = "$m"
[spool]
dir = "/tmp/spool"
EOF
memmon agent --config /tmp/agent.toml 2>/tmp/agent.err &
ap=$!
wait_seconds=120
wait_until "the agent watching lossy" grep -qx "c:$cg/lossy" /proc/memmon/watch-pids
series='memmon_faults_dropped_total{cgroup="/lossy"}'
exec 3</proc/memmon/events
before=$(stat_of dropped_faults)
sh -c "echo \$\$ > $cg/lossy/cgroup.procs && exec /progs/memtest churn 40 4000 30" >/dev/null ||
    fail "the churn in lossy"
exec 3<&-
dropped=$(($(stat_of dropped_faults) - before))
[ "$dropped" -gt 0 ] || fail "no fault was dropped under the agent"
wait_until "$series = $dropped" metric_is "$series" "$dropped"
echo "ok: $series = $dropped, the module's count"
kill -TERM $ap
wait $ap || fail "the agent's exit status: $?"
unload
