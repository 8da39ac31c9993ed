#!/usr/bin/env bash
# Make TREE (default build/linux) the pristine Debian linux-source (build/dl/linux-source.tar.xz,
# scripts/deps.sh) with patches/*.patch applied,
# touching as few files as possible: a changed patch set is switched by reverting the
# previously applied patches (kept in TREE/.memmon-patches/) and applying the new ones, so
# that the kernel's own incremental build only recompiles what the patches touch.
# Usage: scripts/kernel-prepare.sh [TREE]   (build/linux-debug, build/linux-noftrace: make check-debug)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
tree=$(realpath -m "${1:-$top/build/linux}")
tarball="$top/build/dl/linux-source.tar.xz"
applied="$tree/.memmon-patches"

unpack() {
    echo "kernel: unpacking $tarball into ${tree#$top/}"
    rm -rf "$tree" "$tree.tmp"
    mkdir -p "$tree.tmp"
    tar -xf "$tarball" -C "$tree.tmp" --strip-components=1
    mv "$tree.tmp" "$tree"
    mkdir -p "$applied"
}

[ -d "$applied" ] || unpack

# The same patches already applied (byte for byte, by name): nothing to do, and nothing
# touched (another checkout of the repository sharing this tree, with newer file times, must
# not make the kernel rebuild).
same=1
for p in "$top"/patches/*.patch; do
    cmp -s "$p" "$applied/$(basename "$p")" || same=0
done
[ "$(ls "$applied" | wc -l)" = "$(ls "$top"/patches/*.patch | wc -l)" ] || same=0
if [ "$same" = 1 ]; then
    echo "kernel: patches/*.patch already applied to ${tree#$top/}"
    exit 0
fi

if [ -n "$(ls "$applied")" ]; then
    for p in $(ls "$applied" | sort -r); do
        if ! patch -d "$tree" -p1 -R -s -f --no-backup-if-mismatch < "$applied/$p" >/dev/null; then
            echo "kernel: cannot revert $p; starting from a fresh tree"
            unpack
            break
        fi
        rm -f "$applied/$p"
    done
fi
for p in "$top"/patches/*.patch; do
    echo "kernel: applying $(basename "$p") to ${tree#$top/}"
    patch -d "$tree" -p1 -s -N --no-backup-if-mismatch < "$p"
    cp "$p" "$applied/"
done
