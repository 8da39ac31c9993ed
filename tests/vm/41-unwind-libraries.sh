# vm-add: /lib64/ld-linux-x86-64.so.2:/lib64/ld-linux-x86-64.so.2
# vm-add: /lib/x86_64-linux-gnu/libc.so.6:/lib/x86_64-linux-gnu/libc.so.6
# vm-add: /lib/x86_64-linux-gnu/libm.so.6:/lib/x86_64-linux-gnu/libm.so.6
# vm-add: /usr/lib/x86_64-linux-gnu/libsqlite3.so.0:/usr/lib/x86_64-linux-gnu/libsqlite3.so.0
# vm-add: /lib/x86_64-linux-gnu/libz.so.1:/lib/x86_64-linux-gnu/libz.so.1
# Debian's libsqlite3 and glibc, shared and built without frame pointers, ASLR on: with the
# stack depth at its most (64: sqlite's own calls go 20 deep) and
# tables memmon record loads (the libraries' compiled while the program is stopped at its
# exec), sqlite_rows's stacks go from main through load_rows and build_index into sqlite3,
# and at least 85 % of its resident bytes reach main (88 % measured at 200 000 rows, 1 % by
# frame pointers; the rest is mostly ld.so's work before main: the libraries' symbol tables
# read while relocating, 1.3 MiB of file pages that no stack can give to main). A
# library opened with dlopen after the start (libz) is unwound once its table is loaded:
# every fault of compress_pages reaches main. Rust's std (no frame pointers): rust_vec's
# faults in grow_vec and build_strings reach main.
. /host/lib.sh
[ "$(cat /proc/sys/kernel/randomize_va_space)" = 2 ] || fail "ASLR is off"
load buflen=16777216
memmon record -q --stacks 64 -o /tmp/sql -- /progs/sqlite_rows 200000 > /dev/null || fail "record sqlite_rows"
memmon report --format folded /tmp/sql > /tmp/sql.folded
total=$(awk '{ n += $NF } END { print n }' /tmp/sql.folded)
main=$(awk '/;main(;|$)/ { n += $NF } END { print n + 0 }' /tmp/sql.folded)
echo "resident bytes: $total, reaching main: $main"
[ "$total" -gt 12000000 ] || fail "sqlite_rows brought in only $total bytes"
[ $((main * 100)) -ge $((total * 85)) ] || fail "only $main of $total resident bytes reach main"
for f in load_rows build_index; do
    grep -q ";main;$f;sqlite3_" /tmp/sql.folded || fail "no stack main -> $f -> sqlite3"
done

memmon record -q --stacks 64 -o /tmp/z -- /progs/dlopen_z 64 > /dev/null || fail "record dlopen_z"
memmon report --format folded /tmp/z | grep compress_pages > /tmp/z.folded
[ -s /tmp/z.folded ] || fail "no stack through compress_pages"
grep -v ';main;compress_pages' /tmp/z.folded && fail "a compress_pages stack that does not reach main"
grep -q 'compress_pages;compress2;deflate' /tmp/z.folded || fail "no stack into libz"

memmon record -q --stacks 64 -o /tmp/rs -- /progs/rust_vec 64 > /dev/null || fail "record rust_vec"
memmon report --format folded /tmp/rs > /tmp/rs.folded
for f in grow_vec build_strings; do
    grep -q "rust_vec::main;rust_vec::$f" /tmp/rs.folded || grep -q "main;.*$f" /tmp/rs.folded ||
        fail "no stack from main through $f"
done
unload
