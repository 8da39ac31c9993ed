# Each probed syscall with known arguments gives exactly the line its caller expects,
# successes and failures (1 TiB mmap with overcommit_memory=2: -ENOMEM; unaligned munmap:
# -EINVAL), in order, file mappings with their path, fsync(0..2) as markers in order.
. /host/lib.sh
echo 2 > /proc/sys/vm/overcommit_memory
load buflen=4194304
run_measured /tmp/out /tmp/ev -- /progs/syscalls calls
pid=$(pid_of_run /tmp/ev)
check_expected /tmp/out /tmp/ev "$pid" || fail "syscall lines differ from what the program did"
grep -q ' mmap .* ret=-ENOMEM dur=[0-9]*$' /tmp/ev || fail "no -ENOMEM mmap line"
grep -q ' munmap addr=0x[0-9a-f]*1 len=4096 ret=-EINVAL dur=[0-9]*$' /tmp/ev || fail "no -EINVAL munmap line"
# faults taken inside MAP_POPULATE come before the mmap line
expect_match "the line before the MAP_POPULATE mmap" \
    "$(grep -B 1 ' mmap .*POPULATE' /tmp/ev | head -n 1)" ' fault type=file access=R addr=0x[0-9a-f]*000 ip=0x0 user=0$'
unload
