# memmon: build the patched kernel, the module, the userspace tools; run the demo and tests.
#
#   make deps     install what a fresh Debian bookworm machine lacks (root)
#   make          kernel (patched, configured, bzImage + modules), module, userspace
#   make module   only the module (KDIR=/path/to/your/patched/tree to use your own kernel)
#   make run      the demo: boot the VM, load memmon, watch a workload, show its events,
#                 then record a program and end with memmon report of it (and an HTML page)
#   make check    userspace tests, module rustfmt + clippy, VM scenarios, a quick bench
#   make bench    memmon against ftrace in one VM boot timed, then in one counting
#                 instructions (scripts/bench.sh, --icount; 8 to 15 minutes)
#   make check-debug  the VM scenarios on a debug kernel (lockdep, KASAN, UBSAN, kmemleak...,
#                 build/linux-debug) and memmon refusing int3 kprobes (build/linux-noftrace)
#   make check-stress  stress scenarios (scripts/check-stress.sh); DEBUG=1: on the debug kernel
#   make check-gxx  g++ -O2 -c under memmon record with the defaults on a busy guest
#                 (tests/defaults/gxx.sh; two compiles under TCG, up to 45 min)
#   make check-depth  the bytes of g++, python3.11 and Node.js whose stacks are cut at the
#                 depth limit, at 64 and at the default 127: at most 2 % (tests/defaults/depth.sh)
#   make userspace-arm64  memmon for aarch64 (static, cross-built; on the arm64 guests' PATH)
#   make fleet    memmon-fleet (`memmon fleet`: DataFusion and Ballista; not built by make run),
#                 beside the memmon binary
#   make check-fleet  memmon-fleet's tests with Ballista (a loopback cluster of a scheduler
#                 and two executors, one killed mid-run) and its clippy
#   make bench-fleet  memmon fleet on 10 000, 30 000 and 100 000 snapshots, embedded and on a
#                 loopback Ballista cluster (scripts/bench-fleet.sh; docs/performance.md)
#   make install  the module for the running kernel (or KRELEASE=, KDIR=) under
#                 /lib/modules/KRELEASE/extra with depmod, the CLI in /usr/local/bin, the
#                 systemd unit memmon-agent.service (scripts/install.sh; DESTDIR=, PREFIX=)
#   make uninstall  remove them (the configuration /etc/memmon/agent.toml is kept)
#   make deb      Debian packages in build/deb/: memmon-dkms (the module, built by DKMS) and
#                 memmon (the CLI, the unit) (scripts/make-deb.sh, docs/packaging.md)
#   make check-deb  install them in a trixie system as a user would, then boot Debian's kernel
#                 with the module DKMS built there (tests/packaging/dkms-install.sh)
#   make clean    remove the module and userspace build output (keeps the kernel)
#   make distclean  remove build/ entirely

SHELL := /bin/bash
TOP := $(CURDIR)
BUILD := $(TOP)/build
LINUX := $(BUILD)/linux
KDIR ?= $(LINUX)
LLVM ?= -19
JOBS ?= $(shell nproc)
KRELEASE ?= $(shell uname -r)
PREFIX ?= /usr/local
export PATH := $(HOME)/.cargo/bin:$(PATH)

KMAKE = $(MAKE) -C $(LINUX) LLVM=$(LLVM) -j$(JOBS)
MODULE_OUT := $(BUILD)/module
MODULE := $(MODULE_OUT)/memmon.ko
MODULE_SRCS := $(shell find $(TOP)/src -name '*.rs' -o -name '*.[ch]') $(TOP)/Kbuild
BZIMAGE := $(LINUX)/arch/x86/boot/bzImage
KERNEL_STAMP := $(LINUX)/.memmon-built
PATCH_STAMP := $(LINUX)/.memmon-patched
CONFIG := $(LINUX)/.config
TARBALL := $(BUILD)/dl/linux-source.tar.xz
USERSPACE_BIN := $(TOP)/userspace/target/x86_64-unknown-linux-gnu/release/memmon
PROGS_SRCS := $(wildcard $(TOP)/tests/progs/*.c)
PROGS := $(patsubst $(TOP)/tests/progs/%.c,$(BUILD)/progs/%,$(PROGS_SRCS))
# The test programs for an arm64 guest (scripts/stock/vm-run with an arm64 kernel): the same
# sources cross-built, static, with the host's aarch64 gcc; stackattack is x86_64 assembly.
# stacks-pac: stacks with return addresses signed by pointer authentication
# (-mbranch-protection=standard, as Debian's arm64 userspace is built).
PROGS_ARM64 := $(patsubst $(TOP)/tests/progs/%.c,$(BUILD)/progs-arm64/%,$(filter-out %/stackattack.c,$(PROGS_SRCS))) \
	$(BUILD)/progs-arm64/stacks-pac $(BUILD)/progs-arm64/chains-nofp

.PHONY: all deps kernel module userspace userspace-arm64 progs progs-arm64 run check bench clean distclean check-debug install uninstall check-gxx check-depth \
	deb check-deb \
	fleet check-fleet bench-fleet \
	check-stress kernel-debug kernel-noftrace module-debug module-noftrace

all: kernel module userspace progs

deps:
	@$(TOP)/scripts/deps.sh

$(TARBALL):
	@$(TOP)/scripts/deps.sh

# --- kernel -------------------------------------------------------------------------------
$(PATCH_STAMP): $(TARBALL) $(wildcard $(TOP)/patches/*.patch) $(TOP)/scripts/kernel-prepare.sh
	@$(TOP)/scripts/kernel-prepare.sh
	@touch $@

$(CONFIG): $(PATCH_STAMP) $(TOP)/scripts/kernel.config
	@echo "kernel: configuring (tinyconfig + scripts/kernel.config)"
	@$(KMAKE) -s tinyconfig >/dev/null
	@cd $(LINUX) && scripts/kconfig/merge_config.sh -m -O $(LINUX) .config $(TOP)/scripts/kernel.config >/dev/null
	@$(KMAKE) -s olddefconfig >/dev/null
	@$(TOP)/scripts/check-config.sh $(TOP)/scripts/kernel.config $@

$(KERNEL_STAMP): $(CONFIG) $(PATCH_STAMP)
	@echo "kernel: building bzImage and modules (about 6 minutes on 2 cores the first time)"
	@$(KMAKE) -s bzImage modules
	@touch $@

kernel: $(KERNEL_STAMP)

# --- module -------------------------------------------------------------------------------
ifeq ($(KDIR),$(LINUX))
$(MODULE): $(MODULE_SRCS) $(KERNEL_STAMP)
else
.PHONY: $(MODULE)
$(MODULE): $(MODULE_SRCS)
endif
	@mkdir -p $(MODULE_OUT)
	$(MAKE) -C $(KDIR) LLVM=$(LLVM) M=$(TOP) MO=$(MODULE_OUT) $(if $(CLIPPY),CLIPPY=1) modules

module: $(MODULE)

# --- userspace ----------------------------------------------------------------------------
# Static, so that it runs in the busybox guest as it does on the host.
userspace:
	@if [ -f $(TOP)/userspace/Cargo.toml ]; then \
		cd $(TOP)/userspace && export RUSTFLAGS="-C target-feature=+crt-static" && \
		cargo build --quiet --release --target x86_64-unknown-linux-gnu && \
		cargo build --quiet --release --target x86_64-unknown-linux-gnu -p memmon-unwind \
			--features fuzz --example unwind-fuzz && mkdir -p $(BUILD)/progs && \
		cp target/x86_64-unknown-linux-gnu/release/examples/unwind-fuzz $(BUILD)/progs/; fi

# The same tools for aarch64 (arm64 machines; scripts/vm-run's arm64 guest has this memmon on
# PATH): cross-built with rustup's aarch64-unknown-linux-gnu standard library (make deps adds
# it) and Debian's aarch64 gcc as linker, static. Not in `make` (nor make run): make
# check-kernels and scripts/stock/vm-run build it for an arm64 kernel.
AARCH64_ENV = CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
	CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar \
	RUSTFLAGS="-C target-feature=+crt-static"
userspace-arm64:
	@rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu || \
		{ echo "memmon: error: rustup's aarch64-unknown-linux-gnu is not installed (rustup target add aarch64-unknown-linux-gnu)" >&2; exit 1; }
	@cd $(TOP)/userspace && $(AARCH64_ENV) cargo build --quiet --release --target aarch64-unknown-linux-gnu

# memmon fleet's query engines are a long build: not in `userspace` (nor make run). Built
# for this machine (not crt-static), then linked beside memmon, which runs it.
FLEET_BIN := $(TOP)/userspace/target/fleet/memmon-fleet
fleet:
	@cd $(TOP)/userspace && cargo build --quiet --profile fleet -p memmon-fleet
	@mkdir -p $(dir $(USERSPACE_BIN)) && ln -sf $(FLEET_BIN) $(dir $(USERSPACE_BIN))memmon-fleet

check-fleet: deps
	@cd $(TOP)/userspace && cargo test --quiet -p memmon-fleet && \
		cargo clippy --quiet -p memmon-fleet --all-targets -- -D warnings && \
		cargo clippy --quiet -p memmon-fleet --no-default-features --all-targets -- -D warnings

bench-fleet: fleet
	@$(TOP)/scripts/bench-fleet.sh

# --- test programs (static C, run in the guest) -------------------------------------------
UNWIND_PROGS_STAMP := $(BUILD)/progs/.unwind-built
GLANCE_PROGS_STAMP := $(BUILD)/progs/glance/.built
RUNTIMES_PROGS_STAMP := $(BUILD)/progs/runtimes/.built
progs: $(PROGS) $(UNWIND_PROGS_STAMP) $(GLANCE_PROGS_STAMP) $(RUNTIMES_PROGS_STAMP)

# The unwinding test programs: built with and without frame pointers, against Debian's shared
# libraries, and in Rust (tests/unwind/build.sh).
$(UNWIND_PROGS_STAMP): $(wildcard $(TOP)/tests/unwind/*) $(TOP)/tests/progs/gofile.h
	@$(TOP)/tests/unwind/build.sh $(BUILD)/progs
	@touch $@

# The first-glance test programs: C against Debian's GLib and glibc, Rust static and
# dynamic, Go (tests/glance/build.sh).
$(GLANCE_PROGS_STAMP): $(wildcard $(TOP)/tests/glance/*)
	@$(TOP)/tests/glance/build.sh $(BUILD)/progs/glance
	@touch $@

# The runtimes' test programs: C++ with templates, an anonymous namespace and a lambda; Go
# forcing collections; a Node.js script (tests/runtimes/build.sh).
$(RUNTIMES_PROGS_STAMP): $(wildcard $(TOP)/tests/runtimes/*)
	@$(TOP)/tests/runtimes/build.sh $(BUILD)/progs/runtimes
	@touch $@

$(BUILD)/progs/%: $(TOP)/tests/progs/%.c $(wildcard $(TOP)/tests/progs/*.h)
	@mkdir -p $(dir $@)
	gcc -static -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -Wall -Werror -o $@ $< -lpthread

progs-arm64: $(PROGS_ARM64)

$(BUILD)/progs-arm64/stacks-pac: $(TOP)/tests/progs/stacks.c
	@mkdir -p $(dir $@)
	aarch64-linux-gnu-gcc -static -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -mbranch-protection=standard -Wall -Werror -o $@ $< -lpthread

# chains-nofp: tests/unwind/chains.c without frame pointers, shared, signing its return
# addresses, for Debian's arm64 glibc (tests/stock/06-unwind-arm64.sh adds it to the guest).
$(BUILD)/progs-arm64/chains-nofp: $(TOP)/tests/unwind/chains.c
	@mkdir -p $(dir $@)
	aarch64-linux-gnu-gcc -O2 -g -fomit-frame-pointer -mbranch-protection=standard -Wall -Werror -o $@ $< -lpthread

$(BUILD)/progs-arm64/%: $(TOP)/tests/progs/%.c $(wildcard $(TOP)/tests/progs/*.h)
	@mkdir -p $(dir $@)
	aarch64-linux-gnu-gcc -static -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -Wall -Werror -o $@ $< -lpthread

# --- demo and tests -----------------------------------------------------------------------
run: deps all
	@$(TOP)/scripts/demo.sh

check: deps all
	@$(TOP)/scripts/check.sh

bench: deps all
	@$(TOP)/scripts/bench.sh
	@$(TOP)/scripts/bench.sh --icount
	@cd $(TOP)/userspace && cargo bench --quiet -p memmon-agent --bench agent_cpu
	@cd $(TOP)/userspace && cargo bench --quiet -p memmon --bench html_page

# --- debug and no-ftrace kernels (make check-debug) -----------------------------------------
# build/linux-VARIANT: the same source and patches as build/linux, configured as tinyconfig +
# scripts/kernel.config + scripts/kernel-VARIANT.config, built at low priority; the module
# against it in build/module-VARIANT.
NICE ?= nice -n 10
DEBUG_BZIMAGE := $(BUILD)/linux-debug/arch/x86/boot/bzImage
DEBUG_MODULE := $(BUILD)/module-debug/memmon.ko
NOFTRACE_BZIMAGE := $(BUILD)/linux-noftrace/arch/x86/boot/bzImage
NOFTRACE_MODULE := $(BUILD)/module-noftrace/memmon.ko

define kernel_variant
$(BUILD)/linux-$(1)/.memmon-patched: $(TARBALL) $(wildcard $(TOP)/patches/*.patch) $(TOP)/scripts/kernel-prepare.sh
	@$(TOP)/scripts/kernel-prepare.sh $(BUILD)/linux-$(1)
	@touch $$@

$(BUILD)/linux-$(1)/.config: $(BUILD)/linux-$(1)/.memmon-patched $(TOP)/scripts/kernel.config \
		$(TOP)/scripts/kernel-$(1).config
	@echo "kernel-$(1): configuring (tinyconfig + scripts/kernel.config + scripts/kernel-$(1).config)"
	@$(MAKE) -C $(BUILD)/linux-$(1) LLVM=$(LLVM) -s tinyconfig >/dev/null
	@cd $(BUILD)/linux-$(1) && scripts/kconfig/merge_config.sh -m -O $(BUILD)/linux-$(1) .config \
		$(TOP)/scripts/kernel.config $(TOP)/scripts/kernel-$(1).config >/dev/null
	@$(MAKE) -C $(BUILD)/linux-$(1) LLVM=$(LLVM) -s olddefconfig >/dev/null
	@$(TOP)/scripts/check-config.sh $(TOP)/scripts/kernel.config $(TOP)/scripts/kernel-$(1).config $$@ \
		|| { mv $$@ $$@.rejected; echo "kernel-$(1): see $$@.rejected"; exit 1; }

$(BUILD)/linux-$(1)/.memmon-built: $(BUILD)/linux-$(1)/.config $(BUILD)/linux-$(1)/.memmon-patched
	@echo "kernel-$(1): building bzImage and modules (nice; see make check-debug in README for times)"
	@$(NICE) $(MAKE) -C $(BUILD)/linux-$(1) LLVM=$(LLVM) -j$(JOBS) -s bzImage modules
	@touch $$@

kernel-$(1): $(BUILD)/linux-$(1)/.memmon-built

$(BUILD)/module-$(1)/memmon.ko: $(MODULE_SRCS) $(BUILD)/linux-$(1)/.memmon-built
	@mkdir -p $(BUILD)/module-$(1)
	$(NICE) $(MAKE) -C $(BUILD)/linux-$(1) LLVM=$(LLVM) M=$(TOP) MO=$(BUILD)/module-$(1) modules

module-$(1): $(BUILD)/module-$(1)/memmon.ko
endef
$(eval $(call kernel_variant,debug))
$(eval $(call kernel_variant,noftrace))

check-debug: deps userspace progs $(DEBUG_MODULE) $(NOFTRACE_MODULE)
	@$(TOP)/scripts/check-debug.sh

# DEBUG=1: on the debug kernel (MEMMON_KERNEL/MEMMON_MODULE/MEMMON_VM_TIMEOUT are read by
# scripts/vm-run; the guest's init scans for kmemleak leaks after the command there)
check-gxx: deps all
	@MEMMON_CHECK_VM_ONLY=1 MEMMON_CHECK_SCENARIOS=$(TOP)/tests/defaults/gxx.sh $(TOP)/scripts/check.sh

check-depth: deps all
	@MEMMON_CHECK_VM_ONLY=1 MEMMON_CHECK_SCENARIOS=$(TOP)/tests/defaults/depth.sh $(TOP)/scripts/check.sh

check-stress: deps all $(if $(DEBUG),$(DEBUG_MODULE))
	@$(if $(DEBUG),MEMMON_KERNEL=$(DEBUG_BZIMAGE) MEMMON_MODULE=$(DEBUG_MODULE) MEMMON_CHECK_DEBUG=1 \
		MEMMON_VM_TIMEOUT=$${MEMMON_VM_TIMEOUT:-3000}) $(TOP)/scripts/check-stress.sh

install uninstall:
	@KRELEASE=$(KRELEASE) $(if $(filter command line,$(origin KDIR)),KDIR=$(KDIR)) \
		DESTDIR=$(DESTDIR) PREFIX=$(PREFIX) $(TOP)/scripts/install.sh $@

# Debian packages into build/deb/ (docs/packaging.md): memmon-dkms_VERSION_all.deb (the
# module's source, built by DKMS for each kernel with Rust) and memmon_VERSION_amd64.deb (the
# static CLI, the unit, /etc/memmon/agent.toml). make check-deb installs them in a trixie
# system of the kernel's distribution (mmdebstrap, build/deb/root-DIST) as a user would, then boots Debian's kernel with
# the module DKMS built there (tests/packaging/dkms-install.sh).
deb: userspace
	@$(TOP)/scripts/make-deb.sh

# The kernel: make check's (scripts/stock/choose), or MEMMON_DEB_KREL=RELEASE.
check-deb: deb
	@krel=$${MEMMON_DEB_KREL:-$$($(TOP)/scripts/stock/choose)} && \
	{ test -f $(BUILD)/stock/kernels/$$krel/image/usr/lib/modules/$$krel/vmlinuz || \
		$(MAKE) --no-print-directory kernel-stock STOCK_KREL=$$krel; } && \
	MEMMON_DEB_KREL=$$krel $(TOP)/tests/packaging/dkms-install.sh

clean:
	rm -rf $(MODULE_OUT) $(BUILD)/progs $(BUILD)/vm $(TOP)/userspace/target

distclean:
	rm -rf $(BUILD) $(TOP)/userspace/target

# --- Debian's stock kernel (make module-stock, make check-stock): scripts/stock.mk ----------
-include $(TOP)/scripts/stock.mk

# make check runs the quick part of make check-stock: scripts/check.sh prepares Debian's
# kernel and builds the module for it (make module-stock) in the background, at low
# priority, while the other items run, and waits for it before that part.
