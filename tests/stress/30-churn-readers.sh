# 60 s (SECONDS_) of 8 threads faulting and mapping, watched and unwatched every 0.2 s,
# short watched processes starting and exiting, and 3 readers (two draining as fast as they
# can, one slow enough to lose events): for each reader, events read + lost reported =
# events produced, exactly; stats agree (delivered and lost_reported are the readers' sums).
#
# Multi-threaded TCG (tests/stress/10 stays single-threaded, with its twin 11): watching and unwatching every 0.2 s arms and
# disarms the syscall probes, which live-patches the ftrace sites of the syscalls the storm
# runs on the other vCPU, and multi-threaded TCG sometimes runs such a site stale: on the
# debug kernel once (2026-12-06) a vCPU ran a stale int3 at __x64_sys_munmap+0x4, the
# ftrace-based kprobe there was found, and its copied instruction, NULL by design, was
# jumped to. scripts/tcg-text-poke-race.sh --mode kprobe-off does the same without memmon
# (a disabled kprobe event and the function tracer); scripts/check.sh boots again once a
# scenario that died of exactly that (scripts/tcg-race-signature), and nothing else.
. /host/lib.sh
load
rm -f /tmp/done
/progs/readers slow 0 /dev/null > /tmp/r1 &
r1=$!
/progs/readers slow 0 /dev/null > /tmp/r2 &
r2=$!
/progs/readers slow 20000 /dev/null > /tmp/r3 &
r3=$!
for p in $r1 $r2 $r3; do wait_until "reader $p to open" has_events_open $p; done
seconds=${SECONDS_:-60}
/progs/stress storm 8 $seconds > /tmp/storm &
storm=$!
end=$(($(cut -d. -f1 /proc/uptime) + seconds))
n=0
while [ "$(cut -d. -f1 /proc/uptime)" -lt $end ]; do
    # A write may fail only for a storm that has just ended (the loop's last round).
    if ! echo $storm > /proc/memmon/watch-pids; then
        ! kill -0 $storm 2>/dev/null || fail "watching the running storm ($storm) failed"
    fi
    sleep 0.2
    if ! echo -$storm > /proc/memmon/watch-pids; then
        ! kill -0 $storm 2>/dev/null || fail "unwatching the running storm ($storm) failed"
    fi
    if [ $((n % 5)) -eq 0 ]; then
        /progs/watchexec /progs/memtest anon 200 > /dev/null || fail "a short watched process"
    fi
    n=$((n + 1))
done
wait $storm || fail "the storm"
echo 0 > /proc/memmon/watch-pids
# Nothing is watched and the storm has exited: nothing may be written any more, not even a
# `dropped` line a reader's read would otherwise write later (the storm's drops are reported
# at its exit, watched or not), or the readers that already finished would miss it.
produced=$(stat_of produced)
touch /tmp/done
for p in $r1 $r2 $r3; do wait $p || fail "reader $p"; done
expect_eq "records produced after the storm and the watching ended" "$(stat_of produced)" "$produced"
echo "$n watch/unwatch rounds; $(cat /tmp/storm); produced $produced, overwritten $(stat_of overwritten)"
delivered=0 reported=0
for r in /tmp/r1 /tmp/r2 /tmp/r3; do
    read -r ev lo <<EOT
$(sed 's/events=\([0-9]*\) lost=\([0-9]*\)/\1 \2/' $r)
EOT
    echo "$r: $ev read, $lo lost"
    expect_eq "$r: read + lost" $((ev + lo)) "$produced"
    delivered=$((delivered + ev))
    reported=$((reported + lo))
done
expect_eq "stats delivered" "$(stat_of delivered)" "$delivered"
expect_eq "stats lost_reported" "$(stat_of lost_reported)" "$reported"
sum=0
# The per-kind lines are the last ones, after memory_total and the unwind store's counts.
for kind in $(awk 'f && $1 !~ /^unwind_/ { print $1 } $1 == "memory_total" { f = 1 }' /proc/memmon/stats); do
    sum=$((sum + $(stat_of $kind)))
done
expect_eq "the per-kind counts add up to produced" "$sum" "$produced"
expect_eq "no reader open any more" "$(stat_of readers)" 0
unload
