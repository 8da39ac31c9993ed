# Watching by cgroup v2 (watch-pids c:PATH): every process in a watched cgroup or below it is
# watched, whether it was in it at the write, was moved into it later or was forked in it;
# its fault lines equal its own rusage. A process outside, or moved out (unless watched by
# pid), is not watched; after -c: or rmdir, nothing new there is. 0 clears cgroups too; the
# limit of 64; moves, forks and writes racing leave exactly the processes in the cgroup
# watched; 1000 bad specs each fail, say why in dmesg and change nothing.
# Needs /progs/cgclone (tests/progs/cgclone.c, built by make progs).
. /host/lib.sh
cg=/sys/fs/cgroup
grep -q "^[^ ]* $cg cgroup2 " /proc/mounts || mount -t cgroup2 none $cg || fail "cannot mount cgroup2 at $cg"
mkdir -p $cg/pre $cg/w/sub $cg/out $cg/r || fail "mkdir in $cg"
load buflen=4194304
w=/proc/memmon/watch-pids

# is_watched PID: PID is in the first line of watch-pids (ranges expanded)
is_watched() {
    head -n 1 $w | tr ',' '\n' | awk -F- -v p="$1" '
        $1 != "" { hi = $2 == "" ? $1 : $2; if (p + 0 >= $1 + 0 && p + 0 <= hi + 0) f = 1 }
        END { exit !f }'
}
# waiter GATE CGROUP CMD...: in the background, a shell that moves itself to CGROUP (none:
# stays), waits until GATE is opened (open_gate), then execs CMD, its output in
# /tmp/out-GATE; its pid in $waiter
waiter() {
    gate=/tmp/gate-$1 out=/tmp/out-$1 dir=$2
    shift 2
    rm -f $gate && mkfifo $gate || fail "mkfifo $gate"
    if [ "$dir" = none ]; then
        sh -c 'read x < "$0"; exec "$@"' $gate "$@" > $out &
    else
        sh -c 'echo $$ > "$1/cgroup.procs" || exit 99; read x < "$0"; shift; exec "$@"' \
            $gate $dir "$@" > $out &
    fi
    waiter=$!
    if [ "$dir" != none ]; then
        wait_until "$waiter in $dir" grep -qx "$waiter" $dir/cgroup.procs
    fi
}
open_gate() {
    echo go > /tmp/gate-$1
}
# measured PID OUT WHAT N: process PID's window has N anon W faults and, in all, as many
# fault lines as its own rusage counted (OUT, memtest's output).
measured() {
    win=$(window /tmp/ev "$1")
    expect_eq "$3: anon W faults" "$(printf '%s\n' "$win" | grep -c ' fault type=anon access=W ')" "$4"
    crosscheck "$win" "$2"
}
# no_lines PID WHAT: the events have no line of process PID
no_lines() {
    expect_eq "$2: lines of $1" "$(grep -c " $1/" /tmp/ev)" 0
}

expect_eq "nothing watched at load" "$(cat $w)" ""
expect_eq "no cgroup in stats" "$(stat_of watched_cgroups)" 0
expect_eq "no cgroup move probe while no cgroup is watched" "$(stat_of cgroup_move_probe)" 0

# Already in the cgroup when it is written: found by the walk.
waiter a $cg/pre /progs/memtest anon 100
pa=$waiter
is_watched $pa && fail "$pa watched before any write"
echo c:$cg/pre > $w || fail "c:$cg/pre refused"
expect_eq "the process in pre is watched" "$(head -n 1 $w)" "$pa"
expect_eq "pre is listed" "$(sed -n 2p $w)" "c:$cg/pre"
expect_eq "watched_cgroups" "$(stat_of watched_cgroups)" 1
expect_eq "the cgroup move probe is attached" "$(stat_of cgroup_move_probe)" 1
expect_eq "a second write of it changes nothing" "$(echo c:$cg/pre > $w && cat $w | wc -l)" 2
expect_eq "syscall probes armed" "$(stat_of syscall_probes_armed)" 1

# Moved in later (echo PID > cgroup.procs): watched from the move on.
echo c:$cg/w > $w || fail "c:$cg/w refused"
expect_eq "two cgroups listed, in order" "$(sed -n '2,$p' $w | tr '\n' ' ')" "c:$cg/pre c:$cg/w "
waiter b none /progs/memtest anon 200
pb=$waiter
is_watched $pb && fail "$pb watched outside the cgroups"
echo $pb > $cg/w/cgroup.procs || fail "move $pb into w"
is_watched $pb || fail "$pb moved into w is not watched: $(cat $w)"
echo "ok: $pb moved into w is watched"

# Forked in a cgroup below a watched one: the shell moves itself to w/sub, then forks.
# (not the shell's last command, which it would exec instead)
sh -c "echo \$\$ > $cg/w/sub/cgroup.procs && /progs/memtest anon 300 > /tmp/oc; true" &
pc=$!
wait $pc || fail "the shell in w/sub failed"

# Created in the cgroup by clone3(CLONE_INTO_CGROUP), by a parent outside it.
/progs/cgclone $cg/w /progs/memtest anon 150 > /tmp/ok 2> /tmp/ok.err &
pk_parent=$!
wait $pk_parent || fail "cgclone: $(cat /tmp/ok.err)"
pk=$(sed -n 's/^child=//p' /tmp/ok.err)

# Outside: never watched.
/progs/memtest anon 50 > /tmp/od &
pd=$!
wait $pd

# Moved out: no longer watched; watched by pid too: still watched.
waiter e $cg/w /progs/memtest anon 60
pe=$waiter
is_watched $pe || fail "$pe in w is not watched"
echo $pe > $cg/out/cgroup.procs || fail "move $pe out"
is_watched $pe && fail "$pe moved out of w is still watched"
echo "ok: $pe moved out of w is not watched"
waiter f $cg/w /progs/memtest anon 70
pf=$waiter
echo $pf > $w
echo $pf > $cg/out/cgroup.procs || fail "move $pf out"
is_watched $pf || fail "$pf, watched by pid too, was dropped when moved out"
echo "ok: $pf moved out but watched by pid stays watched"
# -N of a process watched by cgroup: still watched while it is in the cgroup
waiter g $cg/w /progs/memtest anon 80
pg=$waiter
echo -$pg > $w
is_watched $pg || fail "-$pg dropped a process watched by cgroup"
echo "ok: -$pg keeps a process of a watched cgroup watched"

for g in a b e f g; do open_gate $g; done
wait
/progs/drain > /tmp/ev || fail "drain"
measured $pa /tmp/out-a "in pre at the write" 100
measured $pb /tmp/out-b "moved into w" 200
pc1=$(grep " $pc/$pc fork child=" /tmp/ev | field child | head -n 1)
[ -n "$pc1" ] || fail "no fork line of the shell in w/sub"
expect_match "the fork line says the child is watched" "$(grep " $pc/$pc fork child=$pc1 " /tmp/ev)" "watched=1$"
measured "$pc1" /tmp/oc "forked in w/sub" 300
measured "$pk" /tmp/ok "created in w by clone3(CLONE_INTO_CGROUP)" 150
no_lines $pk_parent "the parent outside w"
no_lines $pd "outside"
expect_eq "moved out: no memtest exec line" "$(grep -c " $pe/$pe exec comm=memtest" /tmp/ev)" 0
expect_eq "moved out: no fault line after the move" "$(window /tmp/ev $pe | grep -c ' fault ')" 0
measured $pf /tmp/out-f "moved out, watched by pid" 70
measured $pg /tmp/out-g "-N while in w" 80
expect_eq "all exited: no process left in the set" "$(head -n 1 $w)" ""

# -c: stops: a process started in w after it is not watched.
echo -c:$cg/w > $w || fail "-c:$cg/w refused"
expect_eq "w no longer listed" "$(cat $w)" "$(printf '\nc:%s/pre' $cg)"
sh -c "echo \$\$ > $cg/w/cgroup.procs && exec /progs/memtest anon 40" > /dev/null &
ph=$!
wait $ph
/progs/drain > /tmp/ev
no_lines $ph "started in w after -c:"
expect_eq "-c: of a cgroup not watched is a no-op" "$(echo -c:$cg/out > $w && cat $w)" "$(printf '\nc:%s/pre' $cg)"

# rmdir stops: the cgroup is forgotten, and a new one at its path is not watched.
echo c:$cg/r > $w
sh -c "echo \$\$ > $cg/r/cgroup.procs && exec /progs/memtest anon 30" > /tmp/oi &
pi=$!
wait $pi
/progs/drain > /tmp/ev
measured $pi /tmp/oi "started in r" 30
rmdir $cg/r || fail "rmdir $cg/r"
expect_eq "r forgotten after its rmdir" "$(cat $w)" "$(printf '\nc:%s/pre' $cg)"
expect_eq "watched_cgroups after the rmdir" "$(stat_of watched_cgroups)" 1
# memmon's references are gone: the removed cgroup is freed, not left dying
wait_until "the removed cgroup freed" grep -qx "nr_dying_descendants 0" $cg/cgroup.stat
echo "ok: no dying cgroup left after r was forgotten"
mkdir $cg/r
sh -c "echo \$\$ > $cg/r/cgroup.procs && exec /progs/memtest anon 30" > /dev/null &
pj=$!
wait $pj
/progs/drain > /tmp/ev
no_lines $pj "started in a new cgroup at the removed one's path"
# c: and -c: of one cgroup in one write leave it unwatched.
printf 'c:%s/r -c:%s/r\n' $cg $cg > $w || fail "c: then -c: in one write refused"
expect_eq "c: then -c: in one write" "$(cat $w)" "$(printf '\nc:%s/pre' $cg)"

# 0 clears the cgroups too.
echo 0 > $w
expect_eq "0 clears the cgroups" "$(cat $w)" ""
expect_eq "watched_cgroups after 0" "$(stat_of watched_cgroups)" 0
expect_eq "the cgroup move probe detached after 0" "$(stat_of cgroup_move_probe)" 0
# The last watched cgroup removed: the probe is detached at the next read of watch-pids.
mkdir $cg/last
echo c:$cg/last > $w
expect_eq "attached again for c:$cg/last" "$(stat_of cgroup_move_probe)" 1
rmdir $cg/last
expect_eq "c:$cg/last forgotten" "$(cat $w)" ""
expect_eq "the cgroup move probe detached after the rmdir and a read" "$(stat_of cgroup_move_probe)" 0
echo c:$cg/out > $w
echo -c:$cg/out > $w
expect_eq "the cgroup move probe detached after -c: of the last one" "$(stat_of cgroup_move_probe)" 0

# Bad paths, one by one: the errno, a dmesg line, nothing changed.
echo "1 c:$cg/w" > $w
want=$(cat $w)
expect_eq "the set for the bad writes" "$want" "$(printf '1\nc:%s/w' $cg)"
try() { # try WHAT INPUT ERRNO_TEXT DMESG_REGEX
    kmsg_mark
    if echo -n "$2" > $w 2>/tmp/err; then fail "$1: '$2' was accepted"; fi
    expect_match "$1: error" "$(cat /tmp/err)" "$3"
    expect_eq "$1: set unchanged" "$(cat $w)" "$want"
    expect_match "$1: dmesg" "$(kmsg_new)" "$4"
}
try "relative" "c:sys/fs/cgroup/out" "Invalid argument" "rejected 'c:sys/fs/cgroup/out': not an absolute path"
try "empty path" "c:" "Invalid argument" "rejected 'c:': not an absolute path"
try "missing" "c:$cg/nope" "No such file" "rejected 'c:$cg/nope': no such directory"
try "not a directory" "c:$cg/out/cgroup.procs" "Not a directory" "not a directory"
try "not cgroup2 (procfs)" "c:/proc" "Wrong medium type" "rejected 'c:/proc': not a cgroup v2 directory"
try "not cgroup2 (tmpfs)" "c:/tmp" "Wrong medium type" "not a cgroup v2 directory"
try "not cgroup2 (rootfs)" "c:/" "Wrong medium type" "not a cgroup v2 directory"
try "too long" "c:/$(head -c 4095 /dev/zero | tr '\0' a)" "File name too long" "a path longer than 4095 bytes"
try "-c: of a bad path" "-c:/proc" "Wrong medium type" "not a cgroup v2 directory"
try "-c: of a missing path" "-c:$cg/nope" "No such file" "no such directory"
try "a bad one after good ones" "0 c:$cg/out -c:$cg/w c:/tmp" "Wrong medium type" "rejected 'c:/tmp'"
kmsg_mark
if printf 'c:%s/out\0x' $cg > $w 2>/tmp/err; then fail "a NUL byte in a path was accepted"; fi
expect_eq "NUL: set unchanged" "$(cat $w)" "$want"
expect_match "NUL: dmesg" "$(kmsg_new)" "a NUL byte in the path"

# The limit: 64 cgroups, not 65.
echo 0 > $w
i=1 all=""
while [ $i -le 65 ]; do mkdir -p $cg/l$i; [ $i -le 64 ] && all="$all c:$cg/l$i"; i=$((i + 1)); done
echo $all > $w || fail "64 cgroups in one write refused"
expect_eq "64 watched" "$(stat_of watched_cgroups)" 64
kmsg_mark
if echo c:$cg/l65 > $w 2>/tmp/err; then fail "a 65th cgroup was accepted"; fi
expect_match "65th: error" "$(cat /tmp/err)" "No space left on device"
expect_match "65th: dmesg" "$(kmsg_new)" "rejected 'c:$cg/l65': as many cgroups as can be are watched \(64\)"
expect_eq "65th: still 64" "$(stat_of watched_cgroups)" 64
echo "-c:$cg/l1 c:$cg/l65" > $w || fail "one out, one in, refused"
expect_eq "one out, one in" "$(sed -n '2p;$p' $w | tr '\n' ' ')" "c:$cg/l2 c:$cg/l65 "
echo 0 > $w

# Races: 4 processes moved in and out of ra (watched) and rb, a shell forking in ra, while
# ra is unwatched and watched again (at least 100 times, and until 400 moves were made); at
# rest, exactly the processes in ra are watched.
mkdir -p $cg/ra $cg/rb $cg/keep
# keep: watched all along, so that the cgroup move probe stays attached (attaching it
# patches text: about 0.3 s a round under TCG)
echo c:$cg/keep > $w
rm -f /tmp/stop
sleepers=""
for i in 1 2 3 4; do
    sleep 1000 &
    sleepers="$sleepers $!"
done
sh -c "echo \$\$ > $cg/ra/cgroup.procs; while [ ! -e /tmp/stop ]; do /bin/true; done" &
forker=$!
rm -f /tmp/enough
sh -c "i=0; while [ ! -e /tmp/stop ]; do for p in $sleepers; do
    if [ \$(( (i + p) % 3 )) = 0 ]; then echo \$p > $cg/rb/cgroup.procs; else echo \$p > $cg/ra/cgroup.procs; fi
    i=\$((i + 1)); [ \$i = 400 ] && : > /tmp/enough; done; done; echo \$i > /tmp/moves" &
mover=$!
i=0
while [ $i -lt 100 ] || [ ! -e /tmp/enough ] && [ $i -lt 3000 ]; do
    echo c:$cg/ra > $w || fail "c:$cg/ra, round $i"
    echo -c:$cg/ra > $w || fail "-c:$cg/ra, round $i"
    i=$((i + 1))
done
echo c:$cg/ra > $w
touch /tmp/stop
wait $forker $mover
echo "races: $i rounds of c: and -c:, $(cat /tmp/moves) moves"
# watched_list: the first line of watch-pids, ranges expanded, sorted, space-separated
watched_list() {
    head -n 1 $w | tr ',' '\n' | awk -F- '$1 != "" { hi = $2 == "" ? $1 : $2; for (p = $1; p <= hi; p++) print p }' |
        sort -n | tr '\n' ' '
}
in_ra=$(sort -n $cg/ra/cgroup.procs | tr '\n' ' ')
[ -n "$in_ra" ] || fail "no sleeper ended in ra"
expect_eq "at rest, the watched processes are those in ra" "$(watched_list)" "$in_ra"
for p in $sleepers; do echo $p > $cg/ra/cgroup.procs; done
expect_eq "all 4 moved into ra: all watched" "$(watched_list)" "$(sort -n $cg/ra/cgroup.procs | tr '\n' ' ')"
for p in $sleepers; do echo $p > $cg/rb/cgroup.procs; done
expect_eq "all 4 moved into rb: none watched" "$(watched_list)" ""
echo -c:$cg/ra > $w
kill $sleepers
wait 2>/dev/null
echo 0 > $w

# 1000 fuzzed bad specs: each fails, logs one line, and leaves the set as it was.
echo "1 c:$cg/w" > $w
awk -v n=1000 -v cg=$cg 'BEGIN {
    srand(43)
    long = "c:/"; for (i = 0; i < 4100; i++) long = long "a"
    nb = split("c:|c:sys/fs/cgroup/w|c:w|c:./w|c:" cg "/w/cgroup.procs|c:/proc/memmon/stats|" \
        "c:/proc|c:/tmp|c:/|c:/sys|c:/dev|c:" cg "/nope|c:/nonexistent/dir|" long "|C:" cg "/w|" \
        "cc:" cg "/w|c" cg "/w|+c:" cg "/w|-c:/proc|-c:relative|-c:" cg "/nope|c:/dev/null|" \
        "c:" cg "/w/sub/../../../proc|c:/proc/self|c:/sys/kernel/debug|c:" cg "/w/cgroup.procs/x", bad, "|")
    ng = split("0|c:" cg "/out|-c:" cg "/w|2|-1|+1", good, "|")
    for (i = 0; i < n; i++) {
        t = bad[1 + int(rand() * nb)]
        if (rand() < 0.5 && length(t) > 3) {
            p = 3 + int(rand() * (length(t) - 3))
            c = sprintf("%c", 33 + int(rand() * 94))
            if (c != "/" && c != ".") t = substr(t, 1, p) c substr(t, p + 1)
        }
        if (rand() < 0.3) t = good[1 + int(rand() * ng)] " " t
        print t
    }
}' > /tmp/specs
expect_eq "specs" "$(wc -l < /tmp/specs)" 1000
want1=1 want2=c:$cg/w
dmesg -c > /dev/null
n=0 einval=0 enoent=0 other=0 rejected=0
while IFS= read -r spec; do
    n=$((n + 1))
    if echo -n "$spec" > $w 2>/tmp/err; then fail "spec $n accepted: '$spec'"; fi
    e=""
    IFS= read -r e < /tmp/err
    case "$e" in
        *"Invalid argument"*) einval=$((einval + 1)) ;;
        *"No such file"*) enoent=$((enoent + 1)) ;;
        *"Not a directory"* | *"Wrong medium type"* | *"File name too long"*) other=$((other + 1)) ;;
        *) fail "spec $n ('$spec'): $e" ;;
    esac
    l1=x l2=x l3=""
    { IFS= read -r l1; IFS= read -r l2; IFS= read -r l3; } < $w
    [ "$l1" = "$want1" ] && [ "$l2" = "$want2" ] && [ -z "$l3" ] ||
        fail "spec $n ('$spec') changed the set: '$l1' '$l2' '$l3'"
    if [ $((n % 100)) = 0 ]; then
        rejected=$((rejected + $(dmesg -c | grep -c 'memmon: watch-pids: rejected')))
    fi
done < /tmp/specs
echo "fuzz: $n specs, $einval EINVAL, $enoent ENOENT, $other ENOTDIR, EMEDIUMTYPE or ENAMETOOLONG"
expect_eq "fuzzed specs refused" "$((einval + enoent + other))" 1000
expect_eq "dmesg lines for them" "$rejected" 1000
expect_eq "watched_cgroups after the fuzz" "$(stat_of watched_cgroups)" 1
unload
# Every reference memmon took (writes, refused writes, -c:, 0, the races, unload) was
# dropped: once removed, every cgroup of the test is freed.
for d in $cg/l* $cg/w/sub $cg/w $cg/pre $cg/out $cg/r $cg/ra $cg/rb $cg/keep; do rmdir $d || fail "rmdir $d"; done
wait_until "the removed cgroups freed" grep -qx "nr_dying_descendants 0" $cg/cgroup.stat
echo "ok: all $(ls -d /sys/fs/cgroup/*/ 2>/dev/null | wc -l) cgroups left; none dying"
