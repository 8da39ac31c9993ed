# An unwatched process doing all of the workloads adds no line; a watched one beside it does.
. /host/lib.sh
echo 64M > /sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null && swapon /dev/zram0
load buflen=4194304
sh -c 'echo $$ > /tmp/unwatched.pid; exec /progs/memtest anon 100' >/dev/null
sh -c 'echo $$ >> /tmp/unwatched.pid; exec /progs/memtest file /tmp/f 50' >/dev/null
sh -c 'echo $$ >> /tmp/unwatched.pid; exec /progs/memtest cow 50' >/dev/null
sh -c 'echo $$ >> /tmp/unwatched.pid; exec /progs/memtest swap 50' >/dev/null
sh -c 'echo $$ >> /tmp/unwatched.pid; exec /progs/memtest populate 50' >/dev/null
sh -c 'echo $$ >> /tmp/unwatched.pid; exec /progs/memtest exec /tmp/c' >/dev/null
run_measured /tmp/out /tmp/ev -- /progs/memtest anon 10
for pid in $(cat /tmp/unwatched.pid); do
    expect_eq "lines of unwatched pid $pid" "$(grep -c " $pid/" /tmp/ev)" 0
done
expect_eq "produced = lines of the watched run" "$(stat_of produced)" "$(wc -l < /tmp/ev)"
unload
