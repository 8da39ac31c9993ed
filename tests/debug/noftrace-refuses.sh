# On a kernel whose kprobes are not ftrace-based (build/linux-noftrace: no FUNCTION_TRACER,
# so no DYNAMIC_FTRACE and no KPROBES_ON_FTRACE; kprobes then use int3 and their handlers
# run in NMI-like context), memmon refuses to load: insmod fails with EOPNOTSUPP, the
# kernel log says why, nothing is left behind (no /proc/memmon, no module, no probe), and
# a second attempt fails the same way. Run by scripts/check-debug.sh (the harness also
# fails it on any splat in the guest's kernel log).
. /host/lib.sh
grep -q ' ftrace_ops_list_func\| ftrace_caller$' /proc/kallsyms &&
    fail "this kernel has function tracing: boot build/linux-noftrace"
for attempt in 1 2; do
    out=$(insmod /memmon/memmon.ko 2>&1)
    status=$?
    echo "insmod (attempt $attempt): exit $status: $out"
    [ $status -ne 0 ] || fail "insmod succeeded on a kernel without ftrace-based kprobes"
    expect_match "insmod error (attempt $attempt)" "$out" 'Operation not supported'
    [ ! -e /proc/memmon ] || fail "/proc/memmon exists after the refused load"
    grep -q '^memmon ' /proc/modules && fail "memmon is in /proc/modules after the refused load"
    if [ -r /sys/kernel/debug/kprobes/list ]; then
        left=$(cat /sys/kernel/debug/kprobes/list)
        [ -z "$left" ] || fail "kprobes left registered after the refused load: $left"
        echo "ok: no kprobe left registered"
    fi
done
line=$(dmesg | grep 'memmon:.*kprobes do not go through ftrace')
expect_match "refusal line" "$line" 'memmon: the kprobes do not go through ftrace \(int3\): build the kernel with CONFIG_KPROBES_ON_FTRACE and CONFIG_DYNAMIC_FTRACE'
# busybox insmod tries finit_module() and then init_module(): a refusal line for each call,
# so 2 per attempt here; at least one per attempt in any case.
n=$(count_lines "$line")
[ "$n" -ge 2 ] || fail "refusal lines: got $n, want one or more per attempt (2 attempts)"
echo "ok: $n refusal lines for 2 attempts"
dmesg | grep -q 'memmon: loaded' && fail "the kernel log says memmon loaded"
echo "ok: refused twice, nothing left"
