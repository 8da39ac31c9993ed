#!/usr/bin/env bash
# Install everything memmon needs on a Debian bookworm machine, as root, idempotently:
# Debian packages, rust-src, bindgen-cli, and the pinned Debian linux-source-7.3 tarball
# (downloaded with apt-get from trixie-backports into build/dl/, checksum verified,
# unpacked with dpkg-deb, never installed).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dl="$top/build/dl"

KERNEL_DEB_VERSION="7.3.4-1~bpo13+1"
KERNEL_DEB_SHA256="703e369ddd4cce971452f5a593ee55df3a5c10c83caf0fa0df039633ed181ee3"
BINDGEN_VERSION="0.73.2"
PACKAGES=(clang-19 lld-19 llvm-19 libclang-19-dev flex bison bc libelf-dev libssl-dev cpio
          qemu-system-x86 busybox-static gcc make git xz-utils python3 file
          golang-go chromium libsqlite3-dev zlib1g-dev libglib2.0-dev debuginfod tmux kmod systemd)
# golang-go: `go tool pprof` reads the pprof output in the report tests; chromium: the
# report page is loaded headless in its tests; libsqlite3-dev, zlib1g-dev: the unwinding
# tests run Debian's shared libsqlite3 and libz (tests/unwind/); libglib2.0-dev: a first-glance
# test program allocates through Debian's GLib (tests/glance/); debuginfod: the report's
# debuginfod test starts a server (tests/report/debuginfod.sh); kmod: make install runs depmod
# and modinfo (tests/install.sh, into a staging root); systemd: systemd-analyze verifies the
# unit make install writes.

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

# 3. bindgen-cli, pinned
if ! bindgen --version 2>/dev/null | grep -q "bindgen $BINDGEN_VERSION\$"; then
    say "installing bindgen-cli $BINDGEN_VERSION"
    cargo install --locked --quiet "bindgen-cli@$BINDGEN_VERSION"
fi

# 4. The kernel source: Debian's linux-source-7.3, pinned and checksummed
tarball="$dl/linux-source-7.3.tar.xz"
if [ ! -f "$tarball" ]; then
    mkdir -p "$dl/apt/lists/partial"
    debs=("$dl"/linux-source-7.3_*_all.deb)
    if [ ! -f "${debs[0]}" ]; then
        uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
        uri=${uri:-http://deb.debian.org/debian}
        echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri trixie-backports main" \
            > "$dl/apt/sources.list"
        aptopts=(-o "Dir::Etc::SourceList=$dl/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
                 -o "Dir::State::Lists=$dl/apt/lists" -o APT::Sandbox::User=root)
        say "downloading linux-source-7.3=$KERNEL_DEB_VERSION from trixie-backports"
        apt-get "${aptopts[@]}" update -qq
        (cd "$dl" && apt-get "${aptopts[@]}" download -qq "linux-source-7.3=$KERNEL_DEB_VERSION")
        debs=("$dl"/linux-source-7.3_*_all.deb)
    fi
    deb=${debs[0]}
    echo "$KERNEL_DEB_SHA256  $deb" | sha256sum -c --quiet - \
        || { echo "deps: checksum mismatch for $deb" >&2; rm -f "$deb"; exit 1; }
    rm -rf "$dl/deb"
    dpkg-deb -x "$deb" "$dl/deb"
    mv "$dl/deb/usr/src/linux-source-7.3.tar.xz" "$tarball"
    rm -rf "$dl/deb"
    say "kernel source ready: $tarball"
fi
