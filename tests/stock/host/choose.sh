#!/usr/bin/env bash
# scripts/stock/choose against the archive's current index (make check's item stock-choose):
# - with kernels.txt as it is, make check's kernel is its verified "check" kernel when the
#   archive or the cache has it, else trixie-backports' newest, with one line saying so;
# - with a list whose only "check" kernel the archive has never had at that version (what
#   kernels.txt looks like the day trixie-backports moves on), it takes trixie-backports'
#   newest and says so in exactly one line naming both;
# - --newest and --matrix name kernels the archive has, one per suite;
# - resolve stops with one line for a release the archive does not have.
set -uo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
choose="$top/scripts/stock/choose"
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

newest=$("$choose" --newest trixie-backports 2>/dev/null) || fail "choose --newest trixie-backports"
[[ "$newest" =~ ^[0-9]+\.[0-9]+\.[0-9]+\+deb13-amd64$ ]] || fail "trixie-backports' newest: '$newest'"
ok "trixie-backports' newest: $newest"
sid=$("$choose" --newest sid 2>/dev/null) || fail "choose --newest sid"
[[ "$sid" =~ ^[0-9]+\.[0-9]+\.[0-9]+\+deb[0-9]+-amd64$ ]] || fail "sid's newest: '$sid'"
ok "sid's newest: $sid"
matrix=$("$choose" --matrix 2>/dev/null) || fail "choose --matrix"
[ "$matrix" = "$newest"$'\n'"$sid" ] || fail "the matrix is '$matrix', not the newest of each suite"
ok "matrix: $(echo $matrix)"

# kernels.txt as it is
chosen=$("$choose" 2>/tmp/choose.err) || fail "choose: $(cat /tmp/choose.err)"
verified=$(awk '!/^#/ && $5 == "check" { print $1; exit }' "$top/scripts/stock/kernels.txt")
if [ "$chosen" = "$verified" ]; then
    [ ! -s /tmp/choose.err ] || fail "choose said something for a verified kernel: $(cat /tmp/choose.err)"
    ok "make check's kernel: $chosen, verified, said nothing"
else
    [ "$chosen" = "$newest" ] || fail "choose gave $chosen: neither the verified $verified nor the newest $newest"
    [ "$(wc -l < /tmp/choose.err)" = 1 ] || fail "choose did not say it in one line: $(cat /tmp/choose.err)"
    ok "make check's kernel: $chosen (the verified $verified has left the archive: '$(cat /tmp/choose.err)')"
fi

# a list whose kernel the archive does not have: the day trixie-backports moves on
list=$(mktemp)
trap 'rm -f "$list" /tmp/choose.err' EXIT
echo "7.3.1+deb13-amd64 7.3.1-1~bpo13+1 trixie trixie-backports check" > "$list"
chosen=$(STOCK_KERNELS_LIST=$list "$choose" 2>/tmp/choose.err) || fail "choose with a gone kernel: $(cat /tmp/choose.err)"
[ "$chosen" = "$newest" ] || fail "with the verified kernel gone, choose gave '$chosen', not $newest"
[ "$(wc -l < /tmp/choose.err)" = 1 ] || fail "not one line: $(cat /tmp/choose.err)"
expected="stock: 7.3.1+deb13-amd64 (verified) no longer in the archive: using trixie-backports' newest, $newest (not yet verified)"
[ "$(cat /tmp/choose.err)" = "$expected" ] || fail "the line: '$(cat /tmp/choose.err)', want '$expected'"
ok "gone kernel: $chosen, said '$expected'"

# resolve: one line for a release the archive does not have
if out=$(STOCK_KREL= "$top/scripts/stock/resolve" 7.3.1+deb13-amd64 2>&1); then
    fail "resolve of a release not in the archive succeeded: $out"
fi
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "resolve said more than one line: $out"
[[ "$out" == "stock: no linux-headers-7.3.1+deb13-amd64 in the archive (trixie,sid)" ]] || fail "resolve said '$out'"
ok "resolve of a gone release: '$out'"
rm -rf "$top/build/stock/kernels/7.3.1+deb13-amd64"
