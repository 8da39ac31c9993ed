#!/usr/bin/env bash
# Run a command in an overlay of the cached system $MEMMON_DEB_ROOT (tests/packaging/system-root.sh):
# the root stays as built, what the command changes goes to UPPER (kept between calls, so
# that a test's steps see each other's work). In a private mount namespace: the overlay,
# /proc, /dev, /sys, the host's resolv.conf and a shared apt archive cache
# (build/deb/apt-archives, so that packages are downloaded once) go away with it.
#   tests/packaging/in-root.sh UPPER [--bind HOST:GUEST]... -- COMMAND [ARG...]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
root=${MEMMON_DEB_ROOT:?the system to run in (tests/packaging/system-root.sh prints it)}
die() { echo "memmon: error: $*" >&2; exit 1; }
[ $# -ge 1 ] || die "usage: tests/packaging/in-root.sh UPPER [--bind HOST:GUEST]... -- COMMAND..."
upper=$(realpath -m "$1"); shift
binds=("$top/build/deb/apt-archives:/var/cache/apt/archives")
while [ $# -gt 0 ]; do
    case "$1" in
        --bind) binds+=("$2"); shift 2 ;;
        --) shift; break ;;
        *) die "in-root.sh: unknown option '$1'" ;;
    esac
done
[ $# -gt 0 ] || die "in-root.sh: no command"
[ -f "$root/.memmon-root" ] || die "no system at $root: run tests/packaging/system-root.sh"
mkdir -p "$upper/upper" "$upper/work" "$upper/mnt" "$top/build/deb/apt-archives/partial"
# shellcheck disable=SC2016
exec unshare --mount --propagation private -- /bin/bash -c '
    set -e
    root=$1 upper=$2 nb=$3; shift 3
    m=$upper/mnt
    mount -t overlay overlay -o "lowerdir=$root,upperdir=$upper/upper,workdir=$upper/work" "$m"
    mount --rbind /dev "$m/dev"
    mount -t proc proc "$m/proc"
    mount -t sysfs sysfs "$m/sys"
    mount -t tmpfs tmpfs "$m/tmp"
    cp /etc/resolv.conf "$m/etc/resolv.conf"
    for ((i = 0; i < nb; i++)); do
        h=${1%%:*} g=${1#*:}; shift
        mkdir -p "$m$g"
        mount --bind "$h" "$m$g"
    done
    exec chroot "$m" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root TERM=dumb LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
' in-root "$root" "$upper" "${#binds[@]}" "${binds[@]}" "$@"
