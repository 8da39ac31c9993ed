#!/usr/bin/env bash
# Install everything memmon needs on a Debian bookworm machine, as root, idempotently:
# Debian packages, rust-src, bindgen-cli, and Debian's linux-source tarball for the patched
# kernel (downloaded with apt-get from trixie-backports into build/dl/, verified, unpacked
# with dpkg-deb, never installed).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dl="$top/build/dl"

KERNEL_DEB_VERSION="7.3.4-1~bpo13+1"
KERNEL_DEB_SHA256="703e369ddd4cce971452f5a593ee55df3a5c10c83caf0fa0df039633ed181ee3"
BINDGEN_VERSION="0.73.2"
PACKAGES=(clang-19 lld-19 llvm-19 libclang-19-dev flex bison bc libelf-dev libssl-dev cpio
          qemu-system-x86 busybox-static gcc make git xz-utils python3 file
          qemu-system-arm gcc-aarch64-linux-gnu libc6-dev-arm64-cross
          golang-go chromium libsqlite3-dev zlib1g-dev libglib2.0-dev debuginfod tmux kmod systemd
          mmdebstrap libjemalloc2 libjemalloc-dev google-perftools libgoogle-perftools4
          libgoogle-perftools-dev)
# golang-go: `go tool pprof` reads the pprof output in the report tests; chromium: the
# report page is loaded headless in its tests; libsqlite3-dev, zlib1g-dev: the unwinding
# tests run Debian's shared libsqlite3 and libz (tests/unwind/); libglib2.0-dev: a first-glance
# test program allocates through Debian's GLib (tests/glance/); debuginfod: the report's
# debuginfod test starts a server (tests/report/debuginfod.sh); kmod: make install runs depmod
# and modinfo (tests/install.sh, into a staging root); systemd: systemd-analyze verifies the
# unit make install writes; mmdebstrap: make check-deb builds a trixie system to install the
# packages in (tests/packaging/system-root.sh); libjemalloc2, libjemalloc-dev (jeprof),
# google-perftools (google-pprof), libgoogle-perftools4/-dev (libtcmalloc, HEAPPROFILE): the
# heap profiles memmon export reads are made and checked against their own readers in the
# export tests (memmon-fleet/tests/heap_profiles.rs).
# qemu-system-arm, gcc-aarch64-linux-gnu and
# libc6-dev-arm64-cross: Debian's arm64 kernels boot in qemu-system-aarch64 with the test
# programs cross-built (make progs-arm64; scripts/stock/vm-run --kernel RELEASE-arm64).

say() { printf 'deps: %s\n' "$*"; }
export PATH="$HOME/.cargo/bin:$PATH"

# 1. Debian packages
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || { echo "deps: installing ${missing[*]} needs root" >&2; exit 1; }
    say "installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. Rust: rust-src for the kernel's core/alloc build, clippy and rustfmt for checks
if ! rustup component list --installed 2>/dev/null | grep -q '^rust-src'; then
    say "adding rustup component rust-src"
    rustup component add rust-src clippy rustfmt
fi
# aarch64's standard library, for the arm64 userspace (make userspace-arm64)
if ! rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu; then
    say "adding rustup target aarch64-unknown-linux-gnu"
    # Only make userspace-arm64 (arm64 guests) needs it: a machine that cannot fetch it
    # still builds and checks everything else, and that target then says what is missing.
    rustup target add aarch64-unknown-linux-gnu ||
        say "could not add rustup's aarch64-unknown-linux-gnu (make userspace-arm64 needs it)"
fi

# 3. bindgen-cli, pinned
if ! bindgen --version 2>/dev/null | grep -q "bindgen $BINDGEN_VERSION\$"; then
    say "installing bindgen-cli $BINDGEN_VERSION"
    cargo install --locked --quiet "bindgen-cli@$BINDGEN_VERSION"
fi

# 4. The patched kernel's source: Debian's linux-source. The version the patches are verified
# on (KERNEL_DEB_VERSION, checksummed) while the archive (or build/dl) has it; when
# trixie-backports has moved on, its newest linux-source, which apt verifies against the
# archive's signed Release, said in one line. Kept as build/dl/linux-source.tar.xz, its
# package and version in build/dl/linux-source.version.
tarball="$dl/linux-source.tar.xz"
# A checkout from before the name had no version in it: the same file.
if [ ! -f "$tarball" ] && [ -f "$dl/linux-source-7.3.tar.xz" ]; then
    mv "$dl/linux-source-7.3.tar.xz" "$tarball"
    echo "linux-source-7.3 $KERNEL_DEB_VERSION" > "$dl/linux-source.version"
fi
if [ ! -f "$tarball" ]; then
    mkdir -p "$dl/apt/lists/partial"
    uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    uri=${uri:-http://deb.debian.org/debian}
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri trixie-backports main" \
        > "$dl/apt/sources.list"
    aptopts=(-o "Dir::Etc::SourceList=$dl/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
             -o "Dir::State::Lists=$dl/apt/lists" -o APT::Sandbox::User=root
             -o APT::Architecture=amd64 -o APT::Get::AllowUnauthenticated=false)
    pkg=linux-source-7.3 version=$KERNEL_DEB_VERSION
    debs=("$dl/${pkg}_${version}_all.deb")
    if [ ! -f "${debs[0]}" ]; then
        apt-get "${aptopts[@]}" update -qq
        if ! apt-cache "${aptopts[@]}" show "$pkg=$version" >/dev/null 2>&1; then
            # The newest linux-source-X.Y of trixie-backports.
            read -r version pkg < <(apt-cache "${aptopts[@]}" search --names-only '^linux-source-[0-9.]+$' |
                awk '{ print $1 }' | while read -r p; do
                    apt-cache "${aptopts[@]}" show --no-all-versions "$p" | awk -v p="$p" '/^Version:/ { print $2, p; exit }'
                done | sort -V | tail -n 1)
            [ -n "${pkg:-}" ] || { echo "deps: no linux-source package in trixie-backports" >&2; exit 1; }
            say "linux-source-7.3 $KERNEL_DEB_VERSION (the patches' verified source) is no longer in the archive: using trixie-backports' $pkg $version"
        fi
        say "downloading $pkg=$version from trixie-backports"
        (cd "$dl" && apt-get "${aptopts[@]}" download -qq "$pkg=$version")
        debs=("$dl/${pkg}_${version//:/%3a}_all.deb")
    fi
    deb=${debs[0]}
    [ -f "$deb" ] || { echo "deps: apt-get download gave no $deb" >&2; exit 1; }
    if [ "$version" = "$KERNEL_DEB_VERSION" ]; then
        echo "$KERNEL_DEB_SHA256  $deb" | sha256sum -c --quiet - \
            || { echo "deps: checksum mismatch for $deb" >&2; rm -f "$deb"; exit 1; }
    fi
    rm -rf "$dl/deb"
    dpkg-deb -x "$deb" "$dl/deb"
    mv "$dl/deb/usr/src/$pkg.tar.xz" "$tarball"
    rm -rf "$dl/deb"
    echo "$pkg $version" > "$dl/linux-source.version"
    say "kernel source ready: $tarball ($pkg $version)"
fi
