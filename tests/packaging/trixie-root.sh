#!/usr/bin/env bash
# A Debian trixie system as a user of Debian's backported kernel has it, for
# tests/packaging/dkms-install.sh: trixie, trixie-updates, trixie-security and
# trixie-backports in its apt sources, linux-headers-7.3.4+deb13-amd64 and linux-source-7.3
# from trixie-backports installed by apt (nothing else: the packages' Depends bring the
# toolchain when they are installed, as on a user's machine). Built once with mmdebstrap
# from the Debian archive into build/deb/trixie-root (a stamp marks it complete); the tests
# run on an overlay of it, so it stays as built. Rebuilt when this script changes; rm -r it
# for a fresh one (the archive's newer packages).
#   tests/packaging/trixie-root.sh [ROOT]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
root=${1:-$top/build/deb/trixie-root}
stamp="$root/.memmon-root"
die() { echo "memmon: error: $*" >&2; exit 1; }
# The stamp holds this script's hash: the root is rebuilt when the script changes.
want=$(sha256sum "$0" | cut -d' ' -f1)
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && exit 0
command -v mmdebstrap >/dev/null || die "mmdebstrap not found: apt-get install -y mmdebstrap"
krel=7.3.4+deb13-amd64
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
echo "packaging: building a trixie root with linux-headers-$krel and linux-source-7.3 in ${root#"$top"/} (mmdebstrap, a few minutes)"
rm -rf "$root" "$root.tmp"
mkdir -p "$(dirname "$root")"
# shellcheck disable=SC2016
nice -n 10 mmdebstrap --variant=apt --mode=root --quiet \
    --aptopt='APT::Install-Recommends "false"' \
    --include="linux-headers-$krel/trixie-backports,linux-source-7.3/trixie-backports" \
    --customize-hook='chroot "$1" dpkg-query -W linux-headers-'"$krel"' linux-source-7.3' \
    trixie "$root.tmp" \
    "deb $mirror trixie main" \
    "deb $mirror trixie-updates main" \
    "deb ${mirror%/debian}/debian-security trixie-security main" \
    "deb $mirror trixie-backports main"
echo "$want" > "$root.tmp/.memmon-root"
mv "$root.tmp" "$root"
echo "packaging: trixie root ready ($(du -sh "$root" | cut -f1))"
