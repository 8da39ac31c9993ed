# insmod with the default buflen: loads, logs it, creates the proc files with their modes.
. /host/lib.sh
load
expect_match "load line" "$(dmesg | grep 'memmon: loaded')" 'memmon: loaded: buflen=32768 '
expect_eq "events mode" "$(stat -c %a /proc/memmon/events)" 400
expect_eq "watch-pids mode" "$(stat -c %a /proc/memmon/watch-pids)" 600
expect_eq "stats mode" "$(stat -c %a /proc/memmon/stats)" 444
expect_eq "marker mode" "$(stat -c %a /proc/memmon/marker)" 200
expect_eq "capacity" "$(stat_of capacity)" "$((32768 / $(stat_of record_size)))"
unload
[ ! -e /proc/memmon ] || fail "/proc/memmon still exists after rmmod"
expect_match "unload line" "$(dmesg | grep 'memmon: unloaded')" 'memmon: unloaded: '
