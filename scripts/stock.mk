# Debian's stock kernel 7.3.4+deb13-amd64 (trixie-backports 7.3.4-1~bpo13+1): build modules
# for it and boot it, with no kernel patch. Included by the Makefile. Everything lives in
# build/stock/; see scripts/stock/README.md.
#
#   make kernel-stock   download the pinned, checksummed packages (scripts/stock/pins.txt):
#                       Debian's kernel, modules and headers, and trixie's toolchain (gcc-14,
#                       rustc 1.85.1, bindgen 0.71.1, pahole 1.30) unpacked into a build root;
#                       prepare build/stock/linux (linux-source-7.3, Debian's .config,
#                       modules_prepare in that root), guarded (config and Rust exports)
#   make module-stock   memmon.ko for that kernel in build/module-stock/
#                       (STOCK_MODULE_DIR=DIR STOCK_MODULE_OUT=DIR: another module's Kbuild
#                       directory, e.g. tests/stock/hello, and where its .ko goes)
#   make bench-stock    scripts/bench.sh --stock: make bench's set-ups on that kernel
#   make check-stock    boot Debian's vmlinuz in QEMU (scripts/stock/vm-run) and run the
#                       scenarios listed in tests/stock/scenarios.txt; ends "N passed, N failed"

STOCK_LINUX := $(BUILD)/stock/linux
STOCK_PREPARED := $(STOCK_LINUX)/.stock-prepared
STOCK_MODULE_DIR ?= $(TOP)
STOCK_MODULE_OUT ?= $(BUILD)/module-stock

.PHONY: kernel-stock module-stock check-stock bench-stock

$(STOCK_PREPARED): $(TARBALL) $(TOP)/scripts/stock/pins.txt $(TOP)/scripts/stock/prepare
	@$(TOP)/scripts/stock/prepare

kernel-stock: $(TARBALL)
	@$(TOP)/scripts/stock/prepare

module-stock: $(STOCK_PREPARED)
	@$(TOP)/scripts/stock/build-module $(STOCK_MODULE_DIR) $(STOCK_MODULE_OUT) $(if $(V),V=$(V))

check-stock: $(STOCK_PREPARED) progs
	@$(TOP)/scripts/stock/check

# make bench-stock: scripts/bench.sh's set-ups in one boot of Debian's kernel (the kprobe
# fault source against ftrace's exceptions:page_fault_user), timed; about 6 minutes.
bench-stock: $(STOCK_PREPARED) module-stock userspace progs
	@$(TOP)/scripts/bench.sh --stock
