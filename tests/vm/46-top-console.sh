# vm-add: /lib64/ld-linux-x86-64.so.2:/lib64/ld-linux-x86-64.so.2
# vm-add: /lib/x86_64-linux-gnu/libc.so.6:/lib/x86_64-linux-gnu/libc.so.6
# vm-add: /lib/x86_64-linux-gnu/libm.so.6:/lib/x86_64-linux-gnu/libm.so.6
# vm-add: /usr/lib/x86_64-linux-gnu/libsqlite3.so.0:/usr/lib/x86_64-linux-gnu/libsqlite3.so.0
# `memmon top` on the guest's console, which it cannot drive as a terminal (the console is
# a tty, but the test has no controlling terminal: /dev/tty does not open), and with its
# output a file: plain tables, one line on stderr saying so, exit 0 when the watched
# command ends, and a last table that shows what the command had when it exited.
# 1. stdout the console: `memmon top -- /progs/stacks 256` says it cannot drive the
#    terminal and exits 0 (it panicked with exit 101 before).
# 2. stdout a file, the same program (static, frame pointers; stacks are on by default):
#    the last table has the process, [exited], 1 MiB of anonymous memory brought in (256
#    pages), and the site of its own code `touch < middle < outer < main` at stacks.c:26 (its write to each page)
#    with exactly +1 MiB in the interval, since the start and resident; no figure is
#    negative.
# 3. stdout a file, sqlite_rows (Debian's shared libsqlite3 and glibc, the default stacks): the
#    sites are named by the program's own load_rows and build_index, the library part
#    after them (`→ [libsqlite3.so.0: sqlite3_step … libc.so.6: ...]`).
. /host/lib.sh
load buflen=16777216

# 1. the console
[ -t 1 ] || fail "the test's stdout is not the console (a tty)"
memmon top --interval 0.5 -- /progs/stacks 256 2>/tmp/console.err
code=$?
cat /tmp/console.err
expect_eq "memmon top on the console: exit status" "$code" 0
expect_match "memmon top on the console: stderr" "$(cat /tmp/console.err)" \
    '^memmon top: cannot drive the terminal \(.*\): printing a table every 0.5 s, and one at the end$'
expect_eq "memmon top on the console: stderr lines" "$(count_lines "$(cat /tmp/console.err)")" 1
expect_eq "nothing left watched" "$(cat /proc/memmon/watch-pids)" ""

# 2. a file: exact figures of the last table
memmon top --interval 0.5 -- /progs/stacks 256 >/tmp/top.out 2>/tmp/top.err
code=$?
cat /tmp/top.out
expect_eq "memmon top to a file: exit status" "$code" 0
expect_eq "memmon top to a file: stderr" "$(cat /tmp/top.err)" \
    "memmon top: stdout is not a terminal: printing a table every 0.5 s, and one at the end"
tables=$(grep -c '^memmon top: events' /tmp/top.out)
[ "$tables" -ge 1 ] || fail "no table"
last=$(awk -v n="$tables" '/^memmon top: events/ { t++ } t == n' /tmp/top.out)
printf '%s\n' "$last" > /tmp/last
process=$(awk '$2 == "stacks" && $3 == "[exited]"' /tmp/last)
# ANON: its 256 pages (1 MiB) and the few of its stack, data and heap (1.0 MiB shown on
# 2026-12-07): shown as 1.0 or 1.1 MiB, no less and no more.
expect_match "the last table's process row" "$process" \
    '^ *[0-9]+  stacks \[exited\] +1\.[01] MiB '
anon=$(printf '%s\n' "$process" | awk '{ print $4, $5 }')
site=$(grep 'touch < middle < outer < main' /tmp/last)
expect_match "the last table's site of touch" "$site" \
    '^ *\+1 MiB +\+1 MiB +1 MiB  touch < middle < outer < main( < \.\.\.)? \((.*/)?stacks\.c:26\)$'
echo "process anon $anon"
if awk '/^ *(INTERVAL|PID)/ { on = 1; next } on && $1 ~ /^-/' /tmp/last | grep -q .; then
    fail "negative figures in the last table"
fi
echo "ok: no negative figure in the last table"
expect_eq "nothing left watched" "$(cat /proc/memmon/watch-pids)" ""

# 3. own code and the library part
memmon top --interval 1 --top 20 -- /progs/sqlite_rows 20000 keep >/tmp/sql.out 2>/tmp/sql.err
code=$?
expect_eq "memmon top sqlite_rows: exit status" "$code" 0
tables=$(grep -c '^memmon top: events' /tmp/sql.out)
last=$(awk -v n="$tables" '/^memmon top: events/ { t++ } t == n' /tmp/sql.out)
printf '%s\n' "$last"
expect_match "load_rows named, the library part after it" "$last" \
    '  load_rows < main( < \.\.\.)? \((.*/)?sqlite_rows\.c:[0-9]+\) → \[libsqlite3\.so\.0: sqlite3_[a-z_0-9]+ … '
expect_match "build_index named" "$last" '  build_index < main( < \.\.\.)? \((.*/)?sqlite_rows\.c:[0-9]+\) → \['
expect_match "sqlite_rows exited, its memory in the last table" "$last" '  sqlite_rows \[exited\] +[0-9.]+ MiB'
unload
