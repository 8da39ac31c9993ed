#!/usr/bin/env bash
# `memmon top` on the host, under tmux, against a capture replayed at speed: the fixture
# base.cap of alloc_sites (tests/report/), its timestamps stretched 10 times (so that at
# --speed 10 it plays at its own pace: 2.2 s, keep_cache's 3 MiB in the first second).
#   1. tmux new-session -x 120 -y 40 'memmon top --input X --speed 10': capture-pane shows
#      keep_cache by name within 2 refreshes (2 s and a half);
#      tab puts the sites table on top, s changes its order, p pauses and resumes;
#   2. tmux resize-window -x 80 -y 24: the screen is redrawn to 80x24 (the help line on the
#      24th row, the tables' borders end in column 80);
#   3. q: memmon exits, the session is gone within 2 s;
#   4. stdout not a terminal (`| cat`, --speed 50): plain tables (the PID and SITE
#      headers) naming keep_cache, and the end of the input ends memmon (exit 0), with one
#      line on stderr saying so; the last table is what alloc_sites had when it exited:
#      its row `alloc_sites [exited]` with 4.1 MiB anon, 1.6 MiB file and 256 swap-ins,
#      keep_cache +3.0 MiB since the start (3.0 MiB resident), load_table and reheat +1 MiB,
#      no figure since the start negative;
#   5. a terminal memmon cannot drive (the tmux pane, but memmon in a session of its own,
#      setsid, without a controlling terminal and with stdin not a terminal: /dev/tty does
#      not open, as on a VM's console): one line on stderr, plain tables in the pane, exit 0.
# Installs tmux (apt-get, as root) when it is missing. Exit 0 when all pass.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
export PATH="$HOME/.cargo/bin:$PATH"

if ! command -v tmux >/dev/null; then
    [ "$(id -u)" = 0 ] || { echo "FAIL: tmux is not installed (apt-get install tmux)"; exit 1; }
    echo "installing tmux"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tmux >/dev/null
fi
(cd "$top/userspace" && cargo build --quiet -j1 -p memmon-cli)
memmon="$top/userspace/target/debug/memmon"

work=$(mktemp -d)
session="memmon-top-$$"
cleanup() { tmux kill-session -t "$session" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/sysroot/host"
# The fixture binary is built, not checked in (tests/report/.gitignore).
[ -x "$top/tests/report/alloc_sites" ] || "$top/tests/report/build.sh"
cp "$top/tests/report/alloc_sites" "$work/sysroot/host/alloc_sites"
# Times ×10: event lines (first field) and snapshot headers (their time field).
awk '
    /^# snapshot / { $5 = sprintf("%.9f", $5 * 10); print; next }
    /^# start / { $3 = sprintf("%.9f", $3 * 10); print; next }
    /^#/ { print; next }
    { $1 = sprintf("%.9f", $1 * 10); print }
' "$top/userspace/memmon/tests/fixtures/base.cap" > "$work/slow.cap"

fail=0
check() { if eval "$2"; then echo "PASS: $1"; else echo "FAIL: $1"; fail=1; fi; }

# 1. the growing function by name within 2 refreshes
tmux -f /dev/null new-session -d -s "$session" -x 120 -y 40 \
    "$memmon top --input $work/slow.cap --speed 10 --sysroot $work/sysroot"
started=$(date +%s.%N)
found=""
for _ in $(seq 25); do
    sleep 0.1
    if tmux capture-pane -p -t "$session" | grep -q keep_cache; then
        found=$(awk -v s="$started" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - s }')
        break
    fi
done
tmux capture-pane -p -t "$session" > "$work/screen1"
cat "$work/screen1"
check "keep_cache on the screen after ${found:-more than 2.5} s (within 2 refreshes)" '[ -n "$found" ]'
check "the screen is 40 rows, the help line last" '[ "$(wc -l < "$work/screen1")" -eq 40 ] && tail -1 "$work/screen1" | grep -q "q quit"'

# keys: tab puts the sites on top, s sorts them by growth since the start, p pauses
tmux send-keys -t "$session" Tab
sleep 0.3
check "tab: the sites table on top" 'tmux capture-pane -p -t "$session" | sed -n 2p | grep -q "sites by resident growth"'
tmux send-keys -t "$session" s
sleep 0.3
check "s: sites sorted by growth since start" 'tmux capture-pane -p -t "$session" | sed -n 2p | grep -q "sorted by growth since start"'
tmux send-keys -t "$session" p
sleep 0.3
check "p: paused" 'tmux capture-pane -p -t "$session" | sed -n 1p | grep -q "\[paused\]"'
tmux send-keys -t "$session" p
sleep 0.3
check "p again: running" '! tmux capture-pane -p -t "$session" | sed -n 1p | grep -q "\[paused\]"'

# 2. resize
tmux resize-window -t "$session" -x 80 -y 24
sleep 0.5
tmux capture-pane -p -t "$session" > "$work/screen2"
cat "$work/screen2"
width=$(wc -L < "$work/screen2")
check "redrawn to 80x24: $(wc -l < "$work/screen2") rows, widest line $width columns, help on row 24, a border ends in column 80" \
    '[ "$(wc -l < "$work/screen2")" -eq 24 ] && [ "$width" -eq 80 ] && sed -n 24p "$work/screen2" | grep -q "q quit" && grep -q "┐$" "$work/screen2"'

# 3. q quits
tmux send-keys -t "$session" q
gone=no
for _ in $(seq 20); do
    sleep 0.1
    tmux has-session -t "$session" 2>/dev/null || { gone=yes; break; }
done
check "q: memmon exited, the session is gone" '[ "$gone" = yes ]'

# 4. not a terminal: plain tables
set +e
"$memmon" top --input "$work/slow.cap" --speed 50 --interval 0.2 --sysroot "$work/sysroot" | cat > "$work/plain"
code=${PIPESTATUS[0]}
set -e
head -20 "$work/plain"
tables=$(grep -c '^memmon top: events' "$work/plain" || true)
check "plain output: exit $code, $tables tables, PID and SITE headers, keep_cache named, no escape sequences" \
    '[ "$code" -eq 0 ] && [ "$tables" -ge 2 ] && grep -q "^PID  COMMAND" "$work/plain" && grep -q "SITE$" "$work/plain" && grep -q "keep_cache < main" "$work/plain" && ! grep -q $'"'"'\x1b'"'"' "$work/plain"'
plain_err=$("$memmon" top --input "$work/slow.cap" --speed 50 --interval 0.2 --sysroot "$work/sysroot" 2>&1 >/dev/null | cat)
check "plain output: stderr says so ($plain_err)" \
    '[ "$plain_err" = "memmon top: stdout is not a terminal: printing a table every 0.2 s, and one at the end" ]'
awk -v n="$tables" '/^memmon top: events/ { t++ } t == n' "$work/plain" > "$work/last"
cat "$work/last"
row=$(grep ' alloc_sites \[exited\] ' "$work/last" || true)
check "last table: alloc_sites [exited] with 4.1 MiB anon, 1.6 MiB file, 256 swap-ins ($row)" \
    '[ "$(echo "$row" | awk "{ print \$4, \$5, \$6, \$7, \$NF }")" = "4.1 MiB 1.6 MiB 256" ]'
check "last table: keep_cache +3.0 MiB since the start, 3.0 MiB resident" \
    'grep -Eq "^ *[-+0-9.]+( [KM]iB)? +\+3\.0 MiB +3\.0 MiB  keep_cache < main" "$work/last"'
check "last table: load_table and reheat +1 MiB since the start" \
    'grep -Eq "\+1 MiB +1 MiB  load_table < main" "$work/last" && grep -Eq "\+1 MiB +1 MiB  reheat < main" "$work/last"'
check "last table: nothing negative since the start" \
    '! awk "/^INTERVAL/ { on = 1; next } on && \$2 ~ /^-/" "$work/last" | grep -q .'

# 5. a terminal it cannot drive: no controlling terminal (setsid), stdin not a terminal
console="memmon-top-console-$$"
tmux -f /dev/null new-session -d -s "$console" -x 200 -y 50 \
    "setsid -w sh -c '$memmon top --input $work/slow.cap --speed 50 --interval 0.2 --sysroot $work/sysroot </dev/null 2>$work/console.err; echo \$? >$work/console.code'; sleep 30"
for _ in $(seq 50); do
    sleep 0.1
    [ -s "$work/console.code" ] && break
done
tmux capture-pane -p -t "$console" -S -200 > "$work/console.screen"
tmux kill-session -t "$console" 2>/dev/null || true
console_err=$(cat "$work/console.err")
check "no controlling terminal: exit $(cat "$work/console.code" 2>/dev/null), stderr: $console_err" \
    '[ "$(cat "$work/console.code" 2>/dev/null)" = 0 ] && [ "$(wc -l < "$work/console.err")" -eq 1 ] && echo "$console_err" | grep -Eq "^memmon top: cannot drive the terminal \(.+\): printing a table every 0.2 s, and one at the end$"'
check "no controlling terminal: plain tables in the pane, keep_cache named" \
    'grep -q "^PID  COMMAND" "$work/console.screen" && grep -q "keep_cache < main" "$work/console.screen"'
exit $fail
