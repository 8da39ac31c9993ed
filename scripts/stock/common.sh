# Shared by scripts/stock/*: paths, the private apt states, the kernel being worked on.
# Sourced (bash). Everything lives under build/stock/; nothing is installed on the host.
#
# A kernel is a Debian release name (uname -r), e.g. 7.3.4+deb13-amd64 or 7.2.13+deb14-amd64.
# Its files are under build/stock/kernels/RELEASE/ (kernel.env: what scripts/stock/resolve
# found in the archive; packages.txt: the packages it downloaded, with versions and sha256;
# image/, headers/, linux/, guest/, module/). The build roots (a Debian suite's toolchain,
# unpacked) are shared by the kernels that suite built: build/stock/roots/NAME.
stock_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
stock_dir="$stock_top/scripts/stock"
stock_build="$stock_top/build/stock"
stock_debs="$stock_build/debs"        # every .deb downloaded (a cache; apt verified each)
stock_kernels=${STOCK_KERNELS_LIST:-$stock_dir/kernels.txt}  # tests give another list

stock_say() { printf 'stock: %s\n' "$*"; }
stock_die() { printf 'stock: %s\n' "$*" >&2; exit 1; }

# The Debian distributions a kernel can come from, and their suites. A kernel of trixie
# (stable or backports) is built with trixie's toolchain, one of sid with sid's.
stock_dists="trixie sid"
stock_suites() {
    case "$1" in
        trixie) echo "trixie trixie-updates trixie-security trixie-backports" ;;
        sid) echo "sid" ;;
        *) stock_die "unknown distribution '$1'" ;;
    esac
}

# The Debian architecture of a kernel release (its flavour): 7.3.4+deb13-arm64 and
# 7.3.4+deb13-arm64-16k are arm64's, the rest amd64's (the host's). An arm64 kernel's module
# is cross-built on the amd64 host: its build root adds the cross C compiler and binutils of
# the same versions (packages.txt's "cross" line), and the guest is qemu-system-aarch64.
stock_arch_of() {
    case "$1" in
        *-arm64|*-arm64-*) echo arm64 ;;
        *) echo amd64 ;;
    esac
}
# The GNU triplet of a Debian architecture (the cross tools' prefix and package suffix).
stock_triplet() {
    case "$1" in
        arm64) echo aarch64-linux-gnu ;;
        amd64) echo x86_64-linux-gnu ;;
        *) stock_die "unknown architecture '$1'" ;;
    esac
}

# stock_apt_setup DIST [ARCH]: apt with a private state for DIST (build/stock/apt/DIST, or
# DIST-ARCH for a foreign ARCH, whose lists hold both the host's amd64 packages and ARCH's):
# that distribution's package lists, an empty dpkg status (nothing counts as installed),
# never the host's. Sets the array stock_apt. The archive's signed Release files verify
# every package apt downloads.
stock_apt_setup() {
    local dist=$1 arch=${2:-amd64} apt="$stock_build/apt/$1" uri suite
    [ "$arch" = amd64 ] || apt="$stock_build/apt/$1-$arch"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
    uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    uri=${uri:-http://deb.debian.org/debian}
    local key="[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]"
    for suite in $(stock_suites "$dist"); do
        case "$suite" in
            *-security) echo "deb $key ${uri%/debian}/debian-security $suite main" ;;
            *) echo "deb $key $uri $suite main" ;;
        esac
    done > "$apt/sources.list"
    [ -f "$apt/status" ] || : > "$apt/status"
    local archs=(-o APT::Architectures::=amd64)
    [ "$arch" = amd64 ] || archs+=(-o "APT::Architectures::=$arch")
    stock_apt=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
               -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
               -o "Dir::State::status=$apt/status" -o APT::Sandbox::User=root
               -o APT::Architecture=amd64 "${archs[@]}"
               -o APT::Install-Recommends=false -o APT::Get::AllowUnauthenticated=false)
}

# stock_apt_update DIST [ARCH]: stock_apt_setup, and the package lists read from the archive when
# they are older than STOCK_APT_MAX_AGE seconds (6 hours) or absent. A failed update keeps
# the lists there were (offline: the cache decides).
stock_apt_update() {
    stock_apt_setup "$1" "${2:-}"
    local dir="$stock_build/apt/$1"
    [ "${2:-amd64}" = amd64 ] || dir="$dir-$2"
    local stamp="$dir/updated" age=${STOCK_APT_MAX_AGE:-21600}
    if [ ! -f "$stamp" ] || [ $(( $(date +%s) - $(stat -c %Y "$stamp") )) -gt "$age" ]; then
        if apt-get "${stock_apt[@]}" update -qq 2>"$dir/update.err"; then
            touch "$stamp"
        else
            stock_say "could not read $1's package lists from the archive ($(head -n 1 "$dir/update.err")); using the last ones"
        fi
    fi
}

# The file name apt-get download gives NAME VERSION ARCH.
stock_deb_file() { printf '%s_%s_%s.deb' "$1" "${2//:/%3a}" "$3"; }

# stock_kernel [RELEASE]: select the kernel scripts/stock/* work on: RELEASE, else
# $STOCK_KREL, else make check's kernel (scripts/stock/choose). Sets STOCK_KREL and the
# paths below; when the kernel is resolved (kernel.env exists), also STOCK_KVER (its
# Debian version), STOCK_DIST, STOCK_SUITE, STOCK_SOURCE (linux-source-X.Y) and stock_root.
# Always STOCK_ARCH (the kernel's Debian architecture, stock_arch_of).
stock_kernel() {
    STOCK_KREL=${1:-${STOCK_KREL:-}}
    if [ -z "$STOCK_KREL" ]; then
        STOCK_KREL=$("$stock_dir/choose") || exit 1
    fi
    case "$STOCK_KREL" in
        *[!A-Za-z0-9.+~_-]*|'') stock_die "'$STOCK_KREL' is not a kernel release name" ;;
    esac
    STOCK_ARCH=$(stock_arch_of "$STOCK_KREL")
    stock_kdir="$stock_build/kernels/$STOCK_KREL"
    stock_image="$stock_kdir/image"       # Debian's vmlinuz and modules, unpacked
    stock_headers="$stock_kdir/headers/usr/src/linux-headers-$STOCK_KREL"
    stock_linux="$stock_kdir/tree"        # linux-source with Debian's config, prepared
                                          # (scripts/kernel-rust-tree)
    stock_module="$stock_kdir/module"     # memmon.ko built for it
    STOCK_KVER= STOCK_DIST= STOCK_SUITE= STOCK_SOURCE= STOCK_SELFCONTAINED= stock_root=
    if [ -f "$stock_kdir/kernel.env" ]; then
        # shellcheck disable=SC1091
        . "$stock_kdir/kernel.env"
        stock_root="$stock_build/roots/$STOCK_ROOT"
    fi
    export STOCK_KREL STOCK_ARCH
}

# The kernel's base name (without its flavour) for the packages named after it:
# 7.3.4+deb13-amd64 -> 7.3.4+deb13 (linux-headers-7.3.4+deb13-common, linux-kbuild-7.3.4+deb13).
stock_kbase() { printf '%s' "${1%%-*}"; }

# stock_vm_env: export what scripts/vm-run needs for the selected kernel's architecture: for
# an arm64 kernel MEMMON_ARCH=arm64, MEMMON_BUSYBOX (the busybox of packages.txt's
# guest-arm64 line, unpacked from its .deb into build/stock/kernels/RELEASE/busybox) and the
# cross-built test programs (make progs-arm64, in this checkout's build/progs-arm64) and
# userspace (make userspace-arm64: the guest's memmon).
stock_vm_env() {
    export MEMMON_ARCH=$STOCK_ARCH
    [ "$STOCK_ARCH" != amd64 ] || return 0
    local bb="$stock_kdir/busybox" name version arch sha role
    if [ ! -x "$bb" ] || [ "$stock_kdir/packages.txt" -nt "$bb" ]; then
        while read -r role name version arch sha; do
            [ "$role" = guest ] && [ "$name" = busybox-static ] || continue
            rm -rf "$bb.tmp" && mkdir -p "$bb.tmp"
            dpkg-deb -x "$stock_debs/$(stock_deb_file "$name" "$version" "$arch")" "$bb.tmp"
            install -m 0755 "$bb.tmp/usr/bin/busybox" "$bb" && rm -rf "$bb.tmp"
        done < "$stock_kdir/packages.txt"
        [ -x "$bb" ] || stock_die "no busybox-static for $STOCK_ARCH in $STOCK_KREL's packages (scripts/stock/resolve $STOCK_KREL)"
    fi
    export MEMMON_BUSYBOX=$bb
    make -C "$stock_top" -s "progs-$STOCK_ARCH" >&2 || stock_die "make progs-$STOCK_ARCH failed"
    make -C "$stock_top" -s "userspace-$STOCK_ARCH" >&2 || stock_die "make userspace-$STOCK_ARCH failed"
}

# stock_is_current: whether the selected kernel is make check's, the one build/stock/current
# links to (scripts/stock/prepare links it): its module is build/module-stock/memmon.ko and
# its check logs are in build/stock/check.
stock_is_current() {
    [ "$(basename "$(readlink "$stock_build/current" 2>/dev/null)")" = "$STOCK_KREL" ]
}
