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
# Python functions in the stacks (issue 43): `memmon record -- python3.11 SCRIPT` with no
# option, on Debian bookworm's python3.11 (the host's, and its standard library's few
# modules the script imports), then `memmon report` at a mark taken while the script holds
# what it allocated. The script (written here) allocates in named functions: load_a 24 MiB
# of bytes in a list, load_b a 12 MiB str, Record.__init__ 8 MiB in class instances (which
# build_records makes: the innermost own function has the bytes), recurse
# 4 MiB 21 frames deep, worker_x 10 MiB and worker_y 6 MiB in two threads, inflate_z
# 12 MiB that zlib's inflate writes with the GIL released while another thread (spin) runs
# Python code holding it (the thread is found in the interpreter's thread list by its native
# id: with the GIL holder's thread state it had no Python frames), and tmp_c a
# 16 MiB temporary dropped before the mark. The report's first table ("Your code") must name
# each function with its bytes within 10 %, tmp_c must be reported as temporary, and the
# script's functions must hold at least 90 % of what the process brought in since the
# script started (the mark "started"). Then a description with wrong offsets: stacks keep
# their native part and end their Python part with a reason, no kernel report.
#
# Multi-threaded TCG, as vm-47 (record arms the syscall probes while threads run).
# vm-timeout: 900
. /host/lib.sh
load

cat > /tmp/app.py <<'EOF'
import os
import threading
import time
import zlib

MIB = 1 << 20
ZLIB_BYTES = 12 * MIB
held = []
# Compressed before the script says it started: 12 MiB of one byte, a few KiB packed.
PACKED = zlib.compress(b"z" * ZLIB_BYTES)


def wait_for(path):
    while not os.path.exists(path):
        time.sleep(0.02)


class Record:
    def __init__(self, size):
        self.payload = b"r" * size


def load_a():
    out = []
    for _ in range(24):
        out.append(b"a" * MIB)
    return out


def load_b():
    return "b" * (12 * MIB)


def build_records(count):
    out = []
    for _ in range(count):
        out.append(Record(256 * 1024))
    return out


def tmp_c():
    temporary = b"c" * (16 * MIB)
    return len(temporary)


def recurse(depth):
    if depth == 0:
        return b"d" * (4 * MIB)
    return recurse(depth - 1)


def worker_x():
    held.append(b"x" * (10 * MIB))


def worker_y():
    held.append(b"y" * (6 * MIB))


inflated = threading.Event()


def inflate_z():
    # zlib writes the 12 MiB into the bytes object with the GIL released (one block of
    # exactly the size: no copy after).
    held.append(zlib.decompress(PACKED, bufsize=ZLIB_BYTES))
    inflated.set()


def spin():
    # Python code holding the GIL while inflate_z's thread runs C code without it.
    n = 0
    while not inflated.is_set():
        n += 1
    return n


def main():
    with open("/tmp/py-started", "w") as started:
        started.write(str(os.getpid()))
    wait_for("/tmp/py-go")
    held.append(load_a())
    held.append(load_b())
    held.append(build_records(32))
    tmp_c()
    held.append(recurse(20))
    threads = [threading.Thread(target=worker_x), threading.Thread(target=worker_y)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    spinner = threading.Thread(target=spin)
    spinner.start()
    inflater = threading.Thread(target=inflate_z)
    inflater.start()
    inflater.join()
    spinner.join()
    open("/tmp/py-held", "w").close()
    wait_for("/tmp/py-done")
    # Without the interpreter's finalization, which frees what is held: only tmp_c's
    # memory is released by the program.
    os._exit(0)


main()
EOF

# first_table FILE: the rows of the report's "Your code" table (after its header line)
first_table() {
    awk '/^Your code:/ { on = 1; getline; next } on && /^$/ { exit } on' "$1"
}

# row_bytes JSON FUNCTION: the resident bytes of FUNCTION's row of "Your code", exact
row_bytes() {
    awk -v want="\"function\": \"$2\"," '
        /"your_code":/ { code = 1 }
        code && index($0, want) { found = 1; next }
        found && /"resident":/ { gsub(/[^0-9]/, ""); print; exit }' "$1"
}

# wait_file PATH: waits up to 300 s for PATH
wait_file() {
    i=0
    while [ ! -e "$1" ]; do
        i=$((i + 1))
        [ $i -lt 6000 ] || fail "no $1 after 300 s"
        sleep 0.05
    done
}

# le VALUE BYTES: VALUE as BYTES little-endian bytes
le() {
    v=$(($1))
    n=$2
    out=""
    while [ "$n" -gt 0 ]; do
        out="$out\\$(printf '%03o' $((v & 255)))"
        v=$((v >> 8))
        n=$((n - 1))
    done
    printf "$out"
}

# run_script CAPTURE [wrong]: records the script, with marks "started" and "held"; with
# "wrong", gives the module a description of its interpreter with a wrong offset once it
# started (in place of memmon record's)
run_script() {
    rm -f /tmp/py-started /tmp/py-go /tmp/py-held /tmp/py-done
    memmon record -o "$1" -- python3.11 /tmp/app.py > "$1.out" 2> "$1.err" &
    rec=$!
    wait_file /tmp/py-started
    if [ "${2:-}" = wrong ]; then
        sleep 1
        pid=$(cat /tmp/py-started)
        # Debian's python3.11 3.11.2-6+deb12u6 (not PIE): _PyRuntime at 0xa5b740 (its
        # gilstate.tstate_current at +576), PyCode_Type at 0x959440 (nm -D); the frame's
        # "previous" offset given as 32 (f_code) instead of 48: the walk goes from the first
        # frame into its code object, read as a frame.
        {
            printf MMUW; le 1 2; le 4 2; le 64 4; le 0 4
            le "$pid" 4; le 0x030b 2; le 1 2; le 0xa5b980 8; le 0x959440 8
            le 152 2; le 56 2; le 8 2; le 32 2; le 32 2; le 56 2; le 69 2; le 68 2; le 184 2
            le 255 1; le 0 1; le 72 2; le 0 2
        } > /tmp/wrong.desc
        cat /tmp/wrong.desc > /proc/memmon/unwind || fail "the wrong description was refused"
    fi
    memmon mark started
    touch /tmp/py-go
    wait_file /tmp/py-held
    memmon mark held
    touch /tmp/py-done
    wait $rec || { cat "$1.err"; fail "memmon record -- python3.11 /tmp/app.py"; }
    cat "$1.err"
}

run_script /tmp/py.cap
grep -q "perf map" /tmp/py.cap.err && fail "record asks for a perf map for python3.11"
grep -c "pystack=" /tmp/py.cap | sed 's/^/lines with Python frames: /'
grep -m1 "^# python " /tmp/py.cap || fail "no # python header in the capture"
grep -c "^# pycode " /tmp/py.cap | sed 's/^/code objects named: /'
memmon report --at held /tmp/py.cap > /tmp/py.txt 2> /tmp/py.report-err ||
    { cat /tmp/py.report-err; fail "memmon report"; }
memmon report --at held --format json /tmp/py.cap > /tmp/py.json || fail "json report"
echo "== the report's first lines"
sed -n '1,/^RSS tree/p' /tmp/py.txt
first_table /tmp/py.txt > /tmp/py.first

total=0
# holds FUNCTION MIB: FUNCTION is a row of the first table, its bytes within 10 % of MIB
holds() {
    grep -qF "  $1 (" /tmp/py.first || fail "no row $1 in the first table"
    bytes=$(row_bytes /tmp/py.json "$1")
    [ -n "$bytes" ] || fail "no $1 in the JSON report's your_code"
    want=$(($2 << 20))
    echo "$1 holds $bytes bytes (wants $want within 10 %)"
    [ "$bytes" -ge $((want - want / 10)) ] && [ "$bytes" -le $((want + want / 10)) ] ||
        fail "$1 has $bytes bytes, not within 10 % of $2 MiB"
    total=$((total + bytes))
}
holds load_a 24
holds load_b 12
holds Record.__init__ 8
holds recurse 4
holds worker_x 10
holds worker_y 6
holds inflate_z 12

# The threads' stacks start in Debian's stripped libc (start_thread and clone3 have no
# names there): they end at a thread's start, not short of it. worker_x, worker_y and
# inflate_z hold 28 MiB.
threads=$(grep -o '"thread_start": *[0-9]*' /tmp/py.json | head -1 | tr -dc 0-9)
echo "resident bytes whose stacks end at a thread's start: $threads"
[ "${threads:-0}" -ge $((25 << 20)) ] ||
    fail "the threads' ${threads:-0} bytes do not end at a thread's start (wants 28 MiB)"

# What the process brought in after the script started: its resident bytes at "held" minus
# those at "started".
resident_at() {
    memmon report --at "$1" --format json /tmp/py.cap |
        awk '/"moment_resident":/ { gsub(/[^0-9]/, ""); print; exit }'
}
started=$(resident_at started)
held_now=$(resident_at held)
grown=$((held_now - started))
echo "resident: $started at started, $held_now at held: $grown brought in; the script's functions hold $total"
[ "$grown" -gt 0 ] || fail "no growth between the marks"
[ $((total * 100)) -ge $((grown * 90)) ] ||
    fail "the script's functions hold $total of $grown bytes brought in: under 90 %"

# tmp_c's 16 MiB came and went: its site is the first of the sites by released bytes, all
# of it released, and temporary.
awk '/^Top sites by released bytes/ { on = 1; getline; getline; print; exit }' /tmp/py.txt > /tmp/py.released
cat /tmp/py.released
grep -q "tmp_c" /tmp/py.released || fail "tmp_c is not the first site by released bytes"
grep -qE "^ *1[56](\.[0-9])? MiB .* temporary " /tmp/py.released ||
    fail "tmp_c's site did not release 16 MiB, or is not temporary"
echo "ok: tmp_c is reported as temporary"

# A description with a wrong offset: the Python frames end with a reason, the native stacks
# stay whole (the check fails on any kernel report).
run_script /tmp/wrong.cap wrong
invalid=$(grep -c "pystack_end=invalid" /tmp/wrong.cap)
echo "lines whose Python frames end invalid: $invalid"
[ "$invalid" -gt 100 ] || fail "the wrong description gave $invalid lines ending invalid"
grep "pystack_end=invalid" /tmp/wrong.cap | grep -vc " stack=0x" | sed 's/^/of which without a native stack: /'
[ "$(grep "pystack_end=invalid" /tmp/wrong.cap | grep -vc ' stack=0x')" = 0 ] ||
    fail "a line ending invalid lost its native stack"
memmon report --at held /tmp/wrong.cap > /tmp/wrong.txt || fail "report of the wrong capture"
sed -n '1,/^RSS tree/p' /tmp/wrong.txt | head -30
echo "PASS"
