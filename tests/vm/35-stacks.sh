# stack_depth=16: outer() -> middle() -> touch() writes 64 fresh pages; every one of the 64
# fault lines has a stack whose first entries fall in touch, middle and outer, in that
# order, and the syscall lines carry stacks too. stack_depth=0 (written at run time through
# sysfs): no line has stack=. Values out of range are refused (EINVAL, dmesg line), at load
# and at run time.
. /host/lib.sh
kmsg_mark
if insmod /memmon/memmon.ko stack_depth=128 2>/dev/null; then fail "stack_depth=128 was accepted"; fi
expect_match "dmesg says why" "$(kmsg_new)" 'memmon: stack_depth=128 is not valid: it must be 0 \(off\) to 127'
load buflen=4194304 stack_depth=16
P=/sys/module/memmon/parameters/stack_depth
expect_eq "stack_depth" "$(cat $P)" 16
expect_eq "stack_depth mode" "$(stat -c %a $P)" 644
run_measured /tmp/out /tmp/ev -- /progs/stacks 64
w=$(window /tmp/ev "$(pid_of_run /tmp/ev)")
range() { value_of "$1" "$(cat /tmp/out)"; }
in_range() { # in_range ADDR LO-HI
    [ $(($1)) -ge $((${2%-*})) ] && [ $(($1)) -lt $((${2#*-})) ]
}
n=0
for s in $(printf '%s\n' "$w" | grep ' fault type=anon access=W ' | field stack); do
    set -- $(echo "$s" | tr ',' ' ')
    in_range "$1" "$(range touch)" && in_range "$2" "$(range middle)" && in_range "$3" "$(range outer)" ||
        fail "stack $s is not touch, middle, outer ($(range touch) $(range middle) $(range outer))"
    n=$((n + 1))
done
expect_eq "fault lines with touch/middle/outer stacks" "$n" 64
expect_eq "fault lines in the window without a stack" "$(printf '%s\n' "$w" | grep ' fault ' | grep -vc ' stack=0x')" 0
grep -q ' munmap .* stack=0x' /tmp/ev || grep -q ' mmap .* stack=0x' /tmp/ev || fail "no syscall line with a stack"

echo 0 > $P || fail "writing 0"
expect_eq "stack_depth after writing 0" "$(cat $P)" 0
run_measured /tmp/out /tmp/ev2 -- /progs/stacks 8
expect_eq "lines with stack= at stack_depth=0" "$(grep -c ' stack=' /tmp/ev2)" "$(grep -c ' stack=' /tmp/ev)"
if echo 128 > $P 2>/dev/null; then fail "stack_depth=128 was accepted at run time"; fi
expect_eq "stack_depth after a refused write" "$(cat $P)" 0
unload
