# Reads of a MAP_PRIVATE tmpfs file mapping: with fault-around off, one file R fault per page;
# with the default fault-around, exactly as many as the kernel counted, and their pages=
# add up to the 200 pages read.
. /host/lib.sh
load buflen=4194304
default_around=$(cat /sys/kernel/debug/fault_around_bytes)
echo 4096 > /sys/kernel/debug/fault_around_bytes
run_measured /tmp/out /tmp/ev -- /progs/memtest file /tmp/data 200
w=$(window /tmp/ev "$(pid_of_run /tmp/ev)")
expect_eq "file R faults (fault-around off)" \
    "$(printf '%s\n' "$w" | grep -c ' fault type=file access=R ')" 200
crosscheck "$w" /tmp/out

echo "$default_around" > /sys/kernel/debug/fault_around_bytes
rmmod memmon && load buflen=4194304
run_measured /tmp/out /tmp/ev -- /progs/memtest file /tmp/data2 200
w=$(window /tmp/ev "$(pid_of_run /tmp/ev)")
n=$(printf '%s\n' "$w" | grep -c ' fault type=file access=R ')
[ "$n" -lt 200 ] || fail "fault-around at $default_around bytes still gave $n faults"
crosscheck "$w" /tmp/out
expect_eq "pages mapped by the file faults" "$(pages_sum "$(printf '%s\n' "$w" | grep ' fault type=file ')")" 200
unload
