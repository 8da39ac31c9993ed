# vm-add: /usr/bin/python3.11:/usr/bin/python3.11
# vm-add: /lib64/ld-linux-x86-64.so.2:/lib64/ld-linux-x86-64.so.2
# vm-add: /lib/x86_64-linux-gnu/libc.so.6:/lib/x86_64-linux-gnu/libc.so.6
# vm-add: /lib/x86_64-linux-gnu/libm.so.6:/lib/x86_64-linux-gnu/libm.so.6
# vm-add: /lib/x86_64-linux-gnu/libz.so.1:/lib/x86_64-linux-gnu/libz.so.1
# vm-add: /lib/x86_64-linux-gnu/libexpat.so.1:/lib/x86_64-linux-gnu/libexpat.so.1
# vm-add: /usr/lib/python3.11/os.py:/usr/lib/python3.11/os.py
# vm-add: /usr/lib/python3.11/_weakrefset.py:/usr/lib/python3.11/_weakrefset.py
# vm-add: /usr/lib/python3.11/functools.py:/usr/lib/python3.11/functools.py
# vm-add: /usr/lib/python3.11/keyword.py:/usr/lib/python3.11/keyword.py
# vm-add: /usr/lib/python3.11/operator.py:/usr/lib/python3.11/operator.py
# vm-add: /usr/lib/python3.11/reprlib.py:/usr/lib/python3.11/reprlib.py
# vm-add: /usr/lib/python3.11/threading.py:/usr/lib/python3.11/threading.py
# vm-add: /usr/lib/python3.11/types.py:/usr/lib/python3.11/types.py
# vm-add: /usr/lib/python3.11/collections/__init__.py:/usr/lib/python3.11/collections/__init__.py
# vm-add: /usr/lib/python3.11/encodings/__init__.py:/usr/lib/python3.11/encodings/__init__.py
# vm-add: /usr/lib/python3.11/encodings/aliases.py:/usr/lib/python3.11/encodings/aliases.py
# vm-add: /usr/lib/python3.11/encodings/utf_8.py:/usr/lib/python3.11/encodings/utf_8.py
# vm-add: /usr/lib/python3.11/lib-dynload:/usr/lib/python3.11/lib-dynload
# Nothing lost with the defaults (issue 50): the module loaded with no parameter, `memmon
# record` with no option, `memmon report` with none, on a guest kept busy by a CPU-bound
# loop on each vCPU (single-threaded TCG: the two vCPUs and the reader share one host
# thread, so the reader runs late, as on a loaded server):
# - a python3.11 script (Debian's) building a dict in build_dict and a list of bytes in
#   build_list, holding both until it exits;
# - gc_hold (Debian's Go): main.holdBlocks 16 MiB, main.holdRecords 9 MiB.
# Each run reads 0 events lost, 0 faults dropped (the report's header says nothing of a
# loss), its first table leads with the program's own functions, and they hold the same
# bytes as a reference run of the same program in the same boot on rings grown to 16 MiB
# (8 MiB per CPU), within 5 % (for the script, at the mark it writes once both are held:
# at the peak, the dict's resizes make the runs differ by up to 7 %).
# vm-timeout: 1200
. /host/lib.sh
load
expect_eq "ring bytes with no parameter" "$(stat_of ring_bytes)" 1048576

cat > /tmp/app.py <<'PY'
import sys

MIB = 1 << 20


def build_dict():
    # 200 000 entries of int -> str: the table and the strings.
    table = {}
    for i in range(200000):
        table[i] = "value-%08d" % i
    return table


def build_list():
    # 24 MiB of bytes objects of 4 KiB.
    blocks = []
    for i in range(24 * MIB // 4096):
        blocks.append(bytes([i & 0xff]) * 4096)
    return blocks


table = build_dict()
blocks = build_list()
# The moment both are held, for the comparison with the reference run.
with open("/proc/memmon/marker", "w") as marker:
    marker.write("held\n")
sys.stdout.write("held %d %d\n" % (len(table), len(blocks)))
PY
# record NAME CMD...: `memmon record -o /tmp/NAME.cap -- CMD`, no option; its reports
record() {
    name=$1
    shift
    memmon record -o "/tmp/$name.cap" -- "$@" > "/tmp/$name.out" 2> "/tmp/$name.err" ||
        { cat "/tmp/$name.err"; fail "memmon record -- $*"; }
    report_capture "$name"
    # At the mark, where the script wrote one: the same moment of both runs.
    if grep -q ' mark text=held' "/tmp/$name.cap"; then
        memmon report --at held --format json "/tmp/$name.cap" > "/tmp/$name.json" ||
            fail "json report of $name at the mark"
    fi
}

# same NAME REF FUNCTION MIN_MIB: FUNCTION is a row of NAME's first table, with at least
# MIN_MIB MiB, and within 5 % of its bytes in the reference run REF
same() {
    grep -qF "  $3 (" "/tmp/$1.first" || fail "$1: no row $3 in the first table"
    got=$(row_bytes "/tmp/$1.json" "$3")
    want=$(row_bytes "/tmp/$2.json" "$3")
    [ -n "$got" ] && [ -n "$want" ] || fail "$1: no $3 in the JSON reports ($got, $want)"
    echo "$1: $3 holds $got bytes, $want in the reference run"
    [ "$want" -ge $(($4 << 20)) ] || fail "$2: $3 holds only $want bytes"
    [ $((got * 100)) -ge $((want * 95)) ] && [ $((got * 100)) -le $((want * 105)) ] ||
        fail "$1: $3 holds $got bytes, not within 5 % of the reference's $want"
}

# The busy machine: one CPU-bound loop per vCPU, for the whole scenario.
for cpu in 1 2; do (while :; do :; done) & done

record py python3.11 /tmp/app.py
record go /progs/runtimes/gc_hold
whole py
whole go
expect_eq "stats: dropped faults" "$(stat_of dropped_faults)" 0
expect_eq "stats: stacks shed" "$(stat_of shed_stacks)" 0
expect_eq "stats: events lost" "$(stat_of lost_reported)" 0

# The references, on rings of 8 MiB per CPU.
echo 16777216 > /proc/memmon/buflen || fail "the grow to 16 MiB"
record py-ref python3.11 /tmp/app.py
record go-ref /progs/runtimes/gc_hold
same py py-ref build_dict 8
same py py-ref build_list 20
same go go-ref main.holdBlocks 14
same go go-ref main.holdRecords 8
# The program's own functions first.
head -n 2 /tmp/py.first | grep -qE ' (build_dict|build_list) \(' || fail "py: the first rows are not the script's functions"
kill %1 %2 2>/dev/null
unload
