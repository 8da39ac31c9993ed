# The syscall kretprobes are armed only while a process is watched. After load they are
# disarmed: kprobes/list shows the 18 as [DISABLED] and ftrace patches none of their entry
# points (enabled_functions). A watch-pids write that adds a process arms them before it
# returns; the last watched process leaving (a write, an exit) disarms them within a few
# seconds (a check runs every second); a followed child that outlives its watched parent keeps
# them armed and has every call recorded. With kprobes disabled system-wide, a write that adds
# a process fails with EBUSY and changes nothing. Where faults come from kprobes (Debian's
# kernel: fault_source kprobes), the fault source's ftrace hooks (two ftrace_ops, one on
# handle_mm_fault and one on the handlers, no kprobe) are armed and disarmed with them; only
# handle_mm_fault's modifies the instruction pointer (the I flag in enabled_functions), so
# live patches and kprobes with post handlers of the handlers are not refused.
. /host/lib.sh
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs tracefs $T
# A syscall without arguments is listed by its body's name where __x64_sys_ is an alias of
# it (Debian's stock kernel: __do_sys_munlockall).
disabled() { grep -cE '__(x64|do)_sys_.*\[DISABLED\]' /sys/kernel/debug/kprobes/list; }
patched() { grep -cE '^__(x64|do)_sys_' $T/enabled_functions; }
armed() { stat_of syscall_probes_armed; }
# The kprobe fault source's hooks (a kernel without mm:mm_fault) are armed with them: every
# function of the list this kernel can trace (available_filter_functions) is patched while
# they are armed, none while they are not, and none is a kprobe.
fault_fns='handle_mm_fault|do_anonymous_page|do_fault|do_swap_page|do_wp_page|do_huge_pmd_anonymous_page|do_huge_pmd_wp_page|do_huge_pmd_numa_page|do_huge_pmd_uffd_rwp|do_huge_pmd_device_private|hugetlb_fault|set_pte_range|folio_add_new_anon_rmap|folio_add_anon_rmap_ptes|folio_add_file_rmap_pmd'
fault_traceable() { grep -cE "^($fault_fns)\$" $T/available_filter_functions; }
fault_kprobes() { grep -cE " ($fault_fns)\+0x[0-9a-f]+ " /sys/kernel/debug/kprobes/list; }
fault_patched() { grep -cE "^($fault_fns) " $T/enabled_functions; }
# The fault functions whose entry an ftrace_ops redirects (FTRACE_OPS_FL_IPMODIFY), by name.
fault_redirected() {
    grep -E "^($fault_fns) \([0-9]+\)( R|  ) I" $T/enabled_functions | cut -d' ' -f1 | tr '\n' ' '
}
is_disarmed() { [ "$(armed)" = 0 ]; }
uptime_ms() { awk '{ print int($1 * 1000) }' /proc/uptime; }
expect_disarmed() {
    expect_eq "$1: syscall_probes_armed" "$(armed)" 0
    expect_eq "$1: syscall probes [DISABLED]" "$(disabled)" 18
    expect_eq "$1: mm syscall entry points patched" "$(patched)" 0
    expect_eq "$1: fault functions patched" "$(fault_patched)" 0
}
# wait_disarmed AFTER: the probes disarmed within 5 s of AFTER (the caller's last step). One
# check a second, each disarming in 0.1 s (0.7 s on the debug kernel): 5 s is generous.
wait_disarmed() {
    t0=$(uptime_ms)
    wait_until "disarming $1" is_disarmed
    waited=$(($(uptime_ms) - t0))
    [ $waited -le 5000 ] || fail "disarmed $waited ms $1 (at most 5000)"
    echo "ok: disarmed $waited ms $1"
}
expect_armed() {
    expect_eq "$1: syscall_probes_armed" "$(armed)" 1
    expect_eq "$1: syscall probes [DISABLED]" "$(disabled)" 0
    expect_eq "$1: mm syscall entry points patched" "$(patched)" 18
    expect_eq "$1: fault functions patched" "$(fault_patched)" "$nfault"
    expect_eq "$1: fault functions redirected" "$(fault_redirected)" "$redirected"
}

load buflen=4194304
expect_eq "kprobes on the fault functions" "$(fault_kprobes)" 0
nfault=0 redirected=
if [ "$(stat_of fault_source)" = kprobes ]; then
    nfault=$(fault_traceable) redirected='handle_mm_fault '

    [ "$nfault" -ge 8 ] || fail "fault source kprobes: $nfault traceable fault functions, want >= 8"
fi
echo "fault source $(stat_of fault_source): $nfault fault functions hooked"
expect_disarmed "after load"

sleep 100 &
s=$!
echo $s > /proc/memmon/watch-pids || fail "watch $s"
expect_armed "once the write returned"
echo -$s > /proc/memmon/watch-pids || fail "unwatch $s"
wait_disarmed "after the set emptied"
expect_disarmed "after the write that emptied the set"
kill $s

# Armed by watchexec's own write: every call of the program is recorded, the first included.
/progs/watchexec /progs/syscalls calls > /tmp/out || fail "watched run exited with $?"
wait_disarmed "after the exit"
expect_disarmed "after the watched process exited"
/progs/drain > /tmp/ev
check_expected /tmp/out /tmp/ev "$(pid_of_run /tmp/ev)" || fail "syscall lines differ"

# Kprobes disabled system-wide: enable_kprobe() reports success but leaves a probe disabled.
sleep 100 &
s=$!
echo 0 > /sys/kernel/debug/kprobes/enabled
kmsg_mark
err=$( (echo $s > /proc/memmon/watch-pids) 2>&1 ) && fail "watching $s succeeded with kprobes disabled"
echo 1 > /sys/kernel/debug/kprobes/enabled
expect_match "the write's error" "$err" 'busy'
expect_match "the kernel log" "$(kmsg_new)" 'memmon: watch-pids: cannot arm the syscall probes: kprobes are disabled system-wide'
expect_eq "nothing watched after the refused write" "$(cat /proc/memmon/watch-pids)" ""
expect_disarmed "after the refused write"
echo $s > /proc/memmon/watch-pids || fail "watch $s with kprobes enabled again"
expect_armed "kprobes enabled again, once the write returned"
kill $s
wait $s 2>/dev/null

# A followed child outliving its parent by 3 s (three checks) keeps the probes armed.
# (Loaded afresh, so that the drain below reads only this run.)
unload
load buflen=4194304
/progs/watchexec -f sh -c '(sleep 3; exec /progs/syscalls calls > /tmp/out2) & exit 0' \
    || fail "followed run"
sleep 2
expect_armed "the parent gone, its followed child sleeping"
wait_until "the child's exit" sh -c '[ -z "$(cat /proc/memmon/watch-pids)" ]'
/progs/drain > /tmp/ev2
check_expected /tmp/out2 /tmp/ev2 "$(pid_of_run /tmp/ev2)" || fail "the child's syscall lines differ"
wait_until "disarming after the child's exit" is_disarmed
expect_disarmed "after the child exited"
unload
