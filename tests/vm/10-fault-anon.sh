# 1000 writes to fresh anonymous pages: exactly 1000 anon W faults, at those page addresses.
. /host/lib.sh
load buflen=4194304
run_measured /tmp/out /tmp/ev -- /progs/memtest anon 1000
pid=$(pid_of_run /tmp/ev)
w=$(window /tmp/ev "$pid")
base=$(value_of base "$(cat /tmp/out)")
expect_eq "anon W faults" "$(printf '%s\n' "$w" | grep -c ' fault type=anon access=W ')" 1000
crosscheck "$w" /tmp/out
printf '%s\n' "$w" | grep ' fault ' | field addr > /tmp/got
i=0
while [ $i -lt 1000 ]; do printf '0x%x\n' $((base + i * 4096)); i=$((i + 1)); done > /tmp/want
cmp -s /tmp/got /tmp/want || { diff /tmp/want /tmp/got | head; fail "fault addresses differ"; }
echo "ok: fault addresses are base + i*4096, in order"
expect_eq "faults from user mode with an ip" \
    "$(printf '%s\n' "$w" | grep ' fault ' | grep -v 'user=0' | grep -vc ' ip=0x0')" 1000
unload
