#!/usr/bin/env bash
# make deb: memmon's two Debian packages, into build/deb/ (docs/packaging.md):
#   memmon-dkms_VERSION_all.deb  the module's source under /usr/src/memmon-VERSION/ (Kbuild,
#                                src/, dkms.conf, dkms-build, kernel-rust-tree), built by DKMS
#                                for each installed kernel with Rust, and at each new one
#   memmon_VERSION_amd64.deb     the static CLI /usr/bin/memmon, the unit
#                                memmon-agent.service, /etc/memmon/agent.toml (a conffile),
#                                the docs under /usr/share/doc/memmon
#
#   scripts/make-deb.sh [CLI]   CLI: the static memmon binary (default: make userspace's)
#
# VERSION is the workspace's version (userspace/Cargo.toml, e.g. 0.1.0) where the tag
# vVERSION is HEAD, else VERSION+gitN.SHA (N commits, SHA HEAD's; sorts after the last
# release and grows along a branch); MEMMON_DEB_VERSION overrides it. Built with dpkg-deb
# (root-owned files, md5sums, maintainer scripts under set -e).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/deb
die() { echo "memmon: error: $*" >&2; exit 1; }
cli=${1:-$top/userspace/target/x86_64-unknown-linux-gnu/release/memmon}
[ -x "$cli" ] || die "no memmon CLI at $cli: make userspace"
file -b "$cli" 2>/dev/null | grep -q 'statically linked\|static-pie' ||
    { command -v file >/dev/null && die "$cli is not statically linked (make userspace builds it static)"; }
command -v dpkg-deb >/dev/null || die "dpkg-deb not found (Debian: apt install dpkg)"

base=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$top/userspace/Cargo.toml" | head -n 1)
[ -n "$base" ] || die "no version in userspace/Cargo.toml"
if [ -n "${MEMMON_DEB_VERSION:-}" ]; then
    version=$MEMMON_DEB_VERSION
elif git -C "$top" describe --exact-match --tags --match "v$base" HEAD >/dev/null 2>&1; then
    version=$base
else
    version="$base+git$(git -C "$top" rev-list --count HEAD).$(git -C "$top" rev-parse --short=7 HEAD)"
fi
echo "$version" | grep -Eq '^[0-9][A-Za-z0-9.+~]*$' || die "'$version' is not a Debian version without revision"
maintainer=${MEMMON_DEB_MAINTAINER:-memmon maintainers <maintainers@users.noreply.a-seed-14db3ce4.example>}
stage=$out/stage
rm -rf "$stage"
mkdir -p "$stage" "$out"

copyright() { # PACKAGE: /usr/share/doc/PACKAGE/copyright and changelog.Debian.gz
    local d=$stage/$1/usr/share/doc/$1
    install -d "$d"
    cat > "$d/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: memmon
Source: the memmon repository

Files: *
Copyright: memmon maintainers
License: GPL-2.0-only
 On Debian systems the full text of the GNU General Public License version 2 is in
 /usr/share/common-licenses/GPL-2.
EOF
    printf '%s (%s) unstable; urgency=medium\n\n  * Built from the memmon repository (%s).\n\n -- %s  %s\n' \
        "$1" "$version" "$(git -C "$top" rev-parse --short=12 HEAD)" "$maintainer" \
        "$(date -R -d "@$(git -C "$top" log -1 --format=%ct)")" | gzip -9n > "$d/changelog.Debian.gz"
}
script() { # PACKAGE NAME: DEBIAN/NAME from stdin, 0755
    cat > "$stage/$1/DEBIAN/$2"
    chmod 0755 "$stage/$1/DEBIAN/$2"
}
finish() { # PACKAGE ARCH: md5sums, Installed-Size, dpkg-deb
    local p=$1 arch=$2 deb
    (cd "$stage/$p" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
        xargs -0 md5sum) > "$stage/$p/DEBIAN/md5sums"
    chmod 0644 "$stage/$p/DEBIAN/md5sums" "$stage/$p/DEBIAN/control"
    sed -i "s/^Installed-Size: .*/Installed-Size: $(du -sk --exclude=DEBIAN "$stage/$p" | cut -f1)/" \
        "$stage/$p/DEBIAN/control"
    deb=$out/${p}_${version}_$arch.deb
    rm -f "$out/${p}_"*"_$arch.deb"
    dpkg-deb --root-owner-group -Zxz --build "$stage/$p" "$deb" >/dev/null
    echo "deb: $(basename "$deb") ($(du -h "$deb" | cut -f1))"
}

# --- memmon-dkms ---------------------------------------------------------------------------
p=memmon-dkms
src=$stage/$p/usr/src/memmon-$version
install -d "$stage/$p/DEBIAN" "$src"
(cd "$top" && git ls-files -z Kbuild src | xargs -0 cp --parents -t "$src")
sed "s/@VERSION@/$version/g" "$top/packaging/dkms/dkms.conf" > "$src/dkms.conf"
install -m 0755 "$top/packaging/dkms/dkms-build" "$src/dkms-build"
install -m 0755 "$top/scripts/kernel-rust-tree" "$src/kernel-rust-tree"
install -m 0755 "$top/scripts/kernel-sc-tree" "$src/kernel-sc-tree"
install -m 0755 "$top/scripts/selfcontained-module" "$src/selfcontained-module"
install -m 0644 "$top/scripts/selfcontained.kbuild" "$src/selfcontained.kbuild"
find "$src" -type d -exec chmod 0755 {} + && find "$src" -type f ! -perm -u+x -exec chmod 0644 {} +
install -d "$stage/$p/etc/kernel/postrm.d"
install -m 0755 "$top/packaging/dkms/kernel-postrm" "$stage/$p/etc/kernel/postrm.d/memmon-dkms"
copyright "$p"
cat > "$stage/$p/DEBIAN/control" <<EOF
Package: $p
Version: $version
Architecture: all
Maintainer: $maintainer
Installed-Size: 0
Depends: dkms (>= 3.0), make, gcc, libc6-dev, rustc, rust-src, bindgen, libclang-dev, dwarves, bc, bison, flex, cpio, kmod, libelf-dev, libssl-dev, openssl, python3, xz-utils
Recommends: memmon (= $version)
Suggests: linux-source, linux-headers-amd64 | linux-headers-generic
Section: kernel
Priority: optional
Description: memmon kernel module (DKMS source)
 memmon records, for the processes you name, every page fault typed by what
 resolved it and every mm system call, with user call stacks; memmon report
 turns that into which code brought which memory into RSS.
 .
 This package builds the memmon.ko Rust module with DKMS for each installed
 kernel that has Rust support, and again at each new kernel's installation.
 On Debian, whose kernels do not ship their Rust metadata, it is rebuilt once
 per kernel from the kernel's source (linux-source-X.Y at the same Debian
 version) with the compiler, rustc and bindgen that built the kernel, into
 /var/lib/memmon/kernels. Kernels without Rust are skipped.
EOF
echo "/etc/kernel/postrm.d/memmon-dkms" > "$stage/$p/DEBIAN/conffiles"
chmod 0644 "$stage/$p/DEBIAN/conffiles"
script $p postinst <<EOF
#!/bin/sh
set -e
# dh_dkms's: add memmon/$version to DKMS, build and install it for the installed kernels
# (a kernel without Rust, or one this machine's toolchain cannot build for, is skipped with
# one line: dkms.conf).
case "\$1" in
    configure)
        /usr/lib/dkms/common.postinst memmon $version "" "" "\$2"
        ;;
esac
exit 0
EOF
script $p prerm <<EOF
#!/bin/sh
set -e
case "\$1" in
    remove|upgrade|deconfigure)
        if [ -n "\$(dkms status -m memmon -v $version)" ]; then
            dkms remove -m memmon -v $version --all
        fi
        ;;
esac
exit 0
EOF
script $p postrm <<'EOF'
#!/bin/sh
set -e
# The kernels' trees rebuilt for the module (/var/lib/memmon/kernels) go on purge.
case "$1" in
    purge)
        rm -rf /var/lib/memmon/kernels
        rmdir /var/lib/memmon 2>/dev/null || true
        ;;
esac
exit 0
EOF
finish $p all

# --- memmon ------------------------------------------------------------------------------------
p=memmon
install -d "$stage/$p/DEBIAN" "$stage/$p/usr/bin" "$stage/$p/usr/lib/systemd/system" \
    "$stage/$p/etc/memmon"
install -m 0755 "$cli" "$stage/$p/usr/bin/memmon"
strip --strip-unneeded "$stage/$p/usr/bin/memmon"
sed -e "s|@BINDIR@|/usr/bin|g" -e "s|@DOCDIR@|/usr/share/doc/memmon|g" \
    -e 's|installed by `make install`|installed by the memmon package|' \
    "$top/scripts/systemd/memmon-agent.service" > "$stage/$p/usr/lib/systemd/system/memmon-agent.service"
chmod 0644 "$stage/$p/usr/lib/systemd/system/memmon-agent.service"
install -m 0644 "$top/scripts/systemd/agent.toml" "$stage/$p/etc/memmon/agent.toml"
copyright "$p"
doc=$stage/$p/usr/share/doc/$p
for f in agent.md events.md report.md packaging.md; do
    [ -f "$top/docs/$f" ] && install -m 0644 "$top/docs/$f" "$doc/$f"
done
install -m 0644 "$top/README.md" "$doc/README.md"
# Compressed as Debian's policy asks, but for agent.md, which the unit's Documentation= names.
find "$doc" -name '*.md' ! -name agent.md -exec gzip -9n {} +
cat > "$stage/$p/DEBIAN/control" <<EOF
Package: $p
Version: $version
Architecture: amd64
Maintainer: $maintainer
Installed-Size: 0
Recommends: memmon-dkms (= $version)
Section: utils
Priority: optional
Description: memory monitor: which code brought which memory into RSS
 memmon records, for the processes you name, every page fault typed by what
 resolved it (anonymous first touch, file, swap-in, copy-on-write...) and every
 mm system call, with user call stacks, through the memmon kernel module
 (memmon-dkms); memmon report turns that into which code brought which memory
 into RSS, what is temporary and what accumulates.
 .
 This package has the memmon command (record, report, top, agent, export...),
 statically linked, and the memmon-agent service (Prometheus metrics and pprof
 snapshots per cgroup; /etc/memmon/agent.toml; not enabled by default).
EOF
echo "/etc/memmon/agent.toml" > "$stage/$p/DEBIAN/conffiles"
chmod 0644 "$stage/$p/DEBIAN/conffiles"
script $p postinst <<'EOF'
#!/bin/sh
set -e
# The unit is not enabled here: systemctl enable --now memmon-agent (docs/agent.md).
if [ "$1" = configure ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
fi
exit 0
EOF
script $p prerm <<'EOF'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
    systemctl stop memmon-agent.service 2>/dev/null || true
fi
exit 0
EOF
script $p postrm <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
fi
# The agent's snapshots go on purge.
if [ "$1" = purge ]; then
    rm -rf /var/spool/memmon
fi
exit 0
EOF
finish $p amd64
rm -rf "$stage"
