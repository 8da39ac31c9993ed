# insmod with the default buflen: loads, logs it, creates the proc files with their modes.
. /host/lib.sh
load
expect_match "load line" "$(dmesg | grep 'memmon: loaded')" 'memmon: loaded: buflen=32768 '
expect_eq "events mode" "$(stat -c %a /proc/memmon/events)" 400
expect_eq "watch-pids mode" "$(stat -c %a /proc/memmon/watch-pids)" 600
expect_eq "stats mode" "$(stat -c %a /proc/memmon/stats)" 444
expect_eq "marker mode" "$(stat -c %a /proc/memmon/marker)" 200
# One ring per CPU (2 in the VM), each 32768 / 2 bytes, a power of two.
expect_eq "rings" "$(stat_of rings)" 2
expect_eq "ring bytes" "$(stat_of ring_bytes)" 16384
unload
[ ! -e /proc/memmon ] || fail "/proc/memmon still exists after rmmod"
expect_match "unload line" "$(dmesg | grep 'memmon: unloaded')" 'memmon: unloaded: '
