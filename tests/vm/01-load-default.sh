# insmod with no parameter: loads with 1 MiB rings per CPU, logs it, creates the proc files
# with their modes.
. /host/lib.sh
load
expect_match "load line" "$(dmesg | grep 'memmon: loaded')" 'memmon: loaded: buflen=2097152 \(2 rings of 1048576 bytes\)'
expect_eq "events mode" "$(stat -c %a /proc/memmon/events)" 400
expect_eq "watch-pids mode" "$(stat -c %a /proc/memmon/watch-pids)" 600
expect_eq "stats mode" "$(stat -c %a /proc/memmon/stats)" 444
expect_eq "marker mode" "$(stat -c %a /proc/memmon/marker)" 200
expect_eq "buflen mode" "$(stat -c %a /proc/memmon/buflen)" 600
# One ring per CPU (2 in the VM), 1 MiB each.
expect_eq "rings" "$(stat_of rings)" 2
expect_eq "ring bytes" "$(stat_of ring_bytes)" 1048576
expect_eq "buflen" "$(cat /proc/memmon/buflen)" 2097152
unload
[ ! -e /proc/memmon ] || fail "/proc/memmon still exists after rmmod"
expect_match "unload line" "$(dmesg | grep 'memmon: unloaded')" 'memmon: unloaded: '
