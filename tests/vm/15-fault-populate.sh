# MAP_POPULATE of 50 pages: 50 faults taken by the kernel (user=0, ip=0) before the mmap line.
. /host/lib.sh
load buflen=4194304
run_measured /tmp/out /tmp/ev -- /progs/memtest populate 50
w=$(window /tmp/ev "$(pid_of_run /tmp/ev)")
expect_eq "kernel-mode anon faults" \
    "$(printf '%s\n' "$w" | grep -c ' fault type=anon access=W addr=0x[0-9a-f]* ip=0x0 user=0$')" 50
expect_match "then the mmap line" "$(printf '%s\n' "$w" | tail -n 1)" \
    ' mmap addr=0x0 len=204800 prot=rw- flags=PRIVATE\|ANONYMOUS\|POPULATE fd=-1 off=0 ret=0x'
crosscheck "$w" /tmp/out
unload
