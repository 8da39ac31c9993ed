# One event written while a reader sleeps in read, poll, select or epoll: it gets it (the
# rings wake readers only when one waits, and batch wake-ups, but a lone event still gets
# through, after about 1 ms). Five trials each; the median counts and must be under 50 ms,
# a bound generous enough that a host busy elsewhere does not decide (under TCG the guest's
# clock is the host's; a 10 ms bound failed once on the stock kernel) and tight enough
# that a wake-up left to a later event or a timer would fail it. Each trial's figure is in
# the log.
. /host/lib.sh
# On the debug kernel (make check-debug: lockdep, KASAN, kmemleak) everything is several
# times slower: the limit there is 250 ms.
limit=50000
[ -n "${MEMMON_DEBUG_KERNEL:-}" ] && limit=250000
load
for how in read poll select epoll; do
    i=0
    : > /tmp/lat
    while [ $((i += 1)) -le 5 ]; do
        out=$(/progs/readers wake-latency $how) || fail "wake-latency $how: $out"
        echo "$how trial $i: $out"
        printf '%s\n' "$out" | tr ' ' '\n' >> /tmp/lat
    done
    med=$(sed -n "s/^${how}_us=//p" /tmp/lat | sort -n | sed -n 3p)
    [ -n "$med" ] && [ "$med" -lt $limit ] || fail "$how: median wake-up $med us after the event (limit $((limit / 1000)) ms)"
    echo "ok: $how: median $med us"
done
unload
