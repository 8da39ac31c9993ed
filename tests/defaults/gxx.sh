# vm-add: /usr/bin/g++:/usr/bin/g++
# vm-add: /usr/bin/as:/usr/bin/as
# vm-add: /usr/lib/gcc/x86_64-linux-gnu/12/cc1plus:/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus
# vm-add: /lib64/ld-linux-x86-64.so.2:/lib64/ld-linux-x86-64.so.2
# vm-add: /lib/x86_64-linux-gnu/libc.so.6:/lib/x86_64-linux-gnu/libc.so.6
# vm-add: /lib/x86_64-linux-gnu/libm.so.6:/lib/x86_64-linux-gnu/libm.so.6
# vm-add: /lib/x86_64-linux-gnu/libisl.so.23:/lib/x86_64-linux-gnu/libisl.so.23
# vm-add: /lib/x86_64-linux-gnu/libmpc.so.3:/lib/x86_64-linux-gnu/libmpc.so.3
# vm-add: /lib/x86_64-linux-gnu/libmpfr.so.6:/lib/x86_64-linux-gnu/libmpfr.so.6
# vm-add: /lib/x86_64-linux-gnu/libgmp.so.10:/lib/x86_64-linux-gnu/libgmp.so.10
# vm-add: /lib/x86_64-linux-gnu/libz.so.1:/lib/x86_64-linux-gnu/libz.so.1
# vm-add: /lib/x86_64-linux-gnu/libzstd.so.1:/lib/x86_64-linux-gnu/libzstd.so.1
# vm-add: /lib/x86_64-linux-gnu/libbfd-2.40-system.so:/lib/x86_64-linux-gnu/libbfd-2.40-system.so
# vm-add: /lib/x86_64-linux-gnu/libsframe.so.0:/lib/x86_64-linux-gnu/libsframe.so.0
# Nothing lost with the defaults (issue 50), on the program that lost most: `memmon record --
# g++ -O2 -c` of an STL-heavy unit (tests/runtimes/stl_unit.cc, preprocessed on the host),
# Debian's g++ 12, whose work is in its cc1plus child, with the module loaded with no
# parameter and no option to record or report, on a guest kept busy by a CPU-bound loop per
# vCPU (multi-threaded TCG: each vCPU's loop on a host thread of its own; a boot that died
# of the TCG text-poke race, scripts/tcg-race-signature, is run again, at most twice). record follows
# the children by default: the capture has the driver, cc1plus and as; nothing is lost; the report names cc1plus's functions (Debian's
# cc1plus exports its symbols), and its largest functions hold the same bytes as in a
# reference run on rings grown to 16 MiB in the same boot, within 5 %.
# vm-timeout: 2700
. /host/lib.sh
load
export PATH=/usr/bin:$PATH

# record NAME: `memmon record -o /tmp/NAME.cap -- g++ -O2 -c ...`, no option; its reports
record() {
    memmon record -o "/tmp/$1.cap" -- g++ -O2 -c /progs/runtimes/stl_unit.ii -o "/tmp/$1.o" \
        > "/tmp/$1.out" 2> "/tmp/$1.err" || { cat "/tmp/$1.err"; fail "memmon record -- g++"; }
    [ -s "/tmp/$1.o" ] || fail "$1: g++ wrote no object"
    report_capture "$1"
}

for cpu in 1 2; do (while :; do :; done) & done

record gxx
whole gxx
# The children were followed: cc1plus and as ran watched.
for prog in cc1plus as; do
    grep -qE " exec comm=$prog " /tmp/gxx.cap || fail "no exec of $prog in the capture"
done
# The reference on an idle guest (under the loops one compile took about 7 minutes).
kill %1 %2 2>/dev/null
echo 16777216 > /proc/memmon/buflen || fail "the grow to 16 MiB"
record gxx-ref
# cc1plus's own functions are named, and the two largest hold what they hold in the
# reference run, within 5 %.
grep -q ' (cc1plus)\| ggc_' /tmp/gxx.first || grep -q 'ggc_' /tmp/gxx.first ||
    fail "the first table names no function of cc1plus"
# (a row: resident and inclusive, each a number and a unit, then the function)
compared=0
for function in $(awk '{ print $5 }' /tmp/gxx-ref.first | grep -E '^[A-Za-z_][A-Za-z0-9_:]*$' | head -n 2); do
    got=$(row_bytes /tmp/gxx.json "$function")
    want=$(row_bytes /tmp/gxx-ref.json "$function")
    [ -n "$got" ] && [ -n "$want" ] || fail "no $function in both JSON reports ($got, $want)"
    echo "$function: $got bytes, $want in the reference run"
    [ $((got * 100)) -ge $((want * 95)) ] && [ $((got * 100)) -le $((want * 105)) ] ||
        fail "$function holds $got bytes, not within 5 % of the reference's $want"
    compared=$((compared + 1))
done
expect_eq "functions of cc1plus compared with the reference" "$compared" 2
unload
