#!/usr/bin/env bash
# A Debian system as a user of a Debian kernel with Rust has it, for
# tests/packaging/dkms-install.sh: the kernel's distribution (trixie with -updates, -security
# and -backports in its apt sources for trixie-backports' kernels; sid for sid's), with
# linux-headers-RELEASE and its linux-source-X.Y from the kernel's suite installed by apt
# (RELEASE: $MEMMON_DEB_KREL, default make check's kernel, scripts/stock/choose; nothing else:
# the packages' Depends bring the toolchain when they are installed, as on a user's
# machine). Built once with mmdebstrap from the Debian archive into build/deb/root-DIST (a
# stamp marks it complete); the tests run on an overlay of it, so it stays as built. Rebuilt
# when this script or the kernel changes; rm -r it for a fresh one (the archive's newer
# packages). Prints the root's directory.
#   tests/packaging/system-root.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "memmon: error: $*" >&2; exit 1; }
krel=${MEMMON_DEB_KREL:-$("$top/scripts/stock/choose")}
"$top/scripts/stock/resolve" "$krel" >&2 || die "$krel is not in the archive"
eval "$(. "$top/build/stock/kernels/$krel/kernel.env" && echo "dist=$STOCK_DIST suite=$STOCK_SUITE source=$STOCK_SOURCE")"
root=$top/build/deb/root-$dist
stamp="$root/.memmon-root"
# The stamp holds this script's hash and the kernel: the root is rebuilt when either changes.
want="$(sha256sum "$0" | cut -d' ' -f1) $krel"
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && { echo "$root"; exit 0; }
command -v mmdebstrap >/dev/null || die "mmdebstrap not found: apt-get install -y mmdebstrap"
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
echo "packaging: building a $dist system with linux-headers-$krel and $source in ${root#"$top"/} (mmdebstrap, a few minutes)" >&2
# sid's Release files are valid for a week only (Valid-Until): a mirror that serves sid as it
# was some weeks ago (as the one this project's machines see does, its sid 31 days past on
# 2026-12-07) is refused with it. The test system ignores that date for sid; the signatures
# are still checked.
valid_until=()
case "$dist" in
    trixie) sources=("deb $mirror trixie main" "deb $mirror trixie-updates main"
                     "deb ${mirror%/debian}/debian-security trixie-security main"
                     "deb $mirror trixie-backports main") ;;
    *) sources=("deb $mirror $dist main")
       valid_until=(--aptopt='Acquire::Check-Valid-Until "false"') ;;
esac
rm -rf "$root" "$root.tmp"
mkdir -p "$(dirname "$root")"
# shellcheck disable=SC2016
nice -n 10 mmdebstrap --variant=apt --mode=root --quiet \
    --aptopt='APT::Install-Recommends "false"' "${valid_until[@]}" \
    --include="linux-headers-$krel/$suite,$source/$suite" \
    --customize-hook='chroot "$1" dpkg-query -W linux-headers-'"$krel"' '"$source" \
    "$dist" "$root.tmp" "${sources[@]}" >&2
echo "$want" > "$root.tmp/.memmon-root"
mv "$root.tmp" "$root"
echo "packaging: $dist system ready ($(du -sh "$root" | cut -f1))" >&2
echo "$root"
