# Three load/unload cycles, with a reader open at each unload.
. /host/lib.sh
for i in 1 2 3; do
    load
    cat /proc/memmon/events >/dev/null &
    reader=$!
    sleep 0.2
    unload
    wait $reader || fail "cycle $i: the reader did not end cleanly"
    [ ! -e /proc/memmon ] || fail "cycle $i: /proc/memmon remains"
done
expect_eq "load lines" "$(dmesg | grep -c 'memmon: loaded')" 3
expect_eq "unload lines" "$(dmesg | grep -c 'memmon: unloaded')" 3
