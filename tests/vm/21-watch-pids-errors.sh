# Bad writes to watch-pids fail with the right errno, say why in dmesg, and change nothing.
. /host/lib.sh
load
w=/proc/memmon/watch-pids
echo "1 2" > $w
try() { # try WHAT INPUT ERRNO_TEXT
    if echo -n "$2" > $w 2>/tmp/err; then fail "$1: '$2' was accepted"; fi
    expect_match "$1: error" "$(cat /tmp/err)" "$3"
    expect_eq "$1: set unchanged" "$(cat $w)" "1-2"
}
try "not a number" "abc" "Invalid argument"
try "trailing garbage" "12x" "Invalid argument"
try "one bad item among good ones" "3 abc 4" "Invalid argument"
try "no such process" "99999" "No such process"
try "one missing process among good ones" "3 99999" "No such process"
try "beyond pid_max" "4194304" "Invalid argument"
try "too long a number" "00000000001" "Invalid argument"
try "a lone sign" "+" "Invalid argument"
try "negative zero" "-0" "Invalid argument"
try "empty" " " "Invalid argument"
expect_match "dmesg says why" "$(dmesg | grep 'watch-pids: rejected' | head -n 1)" "rejected 'abc': not a pid"
expect_match "dmesg names the missing process" "$(dmesg | grep 'no such process' | head -n 1)" "rejected '99999': no such process"
# 8192 bytes are accepted (room for the longest cgroup path, twice), 8193 refused
head -c 8191 /dev/zero | tr '\0' ' ' > /tmp/w8192 && echo >> /tmp/w8192
printf '3' | dd of=/tmp/w8192 conv=notrunc 2>/dev/null
expect_eq "an 8192-byte write" "$(wc -c < /tmp/w8192)" 8192
# (dd: one write; cat may write in 4 KiB pieces)
dd if=/tmp/w8192 of=$w bs=16384 2>/dev/null || fail "an 8192-byte write was refused"
expect_eq "after the 8192-byte write" "$(cat $w)" "1-3"
echo "-3" > $w
kmsg_mark
head -c 8192 /dev/zero | tr '\0' ' ' > /tmp/w8193 && echo >> /tmp/w8193
if dd if=/tmp/w8193 of=$w bs=16384 2>/dev/null; then fail "an 8193-byte write was accepted"; fi
expect_eq "set unchanged after 8193 bytes" "$(cat $w)" "1-2"
expect_match "dmesg on 8193 bytes" "$(kmsg_new)" "memmon: watch-pids: rejected a write of 8193 bytes \\(at most 8192\\)"
# not root: the file is 0600 root
if /progs/asuser 65534 sh -c "echo 3 > $w" 2>/tmp/err; then fail "a non-root write was accepted"; fi
expect_match "non-root error" "$(cat /tmp/err)" "Permission denied"
expect_eq "set unchanged after non-root write" "$(cat $w)" "1-2"
if /progs/asuser 65534 cat /proc/memmon/events 2>/dev/null; then fail "a non-root read of events worked"; fi
unload
