# The stock kernel's guest (scripts/stock/vm-run): the Debian kernel the host prepared is
# running (its release and Debian version in /stock/release and /stock/version, from
# scripts/stock/resolve), Debian's modules were loaded at boot, a Rust module built by the
# kernel's own toolchain (its build root, against build/stock/kernels/RELEASE/tree) loads,
# runs and unloads, tracefs is at
# /sys/kernel/tracing with exceptions:page_fault_user, and zram swap works.
. /host/lib.sh
release=$(cat /stock/release) version=$(cat /stock/version)
expect_match "the prepared kernel's release" "$release" '^[0-9]+\.[0-9]+\.[0-9]+\+deb[0-9]+-(amd64|arm64)$'
expect_eq "kernel release" "$(uname -r)" "$release"
case "$(cat /proc/version)" in
    *" Debian $version "*) echo "ok: /proc/version names Debian $version" ;;
    *) fail "/proc/version does not name Debian $version: $(cat /proc/version)" ;;
esac
[ ! -e /stock/modules.failed ] || fail "modules that failed to load at boot: $(cat /stock/modules.failed)"
for m in $(cat /stock/modules.load); do
    grep -q "^$m " /proc/modules || fail "boot module $m is not loaded"
done
echo "ok: boot modules loaded: $(tr '\n' ' ' < /stock/modules.load)"

if [ -f /stock/extra/sc_hello.ko ]; then
    # A kernel built without Rust (6.12): the self-contained build's module
    # (tests/stock/hello-sc), with the kernel crate's KVec and core::fmt inside it.
    insmod /stock/extra/sc_hello.ko || fail "insmod sc_hello.ko: exit $?"
    expect_match "hello line" "$(dmesg | grep 'sc_hello: hello')" \
        'hello from Rust, self-contained: \[0, 7, 14, 21\]$'
    expect_match "taint" "$(cat /proc/sys/kernel/tainted)" '^[1-9]'
    rmmod sc_hello || fail "rmmod sc_hello"
    expect_match "goodbye line" "$(dmesg | grep 'sc_hello: goodbye')" 'goodbye \(4 numbers\)$'
else
    # The Rust module: KVec, core::fmt and a parameter, i.e. Rust symbols of Debian's vmlinux.
    insmod /stock/extra/stock_hello.ko greeting_count=4 || fail "insmod stock_hello.ko: exit $?"
    expect_match "hello line" "$(dmesg | grep 'stock_hello: hello')" \
        'hello from Rust on the stock kernel: \[0, 7, 14, 21\]$'
    expect_match "taint" "$(cat /proc/sys/kernel/tainted)" '^[1-9]'
    rmmod stock_hello || fail "rmmod stock_hello"
    expect_match "goodbye line" "$(dmesg | grep 'stock_hello: goodbye')" 'goodbye \(4 numbers\)$'
fi

# tracefs and the fault tracepoint the stock kernel has: it fires for a workload's faults.
# (exceptions:page_fault_user is x86's: arm64 has no fault tracepoint, and there an event on
# a kprobe of handle_mm_fault stands in for it.)
T=/sys/kernel/tracing
expect_eq "tracefs mount" "$(awk '$2 == "/sys/kernel/tracing" { print $3 }' /proc/mounts)" tracefs
case "$(uname -m)" in
    x86_64) event=exceptions/page_fault_user name=page_fault_user ;;
    aarch64)
        [ ! -d $T/events/exceptions/page_fault_user ] || fail "arm64 has exceptions:page_fault_user now"
        echo 'p:stockfault handle_mm_fault' > $T/kprobe_events || fail "kprobe event on handle_mm_fault"
        event=kprobes/stockfault name=stockfault ;;
    *) fail "unexpected machine $(uname -m)" ;;
esac
[ -d $T/events/$event ] || fail "no $event"
echo 0 > $T/tracing_on && echo > $T/trace
echo 1 > $T/events/$event/enable
echo 1 > $T/tracing_on
/progs/memtest anon 50 > /tmp/anon.out || fail "memtest anon"
echo 0 > $T/tracing_on
echo 0 > $T/events/$event/enable
n=$(grep -c "memtest.*$name" $T/trace)
[ "$n" -ge 50 ] || fail "$name: $n events of memtest, want >= 50"
echo "ok: $name fired $n times for memtest anon 50"

# zram swap (Debian's zram and lz4hc_compress modules): 100 pages out and back in.
echo 64M > /sys/block/zram0/disksize || fail "zram0 disksize"
mkswap /dev/zram0 >/dev/null && swapon /dev/zram0 || fail "swapon /dev/zram0"
expect_match "swap" "$(grep zram0 /proc/swaps)" '^/dev/zram0 +partition'
in0=$(awk '$1 == "pswpin" { print $2 }' /proc/vmstat)
/progs/memtest swap 100 > /tmp/swap.out || fail "memtest swap"
in1=$(awk '$1 == "pswpin" { print $2 }' /proc/vmstat)
[ $((in1 - in0)) -ge 100 ] || fail "pswpin grew by $((in1 - in0)), want >= 100"
[ "$(value_of major_faults "$(cat /tmp/swap.out)")" -gt 0 ] || fail "no major fault for the swap-ins"
echo "ok: $((in1 - in0)) pages swapped in from zram"
swapoff /dev/zram0
