# With zram swap: MADV_PAGEOUT of 100 written pages, then reading them: 100 swap faults.
. /host/lib.sh
echo 64M > /sys/block/zram0/disksize || fail "zram0"
mkswap /dev/zram0 >/dev/null && swapon /dev/zram0 || fail "swapon"
load buflen=4194304
run_measured /tmp/out /tmp/ev -- /progs/memtest swap 100
w=$(window /tmp/ev "$(pid_of_run /tmp/ev)")
expect_eq "swap R faults" "$(printf '%s\n' "$w" | grep -c ' fault type=swap access=R ')" 100
crosscheck "$w" "$(value_of faults "$(cat /tmp/out)")"
unload
swapoff /dev/zram0
