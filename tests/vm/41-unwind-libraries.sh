# vm-add: /lib64/ld-linux-x86-64.so.2:/lib64/ld-linux-x86-64.so.2
# vm-add: /lib/x86_64-linux-gnu/libc.so.6:/lib/x86_64-linux-gnu/libc.so.6
# vm-add: /lib/x86_64-linux-gnu/libm.so.6:/lib/x86_64-linux-gnu/libm.so.6
# vm-add: /usr/lib/x86_64-linux-gnu/libsqlite3.so.0:/usr/lib/x86_64-linux-gnu/libsqlite3.so.0
# vm-add: /lib/x86_64-linux-gnu/libz.so.1:/lib/x86_64-linux-gnu/libz.so.1
# Debian's libsqlite3 and glibc, shared and built without frame pointers, ASLR on: with the
# stack depth at its most (64: sqlite's own calls go 20 deep) and tables memmon record loads
# (the libraries' compiled while the program is stopped at its exec), sqlite_rows's stacks go
# from main through load_rows and build_index into sqlite3.
# The report's default moment is the peak (the database open, its index built):
# - 200 000 rows, the database closed before exit (22.7 MiB resident at the peak): at least
#   85 % of its resident bytes reach main (92.2 to 92.5 % measured at the peak; 87.9 to
#   88.4 % at the end, when it was the default) and at least 99 % have a whole stack (99.95 %:
#   main, plus 7.4 to 7.6 % that is ld.so's start-up before main, 1.7 MiB of the libraries'
#   pages read and run while relocating and in their constructors, whose stacks end at
#   ld.so's _start). What is left (8 to 12 KiB) is code outside any object.
# - 1 000 000 rows, the database held until exit (102 MiB resident at the peak, 64 MiB at the
#   end, where ld.so's fixed 1.7 MiB is a small part): at least 95 % of the resident bytes
#   reach main (98.2 % measured at the peak; 97.1 to 97.2 % at the end).
# - Of the bytes brought in after start-up (from main on), at least 95 % reach main at both
#   sizes (99.96 % and 99.99 % measured at the peak; 98.4 to 99.6 % and 99.7 to 99.96 % at the
#   end).
# The report's "where their stacks end" line gives these figures; they are checked here from
# its JSON.
. /host/lib.sh
[ "$(cat /proc/sys/kernel/randomize_va_space)" = 2 ] || fail "ASLR is off"
load buflen=16777216
# reach NAME: resident bytes whose stacks end at NAME, from the JSON report's stack_reach.
reach() {
    awk -v key="\"$1\":" '/"stack_reach"/ { on = 1 } on && $1 == key { sub(",", "", $2); print $2; exit }' /tmp/sql.json
}
for run in 200000 "1000000 keep"; do
    rows=${run%% *}
    # shellcheck disable=SC2086 # the row count, and "keep" if given
    memmon record -q -o /tmp/sql -- /progs/sqlite_rows $run > /dev/null ||
        fail "record sqlite_rows $rows"
    memmon report --format folded /tmp/sql > /tmp/sql.folded
    memmon report --format json /tmp/sql > /tmp/sql.json
    total=$(awk '{ n += $NF } END { print n }' /tmp/sql.folded)
    main=$(awk '/;main(;|$)/ { n += $NF } END { print n + 0 }' /tmp/sql.folded)
    whole=$(($(reach main) + $(reach start_up) + $(reach exit) + $(reach thread_start)))
    echo "rows $rows: resident bytes $total, reaching main $main, whole stacks $whole"
    memmon report /tmp/sql | grep 'where their stacks end'
    [ "$(reach main)" = "$main" ] || fail "the report's main bytes $(reach main) are not the folded $main"
    [ "$total" -gt 12000000 ] || fail "sqlite_rows brought in only $total bytes"
    for f in load_rows build_index; do
        grep -q ";main;$f;sqlite3_" /tmp/sql.folded || fail "no stack main -> $f -> sqlite3"
    done
    # Of the bytes brought in from the start of main on (all but ld.so's start-up, which no
    # stack can give to main), at least 95 % reach main.
    after=$((total - $(reach start_up)))
    echo "rows $rows: $main of the $after bytes brought in after start-up reach main"
    [ $((main * 100)) -ge $((after * 95)) ] || fail "only $main of the $after bytes after start-up reach main"
    if [ $rows = 200000 ]; then
        [ $((main * 100)) -ge $((total * 85)) ] || fail "only $main of $total resident bytes reach main"
        [ $((whole * 100)) -ge $((total * 99)) ] || fail "only $whole of $total resident bytes have a whole stack"
    else
        [ $((main * 100)) -ge $((total * 95)) ] || fail "only $main of $total resident bytes reach main"
    fi
done

# The same program stripped (no symbol table: neither main nor load_rows has a name): its
# stacks still reach main, the code __libc_start_main called (docs/report.md), as many as
# with names.
memmon record -q -o /tmp/sql -- /progs/sqlite_rows-stripped 200000 > /dev/null ||
    fail "record sqlite_rows-stripped"
memmon report --format folded /tmp/sql > /tmp/sql.folded
memmon report --format json /tmp/sql > /tmp/sql.json
grep -q ';main;' /tmp/sql.folded && fail "a frame named main in a stripped program"
total=$(awk '{ n += $NF } END { print n }' /tmp/sql.folded)
echo "stripped, rows 200000: resident bytes $total, reaching main $(reach main)"
[ $(($(reach main) * 100)) -ge $((total * 85)) ] || fail "only $(reach main) of $total resident bytes reach main (stripped)"

# dlopen_z maps libz, then waits until /tmp/z.go exists: made here once memmon record has
# loaded libz's table for it (the process's tables in /proc/memmon/unwind reach the number of
# code files it maps), so that its compress_pages faults come after, however slow the reader.
rm -f /tmp/z.go /tmp/z.go.ready
memmon record -q -o /tmp/z -- /progs/dlopen_z 64 /tmp/z.go > /dev/null &
recorder=$!
i=0
until [ -e /tmp/z.go.ready ]; do
    [ $((i += 1)) -le 6000 ] || fail "dlopen_z did not open libz"
    sleep 0.01
done
zpid=$(pidof dlopen_z)
[ -n "$zpid" ] || fail "no dlopen_z process"
files=$(awk '$2 ~ /x/ && $6 ~ /^\// { print $6 }' /proc/$zpid/maps | sort -u | wc -l)
grep -q libz /proc/$zpid/maps || fail "libz is not mapped"
i=0
until awk -v pid=$zpid -v want=$files '$1 == "process" && $2 == pid { sub("tables=", "", $4); ok = $4 >= want }
        END { exit !ok }' /proc/memmon/unwind; do
    [ $((i += 1)) -le 1200 ] || { cat /proc/memmon/unwind; fail "libz's table was not loaded in 60 s"; }
    sleep 0.05
done
echo "libz's table loaded for dlopen_z after $((i * 50)) ms or less ($files code files)"
touch /tmp/z.go
wait $recorder || fail "record dlopen_z"
memmon report --format folded /tmp/z | grep compress_pages > /tmp/z.folded
[ -s /tmp/z.folded ] || fail "no stack through compress_pages"
grep -v ';main;compress_pages' /tmp/z.folded && fail "a compress_pages stack that does not reach main"
grep -q 'compress_pages;compress2;deflate' /tmp/z.folded || fail "no stack into libz"

memmon record -q -o /tmp/rs -- /progs/rust_vec 64 > /dev/null || fail "record rust_vec"
memmon report --format folded /tmp/rs > /tmp/rs.folded
for f in grow_vec build_strings; do
    grep -q "rust_vec::main;rust_vec::$f" /tmp/rs.folded || grep -q "main;.*$f" /tmp/rs.folded ||
        fail "no stack from main through $f"
done
unload
