# With zram swap: MADV_PAGEOUT of 100 written pages, then reading them: 100 swap faults.
. /host/lib.sh
echo 64M > /sys/block/zram0/disksize || fail "zram0"
mkswap /dev/zram0 >/dev/null && swapon /dev/zram0 || fail "swapon"
load buflen=4194304
run_measured /tmp/out /tmp/ev -- /progs/memtest swap 100
w=$(window /tmp/ev "$(pid_of_run /tmp/ev)")
expect_eq "swap R faults" "$(printf '%s\n' "$w" | grep -c ' fault type=swap access=R ')" 100
crosscheck "$w" /tmp/out
[ "$(value_of major_faults "$(cat /tmp/out)")" -gt 0 ] || fail "the kernel counted no major fault for swap-ins"
unload
swapoff /dev/zram0
