# After fork, the child writes 100 pages its parent wrote: 100 wp faults in the child.
. /host/lib.sh
load buflen=4194304
run_measured /tmp/out /tmp/ev -f -- /progs/memtest cow 100
child=$(value_of child "$(cat /tmp/out)")
base=$(value_of base "$(cat /tmp/out)")
grep -q " fork child=$child watched=1" /tmp/ev || fail "no fork line for child $child"
w=$(window /tmp/ev "$child")
n=0
for a in $(printf '%s\n' "$w" | grep ' fault type=wp access=W ' | field addr); do
    [ $((a)) -ge $((base)) ] && [ $((a)) -lt $((base + 100 * 4096)) ] && n=$((n + 1))
done
expect_eq "wp W faults in the region" "$n" 100
crosscheck "$w" /tmp/out
unload
