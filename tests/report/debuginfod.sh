#!/usr/bin/env bash
# `memmon report` with a real debuginfod server (Debian's debuginfod, elfutils), on the
# host: the fixture capture base.cap of the program alloc_sites (gcc -g, tests/report/)
# with its binary stripped and its debug info (objcopy --only-keep-debug)
#   0. under --debug-dir DIR/.build-id/ (the CLI's option; no server);
# then served by
#   1. debuginfod -F over a directory of that debug file: the top sites are named with
#      file:line, the file is cached (DEBUGINFOD_CACHE_PATH) under its build ID;
#   2. the same, the server stopped: the names come from the cache, no download;
#   3. a server that is down (fresh cache): one warning, offsets, exit 0;
#   4. a server (python3's http.server) sending the other build's debug file under the
#      right build ID: refused, not cached, offsets, exit 0; and one sending a truncated file
#      (4b): the same;
#   5. a server that accepts and never answers: DEBUGINFOD_TIMEOUT=2 ends the request,
#      one warning, offsets, exit 0;
#   6. the binary missing here (a capture moved to another machine): debuginfod -F over
#      the stripped executable and its debug file gives both, and the same names.
# Installs debuginfod (apt-get, as root) when it is missing. Exit 0 when all pass.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
export PATH="$HOME/.cargo/bin:$PATH"
fixtures="$top/userspace/memmon/tests/fixtures"

if ! command -v debuginfod >/dev/null; then
    [ "$(id -u)" = 0 ] || { echo "FAIL: debuginfod is not installed (apt-get install debuginfod)"; exit 1; }
    echo "installing debuginfod"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debuginfod >/dev/null
fi
(cd "$top/userspace" && cargo build --quiet -j1 -p memmon-cli)
memmon="$top/userspace/target/debug/memmon"

tmp=$(mktemp -d)
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]+"${pids[@]}"}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
export NO_PROXY='*' no_proxy='*'
unset DEBUGINFOD_URLS DEBUGINFOD_TIMEOUT http_proxy https_proxy HTTP_PROXY HTTPS_PROXY

fail() { echo "FAIL: $*"; exit 1; }
# fetch URL: exit 0 when the URL answers 200
fetch() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5).read()' "$1" 2>/dev/null; }
# port: a free TCP port on 127.0.0.1
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The fixture: unstripped, its debug file, stripped (no debuglink: only debuginfod has it).
gzip -dc "$fixtures/alloc_sites.gz" > "$tmp/full"
gzip -dc "$fixtures/alloc_sites5.gz" > "$tmp/full5"
mkdir -p "$tmp/served" "$tmp/root/host"
objcopy --only-keep-debug "$tmp/full" "$tmp/served/alloc_sites.debug"
objcopy --only-keep-debug "$tmp/full5" "$tmp/other.debug"
strip --strip-all -o "$tmp/root/host/alloc_sites" "$tmp/full"
id=$(sed -n 's|^# buildid \([0-9a-f]*\) /host/alloc_sites$|\1|p' "$fixtures/base.cap")
[ -n "$id" ] || fail "no build ID of /host/alloc_sites in base.cap"
got=$(readelf -n "$tmp/root/host/alloc_sites" | sed -n 's/.*Build ID: //p')
[ "$got" = "$id" ] || fail "the fixture's build ID $got is not the capture's $id"
other=$(readelf -n "$tmp/other.debug" | sed -n 's/.*Build ID: //p')
echo "build ID of /host/alloc_sites: $id (the other build: $other)"

# report CACHE STDOUT STDERR ARGS...: memmon report of base.cap, at the end (where its top 3
# sites are alloc_sites.c's keep_cache, reheat and load_table)
report() {
    local cache=$1 out=$2 err=$3; shift 3
    DEBUGINFOD_CACHE_PATH="$cache" DEBUGINFOD_TIMEOUT=${timeout:-10} \
        "$memmon" report --top 3 --at end --sysroot "$tmp/root" "$fixtures/base.cap" "$@" > "$out" 2> "$err" \
        || fail "memmon report exited with $? ($(cat "$err"))"
}
# top_sites FILE: the function and location columns of the "top sites" table
top_sites() { awk '/^Top sites by resident bytes/ { on = 1; getline; next } on && NF == 0 { exit } on' "$1"; }
# The expected top 3: alloc_sites.c's lines, as the unstripped binary gives them.
report "$tmp/unused" "$tmp/stripped.out" "$tmp/stripped.err" --no-debuginfod
mkdir -p "$tmp/fullroot/host" && cp "$tmp/full" "$tmp/fullroot/host/alloc_sites"
DEBUGINFOD_CACHE_PATH="$tmp/unused" "$memmon" report --top 3 --at end --sysroot "$tmp/fullroot" \
    "$fixtures/base.cap" --no-debuginfod > "$tmp/want.out"
top_sites "$tmp/want.out" > "$tmp/want.top"
for want in 'keep_cache < main' 'alloc_sites.c:63' 'reheat < main' 'alloc_sites.c:129' \
    'load_table < main' 'alloc_sites.c:111'; do
    grep -qF "$want" "$tmp/want.top" || fail "the unstripped binary's top sites lack '$want': $(cat "$tmp/want.top")"
done
# The control: the stripped binary alone names nothing of alloc_sites.c.
top_sites "$tmp/stripped.out" > "$tmp/stripped.top"
grep -q 'alloc_sites+0x' "$tmp/stripped.top" || fail "the stripped binary's top sites are named: $(cat "$tmp/stripped.top")"
! grep -q 'keep_cache' "$tmp/stripped.top" || fail "the stripped binary names keep_cache"

# 0. The same debug file under --debug-dir, by build ID: no server needed.
mkdir -p "$tmp/debugdir/.build-id/${id:0:2}"
cp "$tmp/served/alloc_sites.debug" "$tmp/debugdir/.build-id/${id:0:2}/${id:2}.debug"
report "$tmp/unused" "$tmp/0.out" "$tmp/0.err" --no-debuginfod --debug-dir "$tmp/nothing" --debug-dir "$tmp/debugdir"
top_sites "$tmp/0.out" > "$tmp/0.top"
diff "$tmp/want.top" "$tmp/0.top" || fail "0: --debug-dir: the top sites differ from the unstripped binary's"
echo "ok 0: --debug-dir DIR/.build-id gives the unstripped binary's top sites"

# 1. A real server over the debug file.
p=$(port)
debuginfod -F -p "$p" -d "$tmp/debuginfod.sqlite" "$tmp/served" > "$tmp/debuginfod.log" 2>&1 &
server=$!
pids+=("$server")
url="http://127.0.0.1:$p"
for _ in $(seq 1 100); do
    fetch "$url/buildid/$id/debuginfo" && break
    sleep 0.2
done
fetch "$url/buildid/$id/debuginfo" || fail "debuginfod does not serve $id ($(tail -5 "$tmp/debuginfod.log"))"
cache="$tmp/cache"
report "$cache" "$tmp/1.out" "$tmp/1.err" --debuginfod "$url"
top_sites "$tmp/1.out" > "$tmp/1.top"
diff "$tmp/want.top" "$tmp/1.top" || fail "1: the top sites via debuginfod differ from the unstripped binary's"
n=$(grep -c "^memmon: debuginfod: downloading the debug info of /host/alloc_sites (build ID $id) from $url\$" "$tmp/1.err" || true)
[ "$n" = 1 ] || fail "1: want one progress line for /host/alloc_sites, got $n: $(cat "$tmp/1.err")"
! grep -q 'warning' "$tmp/1.err" || fail "1: a warning: $(cat "$tmp/1.err")"
[ -f "$cache/$id/debuginfo" ] || fail "1: $cache/$id/debuginfo was not cached"
cmp -s "$cache/$id/debuginfo" "$tmp/served/alloc_sites.debug" || fail "1: the cached file is not the served one"
echo "ok 1: names and lines from debuginfod, cached as $id/debuginfo ($(wc -l < "$tmp/1.err") stderr lines)"

# 2. The server stopped: from the cache.
kill "$server"; wait "$server" 2>/dev/null || true
report "$cache" "$tmp/2.out" "$tmp/2.err" --debuginfod "$url"
top_sites "$tmp/2.out" > "$tmp/2.top"
diff "$tmp/want.top" "$tmp/2.top" || fail "2: the top sites from the cache differ"
! grep -q "downloading the debug info of /host/alloc_sites" "$tmp/2.err" || fail "2: downloaded again: $(cat "$tmp/2.err")"
echo "ok 2: the same names from the cache with the server stopped"

# 3. A server that is down, a fresh cache: one warning, offsets, exit 0 (in report()).
report "$tmp/cache3" "$tmp/3.out" "$tmp/3.err" --debuginfod "$url"
n=$(grep -c 'warning' "$tmp/3.err" || true)
[ "$n" = 1 ] || fail "3: want one warning line, got $n: $(cat "$tmp/3.err")"
grep -q "^memmon: warning: debuginfod: .*objects without symbols show as offsets\$" "$tmp/3.err" \
    || fail "3: the warning: $(cat "$tmp/3.err")"
top_sites "$tmp/3.out" > "$tmp/3.top"
diff "$tmp/stripped.top" "$tmp/3.top" || fail "3: want offsets as without debuginfod"
[ ! -e "$tmp/cache3/$id" ] || fail "3: something cached"
echo "ok 3: server down: one warning ($(cat "$tmp/3.err")), offsets"

# bad_server CASE FILE GOT: python3's http.server sending FILE as the debug file of $id;
#   the report refuses it (the build ID it finds: GOT), caches nothing, shows offsets.
#   Given by DEBUGINFOD_URLS, as gdb and perf take it.
bad_server() {
    local case=$1 file=$2 got=$3 dir="$tmp/bad$1" p
    mkdir -p "$dir/buildid/$id"
    cp "$file" "$dir/buildid/$id/debuginfo"
    p=$(port)
    python3 -m http.server --bind 127.0.0.1 --directory "$dir" "$p" > "$tmp/http$case.log" 2>&1 &
    pids+=("$!")
    for _ in $(seq 1 100); do
        fetch "http://127.0.0.1:$p/buildid/$id/debuginfo" && break
        sleep 0.2
    done
    DEBUGINFOD_URLS="http://127.0.0.1:$p" report "$tmp/cache$case" "$tmp/$case.out" "$tmp/$case.err"
    grep -q "^memmon: warning: debuginfod: http://127.0.0.1:$p/ sent a file of build ID $got for /host/alloc_sites (build ID $id): refused\$" "$tmp/$case.err" \
        || fail "$case: no refusal: $(cat "$tmp/$case.err")"
    [ ! -e "$tmp/cache$case/$id" ] || fail "$case: the refused file was cached: $(ls -R "$tmp/cache$case")"
    top_sites "$tmp/$case.out" > "$tmp/$case.top"
    diff "$tmp/stripped.top" "$tmp/$case.top" || fail "$case: want offsets"
    grep -q "GET /buildid/$id/debuginfo" "$tmp/http$case.log" || fail "$case: the server was not asked"
}

# 4. A server sending the other build's debug file for $id.
bad_server 4 "$tmp/other.debug" "$other"
echo "ok 4: a file of another build ID refused and not cached"

# 4b. A corrupt download: the first 1000 bytes of the right debug file (an ELF header, no
#     build ID note).
head -c 1000 "$tmp/served/alloc_sites.debug" > "$tmp/truncated.debug"
bad_server 4b "$tmp/truncated.debug" none
echo "ok 4b: a truncated file refused and not cached"

# 5. A server that never answers.
p=$(port)
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
held = []
while True:
    held.append(s.accept()[0])
' "$p" &
pids+=("$!")
sleep 0.5
start=$SECONDS
timeout=2 report "$tmp/cache5" "$tmp/5.out" "$tmp/5.err" --debuginfod "http://127.0.0.1:$p"
took=$((SECONDS - start))
n=$(grep -c 'warning' "$tmp/5.err" || true)
[ "$n" = 1 ] || fail "5: want one warning line, got $n: $(cat "$tmp/5.err")"
grep -q "^memmon: warning: debuginfod: http://127.0.0.1:$p: .*objects without symbols show as offsets\$" "$tmp/5.err" \
    || fail "5: the warning: $(cat "$tmp/5.err")"
# DEBUGINFOD_TIMEOUT honoured: a few seconds (2 on a quiet host); ignored, the report
# would wait for the server for good. 30 s leaves room for a host busy elsewhere.
[ "$took" -le 30 ] || fail "5: the report took $took s with DEBUGINFOD_TIMEOUT=2"
top_sites "$tmp/5.out" > "$tmp/5.top"
diff "$tmp/stripped.top" "$tmp/5.top" || fail "5: want offsets"
echo "ok 5: a server that never answers: $took s, one warning ($(grep warning "$tmp/5.err")), offsets"

# 6. No binary here: the executable (its program headers map the file offsets) and the
#    debug file both from debuginfod.
mkdir -p "$tmp/served6" "$tmp/root6"
cp "$tmp/served/alloc_sites.debug" "$tmp/served6/"
cp "$tmp/root/host/alloc_sites" "$tmp/served6/alloc_sites"
p=$(port)
debuginfod -F -p "$p" -d "$tmp/debuginfod6.sqlite" "$tmp/served6" > "$tmp/debuginfod6.log" 2>&1 &
pids+=("$!")
url="http://127.0.0.1:$p"
for _ in $(seq 1 100); do
    fetch "$url/buildid/$id/executable" && fetch "$url/buildid/$id/debuginfo" && break
    sleep 0.2
done
DEBUGINFOD_CACHE_PATH="$tmp/cache6" DEBUGINFOD_TIMEOUT=10 "$memmon" report --top 3 --at end --sysroot "$tmp/root6" \
    --debuginfod "$url" "$fixtures/base.cap" > "$tmp/6.out" 2> "$tmp/6.err" || fail "6: memmon report failed: $(cat "$tmp/6.err")"
top_sites "$tmp/6.out" > "$tmp/6.top"
diff "$tmp/want.top" "$tmp/6.top" || fail "6: the top sites differ from the unstripped binary's"
for what in "the executable" "the debug info"; do
    grep -qx "memmon: debuginfod: downloading $what of /host/alloc_sites (build ID $id) from $url" "$tmp/6.err" \
        || fail "6: no progress line for $what: $(cat "$tmp/6.err")"
done
cmp -s "$tmp/cache6/$id/executable" "$tmp/root/host/alloc_sites" || fail "6: the executable was not cached"
cmp -s "$tmp/cache6/$id/debuginfo" "$tmp/served/alloc_sites.debug" || fail "6: the debug file was not cached"
echo "ok 6: without the binary: executable and debug info from debuginfod, the same names"
echo "debuginfod: 7 passed, 0 failed"
