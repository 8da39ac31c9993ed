# One event written while four readers sleep, in read, poll, select and epoll: each gets it
# within 10 ms (the rings wake readers only when one waits, and batch wake-ups, but a lone
# event still gets through). Five trials; the median of each kind counts, so that a host
# busy elsewhere does not decide (under TCG the guest's clock is the host's).
. /host/lib.sh
load
i=0
: > /tmp/lat
while [ $((i += 1)) -le 5 ]; do
    out=$(/progs/readers wake-latency) || fail "wake-latency: $out"
    echo "trial $i:" $out
    printf '%s\n' "$out" >> /tmp/lat
done
for how in read poll select epoll; do
    med=$(sed -n "s/^${how}_us=//p" /tmp/lat | sort -n | sed -n 3p)
    [ -n "$med" ] && [ "$med" -lt 10000 ] || fail "$how: median wake-up $med us after the event (limit 10 ms)"
    echo "ok: $how: median $med us"
done
unload
