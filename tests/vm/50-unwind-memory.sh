# What writes to the unwind file may take in memory (docs/unwind.md, "The memory a write
# takes"). What the module copies writes into is vmalloc'ed (VmallocUsed in /proc/meminfo
# counts it exactly; MemAvailable moves by a few MiB either way on its own).
#
# unwind_max_kb=1024: eight ADD_TABLE writes of 32 MiB at once, each through its own open
# file (rows filling them, the buffers not touched past their first page), are refused with
# ENOSPC from their first 40 bytes, none after more than 1 s (5 s on the debug kernel: a
# bound a host busy elsewhere does not reach, far from the old copy's 27 s;
# measured 1 to 11 ms), VmallocUsed does not rise by the 1 MiB bound and MemAvailable does
# not drop by 8 MiB (measured: 80 KiB, the threads' stacks, and 0). Before, each was copied
# whole then refused with EINVAL: 27 s for the slowest on a busy host, 257 MiB.
#
# unwind_max_kb=8192 (so writes may hold 8 MiB copied in together): an ADD_TABLE of 5 MiB
# whose buffer's pages past the first are missing (userfaultfd) stalls while it is copied
# in; seven more writes of it get EAGAIN at once; VmallocUsed rose by what the one write
# is copied into (5 MiB in 2 MiB pages: 6 MiB), not past the 8 MiB bound, and MemAvailable
# dropped by less than twice the bound (measured 4 to 8.4 MiB; eight writes copied in would
# take 48 MiB). Given its pages, the first is taken (7 864 324 bytes of table), the same
# write again too (nothing is held any more), and one of another table of its size gets
# ENOSPC before it is copied in.
. /host/lib.sh
limit_us=1000000
[ -n "${MEMMON_DEBUG_KERNEL:-}" ] && limit_us=5000000
load unwind_max_kb=1024
kmsg_mark
out=$(/progs/unwind-bounds oversize 8 $((32 << 20))) || fail "unwind-bounds oversize: $out"
echo "$out"
expect_eq "the eight 32 MiB writes' errnos (ENOSPC)" "$(value_of errnos "$out")" "28,28,28,28,28,28,28,28"
max=$(value_of max_us "$out")
[ "$max" -lt $limit_us ] || fail "a 32 MiB write took $max us to be refused (limit $limit_us us)"
echo "ok: the slowest was refused after $max us"
rise=$(value_of vmalloc_rise_kb "$out")
[ "$rise" -lt 1024 ] || fail "VmallocUsed rose by $rise KiB during the 32 MiB writes"
drop=$(value_of avail_drop_kb "$out")
[ "$drop" -lt 8192 ] || fail "MemAvailable dropped by $drop KiB during the 32 MiB writes"
echo "ok: during them VmallocUsed rose by $rise KiB at most, MemAvailable dropped by $drop KiB"
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
rise=$(value_of vmalloc_rise_kb "$out")
[ "$rise" -ge 5120 ] && [ "$rise" -le 8192 ] ||
    fail "VmallocUsed rose by $rise KiB while one 5 MiB write was copied in (want 5120 to 8192)"
drop=$(value_of avail_drop_kb "$out")
[ "$drop" -lt 16384 ] || fail "MemAvailable dropped by $drop KiB while one 5 MiB write was copied in"
echo "ok: while the 5 MiB write was copied in VmallocUsed rose by $rise KiB (bound 8192), MemAvailable dropped by $drop KiB"
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
