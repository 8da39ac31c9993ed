# What writes to the unwind file may take in memory (docs/unwind.md, "The memory a write
# takes"). unwind_max_kb=1024: eight ADD_TABLE writes of 32 MiB at once (rows filling them,
# the buffers not touched past their first page) are refused with ENOSPC from their first
# 40 bytes, none after more than 100 ms (1 s on the debug kernel), and MemAvailable does
# not drop by 8 MiB while they run (each was copied whole first: ~5 s, ~550 MB in all).
# unwind_max_kb=8192 (so writes may hold 8 MiB copied in together): an ADD_TABLE of
# 5 MiB whose buffer's pages past the first are missing (userfaultfd) stalls while it is
# copied in; seven more writes of it get EAGAIN at once, and MemAvailable has dropped by
# the one write's 5 MiB, under the 8 MiB bound; given its pages, the first is taken
# (7 864 324 bytes of table), the same write again too (nothing is held any more), and one
# of another table of its size gets ENOSPC before it is copied in.
. /host/lib.sh
limit_us=100000
[ -n "${MEMMON_DEBUG_KERNEL:-}" ] && limit_us=1000000
load unwind_max_kb=1024
kmsg_mark
out=$(/progs/unwind-bounds oversize 8 $((32 << 20))) || fail "unwind-bounds oversize: $out"
echo "$out"
expect_eq "the eight 32 MiB writes' errnos (ENOSPC)" "$(value_of errnos "$out")" "28,28,28,28,28,28,28,28"
max=$(value_of max_us "$out")
[ "$max" -lt $limit_us ] || fail "a 32 MiB write took $max us to be refused (limit $limit_us us)"
echo "ok: the slowest was refused after $max us"
drop=$(value_of avail_drop_kb "$out")
[ "$drop" -lt 8192 ] || fail "MemAvailable dropped by $drop KiB during the 32 MiB writes"
echo "ok: MemAvailable dropped by $drop KiB at most during them"
expect_match "dmesg" "$(kmsg_new)" \
    "memmon: unwind: an ADD_TABLE of 4194299 rows needs 33554460 bytes or more, which would pass unwind_max_kb=1024 \(0 bytes in use\): refused before its rows were read"
expect_eq "tables" "$(grep -c '^table ' /proc/memmon/unwind)" 0
unload

load unwind_max_kb=8192
kmsg_mark
out=$(/progs/unwind-bounds staging 8 $((5 << 20))) || fail "unwind-bounds staging: $out"
echo "$out"
expect_eq "the seven writes during the stalled one (EAGAIN)" "$(value_of others "$out")" "11,11,11,11,11,11,11"
max=$(value_of others_max_us "$out")
[ "$max" -lt $limit_us ] || fail "a write took $max us to be refused with EAGAIN (limit $limit_us us)"
drop=$(value_of avail_drop_kb "$out")
[ "$drop" -lt 8192 ] || fail "MemAvailable dropped by $drop KiB while one 5 MiB write was copied in"
echo "ok: MemAvailable dropped by $drop KiB while the 5 MiB write was copied in (bound 8192 KiB)"
expect_eq "the stalled write, given its pages" "$(value_of first "$out")" 0
expect_eq "the same write again" "$(value_of after "$out")" 0
expect_eq "another table of its size (ENOSPC)" "$(value_of after_other "$out")" 28
expect_match "stats" "$(cat /proc/memmon/stats)" 'memory_unwind 7864324$'
klog=$(kmsg_new)
expect_match "dmesg on EAGAIN" "$klog" \
    "memmon: unwind: refused: a write of 5242880 bytes while other writes hold 5242880 bytes being copied in \(at most 8388608\): try again"
expect_match "dmesg on the other table" "$klog" \
    "memmon: unwind: an ADD_TABLE of 655355 rows needs 5242908 bytes or more, which would pass unwind_max_kb=8192 \(7864324 bytes in use\)"
unload
