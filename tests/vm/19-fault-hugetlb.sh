# Writes to 4 hugetlbfs pages (MAP_HUGETLB, 2 MiB): 4 type=hugetlb huge=1 faults at the
# pages' addresses, equal to the kernel's count.
. /host/lib.sh
echo 8 > /proc/sys/vm/nr_hugepages
expect_eq "huge pages reserved" "$(cat /proc/sys/vm/nr_hugepages)" 8
load buflen=4194304
run_measured /tmp/out /tmp/ev -- /progs/memtest hugetlb 4
w=$(window /tmp/ev "$(pid_of_run /tmp/ev)")
base=$(value_of base "$(cat /tmp/out)")
crosscheck "$w" /tmp/out
printf '%s\n' "$w" | grep ' fault ' | field addr > /tmp/got
i=0
while [ $i -lt 4 ]; do printf '0x%x\n' $((base + i * 2097152)); i=$((i + 1)); done > /tmp/want
cmp -s /tmp/got /tmp/want || { diff /tmp/want /tmp/got; fail "hugetlb fault addresses differ"; }
expect_eq "hugetlb W huge faults" "$(printf '%s\n' "$w" | grep -c ' fault type=hugetlb access=W .* huge=1')" 4
unload
echo 0 > /proc/sys/vm/nr_hugepages
