# The code that touches the pages a process held before memmon started (issue 51): a
# program (tests/progs/access.c, "gens 5") maps 4096 anonymous pages and writes each, then
# `memmon record -p PID --sample 500` attaches (the module loaded with no parameter: record
# sets sample_ms and stack_depth itself, and puts sample_ms back at its end). The program
# waits two generations, then over 5 generations hot_loop() writes pages 0-255 of them and,
# in the third, scan_once() reads pages 1024-2047 once. `memmon report --access` names the
# code for the pages of the site "[resident before memmon started]": 1280 of them touched,
# hot_loop 256, scan_once 1024 (text and JSON), and no other code touched one. The report
# counts all 4096 as resident before memmon started. 500 ms (as 36-access-sampling): under
# TCG, on a busy host, the touches of a generation must stay within it.
# hot_loop's and scan_once's figures are exact; main's (its final check of every page) is
# 4096 less the pages hot_loop touched first in the generation of that check: 3840 when
# the check follows the last hot_loop in its generation, as it does unless one straddled.
. /host/lib.sh
wait_seconds=60
P=/sys/module/memmon/parameters/sample_ms
load
expect_eq "sample_ms at load" "$(cat $P)" 0
expect_eq "generations before record" "$(stat_of generations)" 0

/progs/access gens 5 > /tmp/access.out 2>&1 &
pid=$!
# base= is printed once the 4096 pages are written; the program then waits for generations,
# which only start when record sets sample_ms.
wait_until "the program's pages" grep -q '^base=' /tmp/access.out
cat /tmp/access.out
memmon record -o /tmp/access.cap -p $pid --sample 500 > /tmp/record.out 2> /tmp/record.err &
rec=$!
wait $pid || fail "the program failed: $(cat /tmp/access.out)"
wait $rec || fail "memmon record: exit $? ($(cat /tmp/record.err))"
cat /tmp/record.err
out=$(cat /tmp/access.out)
expect_eq "ok (contents verified)" "$(value_of ok "$out")" 1
echo "straddled (a generation ended during the touches of one): $(value_of straddled "$out")"
expect_eq "sample_ms after record (put back)" "$(cat $P)" 0
grep -q '^# snapshot pages ' /tmp/access.cap || fail "no pages snapshot in the capture"

memmon report --format json /tmp/access.cap > /tmp/report.json || fail "memmon report --format json"
before=$(awk '$1 == "\"before_start\":" { gsub(/[^0-9]/, "", $2); print $2; exit }' /tmp/report.json)
[ "$before" -ge $((4096 * 4096)) ] ||
    fail "resident before memmon started: $before bytes, not the 4096 pages at least"
echo "ok: resident before memmon started: $before bytes (the 4096 pages and the rest)"

# From the capture itself: the distinct pages of the 4096 that sampled accesses touched, by the
# function of the access's ip (hot_loop, scan_once, the rest: main's final check of every
# page); and all the distinct pages accesses touched that no other fault of the capture
# brought in (the pages held before). busybox awk reads 0x... strings as hex numbers.
out=$(cat /tmp/access.out)
grep -E "^[0-9.]+ $pid/[0-9]+ fault " /tmp/access.cap | awk -v base="$(value_of base "$out")" \
    -v hot="$(value_of hot_loop "$out")" -v scan="$(value_of scan_once "$out")" '
    function inside(x, r,   b) { split(r, b, "-"); return x + 0 >= b[1] + 0 && x + 0 < b[2] + 0 }
    { type = ""; addr = ""; ip = ""
      for (i = 4; i <= NF; i++) {
          if (index($i, "type=") == 1) type = substr($i, 6)
          if (index($i, "addr=") == 1) addr = substr($i, 6)
          if (index($i, "ip=") == 1) ip = substr($i, 4)
      }
      vpn = int((addr + 0) / 4096) }
    type != "access" { faulted[vpn] = 1; next }
    !(vpn in faulted) && !(vpn in seen) { seen[vpn] = 1; before++ }
    { page = int((addr - base) / 4096) }
    addr - base < 0 || page >= 4096 { next }
    { buf[page] = 1
      f = inside(ip, hot) ? "hot_loop" : inside(ip, scan) ? "scan_once" : "other"
      if (!((f, page) in by)) { by[f, page] = 1; n[f]++ } }
    END { c = 0; for (p in buf) c++
          print "buffer", c; print "hot_loop", n["hot_loop"] + 0; print "scan_once", n["scan_once"] + 0
          print "other", n["other"] + 0; print "before", before + 0 }' > /tmp/raw
cat /tmp/raw
raw() { awk -v k="$1" '$1 == k { print $2 }' /tmp/raw; }
expect_eq "capture: pages of the 4096 touched" "$(raw buffer)" 4096
expect_eq "capture: by hot_loop" "$(raw hot_loop)" 256
expect_eq "capture: by scan_once" "$(raw scan_once)" 1024
# main's check: every page not touched first by hot_loop in the check's generation
[ "$(raw other)" -ge 3840 ] && [ "$(raw other)" -le 4096 ] ||
    fail "capture: by main's final check: $(raw other) pages, not 3840 to 4096"
echo "ok: capture: by main's final check: $(raw other) pages"

memmon report --access --top 100 /tmp/access.cap > /tmp/access.txt 2>&1 ||
    { cat /tmp/access.txt; fail "memmon report --access"; }
cat /tmp/access.txt
section=$(sed -n '/^Pages resident before memmon started/,/^$/p' /tmp/access.txt)
expect_match "the section" "$(printf '%s\n' "$section" | head -n 1)" \
    "^Pages resident before memmon started: $(raw before) pages touched, by$"
# rows "PAGES  SITE (FILE:LINE)": PAGES of the site whose chain is $2 $3 $4 and whose source
# line ends with $5 (the build's directory is the checkout's, anywhere)
pages_by() {
    printf '%s\n' "$section" |
        awk -v s="$1" -v l="$2" '$2 " " $3 " " $4 == s && substr($5, length($5) - length(l) + 1) == l { print $1 }'
}
expect_eq "pages resident before, touched by hot_loop" \
    "$(pages_by "hot_loop < main" "/tests/progs/access.c:85)")" 256
expect_eq "pages resident before, touched by scan_once" \
    "$(pages_by "scan_once < main" "/tests/progs/access.c:95)")" 1024
expect_eq "pages resident before, touched by main's check" \
    "$(printf '%s\n' "$section" | awk '$2 == "main" && $3 ~ /access\.c:/ { print $1 }')" "$(raw other)"

memmon report --access --format json /tmp/access.cap > /tmp/access.json ||
    fail "memmon report --access --format json"
expect_eq "JSON before_start_touched (the capture's pages touched that no fault brought in)" \
    "$(awk '$1 == "\"before_start_touched\":" { gsub(/[^0-9]/, "", $2); print $2; exit }' /tmp/access.json)" \
    "$(raw before)"
# Each site's first function (its first "function" after "sites") and before_start_pages.
json_sites=$(awk '
    /^  "sites": \[/ { on = 1; next }
    on && /^  \]/ { exit }
    on && $1 == "\"function\":" && f == "" { f = $2; gsub(/[",]/, "", f) }
    on && $1 == "\"before_start_pages\":" { n = $2; gsub(/[^0-9]/, "", n); print f, n; f = "" }' /tmp/access.json)
json_pages() { printf '%s\n' "$json_sites" | awk -v f="$1" '$1 == f { s += $2 } END { print s + 0 }'; }
expect_eq "JSON: hot_loop's pages resident before" "$(json_pages hot_loop)" 256
expect_eq "JSON: scan_once's pages resident before" "$(json_pages scan_once)" 1024
unload
