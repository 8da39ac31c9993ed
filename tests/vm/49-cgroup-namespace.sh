# Cgroups as containers make them: cgroup namespaces (tests/progs/cgns.c, unshare(
# CLONE_NEWCGROUP), as busybox's unshare has no -C) and long paths, through memmon attach and
# detach against the real module.
# - A process inside a cgroup namespace rooted at ctr is found when the host watches ctr by
#   its host path; its fault lines equal its own rusage.
# - memmon attach --cgroup run inside the namespace (its own mount of cgroup2, as a
#   container has) takes the path as the namespace sees it: /sys/fs/cgroup/app there is
#   ctr/app; a cgroup outside the namespace is refused with one line saying so.
# - The stream names each watched process's cgroup: a `cgroup id=ID path=PATH` line at the
#   write for the processes in the cgroup then, at a move into it, and for a child forked in
#   it right after its parent's fork line, before any line of the child.
# - A cgroup 2 000 bytes deep is watched, its process's faults recorded exactly, its
#   `cgroup` line keeps the path's end; a path over 4095 bytes is refused with one line
#   saying so.
# Multi-threaded TCG, as vm-45: memmon attach arms the probes while processes run.
. /host/lib.sh
cg=/sys/fs/cgroup
grep -q "^[^ ]* $cg cgroup2 " /proc/mounts || mount -t cgroup2 none $cg || fail "cannot mount cgroup2 at $cg"
mkdir -p $cg/ctr/app $cg/ctr/idle $cg/ctr2 $cg/other || fail "mkdir in $cg"
load buflen=4194304
w=/proc/memmon/watch-pids

# is_watched PID: PID is in the first line of watch-pids (ranges expanded)
is_watched() {
    head -n 1 $w | tr ',' '\n' | awk -F- -v p="$1" '
        $1 != "" { hi = $2 == "" ? $1 : $2; if (p + 0 >= $1 + 0 && p + 0 <= hi + 0) f = 1 }
        END { exit !f }'
}
# gate NAME: a fifo a workload waits at (open_gate NAME lets it go)
gate() {
    rm -f /tmp/gate-$1 && mkfifo /tmp/gate-$1 || fail "mkfifo /tmp/gate-$1"
}
open_gate() {
    echo go > /tmp/gate-$1
}
# measured PID OUT WHAT N: process PID's window in /tmp/ev has N anon W faults and as many
# fault lines as its own rusage counted (OUT, memtest's output)
measured() {
    win=$(window /tmp/ev "$1")
    expect_eq "$3: anon W faults" "$(printf '%s\n' "$win" | grep -c ' fault type=anon access=W ')" "$4"
    crosscheck "$win" "$2"
}
# cgroup_line PID: the fields of process PID's cgroup lines in /tmp/ev (id=... path=...)
cgroup_line() {
    grep " $1/$1 cgroup " /tmp/ev | sed 's/^[^ ]* [^ ]* cgroup //'
}
# The shell that runs CMD... in a cgroup namespace rooted at cgroup DIR: sh -c "$in_ns" DIR
# CMD... (it moves itself there, then execs cgns: in the background, $! is CMD's pid)
in_ns='echo $$ > "$0/cgroup.procs" || exit 99; exec /progs/cgns "$@"'
in_ns() {
    sh -c "$in_ns" "$@"
}

# 1. Inside a namespace rooted at ctr, watched from the host by the host path.
gate a
sh -c "$in_ns" $cg/ctr sh -c 'cat /proc/self/cgroup > /tmp/ns-a; read x < /tmp/gate-a; exec /progs/memtest anon 100' > /tmp/out-a &
pa=$!
wait_until "the shell in ctr's namespace" test -s /tmp/ns-a
expect_eq "in the namespace, its cgroup is the root" "$(cat /tmp/ns-a)" "0::/"
expect_eq "from the host, it is in ctr" "$(cat /proc/$pa/cgroup)" "0::/ctr"
memmon attach --cgroup $cg/ctr || fail "memmon attach --cgroup $cg/ctr from the host"
is_watched $pa || fail "$pa in ctr's namespace not watched: $(cat $w)"
echo "ok: the process in ctr's namespace is watched"
open_gate a
wait $pa
/progs/drain > /tmp/ev || fail "drain"
measured $pa /tmp/out-a "in ctr's namespace" 100
expect_eq "its cgroup line (at the write)" "$(cgroup_line $pa)" "id=$(stat -c %i $cg/ctr) path=/ctr"
memmon detach --cgroup $cg/ctr || fail "memmon detach --cgroup $cg/ctr"
expect_eq "nothing watched" "$(cat $w)" ""

# 2. memmon attach inside the namespace, with cgroup2 mounted there: its /sys/fs/cgroup is
# ctr, so /sys/fs/cgroup/app is ctr/app.
in_ns $cg/ctr --mount sh -c 'cat /proc/self/mounts > /tmp/ns-mounts; ls /sys/fs/cgroup > /tmp/ns-ls
    exec memmon attach --cgroup /sys/fs/cgroup/app' 2> /tmp/err ||
    fail "memmon attach --cgroup /sys/fs/cgroup/app in the namespace: $(cat /tmp/err)"
grep -q '^none /sys/fs/cgroup cgroup2 ' /tmp/ns-mounts || fail "no cgroup2 mount in the namespace"
grep -qx idle /tmp/ns-ls && ! grep -qx ctr /tmp/ns-ls || fail "the namespace's mount is not ctr: $(cat /tmp/ns-ls)"
expect_eq "listed as written" "$(cat $w)" "$(printf '\nc:/sys/fs/cgroup/app')"
gate b
sh -c "echo \$\$ > $cg/ctr/app/cgroup.procs || exit 99; read x < /tmp/gate-b; exec /progs/memtest anon 200" > /tmp/out-b &
pb=$!
wait_until "$pb in ctr/app" grep -qx "$pb" $cg/ctr/app/cgroup.procs
gate c
sh -c "echo \$\$ > $cg/ctr/idle/cgroup.procs || exit 99; read x < /tmp/gate-c; exec /progs/memtest anon 30" > /tmp/out-c &
pc=$!
wait_until "$pc in ctr/idle" grep -qx "$pc" $cg/ctr/idle/cgroup.procs
is_watched $pb || fail "$pb in ctr/app not watched"
is_watched $pc && fail "$pc in ctr/idle watched"
echo "ok: /sys/fs/cgroup/app in the namespace watches ctr/app, not ctr/idle"
open_gate b
open_gate c
wait $pb $pc
/progs/drain > /tmp/ev || fail "drain"
measured $pb /tmp/out-b "moved into ctr/app" 200
expect_eq "its cgroup line (at the move)" "$(cgroup_line $pb)" "id=$(stat -c %i $cg/ctr/app) path=/ctr/app"
expect_eq "lines of the process in ctr/idle" "$(grep -c " $pc/" /tmp/ev)" 0
# Outside the namespace: one line saying so, nothing written.
if in_ns $cg/ctr memmon attach --cgroup $cg/ctr2 > /tmp/out 2> /tmp/err; then
    fail "a cgroup outside the namespace was accepted"
fi
expect_eq "outside the namespace: the error" "$(cat /tmp/err)" \
    "memmon: error: cgroup $cg/ctr2 is outside this process's cgroup namespace"
expect_eq "outside the namespace: nothing changed" "$(cat $w)" "$(printf '\nc:/sys/fs/cgroup/app')"
in_ns $cg/ctr --mount memmon detach --cgroup /sys/fs/cgroup/app || fail "detach in the namespace"
expect_eq "detached from inside" "$(cat $w)" ""

# 3. The cgroup lines tell processes apart: a shell in ctr2 forks a child (its cgroup line
# follows the fork line, before the child's own lines); two cgroups, two ids.
echo "c:$cg/ctr2 c:$cg/ctr/app" > $w || fail "watching ctr2 and ctr/app"
sh -c "echo \$\$ > $cg/ctr2/cgroup.procs || exit 99; /progs/memtest anon 40 > /tmp/out-d; true" &
pd=$!
wait $pd
sh -c "echo \$\$ > $cg/ctr/app/cgroup.procs || exit 99; exec /progs/memtest anon 50" > /tmp/out-e &
pe=$!
wait $pe
/progs/drain > /tmp/ev || fail "drain"
child=$(grep " $pd/$pd fork child=" /tmp/ev | field child | head -n 1)
[ -n "$child" ] || fail "no fork line of the shell in ctr2"
measured "$child" /tmp/out-d "forked in ctr2" 40
measured $pe /tmp/out-e "moved into ctr/app" 50
expect_eq "the shell's cgroup line" "$(cgroup_line $pd)" "id=$(stat -c %i $cg/ctr2) path=/ctr2"
expect_eq "the child's cgroup line" "$(cgroup_line $child)" "id=$(stat -c %i $cg/ctr2) path=/ctr2"
expect_eq "the other's cgroup line" "$(cgroup_line $pe)" "id=$(stat -c %i $cg/ctr/app) path=/ctr/app"
fork_at=$(grep -n " $pd/$pd fork child=$child " /tmp/ev | cut -d: -f1)
first_at=$(grep -n " $child/" /tmp/ev | head -n 1 | cut -d: -f1)
expect_eq "the child's first line is its cgroup line" "$(sed -n "${first_at}p" /tmp/ev | cut -d' ' -f3)" cgroup
[ "$fork_at" -lt "$first_at" ] || fail "the child's cgroup line (line $first_at) before its parent's fork line ($fork_at)"
echo "ok: the fork line, then the child's cgroup line"
echo 0 > $w

# 4. A cgroup 2 000 bytes deep (ten names of 199 bytes), watched through memmon attach.
long=$cg/long
i=0
while [ $i -lt 10 ]; do
    long=$long/$(printf '%0199d' $i)
    i=$((i + 1))
done
mkdir -p $long || fail "mkdir a ${#long}-byte path"
echo "the path: ${#long} bytes"
[ ${#long} -ge 2000 ] || fail "the path is ${#long} bytes"
gate f
sh -c "echo \$\$ > $long/cgroup.procs || exit 99; read x < /tmp/gate-f; exec /progs/memtest anon 120" > /tmp/out-f &
pf=$!
wait_until "$pf in the long cgroup" grep -qx "$pf" $long/cgroup.procs
memmon attach --cgroup $long 2> /tmp/err || fail "memmon attach --cgroup (${#long} bytes): $(cat /tmp/err)"
expect_eq "listed" "$(sed -n 2p $w)" "c:$long"
is_watched $pf || fail "$pf in the long cgroup not watched"
open_gate f
wait $pf
/progs/drain > /tmp/ev || fail "drain"
measured $pf /tmp/out-f "in the long cgroup" 120
tail=$(printf '%s' "${long#$cg}" | tail -c 112)
expect_eq "its cgroup line keeps the path's end" "$(cgroup_line $pf)" "id=$(stat -c %i $long) path=...$tail"
memmon detach --cgroup $long || fail "memmon detach --cgroup (${#long} bytes)"
expect_eq "detached" "$(cat $w)" ""
too_long=/$(head -c 4200 /dev/zero | tr '\0' a)
if memmon attach --cgroup $too_long 2> /tmp/err; then fail "a 4201-byte path was accepted"; fi
expect_eq "too long: the error" "$(cat /tmp/err)" "memmon: error: --cgroup: cgroup path too long (4201 > 4095 bytes)"
unload
while [ "$long" != "$cg" ]; do rmdir $long || fail "rmdir"; long=${long%/*}; done
rmdir $cg/ctr/app $cg/ctr/idle $cg/ctr $cg/ctr2 $cg/other || fail "rmdir"
wait_until "the removed cgroups freed" grep -qx "nr_dying_descendants 0" $cg/cgroup.stat
echo "ok: no dying cgroup left"
