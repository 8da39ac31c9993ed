# Access sampling (sample_ms): a program maps 4096 pages, then for 5 generations (it waits for
# each through the "generations" counter of /proc/memmon/stats) hot_loop() writes the same 256
# pages and, in generation 3, scan_once() reads 1024 others once. Each generation reports
# exactly the touched pages as "fault type=access ... gen=G", each once, with the function
# that touched it at the top of its stack, after a "gen n=G armed=N" line; untouched pages
# give nothing; fault lines still equal rusage. The same program unwatched beside it takes no
# fault at all. sample_ms=0 (the default): no gen line, no access fault. rmmod while a
# program is being sampled every 10 ms: it runs on and finishes with correct data. Values out
# of range are refused (EINVAL and a dmesg line), at load and at run time, and so is any
# non-zero value while NUMA balancing is on (EBUSY).
. /host/lib.sh
P=/sys/module/memmon/parameters/sample_ms
NPAGES=4096

kmsg_mark
if insmod /memmon/memmon.ko sample_ms=5 2>/dev/null; then fail "sample_ms=5 was accepted"; fi
expect_match "dmesg says why" "$(kmsg_new)" \
    'memmon: sample_ms=5 is not valid: it must be 0 \(off\) or 10 to 60000 milliseconds'

# --- sample_ms=0 (default): nothing is armed ----------------------------------------------
load buflen=4194304
expect_eq "sample_ms default" "$(cat $P)" 0
expect_eq "sample_ms mode" "$(stat -c %a $P)" 644
run_measured /tmp/out0 /tmp/ev0 -- /progs/access loop 3
pid=$(pid_of_run /tmp/ev0)
expect_eq "ok (sample_ms=0)" "$(value_of ok "$(cat /tmp/out0)")" 1
expect_eq "gen lines (sample_ms=0)" "$(grep -c ' gen n=' /tmp/ev0)" 0
expect_eq "access faults (sample_ms=0)" "$(grep -c ' fault type=access ' /tmp/ev0)" 0
expect_eq "generations (sample_ms=0)" "$(stat_of generations)" 0
crosscheck "$(window /tmp/ev0 "$pid")" /tmp/out0
expect_eq "faults of loop 3 over resident pages (sample_ms=0)" "$(value_of faults "$(cat /tmp/out0)")" 0
kmsg_mark
if echo 70000 > $P 2>/dev/null; then fail "sample_ms=70000 was accepted at run time"; fi
expect_match "dmesg says why (run time)" "$(kmsg_new)" 'memmon: sample_ms=70000 is not valid'
if echo 1 > /proc/sys/kernel/numa_balancing 2>/dev/null; then
    kmsg_mark
    if echo 100 > $P 2>/dev/null; then fail "sample_ms=100 was accepted with NUMA balancing on"; fi
    expect_match "dmesg says why (NUMA balancing)" "$(kmsg_new)" \
        'memmon: sample_ms=100: access sampling is refused while automatic NUMA balancing is on'
    echo 0 > /proc/sys/kernel/numa_balancing || fail "cannot turn NUMA balancing off again"
else
    fail "kernel.numa_balancing cannot be turned on (the patched kernel has CONFIG_NUMA_BALANCING)"
fi
expect_eq "sample_ms after refused writes" "$(cat $P)" 0
unload

# --- 5 generations ------------------------------------------------------------------------
load buflen=4194304 stack_depth=16 sample_ms=500
expect_eq "sample_ms" "$(cat $P)" 500
# The same program, not watched, beside the watched one: it syncs on the same generations.
/progs/access gens 5 > /tmp/unwatched.out &
unwatched=$!
run_measured /tmp/out /tmp/ev -- /progs/access gens 5
wait $unwatched || fail "the unwatched program failed: $(cat /tmp/unwatched.out)"
out=$(cat /tmp/out)
expect_eq "ok" "$(value_of ok "$out")" 1
expect_eq "straddled (touches of a generation all within it)" "$(value_of straddled "$out")" 0
expect_eq "unwatched: ok" "$(value_of ok "$(cat /tmp/unwatched.out)")" 1
expect_eq "unwatched: straddled" "$(value_of straddled "$(cat /tmp/unwatched.out)")" 0
expect_eq "unwatched: its own faults over the 5 generations (no PROT_NONE entry)" \
    "$(value_of faults "$(cat /tmp/unwatched.out)")" 0
pid=$(pid_of_run /tmp/ev)
w=$(window /tmp/ev "$pid")
crosscheck "$w" /tmp/out
base=$(($(value_of base "$out")))
range() { value_of "$1" "$out"; }
# access_pages G BAD: the pages (index in the buffer) of the access faults of generation G, one a
# line; in file BAD, those whose stack does not start in the function that touches them
# (hot_loop for pages below 256, scan_once for the others). busybox awk reads 0x... strings
# as hex numbers.
access_pages() {
    printf '%s\n' "$w" | grep -E " fault type=access .* gen=$1( |$)" |
        awk -v base="$base" -v np=$NPAGES -v hot="$(range hot_loop)" -v scan="$(range scan_once)" -v bad="$2" '
            function inside(x, r,   b) { split(r, b, "-"); return x + 0 >= b[1] + 0 && x + 0 < b[2] + 0 }
            { addr = ""; top = ""
              for (i = 4; i <= NF; i++) {
                  if (index($i, "addr=") == 1) addr = substr($i, 6)
                  if (index($i, "stack=") == 1) { top = substr($i, 7); sub(/,.*/, "", top) }
              }
              off = addr - base; page = int(off / 4096)
              if (off < 0 || page >= np) next
              print page
              if (top == "" || !inside(top, page < 256 ? hot : scan)) print page, top > bad }'
}
total=0
i=1
while [ $i -le 5 ]; do
    g=$(value_of gen$i "$out")
    [ "$g" -gt 0 ] || fail "generation $i: no generation number ($g)"
    gen_line=$(grep " $pid/$pid gen n=$g " /tmp/ev)
    expect_match "generation $i (gen $g): its gen line" "$gen_line" "gen n=$g armed=[0-9]+$"
    armed=$(echo "$gen_line" | field armed)
    # hot_loop's pages were restored in the generation before (and scan_once's before the
    # 4th), so they are armed again; the first one may find everything armed already.
    case $i in 1) want_armed=0 ;; 4) want_armed=1280 ;; *) want_armed=256 ;; esac
    [ "$armed" -ge $want_armed ] || fail "generation $i: armed=$armed, want at least $want_armed"
    # the gen line comes before the generation's accesses
    first_access=$(grep -nE " $pid/[0-9]+ fault type=access .* gen=$g( |$)" /tmp/ev | head -n 1 | cut -d: -f1)
    gen_at=$(grep -n " $pid/$pid gen n=$g " /tmp/ev | cut -d: -f1)
    [ "$gen_at" -lt "$first_access" ] || fail "generation $i: gen line at $gen_at after its first access at $first_access"
    : > /tmp/bad.$i
    access_pages "$g" /tmp/bad.$i | sort -n > /tmp/pages.$i
    { seq 0 255; [ $i -eq 3 ] && seq 1024 2047; } > /tmp/want.$i
    cmp -s /tmp/pages.$i /tmp/want.$i ||
        { diff /tmp/want.$i /tmp/pages.$i | head; fail "generation $i: the pages reported are not the pages touched"; }
    n=$(wc -l < /tmp/pages.$i)
    echo "ok: generation $i (gen=$g, armed=$armed): $n pages reported, exactly those touched, each once"
    [ -s /tmp/bad.$i ] && fail "generation $i: stacks not in hot_loop ($(range hot_loop)) / scan_once ($(range scan_once)): $(head -n 3 /tmp/bad.$i)"
    echo "ok: generation $i: each access has its function (hot_loop / scan_once) at the top of its stack"
    total=$((total + n))
    i=$((i + 1))
done
expect_eq "access faults in the buffer over the window (untouched pages: none)" \
    "$(printf '%s\n' "$w" | grep ' fault type=access ' | field addr |
        awk -v base="$base" -v np=$NPAGES '{ off = $1 - base } off >= 0 && off < np * 4096' | wc -l)" \
    $((5 * 256 + 1024))
expect_eq "pages counted over the 5 generations" "$total" $((5 * 256 + 1024))
expect_match "access faults carry R or W" \
    "$(printf '%s\n' "$w" | grep ' fault type=access ' | head -n 1)" 'access=[RWX] addr=0x[0-9a-f]+ ip=0x[0-9a-f]+ .*gen=[0-9]+ stack='
expect_eq "lines of the unwatched program" "$(grep -c " $unwatched/" /tmp/ev)" 0
echo 0 > $P || fail "writing sample_ms=0"
unload

# --- rmmod while sampling every 10 ms -----------------------------------------------------
rm -f /tmp/stop
load buflen=1048576 sample_ms=10
/progs/watchexec /progs/access until /tmp/stop > /tmp/out2 &
prog=$!
gens_at_least() { [ "$(stat_of generations)" -ge "$1" ]; }
wait_until "3 generations" gens_at_least 3
kill -0 $prog 2>/dev/null || fail "the program ended before rmmod"
unload
echo "ok: rmmod while sampling"
sleep 0.5
kill -0 $prog 2>/dev/null || fail "the program ended by itself after rmmod"
touch /tmp/stop
wait $prog || fail "the program failed after rmmod: $(cat /tmp/out2)"
expect_eq "ok after rmmod (contents verified)" "$(value_of ok "$(cat /tmp/out2)")" 1
echo "loops: $(value_of loops "$(cat /tmp/out2)")"
