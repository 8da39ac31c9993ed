# insmod buflen=65536: the load line shows it; buflen=4096 and a huge one are refused.
. /host/lib.sh
load buflen=65536
expect_match "load line" "$(dmesg | grep 'memmon: loaded')" 'buflen=65536 '
expect_eq "buflen in stats" "$(stat_of buflen)" 65536
unload
kmsg_mark
if insmod /memmon/memmon.ko buflen=4096 2>/tmp/err; then fail "buflen=4096 was accepted"; fi
expect_match "insmod error" "$(cat /tmp/err)" 'Invalid (argument|parameters)'
expect_match "dmesg says why" "$(kmsg_new)" 'memmon: buflen=4096 is out of range: it must be 0 \(1 MiB per CPU\) or 8192 to'
[ ! -e /proc/memmon ] || fail "/proc/memmon exists after a refused insmod"
if insmod /memmon/memmon.ko buflen=4294967295 2>/dev/null; then fail "buflen=4294967295 was accepted"; fi
load buflen=8192
unload
