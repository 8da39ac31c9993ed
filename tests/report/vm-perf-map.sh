# VM scenario (run by tests/report/run-vm-perf-map.sh): `memmon record` of a tiny JIT
# (userspace/memmon-cli/tests/fixtures/jit.c, static: it copies a store loop into an
# anonymous executable page, writes /tmp/perf-PID.map naming it jit_touch and runs it over
# a fresh 64 KiB mapping); the capture must hold its perf map and the report must name
# the 16 faults' site jit_touch. Sourced into the guest's busybox sh.
set -u
fail() { echo "FAIL: $*"; exit 1; }
insmod /memmon/memmon.ko buflen=4194304 || fail "insmod"
echo never > /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
cd /tmp
memmon record --quiet -o /tmp/cap -- /host/jit > /tmp/jit.out 2>/tmp/record.err || fail "record: $(cat /tmp/record.err)"
cat /tmp/jit.out
code=$(awk '{ print $2 }' /tmp/jit.out | sed 's/^0x//')
grep -q "^#| $code 14 jit_touch\$" /tmp/cap || fail "no perf map line '$code 14 jit_touch' in the capture: $(grep -A2 'perf-map' /tmp/cap)"
grep '^# snapshot perf-map ' /tmp/cap
memmon report --top 10 /tmp/cap > /tmp/report || fail "report"
cat /tmp/report
# The generated code's site: its 64 KiB (the stack walk ends there: no unwind table for
# generated code, no frame pointer pushed by it).
row=$(awk '/^Top sites by resident bytes/ { on = 1; getline; next } on && NF == 0 { exit } on && / jit_touch( |$)/' /tmp/report)
echo "$row" | grep -Eq '^ +64 KiB +64 KiB +0 B +accumulating +jit_touch$' || fail "jit_touch row: '$row'"
faults=$(awk '/^Top sites by faults/ { on = 1; getline; next } on && NF == 0 { exit } on && / jit_touch( |$)/ { print $1 }' /tmp/report)
[ "$faults" = 16 ] || fail "jit_touch faults: '$faults', want 16"
echo "ok: perf map recorded, site jit_touch 64 KiB, 16 faults"
