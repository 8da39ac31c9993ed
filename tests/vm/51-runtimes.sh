# vm-add: /usr/bin/node:/usr/bin/node
# vm-add: /lib64/ld-linux-x86-64.so.2:/lib64/ld-linux-x86-64.so.2
# vm-add: /lib/x86_64-linux-gnu/libc.so.6:/lib/x86_64-linux-gnu/libc.so.6
# vm-add: /lib/x86_64-linux-gnu/libm.so.6:/lib/x86_64-linux-gnu/libm.so.6
# vm-add: /lib/x86_64-linux-gnu/libdl.so.2:/lib/x86_64-linux-gnu/libdl.so.2
# vm-add: /lib/x86_64-linux-gnu/libpthread.so.0:/lib/x86_64-linux-gnu/libpthread.so.0
# vm-add: /lib/x86_64-linux-gnu/libgcc_s.so.1:/lib/x86_64-linux-gnu/libgcc_s.so.1
# vm-add: /lib/x86_64-linux-gnu/libstdc++.so.6:/lib/x86_64-linux-gnu/libstdc++.so.6
# Runtimes at first glance: `memmon record` with no option but the JIT switch, then `memmon
# report`, on programs written for it (tests/runtimes/), each holding memory of known sizes
# until it exits:
# - hold.js under the host's Node.js (20): holdObjects 24 MiB of arrays, holdBuffers 20 MiB
#   of Buffers, holdRecords small objects that V8's scavenger moves;
# - templates (C++, g++, Debian's libstdc++): (anon)::Store<…>::fill 24 MiB through two
#   instantiations, build_index 12 MiB through a lambda;
# - gc_hold (Debian's Go) forcing collections: main.holdBlocks 16 MiB, main.holdRecords 9 MiB.
# The report's first table ("Your code") must name each function with its bytes (within
# 10 %), the collector's pages must be one line of their own (not sites), no row longer than
# 200 characters, Node's stacks whole at the default depth; and without the switch, record
# says how to get the script's functions named and the report why they are not.
#
# Multi-threaded TCG, as vm-47 (record arms the syscall probes while the runtimes' other
# threads run); Node.js under TCG takes a while.
# vm-timeout: 900
. /host/lib.sh
load

# first_table FILE: the rows of the report's "Your code" table (after its header line)
first_table() {
    awk '/^Your code:/ { on = 1; getline; next } on && /^$/ { exit } on' "$1"
}

# site_rows FILE: the rows of the report's "Top sites by resident bytes"
site_rows() {
    awk '/^Top sites by resident bytes/ { on = 1; getline; next } on && /^$/ { exit } on' "$1"
}

# row_bytes JSON FUNCTION: the resident bytes of FUNCTION's row of "Your code", exact, from
# the JSON report's your_code
row_bytes() {
    awk -v want="\"function\": \"$2\"," '
        /"your_code":/ { code = 1 }
        code && index($0, want) { found = 1; next }
        found && /"resident":/ { gsub(/[^0-9]/, ""); print; exit }' "$1"
}

# record NAME CMD...: record CMD with no option but what CMD holds, its text and JSON reports
record() {
    name=$1
    shift
    memmon record -o "/tmp/$name.cap" "$@" > "/tmp/$name.out" 2> "/tmp/$name.err" ||
        { cat "/tmp/$name.err"; fail "memmon record $*"; }
    memmon report "/tmp/$name.cap" > "/tmp/$name.txt" 2> "/tmp/$name.report-err" ||
        { cat "/tmp/$name.report-err"; fail "memmon report of $name"; }
    memmon report --format json "/tmp/$name.cap" > "/tmp/$name.json" || fail "json report of $name"
    echo "== $name: the report's first lines"
    sed -n '1,/^RSS tree/p' "/tmp/$name.txt"
    first_table "/tmp/$name.txt" > "/tmp/$name.first"
}

# holds NAME FUNCTION MIB: FUNCTION is a row of NAME's first table, its bytes within 10 % of
# MIB MiB
holds() {
    grep -qF "  $2 (" "/tmp/$1.first" || fail "$1: no row $2 in the first table"
    bytes=$(row_bytes "/tmp/$1.json" "$2")
    [ -n "$bytes" ] || fail "$1: no $2 in the JSON report's your_code"
    want=$(($3 << 20))
    echo "$1: $2 holds $bytes bytes (wants $want within 10 %)"
    [ "$bytes" -ge $((want - want / 10)) ] && [ "$bytes" -le $((want + want / 10)) ] ||
        fail "$1: $2 has $bytes bytes, not within 10 % of $3 MiB"
}

# collector NAME LABEL PATTERN: the collector's bytes are one line of the first table's
# lines and one row of the site table, and no site row names its functions (PATTERN)
collector() {
    lines=$(grep -cE "^ +[0-9.]+ [KMG]?i?B $2\$" "/tmp/$1.first")
    expect_eq "$1: '$2' lines after the first table" "$lines" 1
    site_rows "/tmp/$1.txt" > "/tmp/$1.sites"
    cat "/tmp/$1.sites"
    expect_eq "$1: '[$2]' rows of the site table" "$(grep -cF "[$2]" "/tmp/$1.sites")" 1
    grep -E "$3" "/tmp/$1.sites" && fail "$1: a site row names the collector's functions"
    grep -n "\"runtime_work\": \"" "/tmp/$1.json" | head -n 1 | grep -q . ||
        fail "$1: no site of the collector's marked in JSON"
}

# short_rows NAME: no line of the report from its first table on is longer than 200
# characters (awk counts bytes: the arrows and ellipses, 3 bytes each, count as one)
short_rows() {
    long=$(sed -n '/^Your code/,$p' "/tmp/$1.txt" |
        awk '{ line = $0; gsub(/→|…/, "x", line) } length(line) > 200' | head -n 3)
    [ -z "$long" ] || fail "$1: rows longer than 200 characters: $long"
    echo "ok: $1: no row over 200 characters"
}

# --- Node.js ----------------------------------------------------------------------------
record node --jit-maps -- node /progs/runtimes/hold.js
grep -q '^memmon: --jit-maps: NODE_OPTIONS=' /tmp/node.err || fail "record did not say what --jit-maps set"
holds node holdObjects 24
holds node holdBuffers 20
collector node "moved by V8's garbage collector" 'Scavenger|Evacuat|MarkCompact'
grep -q 'holdBuffers (runtimes/hold.js) → \[node:buffer: fill … libc.so.6' /tmp/node.first ||
    fail "holdBuffers' row does not name Node's fill and the C library's memset"
short_rows node
# Node's stacks are whole at the default depth: at most 5 % end at it.
stacks=$(grep -c ' stack=' /tmp/node.cap)
cut=$(grep -c 'stack_end=depth' /tmp/node.cap)
echo "node: $cut of $stacks stacks reached the depth limit"
[ $((cut * 20)) -le "$stacks" ] || fail "node: $cut of $stacks stacks cut at the default depth"

# Without the switch: record says how, the report why the script's functions are unnamed.
memmon record -o /tmp/plain.cap -- node /progs/runtimes/hold.js > /dev/null 2> /tmp/plain.err ||
    fail "memmon record -- node without the switch"
grep '^memmon: node names' /tmp/plain.err
grep -q '^memmon: node names its functions in a perf map only with --perf-basic-prof --interpreted-frames-native-stack' /tmp/plain.err ||
    fail "record did not say how to get node's functions named"
memmon report /tmp/plain.cap > /tmp/plain.txt || fail "report of the run without the switch"
sed -n '/^Your code/,/^RSS tree/p' /tmp/plain.txt
grep -qE '^  note: [0-9.]+ MiB resident went through generated \(JIT\) code that no perf map .* run node with --perf-basic-prof --interpreted-frames-native-stack' /tmp/plain.txt ||
    fail "the report does not say why the JIT frames are unnamed"

# --- C++ ----------------------------------------------------------------------------------
record cxx -- /progs/runtimes/templates
holds cxx '(anon)::Store<…>::fill' 24
holds cxx build_index 12
short_rows cxx
site_rows /tmp/cxx.txt > /tmp/cxx.sites
cat /tmp/cxx.sites
# The two instantiations are one site row; --full-names shows each.
expect_eq "cxx: site rows of Store<…>::fill" "$(grep -c ' (anon)::Store<…>::fill ' /tmp/cxx.sites)" 1
grep -q ' build_index::{lambda#1} < build_index < main ' /tmp/cxx.sites ||
    fail "cxx: the lambda's site is not build_index::{lambda#1} < build_index < main"
memmon report --full-names /tmp/cxx.cap > /tmp/cxx-full.txt || fail "report --full-names"
site_rows /tmp/cxx-full.txt > /tmp/cxx-full.sites
for type in 'unsigned long' 'unsigned int'; do
    grep -qF "(anonymous namespace)::Store<$type>::fill(unsigned long)" /tmp/cxx-full.sites ||
        fail "cxx --full-names: no row of Store<$type>::fill"
done

# --- Go -----------------------------------------------------------------------------------
record go -- /progs/runtimes/gc_hold
holds go main.holdBlocks 16
holds go main.holdRecords 9
collector go "touched by Go's garbage collector" 'runtime\.(gcDrain|scanobject|gcBgMarkWorker|markroot)'
short_rows go
unload
