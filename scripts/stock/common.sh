# Shared by scripts/stock/*: paths, the private apt configuration, the pinned kernel.
# Sourced (bash). Everything lives under build/stock/; nothing is installed on the host.
stock_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
stock_dir="$stock_top/scripts/stock"
stock_build="$stock_top/build/stock"
stock_debs="$stock_build/debs"        # the pinned .deb files, checksummed
stock_root="$stock_build/root"        # trixie build root (unpacked toolchain .debs)
stock_linux="$stock_build/linux"      # linux-source-7.3 prepared with Debian's config
stock_image="$stock_build/image"      # Debian's vmlinuz and modules, unpacked
stock_pins="$stock_dir/pins.txt"

# The kernel these files are for. Changing it: see scripts/stock/README.md.
STOCK_KREL="7.3.4+deb13-amd64"
STOCK_KVER="7.3.4-1~bpo13+1"

stock_say() { printf 'stock: %s\n' "$*"; }
stock_die() { printf 'stock: %s\n' "$*" >&2; exit 1; }

# apt with a private state: trixie (+ updates, security, backports) package lists in
# build/stock/apt, an empty dpkg status (nothing counts as installed), never the host's.
stock_apt_setup() {
    local apt="$stock_build/apt" uri
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
    uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    uri=${uri:-http://deb.debian.org/debian}
    local key="[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]"
    {
        echo "deb $key $uri trixie main"
        echo "deb $key $uri trixie-updates main"
        echo "deb $key ${uri%/debian}/debian-security trixie-security main"
        echo "deb $key $uri trixie-backports main"
    } > "$apt/sources.list"
    : > "$apt/status"
    stock_apt=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
               -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
               -o "Dir::State::status=$apt/status" -o APT::Sandbox::User=root
               -o APT::Architecture=amd64 -o APT::Architectures::=amd64
               -o APT::Install-Recommends=false -o APT::Get::AllowUnauthenticated=false)
}

# The file name apt-get download gives NAME VERSION ARCH.
stock_deb_file() { printf '%s_%s_%s.deb' "$1" "${2//:/%3a}" "$3"; }
