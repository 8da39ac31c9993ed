# A marker written from the shell lands between the calls before and after it; exec of a
# new program gives an exec line; growing allocations (4, 8, ... 256 KiB): from the brk heap
# below glibc's 128 KiB mmap threshold (128 KiB itself still fits the heap's top chunk),
# mmap/munmap pairs of exactly the allocation plus a page above it.
. /host/lib.sh
load buflen=4194304
mkfifo /tmp/fifo
/progs/watchexec /progs/syscalls marker /tmp/fifo &
wait_until "the first marker call" sh -c '/progs/drain | grep -q " fsync fd=1001 "'
echo 'between the calls' > /proc/memmon/marker
echo go > /tmp/fifo
wait $! || fail "marker program"
/progs/drain > /tmp/ev
order=$(grep -E ' fsync fd=100[12] | mark text=between' /tmp/ev | awk '{ print $3 }' | tr '\n' ' ')
expect_eq "fsync, mark, fsync" "$order" "fsync mark fsync "
expect_match "mark text" "$(grep ' mark ' /tmp/ev)" ' mark text=between\\x20the\\x20calls$'

rmmod memmon && load buflen=4194304
/progs/watchexec sh -c 'exec /progs/memtest anon 1' > /dev/null
/progs/drain > /tmp/ev
expect_match "exec line" "$(grep ' exec ' /tmp/ev | tail -n 1)" ' exec comm=memtest filename=/progs/memtest$'
expect_match "exec of the shell first" "$(grep ' exec ' /tmp/ev | head -n 1)" ' exec comm=sh filename=/bin/sh$'

rmmod memmon && load buflen=4194304
run_measured /tmp/out /tmp/ev -- /progs/syscalls grow
w=$(window /tmp/ev "$(pid_of_run /tmp/ev)")
printf '%s\n' "$w" | grep -E ' (mmap|munmap|brk) ' > /tmp/calls
cat /tmp/calls | head -n 5
kib=132
while [ $kib -le 256 ]; do
    len=$((kib * 1024 + 4096))
    grep -q " mmap addr=0x0 len=$len prot=rw- flags=PRIVATE|ANONYMOUS fd=-1 off=0 ret=0x" /tmp/calls \
        || fail "no mmap of $len bytes for the $kib KiB allocation"
    grep -q " munmap addr=0x[0-9a-f]* len=$len ret=0 dur=[0-9]*$" /tmp/calls \
        || fail "no munmap of $len bytes for the $kib KiB allocation"
    kib=$((kib + 4))
done
echo "ok: 32 mmap/munmap pairs for 132..256 KiB"
expect_eq "mmap lines" "$(grep -c ' mmap ' /tmp/calls)" 32
[ "$(grep -c ' brk ' /tmp/calls)" -ge 1 ] || fail "no brk below the threshold"
unload
