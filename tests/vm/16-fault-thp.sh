# A write to a 2 MiB-aligned MADV_HUGEPAGE region with THP on: one huge=1 anon fault that
# mapped 512 pages.
. /host/lib.sh
echo madvise > /sys/kernel/mm/transparent_hugepage/enabled
load buflen=4194304
run_measured /tmp/out /tmp/ev -- /progs/memtest thp
w=$(window /tmp/ev "$(pid_of_run /tmp/ev)")
base=$(value_of base "$(cat /tmp/out)")
expect_match "huge fault" "$w" " fault type=anon access=W addr=$base ip=0x[0-9a-f]+ huge=1 pages=512\$"
crosscheck "$w" /tmp/out
unload
