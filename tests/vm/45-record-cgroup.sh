# memmon record --cgroup PATH against the real module, and memmon report --group-by cgroup
# and --group-by process of its capture. Recording rec: one process started in rec/a (memtest
# anon 300), one moved into rec/b (memtest anon 700), and one outside (memtest anon 500, in
# other). Then: the capture has a "# cgroup PID PATH" header for each of the two (/rec/a,
# /rec/b) and no other; each one's fault lines between its markers equal its own rusage (300
# and 700 anon W faults); the outside one has no line and no header; record unwatched rec at
# SIGINT. The report at the end (text and JSON; `--at end`: each process's last state, where
# the default, the peak, has only the processes alive at that moment, and the two workloads
# may not overlap) has exactly two groups, largest first, each with its one process; each
# group's sites of its workload's innermost frame hold exactly its N pages and no other's;
# the groups' anon bytes add up to the report's, and each group's are at least its N pages
# and at most the kernel's anon RSS of its process at exit (its rss line). At the peak too,
# the groups add up to the report's anon bytes.
#
# record learns a process's cgroup from /proc/PID/cgroup when it reads the process's first
# event; a process gone by then gets no header (the stream does not carry cgroups). So each
# workload, once in its cgroup, execs a shell that waits until record has written its header,
# then execs memtest: the pid, and so the header, is memtest's.
#
# Multi-threaded TCG, as vm-42 and vm-47: record arms and disarms the syscall probes while
# the churn's processes run the patched syscalls on the other vCPU. Multi-threaded TCG
# sometimes runs the patched text stale (scripts/tcg-text-poke-race.sh): on a clean clone's
# CI run (2026-12-06) this scenario took "BUG: kernel NULL pointer dereference" with RIP 0
# on a syscall's entry, the race's jump-to-0 form (reproduced without memmon by
# tcg-text-poke-race.sh --mode kprobe-off), which scripts/check.sh boots again once.
. /host/lib.sh
cg=/sys/fs/cgroup
grep -q "^[^ ]* $cg cgroup2 " /proc/mounts || mount -t cgroup2 none $cg || fail "cannot mount cgroup2 at $cg"
mkdir -p $cg/rec/a $cg/rec/b $cg/other || fail "mkdir in $cg"
load buflen=4194304
w=/proc/memmon/watch-pids

memmon record --cgroup $cg/rec -o /tmp/cap 2>/tmp/rec.err &
rp=$!
wait_until "record watching $cg/rec" grep -qx "c:$cg/rec" $w

# noted PID: record has written the cgroup header of PID
noted() {
    grep -q "^# cgroup $1 " /tmp/cap
}
rm -f /tmp/gate-a /tmp/gate-b0 /tmp/gate-b
mkfifo /tmp/gate-a /tmp/gate-b0 /tmp/gate-b || fail "mkfifo"

# Started in rec/a: the shell moves itself there, execs a shell that waits at gate a, which
# execs memtest.
sh -c "echo \$\$ > $cg/rec/a/cgroup.procs || exit 99
    exec sh -c 'read x < /tmp/gate-a; exec /progs/memtest anon 300'" > /tmp/out-a &
pa=$!
wait_until "record noting $pa" noted $pa
echo go > /tmp/gate-a

# Outside: in other, run to its end while recording.
sh -c "echo \$\$ > $cg/other/cgroup.procs || exit 99; exec /progs/memtest anon 500" > /tmp/out-d &
pd=$!

# Moved into rec/b: started in other, waits at gate b0; moved; then as in rec/a.
sh -c "echo \$\$ > $cg/other/cgroup.procs || exit 99; read x < /tmp/gate-b0
    exec sh -c 'read x < /tmp/gate-b; exec /progs/memtest anon 700'" > /tmp/out-b &
pb=$!
wait_until "$pb in other" grep -qx "$pb" $cg/other/cgroup.procs
noted $pb && fail "$pb noted before it was moved in"
echo $pb > $cg/rec/b/cgroup.procs || fail "move $pb into rec/b"
echo go > /tmp/gate-b0
wait_until "record noting $pb" noted $pb
echo go > /tmp/gate-b

wait $pa || fail "the workload in rec/a exited with $?"
wait $pb || fail "the workload moved into rec/b exited with $?"
wait $pd || fail "the workload outside exited with $?"
# record has read both exits before it is stopped.
wait_until "record reading the exits" sh -c "grep -q ' $pa/$pa exit code=' /tmp/cap && grep -q ' $pb/$pb exit code=' /tmp/cap"
kill -INT $rp
wait $rp || fail "record exited with $?: $(cat /tmp/rec.err)"
expect_match "record's stderr" "$(cat /tmp/rec.err)" "^memmon: interrupted, recording stopped$"
expect_eq "record unwatched the cgroup" "$(cat $w)" ""
echo "pids: a=$pa b=$pb outside=$pd"

# The capture.
expect_eq "the watched cgroup" "$(sed -n 's/^# cgroup-watched //p' /tmp/cap)" "$cg/rec"
expect_eq "cgroup headers" "$(grep '^# cgroup ' /tmp/cap | sort | tr '\n' ';')" \
    "$(printf '# cgroup %s /rec/a\n# cgroup %s /rec/b\n' $pa $pb | sort | tr '\n' ';')"
expect_eq "the end header" "$(grep -c '^# end ' /tmp/cap)" 1
# measured PID OUT WHAT N: the window of PID has N anon W faults and, in all, as many fault
# lines as its own rusage counted (OUT, memtest's output)
measured() {
    win=$(window /tmp/cap "$1")
    expect_eq "$3: anon W faults" "$(printf '%s\n' "$win" | grep -c ' fault type=anon access=W ')" "$4"
    crosscheck "$win" "$2"
}
measured $pa /tmp/out-a "started in rec/a" 300
measured $pb /tmp/out-b "moved into rec/b" 700
expect_eq "outside: its lines" "$(grep -c " $pd/" /tmp/cap)" 0
# A header naming the pid ("# cgroup PID ...", "# snapshot SOURCE PID ..."), not any "#" line
# holding the number: a snapshot's maps lines have inode numbers.
expect_eq "outside: its headers" "$(grep -cE "^# ([a-z-]+|snapshot [a-z]+) $pd( |\$)" /tmp/cap)" 0
# every event line is one of the two's (or lost/mark, of pid 0)
expect_eq "lines of other pids" "$(grep -v '^#' /tmp/cap | awk -v a=$pa -v b=$pb '
    { split($2, ids, "/") } ids[1] != a && ids[1] != b && ids[1] != 0' | wc -l)" 0

# exit_anon PID: the anon bytes of the rss line of PID's exit (the kernel's counter)
exit_anon() {
    grep " $1/$1 rss .*at=exit" /tmp/cap | field anon
}
ea=$(exit_anon $pa) eb=$(exit_anon $pb)
[ -n "$ea" ] && [ -n "$eb" ] || fail "no rss line at exit: a '$ea', b '$eb'"
echo "anon RSS at exit: a $ea, b $eb"

# groups JSON: from the report's JSON, one line per group: NAME;pids=P,..;sites=B,.. (the
# resident bytes of its sites of 256 KiB or more), then one line: all anon A (the report's)
# groups anon G (its groups', summed)
groups() {
    awk '
        /^  "totals": \{/ { top = 1; next }
        top && /^    "anon": / { all = $2 + 0; top = 0; next }
        /^  "groups": \[/ { on = 1; next }
        !on { next }
        /^    \{/ { name = ""; pids = ""; sites = ""; part = ""; next }
        /^    \}/ { print name ";pids=" pids ";sites=" sites; next }
        /^      "name": / { name = $0; sub(/^[^:]*: "/, "", name); sub(/",?$/, "", name); next }
        /^      "[a-z_]+": / { part = $1; gsub(/[":]/, "", part); next }
        part == "pids" && /^        [0-9]+,?$/ { pids = pids (pids == "" ? "" : ",") $1 + 0; next }
        part == "totals" && /^        "anon": / { anon[name] = $2 + 0; sum += $2; next }
        part == "sites" && /^          "frames": / { fn = ""; next }
        part == "sites" && fn == "" && /^              "function": / { fn = $0; sub(/^[^:]*: "/, "", fn); sub(/",?$/, "", fn); next }
        part == "sites" && /^          "resident": / { by_fn[name, fn] += $2; next }
        /^      \]/ && part == "sites" {
            for (k in by_fn) { split(k, kk, SUBSEP); if (kk[1] == name && by_fn[k] >= 262144) sites = sites (sites == "" ? "" : ",") by_fn[k] }
            next
        }
        END { print "all anon " all " groups anon " sum; for (n in anon) print "anon " n ";" anon[n] }
    ' "$1"
}
# within WHAT BYTES LO HI: LO <= BYTES <= HI
within() {
    [ "$2" -ge "$3" ] && [ "$2" -le "$4" ] || fail "$1: $2 bytes, not within $3 .. $4"
    echo "ok: $1: $2 bytes, within $3 .. $4"
}
for by in cgroup process; do
    memmon report --group-by $by --at end /tmp/cap > /tmp/report-$by || fail "report --group-by $by"
    memmon report --group-by $by --at end --format json /tmp/cap > /tmp/report-$by.json ||
        fail "report --group-by $by --format json"
    if [ $by = cgroup ]; then na="cgroup /rec/a" nb="cgroup /rec/b"; else na="process $pa" nb="process $pb"; fi
    # Text: the two groups, largest first, each with its one process.
    expect_eq "$by: text groups" \
        "$(grep -E '^(cgroup|process) ' /tmp/report-$by | sed 's/: resident .*, process/: process/' | tr '\n' ';')" \
        "$nb: process $pb;$na: process $pa;"
    # JSON: the same two, each with its workload's site (all its N pages) and no other's.
    g=$(groups /tmp/report-$by.json)
    expect_eq "$by: JSON groups" "$(printf '%s\n' "$g" | grep -v anon | tr '\n' ' ')" \
        "$nb;pids=$pb;sites=$((700 * 4096)) $na;pids=$pa;sites=$((300 * 4096)) "
    # Their anon bytes: all of the report's; each group's, its N pages and at most the
    # kernel's anon RSS of its process at exit (its start-up pages besides; the page exec
    # fills with the arguments is not faulted).
    expect_match "$by: the groups hold all anon bytes" "$(printf '%s\n' "$g" | grep '^all anon')" \
        '^all anon ([0-9]+) groups anon \1$'
    within "$by: $na anon" "$(printf '%s\n' "$g" | sed -n "s|^anon $na;||p")" $((300 * 4096)) $ea
    within "$by: $nb anon" "$(printf '%s\n' "$g" | sed -n "s|^anon $nb;||p")" $((700 * 4096)) $eb
    # At the peak (the default): the groups of the processes alive then, adding up too.
    memmon report --group-by $by --format json /tmp/cap > /tmp/report-$by-peak.json ||
        fail "report --group-by $by at the peak"
    expect_match "$by: at the peak the groups hold all anon bytes" \
        "$(groups /tmp/report-$by-peak.json | grep '^all anon')" '^all anon ([0-9]+) groups anon \1$'
done

# Stopped while a process of the cgroup still makes events (memtest churn in rec/a): record
# unwatches the cgroup, then reads what the module still holds before it ends. It is the
# only reader, so every event made since the load was delivered to it or reported lost.
unload
load buflen=4194304
memmon record --cgroup $cg/rec -o /tmp/cap2 2>/tmp/rec2.err &
rp=$!
wait_until "record watching $cg/rec again" grep -qx "c:$cg/rec" $w
sh -c "echo \$\$ > $cg/rec/a/cgroup.procs || exit 99; exec /progs/memtest churn 1000000 8" > /dev/null &
pc=$!
wait_until "record writing churn's faults" sh -c "grep -q '^[0-9.]* $pc/$pc fault ' /tmp/cap2"
sleep 0.5
kill -INT $rp
wait $rp || fail "record exited with $?: $(cat /tmp/rec2.err)"
kill $pc
wait $pc
expect_eq "record unwatched the cgroup" "$(cat $w)" ""
produced=$(stat_of produced) delivered=$(stat_of delivered) lost=$(stat_of lost_reported)
echo "stopped during churn: produced $produced, delivered $delivered, reported lost $lost"
expect_eq "events delivered or reported lost" $((delivered + lost)) $produced

# Stopped while another process, outside the cgroup and watched by hand, keeps the stream
# busy: record reads only what was made before it unwatched the cgroup, and ends.
/progs/memtest churn 1000000 8 > /dev/null &
po=$!
echo $po > $w || fail "watch $po by hand"
memmon record --cgroup $cg/rec -o /tmp/cap3 2>/tmp/rec3.err &
rp=$!
wait_until "record watching $cg/rec a third time" grep -qx "c:$cg/rec" $w
sleep 0.5
kill -INT $rp
i=0
while kill -0 $rp 2>/dev/null; do
    [ $((i += 1)) -le 100 ] || { kill $po; fail "record did not end within 10 s of Ctrl-C with another process watched"; }
    sleep 0.1
done
wait $rp || fail "record exited with $?: $(cat /tmp/rec3.err)"
echo "record ended $((i * 100)) ms or less after Ctrl-C, $po still watched: $(cat $w | tr '\n' ' ')"
expect_eq "only the process watched by hand is left" "$(cat $w)" "$po"
kill $po
wait $po
unload
rmdir $cg/rec/a $cg/rec/b $cg/rec $cg/other || fail "rmdir"
