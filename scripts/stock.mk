# Debian's kernels: build modules for them and boot them, with no kernel patch. Included by
# the Makefile. Everything lives in build/stock/; see scripts/stock/README.md. The kernel is
# make check's (scripts/stock/choose: the verified one of scripts/stock/kernels.txt while the
# archive has it, else trixie-backports' newest) unless STOCK_KREL=RELEASE names another.
#
#   make kernel-stock   resolve the kernel against the archive's current index
#                       (scripts/stock/resolve): Debian's kernel, modules, headers and source,
#                       and the toolchain its .config names, unpacked into a build root;
#                       prepare build/stock/kernels/RELEASE/tree (Debian's .config,
#                       modules_prepare in that root by scripts/kernel-rust-tree), guarded
#                       (toolchain, config and Rust exports)
#   make module-stock   memmon.ko for that kernel in build/module-stock/ (STOCK_KREL=RELEASE:
#                       build/stock/kernels/RELEASE/module/; STOCK_MODULE_DIR=DIR
#                       STOCK_MODULE_OUT=DIR: another module's Kbuild directory, e.g.
#                       tests/stock/hello, and where its .ko goes)
#   make bench-stock    scripts/bench.sh --stock: make bench's set-ups on that kernel
#   make check-stock    boot that kernel in QEMU (scripts/stock/vm-run) and run the
#                       scenarios listed in tests/stock/scenarios.txt; ends "N passed, N failed"
#   make check-kernels  every kernel of the matrix (scripts/stock/choose --matrix: the newest
#                       of trixie-backports and of sid), each prepared and checked with the
#                       scenarios tagged "kernels" (scripts/stock/check-kernels)

STOCK_PREPARED := $(BUILD)/stock/current/tree/.stock-prepared
STOCK_MODULE_DIR ?= $(TOP)
STOCK_MODULE_OUT ?= $(if $(STOCK_KREL),$(BUILD)/stock/kernels/$(STOCK_KREL)/module,$(BUILD)/module-stock)

.PHONY: kernel-stock module-stock check-stock bench-stock check-kernels

$(STOCK_PREPARED): $(TOP)/scripts/stock/kernels.txt $(TOP)/scripts/stock/prepare $(TOP)/scripts/kernel-rust-tree
	@$(TOP)/scripts/stock/prepare

kernel-stock:
	@$(TOP)/scripts/stock/prepare $(STOCK_KREL)

module-stock: $(if $(STOCK_KREL),kernel-stock,$(STOCK_PREPARED))
	@$(TOP)/scripts/stock/build-module $(STOCK_MODULE_DIR) $(STOCK_MODULE_OUT) $(if $(V),V=$(V))

check-stock: $(if $(STOCK_KREL),kernel-stock,$(STOCK_PREPARED)) progs userspace
	@$(TOP)/scripts/stock/check

check-kernels: progs userspace deb
	@$(TOP)/scripts/stock/check-kernels

# make bench-stock: scripts/bench.sh's set-ups in one boot of Debian's kernel (the kprobe
# fault source against ftrace's exceptions:page_fault_user), timed; about 6 minutes.
bench-stock: $(if $(STOCK_KREL),kernel-stock,$(STOCK_PREPARED)) module-stock userspace progs
	@$(TOP)/scripts/bench.sh --stock
