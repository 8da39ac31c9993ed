#!/usr/bin/env bash
# make install / make uninstall: memmon as a service on this machine (or under DESTDIR).
#
#   scripts/install.sh install|uninstall
#
# Environment (the Makefile passes them):
#   KRELEASE  the kernel the module is for (default: the running one, uname -r)
#   KDIR      a kernel build tree to build the module against (default: chosen by KRELEASE:
#             Debian's 7.3.4+deb13-amd64 -> make module-stock, the patched test kernel's
#             release -> make module, else /lib/modules/KRELEASE/build if it has Rust's
#             artefacts)
#   DESTDIR   a staging root (nothing outside it is touched; depmod runs with -b DESTDIR and
#             systemctl is not called)
#   PREFIX    /usr/local: the CLI goes to PREFIX/bin, the unit to PREFIX/lib/systemd/system,
#             the docs to PREFIX/share/doc/memmon
#
# Installs: /lib/modules/KRELEASE/extra/memmon.ko (then depmod), PREFIX/bin/memmon, the unit
# memmon-agent.service, /etc/memmon/agent.toml (an example; an existing file is kept) and
# docs/agent.md. Ends with the commands that start the service.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
action=${1:-install}
krelease=${KRELEASE:-$(uname -r)}
destdir=${DESTDIR:-}
prefix=${PREFIX:-/usr/local}
stock_release=7.3.4+deb13-amd64
patched_release=$(cat "$top/build/linux/include/config/kernel.release" 2>/dev/null || true)

die() { echo "memmon: error: $*" >&2; exit 1; }
say() { echo "install: $*"; }

moddir="$destdir/lib/modules/$krelease/extra"
bindir="$destdir$prefix/bin"
unitdir="$destdir$prefix/lib/systemd/system"
docdir="$destdir$prefix/share/doc/memmon"
confdir="$destdir/etc/memmon"

depmod_run() {
    command -v depmod >/dev/null || die "depmod not found (Debian: apt install kmod)"
    if [ -n "$destdir" ]; then
        depmod -b "$destdir" "$krelease"
    else
        depmod "$krelease"
    fi
}

daemon_reload() {
    if [ -z "$destdir" ] && [ -d /run/systemd/system ]; then
        systemctl daemon-reload
    fi
}

if [ "$action" = uninstall ]; then
    rm -f "$moddir/memmon.ko" "$bindir/memmon" "$unitdir/memmon-agent.service" \
        "$docdir/agent.md"
    rmdir "$docdir" 2>/dev/null || true
    if [ -d "$destdir/lib/modules/$krelease" ]; then depmod_run; fi
    daemon_reload
    say "removed memmon.ko, memmon and memmon-agent.service ($confdir/agent.toml is kept)"
    exit 0
fi
[ "$action" = install ] || die "usage: scripts/install.sh install|uninstall"

# The module for KRELEASE: the two kernels this repository prepares through their make
# targets; another through its build tree (KDIR, or the running kernel's if it has Rust's
# artefacts), into build/module-install.
if [ -z "${KDIR:-}" ] && [ "$krelease" = "$stock_release" ]; then
    make -C "$top" module-stock
    module="$top/build/module-stock/memmon.ko"
elif [ -z "${KDIR:-}" ] && [ -n "$patched_release" ] && [ "$krelease" = "$patched_release" ]; then
    make -C "$top" module
    module="$top/build/module/memmon.ko"
else
    kdir=${KDIR:-/lib/modules/$krelease/build}
    if [ -n "${KDIR:-}" ]; then
        [ -f "$KDIR/Makefile" ] || die "KDIR=$KDIR is not a kernel build tree"
    elif [ ! -f "$kdir/rust/libkernel.rmeta" ]; then
        die "no kernel build tree with Rust for $krelease: memmon builds for Debian's \
$stock_release and the patched test kernel ($patched_release) itself; for another kernel \
give KDIR=/path/to/its/build/tree (built with CONFIG_RUST, modules_prepare done)"
    fi
    out="$top/build/module-install"
    mkdir -p "$out"
    make -C "$kdir" M="$top" MO="$out" LLVM="${LLVM:--19}" modules
    module="$out/memmon.ko"
fi
command -v modinfo >/dev/null || die "modinfo not found (Debian: apt install kmod)"
vermagic=$(modinfo -F vermagic "$module")
[ "${vermagic%% *}" = "$krelease" ] ||
    die "$module is for ${vermagic%% *}, not $krelease"

# The CLI.
make -C "$top" userspace
cli="$top/userspace/target/x86_64-unknown-linux-gnu/release/memmon"

install -d "$moddir" "$bindir" "$unitdir" "$docdir" "$confdir"
install -m 0644 "$module" "$moddir/memmon.ko"
install -m 0755 "$cli" "$bindir/memmon"
sed -e "s|@BINDIR@|$prefix/bin|g" -e "s|@DOCDIR@|$prefix/share/doc/memmon|g" \
    "$top/scripts/systemd/memmon-agent.service" > "$unitdir/memmon-agent.service"
chmod 0644 "$unitdir/memmon-agent.service"
install -m 0644 "$top/docs/agent.md" "$docdir/agent.md"
if [ -e "$confdir/agent.toml" ]; then
    say "kept $confdir/agent.toml"
else
    install -m 0644 "$top/scripts/systemd/agent.toml" "$confdir/agent.toml"
fi
depmod_run
daemon_reload
say "memmon.ko -> $moddir, memmon -> $bindir, memmon-agent.service -> $unitdir"
say "start it: systemctl enable --now memmon-agent; its metrics: curl -s localhost:9464/metrics"
