# vm-add: /lib/x86_64-linux-gnu/libbfd-2.40-system.so:/lib/x86_64-linux-gnu/libbfd-2.40-system.so
# vm-add: /lib/x86_64-linux-gnu/libc.so.6:/lib/x86_64-linux-gnu/libc.so.6
# vm-add: /lib/x86_64-linux-gnu/libdl.so.2:/lib/x86_64-linux-gnu/libdl.so.2
# vm-add: /lib/x86_64-linux-gnu/libexpat.so.1:/lib/x86_64-linux-gnu/libexpat.so.1
# vm-add: /lib/x86_64-linux-gnu/libgcc_s.so.1:/lib/x86_64-linux-gnu/libgcc_s.so.1
# vm-add: /lib/x86_64-linux-gnu/libgmp.so.10:/lib/x86_64-linux-gnu/libgmp.so.10
# vm-add: /lib/x86_64-linux-gnu/libisl.so.23:/lib/x86_64-linux-gnu/libisl.so.23
# vm-add: /lib/x86_64-linux-gnu/libm.so.6:/lib/x86_64-linux-gnu/libm.so.6
# vm-add: /lib/x86_64-linux-gnu/libmpc.so.3:/lib/x86_64-linux-gnu/libmpc.so.3
# vm-add: /lib/x86_64-linux-gnu/libmpfr.so.6:/lib/x86_64-linux-gnu/libmpfr.so.6
# vm-add: /lib/x86_64-linux-gnu/libpthread.so.0:/lib/x86_64-linux-gnu/libpthread.so.0
# vm-add: /lib/x86_64-linux-gnu/libsframe.so.0:/lib/x86_64-linux-gnu/libsframe.so.0
# vm-add: /lib/x86_64-linux-gnu/libstdc++.so.6:/lib/x86_64-linux-gnu/libstdc++.so.6
# vm-add: /lib/x86_64-linux-gnu/libz.so.1:/lib/x86_64-linux-gnu/libz.so.1
# vm-add: /lib/x86_64-linux-gnu/libzstd.so.1:/lib/x86_64-linux-gnu/libzstd.so.1
# vm-add: /lib64/ld-linux-x86-64.so.2:/lib64/ld-linux-x86-64.so.2
# vm-add: /usr/bin/as:/usr/bin/as
# vm-add: /usr/bin/g++:/usr/bin/g++
# vm-add: /usr/bin/node:/usr/bin/node
# vm-add: /usr/bin/python3.11:/usr/bin/python3.11
# vm-add: /usr/lib/gcc/x86_64-linux-gnu/12/cc1plus:/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus
# vm-add: /usr/lib/python3.11/_weakrefset.py:/usr/lib/python3.11/_weakrefset.py
# vm-add: /usr/lib/python3.11/collections/__init__.py:/usr/lib/python3.11/collections/__init__.py
# vm-add: /usr/lib/python3.11/encodings/__init__.py:/usr/lib/python3.11/encodings/__init__.py
# vm-add: /usr/lib/python3.11/encodings/aliases.py:/usr/lib/python3.11/encodings/aliases.py
# vm-add: /usr/lib/python3.11/encodings/utf_8.py:/usr/lib/python3.11/encodings/utf_8.py
# vm-add: /usr/lib/python3.11/functools.py:/usr/lib/python3.11/functools.py
# vm-add: /usr/lib/python3.11/keyword.py:/usr/lib/python3.11/keyword.py
# vm-add: /usr/lib/python3.11/lib-dynload:/usr/lib/python3.11/lib-dynload
# vm-add: /usr/lib/python3.11/operator.py:/usr/lib/python3.11/operator.py
# vm-add: /usr/lib/python3.11/os.py:/usr/lib/python3.11/os.py
# vm-add: /usr/lib/python3.11/reprlib.py:/usr/lib/python3.11/reprlib.py
# vm-add: /usr/lib/python3.11/threading.py:/usr/lib/python3.11/threading.py
# vm-add: /usr/lib/python3.11/types.py:/usr/lib/python3.11/types.py
# The default stack depth chosen from real programs (issue 50 item 7): the bytes that fault
# lines brought in whose stack ends at the depth limit (stack_end=depth), of all the fault
# bytes of the program (pages= or 1 page each), with the module loaded with no parameter
# and `memmon record` at --stacks 64 (the default before) and with no option (127), for
# Debian's g++ 12 compiling tests/runtimes/stl_unit.cc (-O2 -c; its cc1plus child), a
# python3.11 script (tests/vm/59-defaults-busy.sh's: a dict and a list of bytes) and the
# host's Node.js on tests/runtimes/hold.js (--jit-maps). At the default, at most 2 % of each
# program's bytes (of cc1plus's for g++). Figures in docs/performance.md.
# vm-timeout: 2700
. /host/lib.sh
load
export PATH=/usr/bin:$PATH
# cut NAME: per pid and in all, the fault bytes of /tmp/NAME.cap and those whose stack ends
# at the depth limit ("NAME pid PID ... PCT %", "NAME ALL ... PCT % longest-stack N"), and
# the share of the pid with the most bytes in hundredths of a percent in /tmp/NAME.cut
cut() {
    awk -v name="$1" '$3 == "fault" {
        split($2, ids, "/"); p = 1; e = "complete"; n = 0
        for (i = 4; i <= NF; i++) { if ($i ~ /^pages=/) { v = $i; sub("pages=", "", v); p = v }
            if ($i ~ /^stack_end=/) { e = $i; sub("stack_end=", "", e) }
            if ($i ~ /^stack=/) { v = $i; sub("stack=", "", v); n = split(v, f, ",") } }
        b = p * 4096; t[ids[1]] += b; T += b; if (n > L) L = n
        if (e == "depth") { d[ids[1]] += b; D += b; nd[ids[1]]++ } nf[ids[1]]++ }
     END { for (k in t) { printf "%s pid %s faults %d cut %d bytes %d cut %d %.2f %%\n", name, k, nf[k], nd[k], t[k], d[k], 100 * d[k] / t[k]
               if (t[k] > top) { top = t[k]; share = int(10000 * d[k] / t[k]) } }
           printf "%s ALL bytes %d cut %d %.2f %% longest-stack %d\n", name, T, D, 100 * D / T, L
           print share > "/tmp/" name ".cut" }' "/tmp/$1.cap"
}
# rec NAME [record options] -- CMD...: memmon record -o /tmp/NAME.cap; its cut figures
rec() {
    name=$1
    shift
    memmon record -o "/tmp/$name.cap" "$@" > "/tmp/$name.out" 2> "/tmp/$name.err" ||
        { cat "/tmp/$name.err"; fail "memmon record $name"; }
    grep '^memmon: incomplete' "/tmp/$name.err"
    cut "$name"
}
# at_most NAME: at most 2 % of the bytes of NAME's largest process cut short
at_most() {
    [ "$(cat "/tmp/$1.cut")" -le 200 ] || fail "$1: $(cat "/tmp/$1.cut") hundredths of a percent of the bytes cut at the depth limit"
}
cat > /tmp/app.py <<'PY'
import sys
MIB = 1 << 20
def build_dict():
    table = {}
    for i in range(200000):
        table[i] = "value-%08d" % i
    return table
def build_list():
    blocks = []
    for i in range(24 * MIB // 4096):
        blocks.append(bytes([i & 0xff]) * 4096)
    return blocks
table = build_dict()
blocks = build_list()
sys.stdout.write("held %d %d\n" % (len(table), len(blocks)))
PY
rec gxx64 --stacks 64 -- g++ -O2 -c /progs/runtimes/stl_unit.ii -o /tmp/g.o
rec gxx -- g++ -O2 -c /progs/runtimes/stl_unit.ii -o /tmp/g.o
rec py64 --stacks 64 -- python3.11 /tmp/app.py
rec py -- python3.11 /tmp/app.py
rec node64 --stacks 64 --jit-maps -- node /progs/runtimes/hold.js
rec node --jit-maps -- node /progs/runtimes/hold.js
expect_eq "stack_depth restored" "$(cat /sys/module/memmon/parameters/stack_depth)" 0
at_most gxx
at_most py
at_most node
echo "stats: lost $(stat_of lost_reported), stacks shed $(stat_of shed_stacks), faults dropped $(stat_of dropped_faults)"
unload
