#!/usr/bin/env bash
# make install and make uninstall into a staging root (DESTDIR), for the patched test
# kernel's release: the module under lib/modules/RELEASE/extra with depmod's index naming it,
# the CLI that runs, the systemd unit that systemd-analyze accepts, the example configuration
# the agent accepts; an existing configuration kept; a kernel with no build tree refused with
# one line. Run by scripts/check.sh as "install".
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
release=$(cat "$top/build/linux/include/config/kernel.release")
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

make -s -C "$top" install DESTDIR="$root" KRELEASE="$release" > "$root.log" 2>&1 ||
    { cat "$root.log"; fail "make install exited $?"; }
cat "$root.log"

ko="$root/lib/modules/$release/extra/memmon.ko"
[ -f "$ko" ] || fail "no $ko"
cmp -s "$ko" "$top/build/module/memmon.ko" || fail "$ko is not build/module/memmon.ko"
grep -q '^extra/memmon.ko:' "$root/lib/modules/$release/modules.dep" ||
    fail "depmod's modules.dep does not name extra/memmon.ko"
[ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$release" ] || fail "vermagic"
ok "memmon.ko in lib/modules/$release/extra, in modules.dep, vermagic $release"

cli="$root/usr/local/bin/memmon"
"$cli" --version | grep -q '^memmon ' || fail "$cli --version"
ok "memmon in /usr/local/bin runs: $("$cli" --version)"

unit="$root/usr/local/lib/systemd/system/memmon-agent.service"
grep -qx 'ExecStart=/usr/local/bin/memmon agent --config /etc/memmon/agent.toml' "$unit" ||
    fail "the unit's ExecStart: $(grep ExecStart= "$unit")"
! grep -q @ "$unit" || fail "an unreplaced @NAME@ in the unit"
# systemd-analyze checks the unit's syntax, its dependencies and that its programs exist, in
# the staging root: the host's units (for the targets it names), modprobe and kill copied in
mkdir -p "$root/sbin" "$root/bin" "$root/usr/lib/systemd"
cp -a /usr/lib/systemd/system "$root/usr/lib/systemd/system"
cp -L "$(command -v modprobe)" "$root/sbin/modprobe"
cp -L /bin/kill "$root/bin/kill"
SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --root="$root" memmon-agent.service \
    > "$root.verify" 2>&1 || { cat "$root.verify"; fail "systemd-analyze verify"; }
[ ! -s "$root.verify" ] || { cat "$root.verify"; fail "systemd-analyze verify said something"; }
ok "memmon-agent.service: systemd-analyze verify is silent"

conf="$root/etc/memmon/agent.toml"
[ -f "$conf" ] || fail "no $conf"
"$cli" agent --config "$conf" --check-config > "$root.conf" 2>&1 ||
    { cat "$root.conf"; fail "memmon agent --check-config on the example configuration"; }
ok "the example agent.toml: $(tail -1 "$root.conf")"

# An existing configuration is kept.
echo '# mine' >> "$conf"
make -s -C "$top" install DESTDIR="$root" KRELEASE="$release" > /dev/null 2>&1
tail -1 "$conf" | grep -qx '# mine' || fail "make install overwrote the configuration"
ok "a second make install keeps /etc/memmon/agent.toml"

# A kernel memmon cannot build for: one line, nothing installed.
if out=$(make -s -C "$top" install DESTDIR="$root/other" KRELEASE=1.2.3-none 2>&1); then
    fail "make install for KRELEASE=1.2.3-none succeeded"
fi
echo "$out" | grep -q '^memmon: error: no kernel build tree with Rust for 1.2.3-none' ||
    fail "the refusal: $out"
[ ! -e "$root/other" ] || fail "the refused install left $root/other"
ok "KRELEASE=1.2.3-none: $(echo "$out" | grep '^memmon: error:' | cut -c1-80)…"

make -s -C "$top" uninstall DESTDIR="$root" KRELEASE="$release" > /dev/null
[ ! -e "$ko" ] && [ ! -e "$cli" ] && [ ! -e "$unit" ] || fail "make uninstall left files"
! grep -q memmon "$root/lib/modules/$release/modules.dep" || fail "modules.dep still names memmon"
[ -f "$conf" ] || fail "make uninstall removed the configuration"
ok "make uninstall removes the module, the CLI and the unit, keeps the configuration"
rm -f "$root.log" "$root.verify" "$root.conf"
