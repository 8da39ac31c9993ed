# vm-add: /lib64/ld-linux-x86-64.so.2:/lib64/ld-linux-x86-64.so.2
# vm-add: /lib/x86_64-linux-gnu/libc.so.6:/lib/x86_64-linux-gnu/libc.so.6
# vm-add: /lib/x86_64-linux-gnu/libm.so.6:/lib/x86_64-linux-gnu/libm.so.6
# vm-add: /lib/x86_64-linux-gnu/libgcc_s.so.1:/lib/x86_64-linux-gnu/libgcc_s.so.1
# vm-add: /lib/x86_64-linux-gnu/libglib-2.0.so.0:/lib/x86_64-linux-gnu/libglib-2.0.so.0
# vm-add: /lib/x86_64-linux-gnu/libpcre2-8.so.0:/lib/x86_64-linux-gnu/libpcre2-8.so.0
# What a user sees first, with no options: `memmon record -- PROG` then `memmon report
# CAPTURE`, on programs of the shapes people run (tests/glance/, not the project's
# fixtures). The report's first table, "Your code", must name the program's own functions
# with the memory they brought in, themselves or through the libraries they called:
# - glib_catalog (C, Debian's GLib allocating for it): load_catalog and make_index;
# - strings_fill (C, glibc's unnamed memset and memcpy touching the pages): clear_arena
#   12 MiB and copy_records 8 MiB, each one site row (a function, not an instruction);
# - rust_cache, static, dynamic and static without its own debug info: fill_cache and
#   build_journal, not Rust's std or malloc;
# - go_cache (Debian's Go): main.fillCache and main.buildJournal, its stacks whole;
# and no raw address or frame of memmon's own in any of them, nor in a diff of two runs.
#
# Multi-threaded TCG: each record arms the syscall probes, which live-patches __x64_sys_brk
# and __x64_sys_mmap while a program's other thread (Go's) may run them on the other vCPU.
# Multi-threaded TCG sometimes runs the patched text stale (scripts/tcg-text-poke-race.sh);
# scripts/check.sh boots again only on that race's exact signatures (scripts/tcg-race-signature).
# It once took "Unrecoverable kprobe" at __x64_sys_brk+0x5 here: that form is not one of
# them (never reproduced without memmon), so it fails the scenario.
. /host/lib.sh
load

# first_table FILE: the rows of the report's "Your code" table (after its header line).
first_table() {
    awk '/^Your code:/ { on = 1; getline; next } on && /^$/ { exit } on' "$1"
}

# row_bytes JSON FUNCTION: the resident bytes of FUNCTION's row of the first table, exact,
# from the JSON report's your_code.
row_bytes() {
    awk -v want="\"function\": \"$2\"," '
        /"your_code":/ { code = 1 }
        code && index($0, want) { found = 1; next }
        found && /"resident":/ { gsub(/[^0-9]/, ""); print; exit }' "$1"
}

# check PROG NAME FUNCTION:BYTES...: record PROG with no options, and check that the first
# table's first rows are the FUNCTIONs, each with at least the BYTES of data it keeps (what
# its source stores, exactly: the pages holding it must be resident and its own) and at
# most 2.5 times that (the allocator's headers, the tables' spare room and growth, Go's
# garbage between collections: 2.2 times for main.buildJournal, the most seen; more would
# be someone else's memory counted as its).
check() {
    prog=$1 name=$2
    shift 2
    memmon record -o "/tmp/$name.cap" -- "$prog" > "/tmp/$name.out" 2> "/tmp/$name.err" ||
        { cat "/tmp/$name.err"; fail "memmon record -- $prog"; }
    memmon report "/tmp/$name.cap" > "/tmp/$name.txt" 2> "/tmp/$name.report-err" ||
        { cat "/tmp/$name.report-err"; fail "memmon report of $name"; }
    memmon report --format json "/tmp/$name.cap" > "/tmp/$name.json" || fail "json report of $name"
    echo "== $name: the report's first lines"
    head -n 16 "/tmp/$name.txt"
    # The first table is "Your code", before the RSS tree.
    first=$(grep -m1 -E '^(Your code:|RSS tree)' "/tmp/$name.txt")
    expect_match "$name: the first table" "$first" '^Your code:'
    first_table "/tmp/$name.txt" > "/tmp/$name.first"
    # The first rows are the functions given, in any order (Go's two are within a few per
    # cent of each other, and their order changes from run to run).
    top=$(head -n $# "/tmp/$name.first")
    for spec in "$@"; do
        function=${spec%:*} min=${spec##*:}
        expect_eq "$name: $function among the first $# rows" \
            "$(printf '%s\n' "$top" | grep -cE " $function( \\(| →|$)")" 1
        bytes=$(row_bytes "/tmp/$name.json" "$function")
        [ -n "$bytes" ] || fail "$name: no $function in the JSON report's your_code"
        echo "$name: $function brought in $bytes bytes"
        [ "$bytes" -ge "$min" ] || fail "$name: $function has $bytes bytes, under the $min it keeps"
        [ "$bytes" -le $((min * 5 / 2)) ] || fail "$name: $function has $bytes bytes, over 2.5 times the $min it keeps"
    done
}

# GLib: 32768 entries of a 14-byte key and a 201-byte value; 32768 strings of 130 bytes.
check /progs/glance/glib_catalog glib load_catalog:$((32768 * (14 + 201))) make_index:$((32768 * 130))
# Its rows say what they called: GLib, then malloc.
grep -q 'load_catalog (.*) → \[libglib-2.0.so.0: ' /tmp/glib.first ||
    fail "load_catalog's row does not name GLib"

check /progs/glance/strings_fill strings clear_arena:$((12 << 20)) copy_records:$((8 << 20))
# Each function's pages come from one site: every instruction of the unnamed memset (and
# memcpy) is one function, named libc.so.6+START by its unwind table; the data's pages are
# all its own (the chunk's header page is malloc's, with the C library's code that its
# first call ran).
awk '/^Top sites by resident bytes/ { on = 1; next } on && /^$/ { exit } on' /tmp/strings.txt > /tmp/strings.sites
cat /tmp/strings.sites
for f in "clear_arena 12" "copy_records 8"; do
    rows=$(grep " ${f% *} .* → \[libc.so.6+0x[0-9a-f]*\]$" /tmp/strings.sites)
    expect_eq "${f% *}: rows in an unnamed libc function" "$(printf '%s\n' "$rows" | grep -c .)" 1
    expect_match "${f% *}: its bytes" "$rows" "^ +${f#* } MiB "
done
# Rust and Go: 12288 values of 1 KiB; 24576 lines of 250 bytes.
rust="rust_cache::fill_cache:$((12288 * 1024)) rust_cache::build_journal:$((24576 * 250))"
check /progs/glance/rust_cache-static rust-static $rust
check /progs/glance/rust_cache-dynamic rust-dynamic $rust
# Without debug info of its own (`rustc -O`): its functions are still its own, with no file.
check /progs/glance/rust_cache-nodebug rust-nodebug $rust

check /progs/glance/go_cache go main.fillCache:$((12288 * 1024)) main.buildJournal:$((24576 * 250))
# Go's stacks are whole: they end at runtime.goexit (goroutines) or reach main.main.
grep 'where their stacks end' /tmp/go.txt
grep 'where their stacks end' /tmp/go.txt | grep -q 'short of these' &&
    [ "$(grep -o 'short of these [^)]*' /tmp/go.txt | grep -oE '\(([0-9]+)\.' | tr -dc 0-9)" -ge 5 ] &&
    fail "5 % or more of Go's resident bytes are short of a whole stack"
# No frame of memmon's own image (before the command's exec) nor any raw address: the
# kernel's faults while exec loads the program carry the old image's stack, and the vDSO,
# wherever ASLR put it, is one object.
for name in glib strings rust-static rust-dynamic rust-nodebug go; do
    grep -n 'bin/memmon\|\[0x' "/tmp/$name.txt" && fail "$name: a raw address or memmon's own frame"
done
# Two runs of the same program compare site by site: nothing differs by where ASLR put the
# vDSO or the libraries.
memmon record -o /tmp/go2.cap -- /progs/glance/go_cache > /dev/null 2>&1 || fail "second go_cache"
memmon report --diff /tmp/go.cap /tmp/go2.cap > /tmp/go.diff || fail "report --diff"
sed -n '1,/^$/p' /tmp/go.diff
grep -n '\[0x\|vdso' /tmp/go.diff && fail "the diff has raw addresses or vDSO rows"
unload
