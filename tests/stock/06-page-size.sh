# arm64 only (scenarios.txt's tag "arm64"), on the 4 KiB kernel and on arm64-16k: memmon with
# its defaults counts the kernel's own pages. The aarch64 memmon records a program that
# writes 1 MiB (256 writes 4 KiB apart); the module's stats and the capture's "# page-size"
# header say the kernel's page size, the capture holds one first-touch fault a page of the
# 1 MiB (64 of 16 KiB, or 256 of 4 KiB), and the report holds exactly 1 MiB under the
# writing function and agrees with the kernel's own counters at exit (its "ok:" line, no
# warning).
. /host/lib.sh
expect_eq "machine" "$(uname -m)" aarch64
case $(uname -r) in
    *-16k) page=16384 ;;
    *) page=4096 ;;
esac
insmod /memmon/memmon.ko || fail "insmod"
memmon record -o /tmp/c -- /progs/memtest anon 256 > /tmp/out || fail "memmon record exited with $?"
expect_eq "the capture's page size" "$(sed -n 's/^# page-size //p' /tmp/c)" "$page"
expect_eq "stats' page_size" "$(awk '$1 == "page_size" { print $2 }' /proc/memmon/stats)" "$page"
base=$(value_of base "$(cat /tmp/out)")
[ -n "$base" ] || fail "memtest printed no base"
# The program's first-touch writes in its 1 MiB: one fault line a page.
n=$(awk -v lo=$((base)) -v hi=$((base + (1 << 20))) '
    function hex(s,   n, i) { n = 0; s = tolower(s); sub(/^0x/, "", s); for (i = 1; i <= length(s); i++) n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return n }
    $3 == "fault" && / type=anon access=W / {
        for (i = 4; i <= NF; i++) if ($i ~ /^addr=/) a = hex(substr($i, 6))
        if (a >= lo && a < hi) n++
    } END { print n + 0 }' /tmp/c)
expect_eq "first-touch faults in the 1 MiB" "$n" $(( (1 << 20) / page ))
memmon report /tmp/c > /tmp/report || fail "memmon report exited with $?"
sed -n '1,14p' /tmp/report
row=$(awk '$NF == "(progs/memtest.c)" && $(NF - 1) == "touch" { print $1, $2; exit }' /tmp/report)
expect_eq "touch's resident bytes" "$row" "1 MiB"
grep -q '^  ok: ' /tmp/report || fail "no agreement with the kernel's counters: $(grep -A3 '^Checks\|warning:' /tmp/report | head)"
! grep -q '^  warning: ' /tmp/report || fail "$(grep '^  warning: ' /tmp/report)"
echo "ok: $(grep '^  ok: ' /tmp/report | head -1)"
rmmod memmon || fail "rmmod"
