# tests/stress/10's race on multi-threaded TCG (each vCPU on a host thread of its own), with
# no text patched while the storm runs: 100 cycles of insmod, four readers blocked in read,
# poll, select and epoll, the 2-thread mmap/munmap storm watched and running (its faults and
# syscalls go through memmon's handlers on one vCPU while the readers copy events out on the
# other), then the storm stopped (SIGSTOP, every thread seen stopped) and rmmod, which wakes
# and ends the blocked readers on the other vCPU. Every rmmod completes, every reader ends
# (end of file, or EIO once the file is gone) with exit status 0, and the kernel log has no
# warning (the harness checks).
#
# Why a twin: tests/stress/10 arms the syscall probes (watching) and disarms them (rmmod)
# while the storm runs mmap and munmap, live-patching their ftrace sites under it, and
# multi-threaded TCG runs such sites stale (scripts/tcg-text-poke-race.sh): on 2026-12-07 its
# second multi-threaded run died of the race's int3 form at __x64_sys_mmap+0x5 during its
# first rmmod, and again in the retry (scripts/check.sh boots again once), so it stays on
# single-threaded TCG. Here the storm is stopped whenever memmon patches text (the watch
# that arms the probes, the rmmod that disarms them and detaches the fault tracepoint), so
# what races on two host threads is the handlers against the readers, and rmmod against the
# readers it wakes; not handlers in flight against rmmod (stress/10 keeps that, in turn).
. /host/lib.sh
cycles=${CYCLES:-100}
/progs/stress storm 2 100000 > /dev/null &
storm=$!
# stopped: every thread of the storm in state T (SIGSTOP takes effect on the way back to
# user mode: none is inside a syscall then)
stopped() {
    for s in /proc/$storm/task/*/stat; do
        [ "$(cut -d' ' -f3 "$s")" = T ] || return 1
    done
}
kill -STOP $storm
wait_until "the storm to stop" stopped
cycle=1
while [ $cycle -le $cycles ]; do
    load
    start_blocked_readers "cycle $cycle"
    echo $storm > /proc/memmon/watch-pids || fail "cycle $cycle: watch the storm"
    kill -CONT $storm
    sleep 0.3
    kill -STOP $storm
    wait_until "cycle $cycle: the storm to stop" stopped
    timeout 20 rmmod memmon || fail "cycle $cycle: rmmod failed or hung"
    readers_ended_by_rmmod "cycle $cycle"
    [ $((cycle % 10)) -eq 0 ] && echo "cycle $cycle: $(cat /tmp/reader.read /tmp/reader.epoll | tr '\n' ' ')"
    cycle=$((cycle + 1))
done
# The readers saw the storm's events (the handlers ran while they read).
grep -Eq '^read: events=[1-9]' /tmp/reader.read || fail "the last cycle's read reader saw no event"
kill -CONT $storm
kill -0 $storm || fail "the storm died"
kill $storm
echo "ok: $cycles cycles, each with 4 readers ended cleanly"
