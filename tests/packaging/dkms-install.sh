#!/usr/bin/env bash
# make check-deb: memmon's packages installed as a Debian user installs them, then the
# module DKMS built booted in Debian's kernel.
#
# The kernel: make check's (scripts/stock/choose) or $MEMMON_DEB_KREL, say 7.3.4+deb13-amd64
# (the figures below are for it). In an overlay of a cached system of the kernel's
# distribution (tests/packaging/system-root.sh: for 7.3.4, trixie with trixie-backports in
# its sources, linux-headers-7.3.4+deb13-amd64 and linux-source-7.3 from trixie-backports,
# nothing else), fresh at each run (build/deb/test/):
#   1. apt install ./memmon-dkms_*.deb ./memmon_*.deb (build/deb/, make deb): apt brings the
#      toolchain from trixie by the packages' Depends, dkms builds memmon.ko for
#      7.3.4+deb13-amd64 in the package's postinst. Asserted: apt's exit status 0; dkms status
#      "installed" for 7.3.4+deb13-amd64; the module under
#      /lib/modules/7.3.4+deb13-amd64/updates/dkms/; modinfo's vermagic 7.3.4+deb13-amd64
#      and the Debian version memmon checks at load in it; the CLI, the unit, the conffile.
#   2. the skip path, for a trixie kernel: apt install linux-headers-amd64 (Debian stable's
#      kernel, 6.12.x, no Rust, its linux-source not installed): its dkms hook and a reinstall of
#      memmon-dkms exit 0, each printing exactly one "memmon: 6.12.118+deb13-amd64: not built
#      for it yet: ... install linux-source-6.12=VERSION ..." line; memmon is
#      still installed for 7.3.4+deb13-amd64 and not for 6.12 (the reinstall rebuilt it with
#      the kernel's tree kept in /var/lib/memmon/kernels: the warm build's time is shown).
#   3. a toolchain mismatch: a rustc 1.86.0 first on PATH; a reinstall of memmon-dkms exits
#      0 and prints one line naming rustc 1.85.1, the kernel's; memmon is not built for
#      7.3.4+deb13-amd64 then.
#   4. the module of step 1 (decompressed if DKMS compressed it) booted in Debian's kernel
#      (scripts/stock/vm-run, single-threaded TCG): tests/stock/03-memmon-stock.sh (it loads,
#      its fault source is kprobes), tests/vm/10-fault-anon.sh (1000 anon W faults, at their
#      addresses) and tests/vm/12-fault-cow.sh (copy-on-write faults), each passing as in
#      make check-stock: exit 0 and no BUG/WARNING/Oops/Call Trace in the guest's log.
# Prints "ok: ..." per assertion and ends with "check-deb: N passed, N failed"; exits 1 if
# anything failed. Needs: mmdebstrap (the root), make kernel-stock STOCK_KREL=$krel (Debian's
# vmlinuz; make check-deb runs it when missing),
# make deb, the network to deb.debian.org (apt, the first time: build/deb/apt-archives
# keeps the packages).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
deb=$top/build/deb
work=$deb/test
# The kernel: make check's (scripts/stock/choose), or $MEMMON_DEB_KREL; its Debian version
# and the rustc that built it as scripts/stock/resolve found them in the archive.
krel=${MEMMON_DEB_KREL:-$("$top/scripts/stock/choose")} || exit 1
export MEMMON_DEB_KREL=$krel
"$top/scripts/stock/resolve" "$krel" > /dev/null || exit 1
kver=$(. "$top/build/stock/kernels/$krel/kernel.env" && echo "$STOCK_KVER")
krustc=$(. "$top/build/stock/kernels/$krel/kernel.env" && echo "$STOCK_RUSTC_TEXT")
passed=0 failed=0
die() { echo "memmon: error: $*" >&2; exit 1; }
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
expect_eq() { if [ "$2" = "$3" ]; then ok "$1: $2"; else bad "$1: '$2', expected '$3'"; fi; }
starting() { # FILE PREFIX: how many lines of FILE begin with PREFIX (a plain string)
    awk -v p="$2" 'index($0, p) == 1 { n++ } END { print n + 0 }' "$1"
}
expect_lines() { # WHAT FILE PREFIX N: N lines of FILE begin with PREFIX
    local n; n=$(starting "$2" "$3")
    if [ "$n" = "$4" ]; then ok "$1 ($n line(s) in ${2#"$top"/})"; else
        bad "$1: $n lines of ${2#"$top"/} begin with '$3', expected $4"; fi
}
t() { date +%s; }

dkms_deb=$(ls "$deb"/memmon-dkms_*_all.deb 2>/dev/null | tail -n 1)
cli_deb=$(ls "$deb"/memmon_*_amd64.deb 2>/dev/null | tail -n 1)
[ -f "$dkms_deb" ] && [ -f "$cli_deb" ] || die "no packages in build/deb: make deb"
version=$(dpkg-deb -f "$dkms_deb" Version)
[ "$(dpkg-deb -f "$cli_deb" Version)" = "$version" ] || die "build/deb holds packages of two versions: make deb"
[ -f "$top/build/stock/kernels/$krel/image/usr/lib/modules/$krel/vmlinuz" ] ||
    die "no Debian $krel to boot: make kernel-stock STOCK_KREL=$krel"
t0=$(t)
MEMMON_DEB_ROOT=$("$top/tests/packaging/system-root.sh") || die "building the $krel system failed"
export MEMMON_DEB_ROOT
dist=$(. "$top/build/stock/kernels/$krel/kernel.env" && echo "$STOCK_DIST")
rm -rf "$work"
mkdir -p "$work"
inroot() { "$top/tests/packaging/in-root.sh" "$work/root" --bind "$deb:/mnt/deb" -- "$@"; }
echo "check-deb: packages $(basename "$dkms_deb"), $(basename "$cli_deb")"

# --- 1. the packages, as a user installs them ------------------------------------------------
t1=$(t)
inroot sh -c "apt-get -q update && apt-get -q -y install /mnt/deb/$(basename "$dkms_deb") /mnt/deb/$(basename "$cli_deb")" \
    > "$work/install.log" 2>&1
expect_eq "apt install of the two packages (log: build/deb/test/install.log) exit status" "$?" 0
echo "check-deb: install with the DKMS build took $(( $(t) - t1 )) s"
grep -E '^(memmon|kernel-rust-tree):|Building for|Autoinstall|Error' "$work/install.log" | head -n 20
inroot sh -c "dkms status memmon" > "$work/status.1" 2>&1
expect_eq "dkms status for $krel" "$(grep -F ", $krel," "$work/status.1")" "memmon/$version, $krel, x86_64: installed"
inroot sh -c "ls /lib/modules/$krel/updates/dkms/" > "$work/ko.list" 2>&1
ko=$(grep -E '^memmon\.ko(\.xz|\.zst|\.gz)?$' "$work/ko.list" || true)
expect_eq "memmon's module under /lib/modules/$krel/updates/dkms" "$(echo "$ko" | grep -c .)" 1
inroot sh -c "modinfo -F vermagic /lib/modules/$krel/updates/dkms/$ko" > "$work/vermagic" 2>&1
expect_eq "modinfo vermagic's release" "$(cut -d' ' -f1 "$work/vermagic")" "$krel"
# The module holds the Debian version it checks against uname -v at load.
inroot sh -c "xz -dcf /lib/modules/$krel/updates/dkms/$ko" > "$work/memmon.ko" 2>/dev/null
expect_eq "the module names Debian $kver" "$(grep -c -a -F "Debian $kver" "$work/memmon.ko")" 1
inroot sh -c 'test -x /usr/bin/memmon && memmon --help >/dev/null && echo cli;
    test -f /usr/lib/systemd/system/memmon-agent.service && echo unit;
    dpkg-query -W -f "\${Conffiles}\n" memmon | grep -q "^ /etc/memmon/agent.toml " && echo conffile;
    test -d /var/lib/memmon/kernels/'"$krel"'/rust && echo tree' > "$work/files" 2>&1
expect_eq "memmon, memmon-agent.service, /etc/memmon/agent.toml (a conffile), the kernel's tree" \
    "$(tr '\n' ' ' < "$work/files")" "cli unit conffile tree "

# --- 2. a kernel without Rust is skipped ----------------------------------------------------
# Debian stable's own kernel (linux-headers-amd64: trixie's, not the backport), whichever
# release it is today. Only in a trixie system: sid's kernels are built with Rust.
if [ "$dist" = trixie ]; then
inroot sh -c "apt-get -q -y install linux-headers-amd64" > "$work/norust-headers.log" 2>&1
expect_eq "apt install linux-headers-amd64 (Debian stable's kernel) exit status" "$?" 0
norust=$(inroot sh -c "ls /lib/modules" 2>/dev/null | grep -vxF "$krel" | grep -- '-amd64$' | head -n 1)
[ -n "$norust" ] || die "linux-headers-amd64 installed no other kernel than $krel"
echo "check-deb: Debian stable's kernel: $norust"
# Built self-contained once its linux-source is installed (docs/kernels.md): without it, skipped
# with one line naming the package.
nrver=$(inroot sh -c "dpkg-query -W -f '\${Version}' linux-headers-$norust" 2>/dev/null)
nrsrc=linux-source-$(echo "$norust" | cut -d. -f1,2)
line="memmon: $norust: not built for it yet: the kernel has no Rust support; memmon builds it self-contained from the kernel's source: install $nrsrc=$nrver (apt install $nrsrc=$nrver), then dkms autoinstall"
# The image's and the headers' hooks each run dkms autoinstall for it: one line per run.
runs=$(starting "$work/norust-headers.log" "Autoinstall on $norust was skipped for module(s) memmon.")
expect_eq "dkms autoinstall runs for $norust that skipped memmon, none failed" \
    "$([ "$runs" -ge 1 ] && echo "$runs") $(grep -c 'failed for module' "$work/norust-headers.log")" "$runs 0"
expect_lines "one line per run said why it skipped $norust" "$work/norust-headers.log" "$line" "$runs"
t2=$(t)
inroot sh -c "apt-get -q -y install --reinstall /mnt/deb/$(basename "$dkms_deb")" > "$work/reinstall.log" 2>&1
expect_eq "reinstall of memmon-dkms with $norust's headers exit status" "$?" 0
echo "check-deb: the reinstall (the module built again, the kernel's tree kept) took $(( $(t) - t2 )) s"
expect_lines "the reinstall said why it skipped $norust, once" "$work/reinstall.log" "$line" 1
inroot sh -c "dkms status memmon" > "$work/status.2" 2>&1
expect_eq "dkms status for $krel after the reinstall" "$(grep -F ", $krel," "$work/status.2")" "memmon/$version, $krel, x86_64: installed"
expect_eq "dkms status for $norust" "$(grep -cF ", $norust," "$work/status.2")" 0
else
    echo "check-deb: $dist's kernels all have Rust: no kernel without it to skip here (a trixie kernel's run checks that)"
fi

# --- 3. a rustc that is not the kernel's ----------------------------------------------------
# In /usr/bin (apt runs dpkg with PATH=/usr/sbin:/usr/bin:/sbin:/bin, its DPkg::Path): the
# packaged rustc diverted, a wrapper saying 1.86.0 in its place.
inroot sh -c 'dpkg-divert --quiet --local --rename --divert /usr/bin/rustc.real --add /usr/bin/rustc &&
    printf "%s\n" "#!/bin/sh" "[ \"\$1\" = --version ] && { echo \"rustc 1.86.0 (05f9846f8 2025-03-31)\"; exit 0; }" \
        "exec /usr/bin/rustc.real \"\$@\"" > /usr/bin/rustc && chmod +x /usr/bin/rustc && rustc --version' > "$work/rustc" 2>&1
expect_eq "rustc --version in the system" "$(cat "$work/rustc")" "rustc 1.86.0 (05f9846f8 2025-03-31)"
inroot sh -c "apt-get -q -y install --reinstall /mnt/deb/$(basename "$dkms_deb")" > "$work/mismatch.log" 2>&1
expect_eq "reinstall of memmon-dkms with rustc 1.86.0 exit status" "$?" 0
expect_lines "one line names the kernel's rustc" "$work/mismatch.log" \
    "memmon: $krel: not built for it: $krel was built by $krustc; this machine has rustc 1.86.0 (05f9846f8 2025-03-31): install $(echo "$krustc" | cut -d' ' -f1-2)" 1
inroot sh -c "dkms status memmon" > "$work/status.3" 2>&1
expect_eq "dkms status for $krel with rustc 1.86.0" "$(grep -cF ", $krel," "$work/status.3")" 0

# --- 4. the module DKMS built, in Debian's kernel ------------------------------------------------
# The guest programs those scenarios run (tests/progs, static C).
make -s -C "$top" "$top/build/progs/memtest" "$top/build/progs/watchexec" "$top/build/progs/drain" >/dev/null ||
    die "building build/progs/{memtest,watchexec,drain} failed"
for s in tests/stock/03-memmon-stock.sh tests/vm/10-fault-anon.sh tests/vm/12-fault-cow.sh; do
    name=$(basename "$s" .sh)
    klog=$work/vm-$name.kernel.log
    t3=$(t)
    STOCK_MEMMON_MODULE=$work/memmon.ko MEMMON_ACCEL=tcg,thread=single MEMMON_VM_TIMEOUT=600 \
        "$top/scripts/stock/vm-run" --kernel "$krel" --log "$klog" --add "$top/tests/vm/lib.sh:/host/lib.sh" \
        --add "$top/$s:/host/test.sh" -- sh /host/test.sh > "$work/vm-$name.log" 2>&1
    rc=$?
    splats=$(grep -cE 'BUG:|WARNING:|Oops|Call Trace|KASAN|kernel BUG' "$klog" || true)
    if [ "$rc" = 0 ] && [ "$splats" = 0 ]; then
        ok "$s in Debian's $krel with DKMS's memmon.ko ($(grep -c '^ok' "$work/vm-$name.log") checks, $(( $(t) - t3 )) s)"
    else
        bad "$s in Debian's $krel: exit status $rc, $splats splat lines (build/deb/test/vm-$name.log, .kernel.log)"
        tail -n 15 "$work/vm-$name.log"
    fi
done
grep -h 'memmon: loaded' "$work"/vm-*.kernel.log | head -n 1 | sed 's/^/check-deb: guest: /'

# The system's overlay (2 GB: the toolchain, 6.12, the kernel's tree) goes once all passed;
# the logs and the module stay in build/deb/test.
if [ "$failed" = 0 ]; then rm -rf "$work/root"; fi
echo "check-deb: $passed passed, $failed failed ($(( $(t) - t0 )) s)"
[ "$failed" = 0 ]
