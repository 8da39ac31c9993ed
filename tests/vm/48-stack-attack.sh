# User stacks under attack (tests/progs/stackattack.c): faults taken with the frame pointer
# or the stack pointer at kernel-half, non-canonical and just-below-the-user-limit addresses,
# return addresses planted at or above the user limit (in a frame an unwind table describes,
# and in a corrupted frame chain), at the bottom of a recursion 10 000 deep, in JIT code
# (an anonymous executable mapping), and in the kernel's emulation of a call into the
# vsyscall page (the task's pc there, above the user limit: its stack starts at the
# caller's return address). Recorded with the unwind tables (memmon record) and by
# the frame pointer alone (watchexec): no stack entry of any line is at or above the user
# limit, each case's stack ends where and why it must, and the fault lines equal the kernel's
# counts.
# Booted with 4-level page tables (QEMU's -cpu max has 5-level ones, where the user limit is
# 2^56 - 4096): the reported walks took entries between 2^47 and 2^56 as frames there.
# vsyscall=xonly: Debian's kernel has no vsyscall page by default (LEGACY_VSYSCALL_NONE).
# vm-append: no5lvl vsyscall=xonly
. /host/lib.sh

# no_entry_at_limit FILE OUT: no stack= entry of any line of FILE at or above the end of user
# space that the program found (limit= in OUT: 0x7ffffffff000 with 4-level page tables, 2^56
# - 4096 with 5-level ones). Entries and limit are lowercase hex without padding: a longer
# one is larger, and those as long compare as strings.
no_entry_at_limit() {
    limit=$(value_of limit "$(cat "$2")")
    limit=${limit#0x}
    [ -n "$limit" ] || fail "no limit= in $2"
    awk -v limit=$limit '
        { for (i = 4; i <= NF; i++) if (index($i, "stack=") == 1) {
            n = split(substr($i, 7), e, ",")
            for (j = 1; j <= n; j++) {
                h = substr(e[j], 3)
                entries++
                if (length(h) > length(limit) || (length(h) == length(limit) && h >= limit)) { print "at or above the limit: " $0; bad++ }
            }
        } }
        END { printf "%d stack entries, %d at or above 0x%s\n", entries, bad, limit; exit bad > 0 || entries == 0 }' "$1"
}

# check_cases OUT EVENTS PID SKIP: every case line of OUT has its fault line in EVENTS (process
# PID, the case's page), with the entries and the end it must have; the kinds listed in SKIP
# (space-separated) are left out
check_cases() {
    base=$(value_of base "$(cat "$1")")
    jit=$(value_of jit "$(cat "$1")")
    grep '^case=' "$1" > /tmp/cases
    n=0
    while read -r c kind value entries end; do
        i=${c#case=} kind=${kind#kind=} entries=${entries#entries=} end=${end#end=}
        skip=""
        for k in $4; do [ "$k" = "$kind" ] && skip=1; done
        [ -z "$skip" ] || continue
        addr=$(printf '0x%x' $((base + i * 4096)))
        line=$(grep " $3/[0-9]* fault .* addr=$addr " "$2")
        [ "$(count_lines "$line")" = 1 ] || fail "case $i ($kind $value): $(count_lines "$line") fault lines at $addr"
        stack=$(printf '%s\n' "$line" | field stack)
        got_end=$(printf '%s\n' "$line" | field stack_end)
        got=$(echo "$stack" | tr ',' '\n' | grep -c .)
        [ "$entries" = - ] || [ "$got" = "$entries" ] ||
            fail "case $i ($kind $value): $got entries, want $entries: $line"
        case "$end" in
            -) ;;
            early) [ -n "$got_end" ] || fail "case $i ($kind $value): a whole stack: $line" ;;
            *) [ "$got_end" = "$end" ] || fail "case $i ($kind $value): stack_end='$got_end', want $end: $line" ;;
        esac
        if [ "$kind" = jit ]; then
            first=${stack%%,*}
            [ $((first)) -ge $((${jit%-*})) ] && [ $((first)) -lt $((${jit#*-})) ] ||
                fail "case $i: the JIT code's fault has pc $first outside $jit"
            [ "$got" -ge 2 ] || fail "case $i: the JIT code's caller is missing: $line"
        fi
        if [ "$kind" = vsyscall ]; then
            # The call's return address, in fault_in_vsyscall (value=, under 64 bytes long),
            # then at least main.
            first=${stack%%,*} caller=${value#value=}
            [ $((first)) -gt $((caller)) ] && [ $((first)) -lt $((caller + 64)) ] ||
                fail "case $i: the vsyscall's stack starts at $first, not in its caller at $caller: $line"
            [ "$got" -ge 2 ] || fail "case $i: the vsyscall caller's callers are missing: $line"
            echo "ok: the emulated vsyscall's fault: $got entries from $first, ${got_end:-a whole stack}"
        fi
        n=$((n + 1))
    done < /tmp/cases
    echo "ok: $n cases end as they must ($(grep -c . /tmp/cases) in all)"
}

load buflen=8388608 stack_depth=64
/progs/stackattack > /tmp/out0 || fail "stackattack"
expect_eq "the end of user space (4-level page tables)" "$(sed -n 's/^limit=//p' /tmp/out0)" 0x7ffffffff000
grep -q ' kind=vsyscall ' /tmp/out0 || fail "no vsyscall case: the guest has no [vsyscall] mapping"
# With the unwind tables memmon record loads (the program's own .eh_frame covers the
# assembly functions whose rows lead to the planted return addresses).
memmon record -q -o /tmp/cap -- /progs/stackattack > /tmp/out || fail "memmon record stackattack"
pid=$(pid_of_run /tmp/cap)
[ -n "$pid" ] || fail "no marker of stackattack in the capture"
crosscheck "$(window /tmp/cap "$pid")" /tmp/out
no_entry_at_limit /tmp/cap /tmp/out || fail "a stack entry at or above the user limit (with tables)"
check_cases /tmp/out /tmp/cap "$pid" ""

# By the frame pointer alone: the same but for the planted return addresses and stack
# pointers that only the table rows lead to (the frame pointer skips them).
run_measured /tmp/out2 /tmp/ev2 -- /progs/stackattack
# (the ring still holds the first run: this one's pid is the last to mark its start)
pid=$(awk '$3 == "fsync" && $4 == "fd=1001" { split($2, ids, "/"); p = ids[1] } END { print p }' /tmp/ev2)
crosscheck "$(window /tmp/ev2 "$pid")" /tmp/out2
no_entry_at_limit /tmp/ev2 /tmp/out2 || fail "a stack entry at or above the user limit (frame pointers)"
check_cases /tmp/out2 /tmp/ev2 "$pid" "ret rsp"
unload
