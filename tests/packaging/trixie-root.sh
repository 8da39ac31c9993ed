#!/usr/bin/env bash
# A Debian trixie system as a user of Debian's backported kernel has it, for
# tests/packaging/dkms-install.sh: trixie, trixie-updates, trixie-security and
# trixie-backports in its apt sources, linux-headers-RELEASE and its linux-source-X.Y from
# trixie-backports (RELEASE: $MEMMON_DEB_KREL, default make check's kernel,
# scripts/stock/choose) installed by apt (nothing else: the packages' Depends bring the
# toolchain when they are installed, as on a user's machine). Built once with mmdebstrap
# from the Debian archive into build/deb/trixie-root (a stamp marks it complete); the tests
# run on an overlay of it, so it stays as built. Rebuilt when this script or the kernel changes; rm -r it
# for a fresh one (the archive's newer packages).
#   tests/packaging/trixie-root.sh [ROOT]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
root=${1:-$top/build/deb/trixie-root}
stamp="$root/.memmon-root"
die() { echo "memmon: error: $*" >&2; exit 1; }
# The stamp holds this script's hash: the root is rebuilt when the script changes.
krel=${MEMMON_DEB_KREL:-$("$top/scripts/stock/choose")}
source="linux-source-$(echo "$krel" | cut -d. -f1,2)"
want="$(sha256sum "$0" | cut -d' ' -f1) $krel"
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && exit 0
command -v mmdebstrap >/dev/null || die "mmdebstrap not found: apt-get install -y mmdebstrap"
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
echo "packaging: building a trixie root with linux-headers-$krel and $source in ${root#"$top"/} (mmdebstrap, a few minutes)"
rm -rf "$root" "$root.tmp"
mkdir -p "$(dirname "$root")"
# shellcheck disable=SC2016
nice -n 10 mmdebstrap --variant=apt --mode=root --quiet \
    --aptopt='APT::Install-Recommends "false"' \
    --include="linux-headers-$krel/trixie-backports,$source/trixie-backports" \
    --customize-hook='chroot "$1" dpkg-query -W linux-headers-'"$krel"' '"$source" \
    trixie "$root.tmp" \
    "deb $mirror trixie main" \
    "deb $mirror trixie-updates main" \
    "deb ${mirror%/debian}/debian-security trixie-security main" \
    "deb $mirror trixie-backports main"
echo "$want" > "$root.tmp/.memmon-root"
mv "$root.tmp" "$root"
echo "packaging: trixie root ready ($(du -sh "$root" | cut -f1))"
