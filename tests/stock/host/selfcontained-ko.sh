#!/usr/bin/env bash
# The self-contained build's modules for a kernel without Rust (default 6.12.118+deb13-amd64;
# STOCK_KREL=RELEASE), checked on the host with the kernel's build root's binutils and kmod:
# memmon.ko (scripts/stock/module) and tests/stock/hello-sc's sc_hello.ko, each
#   - imports no Rust symbol (no undefined _R... or rust_... symbol: the kernel has none),
#   - has the kernel's vermagic (its release, "modversions"),
#   - carries in __versions a CRC for every symbol it imports, equal to that symbol's CRC in
#     the kernel's Module.symvers (what the module loader compares at insmod),
#   - and nothing in __versions it does not import but module_layout.
set -uo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
export STOCK_KREL=${STOCK_KREL:-6.12.118+deb13-amd64}
. "$top/scripts/stock/common.sh"
stock_kernel "$STOCK_KREL"
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }
[ -n "$STOCK_SELFCONTAINED" ] || fail "$STOCK_KREL is not a kernel without Rust (kernel.env: STOCK_SELFCONTAINED)"
symvers="$stock_headers/Module.symvers"
memmon_ko=$("$stock_dir/module" "$STOCK_KREL") || fail "building memmon.ko for $STOCK_KREL"
hello="$stock_kdir/hello-module-ko-check"
"$stock_dir/build-module" "$top/tests/stock/hello-sc" "$hello" -s >/dev/null || fail "building tests/stock/hello-sc"
inroot() { "$stock_dir/in-root" -- "$@"; }
for ko in "$memmon_ko" "$hello/sc_hello.ko"; do
    name=$(basename "$ko")
    undef=$(inroot nm -u "$ko" | awk '{ print $2 }' | sort -u)
    [ -n "$undef" ] || fail "$name: nm -u gives nothing"
    rust=$(printf '%s\n' "$undef" | grep -E '^(_R|rust_)' || true)
    [ -z "$rust" ] || fail "$name imports Rust symbols: $(echo $rust | head -c 300)"
    ok "$name: $(printf '%s\n' "$undef" | grep -c .) imports, none of them Rust"
    vm=$(inroot modinfo -F vermagic "$ko")
    [ "$vm" = "$STOCK_KREL SMP preempt mod_unload modversions " ] || fail "$name: vermagic '$vm'"
    ok "$name: vermagic '$vm'"
    inroot modprobe --dump-modversions "$ko" | awk '{ print $2, $1 }' | sort > "/tmp/sc-ko-crcs.$$"
    bad=0
    while read -r sym; do
        have=$(awk -v s="$sym" '$1 == s { print $2 }' "/tmp/sc-ko-crcs.$$")
        want=$(awk -v s="$sym" '$2 == s { print $1; exit }' "$symvers")
        [ -n "$want" ] || { echo "  $sym: not in Module.symvers"; bad=1; continue; }
        [ "$have" = "$want" ] || { echo "  $sym: CRC '$have' in __versions, '$want' in Module.symvers"; bad=1; }
    done <<< "$undef"
    [ $bad = 0 ] || fail "$name: imports without the kernel's CRC"
    extra=$(comm -13 <(printf '%s\n' "$undef") <(awk '{ print $1 }' "/tmp/sc-ko-crcs.$$") | grep -vx module_layout || true)
    rm -f "/tmp/sc-ko-crcs.$$"
    [ -z "$extra" ] || fail "$name: __versions names symbols it does not import: $extra"
    ok "$name: every import's CRC in __versions is Module.symvers' ($(printf '%s\n' "$undef" | grep -c .) of them)"
done
echo "PASS"
