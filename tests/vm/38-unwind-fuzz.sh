# 20 000 invalid writes to /proc/memmon/unwind (memmon-unwind's fuzz cases: truncated,
# wrong magic, version or length, huge counts, unsorted or overlapping rows and ranges, bad
# rules, unknown keys, a process not watched), after one valid ADD_TABLE: each is refused
# with its errno (EINVAL, ENOENT, ESRCH), the file (root-only) reads the same before and
# after (then 10 000 invalid SET_PYTHON descriptions, the same), and the module's memory in stats is that of the one table (17 rows and an index of
# 17 entries: 64 + 17 x 8 + 17 x 4 = 268 bytes, as memmon-unwind's model counts it); then
# a table of arm64 and one of an unknown architecture are refused with their lines, and one
# of x86_64 is taken.
. /host/lib.sh
load
sleep 1000 &
watched=$!
sleep 1000 &
unwatched=$!
echo $watched > /proc/memmon/watch-pids || fail "watching"
expect_eq "unwind mode" "$(stat -c %a /proc/memmon/unwind)" 600
out=$(/progs/unwind-fuzz $watched $unwatched 20000 7) || fail "fuzz: $out"
expect_eq "fuzz result" "$out" "cases=20000 refused=20000 wrong=0 unchanged=yes"
expect_eq "tables after the fuzz" "$(grep -c '^table ' /proc/memmon/unwind)" 1
# 10 000 descriptions of an interpreter (SET_PYTHON, issue 43), each with a field wrong,
# for a pid out of range or not watched, or mutated as any write: each refused, nothing
# changed (a description taken would list the watched process).
out=$(/progs/unwind-fuzz $watched $unwatched 10000 9 python) || fail "python fuzz: $out"
expect_eq "python fuzz result" "$out" "cases=10000 refused=10000 wrong=0 unchanged=yes"
expect_eq "processes after the python fuzz" "$(grep -c '^process ' /proc/memmon/unwind)" 0
expect_match "stats" "$(cat /proc/memmon/stats)" 'unwind_tables 1'
expect_match "stats memory (17 rows, 17 index entries)" "$(cat /proc/memmon/stats)" 'memory_unwind 268$'
# The table's architecture (docs/unwind.md): an arm64 table is refused, before its rows are
# read, with a line that says so; the same rows as an x86_64 table are taken. (The fuzz's
# lines filled the kernel's log buffer: it is emptied first, so that kmsg_new's count holds.)
dmesg -c > /dev/null
kmsg_mark
write_table_of_arch 1 && fail "an arm64 table was taken by the x86_64 module"
expect_match "an arm64 table refused" "$(kmsg_new)" \
    'unwind: refused: an ADD_TABLE of arm64 rows \(architecture 1\): this module walks x86_64 stacks'
write_table_of_arch 7 && fail "a table of architecture 7 was taken"
expect_match "an unknown architecture refused" "$(kmsg_new)" \
    'an ADD_TABLE of an unknown architecture \(0 x86_64, 1 arm64\)'
write_table_of_arch 0 || fail "the x86_64 table of one row was refused"
expect_eq "tables after the x86_64 one" "$(grep -c '^table ' /proc/memmon/unwind)" 2
kill $watched $unwatched
wait 2>/dev/null
unload
