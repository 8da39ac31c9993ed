#!/usr/bin/env bash
# make install / make uninstall: memmon as a service on this machine (or under DESTDIR).
#
#   scripts/install.sh install|uninstall
#
# Environment (the Makefile passes them):
#   KRELEASE  the kernel the module is for (default: the running one, uname -r)
#   KDIR      a kernel build tree to build the module against (default: chosen by KRELEASE:
#             the patched test kernel's release -> make module; a tree that has Rust's
#             artefacts at /lib/modules/KRELEASE/build (Ubuntu's linux-lib-rust, Arch) ->
#             that; a Debian kernel (RELEASE+debNN-FLAVOUR) -> scripts/stock/module: its
#             packages and toolchain from the archive, modules_prepare in a build root)
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

# The module for KRELEASE: the patched test kernel through make module; a kernel whose build
# tree has Rust's artefacts (KDIR, or the running kernel's) through that tree, into
# build/module-install; a Debian kernel through scripts/stock (its own packages and
# toolchain from the archive).
if [ -z "${KDIR:-}" ] && [ -n "$patched_release" ] && [ "$krelease" = "$patched_release" ]; then
    make -C "$top" module
    module="$top/build/module/memmon.ko"
else
    kdir=${KDIR:-/lib/modules/$krelease/build}
    if [ -n "${KDIR:-}" ]; then
        [ -f "$KDIR/Makefile" ] || die "KDIR=$KDIR is not a kernel build tree"
    elif [ ! -f "$kdir/rust/libkernel.rmeta" ]; then
        case "$krelease" in
            *+deb[0-9]*-*) ;;
            *) die "no kernel build tree with Rust for $krelease: memmon builds for Debian's \
kernels and the patched test kernel ($patched_release) itself; for another kernel give \
KDIR=/path/to/its/build/tree (built with CONFIG_RUST, modules_prepare done)" ;;
        esac
        kdir=
    fi
    out="$top/build/module-install"
    if [ -n "$kdir" ]; then
        mkdir -p "$out"
        make -C "$kdir" M="$top" MO="$out" LLVM="${LLVM:--19}" modules
        module="$out/memmon.ko"
    else
        module=$("$top/scripts/stock/module" "$krelease") ||
            die "cannot build memmon.ko for Debian's $krelease (scripts/stock/module said why above)"
    fi
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
