# SPDX-License-Identifier: GPL-2.0
#
# allocprof: memory allocation profiling for Linux 6.12 LTS.
#
#   make            build, boot in QEMU, print the 20 largest allocation sites
#   make test       host tests, kernel build, KUnit and selftests in the VM
#   make test-debug the same on a KASAN + lockdep + PREEMPT kernel (BASE=rust)
#   make test-configs  the suite on the other configs: UP, Rust without the
#                   profiler, NUMA, PREEMPT_RT and Debian's distro config
#   make fuzz       the debug kernel under random operations on every control
#                   surface (SEED=n or SEEDS="a b ...", FUZZ_S=seconds each)
#   make deb        Debian 13 packages of this kernel (linux-image, linux-headers)
#   make test-install  those packages installed on a Debian 13 disk, booted
#                   through GRUB, checked, removed again
#   make test-fleet three Debian 13 machines with those packages, Debian's
#                   node_exporter and the allocinfo timer, scraped by a real
#                   Prometheus; PromQL checked against each machine
#   make test-real  Debian 13 under systemd on Debian's config with real
#                   modules: workloads, module churn, the rows judged after
#   make test-upstream-suites  upstream's allocator tests (KUnit, test
#                   modules, mm selftests) from the pristine source, on
#                   ours and on upstream
#   make refresh    edits of upstream files in the tree (CACHE_DIR/rust/src)
#                   into the base's diffs (Documentation/allocprof/development.md)
#   make bench-tool the allocinfo tool on 1M-row inputs: time and memory of
#                   top, diff and export (no kernel is built)
#   make series     the series for the base, generated from the repo
#                   (tools/testing/allocprof/linux-6.12/series), checked, and
#                   every prefix built
#
# BASE=rust (default) builds the Rust core; BASE=upstream the pristine 6.12
# profiler with only our tests on top.  make test runs the suite on both,
# make test BASE=x on one.
# Everything downloaded or built lives under CACHE_DIR, outside the clone.

CACHE_DIR ?= $(HOME)/.cache/allocprof
BASE      ?= rust
# The toolchain: LLVM=$(LLVM_SUFFIX) for every kernel make, and its libclang.
LLVM_SUFFIX ?= -19
JOBS      ?= $(shell nproc)
APPEND    ?=
CMD       ?=
EXTRA     ?=
ACCEL     ?= auto
BOOT_TIMEOUT ?= 300
# KASAN and lockdep under TCG are several times slower, and the debug kernel
# boots on two nodes: its main boot (KUnit and every selftest) took 900 s and
# more beside two other makes on 2 cores.  The kernel's hang detectors
# catch a hang long before this.
DEBUG_BOOT_TIMEOUT ?= 1800

export PATH := $(HOME)/.cargo/bin:$(PATH)
export LIBCLANG_PATH ?= /usr/lib/llvm$(LLVM_SUFFIX)/lib

REPO     := $(CURDIR)
H        := $(REPO)/tools/testing/allocprof
# The base: the pristine tree named once (BASEDIR/base.conf) and the map
# of the repo's files to the series (BASEDIR/series).
BASEDIR  := $(H)/linux-6.12
include $(BASEDIR)/base.conf
export BASEDIR PRISTINE
PRISTINE := $(CACHE_DIR)/src/$(BASE_DIR)
# VARIANT=x: another build of BASE's tree with tools/testing/allocprof/kernel-x.config last;
# VARIANT=x+y: with kernel-x.config, then kernel-y.config.  Every target also
# takes the names make test prints and TEST_TARGETS lists: BASE=rust-conly is
# BASE=rust VARIANT=conly, BASE=upstream-noprof+prod is BASE=upstream
# VARIANT=noprof+prod.
VARIANT  ?=
TARGET   := $(BASE)
# make test BASE=x (or VARIANT=y) runs the suite on that one target only.
ONE_TARGET := $(filter command line,$(origin BASE) $(origin VARIANT))
ifneq ($(findstring -,$(BASE)),)
ifneq ($(VARIANT),)
$(error BASE=$(BASE) names a variant already; drop VARIANT=$(VARIANT))
endif
override VARIANT := $(patsubst $(firstword $(subst -, ,$(BASE)))-%,%,$(BASE))
override BASE    := $(firstword $(subst -, ,$(BASE)))
else ifneq ($(VARIANT),)
TARGET   := $(BASE)-$(VARIANT)
endif
ifeq ($(filter rust upstream,$(BASE)),)
$(error unknown BASE=$(BASE): rust or upstream, optionally -VARIANT (tools/testing/allocprof/kernel-VARIANT.config))
endif
$(foreach v,$(subst +, ,$(VARIANT)),$(if $(wildcard $(H)/kernel-$(v).config),,$(error VARIANT $(v): no tools/testing/allocprof/kernel-$(v).config)))
W        := $(CACHE_DIR)/$(BASE)$(if $(VARIANT),-$(VARIANT))
SRC      := $(CACHE_DIR)/$(BASE)/src
OUT      := $(W)/build
STDIR    := tools/testing/selftests/alloc_tag

FRAGS    := $(H)/kernel.config $(SRC)/$(STDIR)/config $(wildcard $(H)/kernel-$(BASE).config) \
	    $(foreach v,$(subst +, ,$(VARIANT)),$(H)/kernel-$(v).config)
# VARIANT=distro starts from Debian's own config, not from tinyconfig and the
# test config (tools/testing/allocprof/kernel-distro.config says what changes and why).
DISTRO_CONFIG ?= /usr/src/linux-config-6.12/config.amd64_none_amd64.xz
ifeq ($(VARIANT),distro)
FRAGS    := $(H)/kernel-distro.config $(SRC)/$(STDIR)/config
export BASE_CONFIG := $(DISTRO_CONFIG)
export LSMOD_LIST := $(H)/distro.lsmod
endif
# VARIANT=real (make test-real): the same with a realistic module set as =m
# (tools/testing/allocprof/real.lsmod) and the root disk and filesystem built in
# (tools/testing/allocprof/kernel-real.config).
ifeq ($(VARIANT),real)
FRAGS    := $(H)/kernel-distro.config $(SRC)/$(STDIR)/config $(H)/kernel-real.config
export BASE_CONFIG := $(DISTRO_CONFIG)
export LSMOD_LIST := $(H)/real.lsmod
endif
PHASE    := $(H)/phase

comma    := ,

export CACHE_DIR BASE REPO SRC OUT W ACCEL BOOT_TIMEOUT APPEND CMD EXTRA LLVM_SUFFIX

.PHONY: all run test setup pristine tree config kernel modules selftests \
	build host-test boot clean-cache help rustfmtcheck rustfmt clippy clippy-one series series-check bench bench-tool test-debug \
	test-configs where fuzz test-real test-upstream-suites refresh deb tool-deb test-install test-fleet

all: run

help:
	@sed -n '3,/^$$/p' Makefile | sed -n 's/^# \{0,1\}//p'

setup:
	@$(PHASE) setup $(H)/setup.sh

pristine: setup
	@$(PHASE) source $(H)/extract.sh $(BASEDIR)/base.conf $(CACHE_DIR)/src

# The tree a BASE builds: the pristine source with the repo's files linked
# in at their paths and the base's diffs applied (prepare-tree.sh).  Every
# build target makes it first: an edit in the repo is built by the next make.
tree: pristine
	@$(PHASE) patches env DISCARD=$(DISCARD) $(H)/prepare-tree.sh $(PRISTINE) $(SRC) $(REPO) $(BASE) $(BASEDIR)

# Edits of upstream files in the tree (CACHE_DIR/rust/src) into the base's
# diffs: each to the last patch that changes the file, or to PATCH=slug;
# FILES=path... an upstream file no patch changes yet (with PATCH=).
# (tools/testing/allocprof/refresh.py)
DISCARD ?= 0
refresh: pristine
	@python3 $(H)/refresh.py $(if $(PATCH),--patch $(PATCH)) $(BASEDIR) $(PRISTINE) \
		$(CACHE_DIR)/rust/src $(BASE_TARBALL) $(BASE_DIR) $(FILES)

config: tree
	@$(PHASE) config $(H)/configure.sh $(SRC) $(OUT) $(FRAGS)

kernel: config
	@$(PHASE) kernel env JOBS=$(JOBS) $(H)/build-kernel.sh

# Test modules are built in a copy per build tree: a module built for one
# kernel (say a VARIANT sharing this source tree) must not be loaded into
# another.
TMODS := $(W)/test_modules
modules: kernel
	@mkdir -p $(TMODS)
	@for f in $(SRC)/$(STDIR)/test_modules/*.[ch] $(SRC)/$(STDIR)/test_modules/*.rs $(SRC)/$(STDIR)/test_modules/Makefile; do \
		cmp -s $$f $(TMODS)/$$(basename $$f) || cp $$f $(TMODS)/; done
	@$(PHASE) test-modules $(MAKE) -s -C $(OUT) LLVM=$(LLVM_SUFFIX) M=$(TMODS) modules

selftests: tree
	@mkdir -p $(W)/selftests
	@$(PHASE) selftests $(MAKE) -s -C $(SRC)/$(STDIR) OUTPUT=$(W)/selftests \
		CC=gcc LDFLAGS=-static all

build: kernel modules selftests

run: build
	@$(H)/vm.sh run

host-test:
	@$(PHASE) host-test $(H)/host-test.sh

# One test boot by hand: make boot NAME=x BOOTARGS='...' TESTS=a,b
# The NUMA kernels boot on two QEMU nodes (tools/testing/allocprof/vm.sh), as make test boots them.
NODES_TARGETS := rust-numa rust-distro rust-debug
boot: export QEMU_NODES = $(if $(filter $(TARGET),$(NODES_TARGETS)),2,1)
boot: build
	@$(H)/vm.sh initramfs
	@$(H)/vm.sh boot "$(or $(NAME),manual)" "$(BOOTARGS) $(APPEND)" "$(TESTS)"
	@python3 $(H)/ktap.py $(W)/logs/$(or $(NAME),manual).log --name $(or $(NAME),manual) \
		--expect "$(TESTS)" $(if $(BOOTARGS),,--kunit)

# The configurations of make test, and the larger set of make test-configs
# (README: which run where, and why).
TEST_TARGETS    := rust upstream rust-conly rust-tightbits rust-up rust-noprof rust-numa rust-rt
CONFIGS_TARGETS := rust-up rust-noprof rust-numa rust-rt rust-distro

test:
	@TEST_BASES="$(if $(ONE_TARGET),$(TARGET),$(TEST_TARGETS))" $(H)/test.sh

# One build and boot per configuration people run (tools/testing/allocprof/kernel-*.config),
# each with the suite; CONFIGS=a,b runs a subset (names as in CONFIGS_TARGETS).
test-configs:
	@HOST_TESTS=0 TEST_BASES="$(if $(CONFIGS),$(subst $(comma), ,$(CONFIGS)),$(CONFIGS_TARGETS))" $(H)/test.sh

# A Debian 13 userspace (mmdebstrap, cached in CACHE_DIR) under systemd and
# udev on the rust-real kernel (Debian's config with a realistic module set),
# booted from a virtio disk: workloads, module unload/reload, sysctl flips,
# and the kernel log and /proc/allocinfo judged after (tools/testing/allocprof/real.sh,
# Documentation/allocprof/test-real.md).  Not part of make test.
test-real:
	@SETUP_REAL=1 $(PHASE) setup $(H)/setup.sh
	@$(H)/real.sh

# Upstream's own allocator tests of 6.12 (slub_kunit, test_meminit,
# test_free_pages, percpu_test, test_vmalloc, dmapool_test and mm
# selftests), built from the pristine source at test time, on rust (page_ext
# and compressed), upstream and rust-debug, each built with
# tools/testing/allocprof/kernel-suites.config: ours must pass what upstream passes
# (tools/testing/allocprof/upstream-suites.sh, Documentation/allocprof/test-real.md).  Not part of make test.
test-upstream-suites: pristine
	@$(H)/upstream-suites.sh

# Debian 13 packages of this kernel (linux-image and linux-headers
# 6.12.118-allocprof-amd64), built in a Debian 13 root with Debian 13's
# toolchain from Debian 13's config with tools/testing/allocprof/linux-6.12/debian.config
# merged (tools/testing/allocprof/debian/build-deb.sh, Documentation/allocprof/install.md).
# Output: CACHE_DIR/deb/packages.  Not part of make test.
deb: tree
	@SETUP_DEB=1 $(PHASE) setup $(H)/setup.sh
	@$(PHASE) deb env JOBS=$(JOBS) $(H)/debian/build-deb.sh
	@$(PHASE) tool-deb $(H)/debian/build-tool-deb.sh $${DEB_OUT:-$(CACHE_DIR)/deb/packages}

# The tool's package alone (allocinfo_VERSION_amd64.deb, beside the kernel's;
# make deb builds it too): man pages, completions, allocinfo-textfile.timer
# (tools/testing/allocprof/debian/build-tool-deb.sh).
tool-deb:
	@SETUP_DEB=1 $(PHASE) setup $(H)/setup.sh
	@$(PHASE) tool-deb $(H)/debian/build-tool-deb.sh $${DEB_OUT:-$(CACHE_DIR)/deb/packages}

# Those packages on a Debian 13 disk (mmdebstrap, cached), booted through
# the firmware and GRUB: installed with dpkg -i, checked under our kernel
# (systemd, root by UUID, profiling on, the tool, a DKMS module's rows),
# removed, and Debian's kernel back (tools/testing/allocprof/debian/install.sh).
# Not part of make test.
test-install: deb
	@SETUP_INSTALL=1 $(PHASE) setup $(H)/setup.sh
	@$(H)/debian/install.sh

# A fleet of three Debian 13 machines (the install test's disk with those
# packages, Debian's prometheus-node-exporter and the allocinfo timer), one
# with a module leaking at a known rate, scraped by Debian's Prometheus run
# on this host; PromQL (tools/allocinfo/contrib/prometheus's rules) checked
# against each machine's own /proc/allocinfo
# (tools/testing/allocprof/debian/fleet.sh, Documentation/allocprof/fleet.md).
# FLEET_TIMEOUT limits the run (seconds).  Not part of make test.
test-fleet: deb
	@SETUP_FLEET=1 $(PHASE) setup $(H)/setup.sh
	@$(H)/debian/fleet.sh

# The suite on the Rust core under KASAN, lockdep, DEBUG_ATOMIC_SLEEP,
# PREEMPT and MEM_ALLOC_PROFILING_DEBUG (tools/testing/allocprof/kernel-debug.config); any
# sanitizer report fails it.
test-debug:
	@TEST_BASES=rust-debug BOOT_TIMEOUT=$(DEBUG_BOOT_TIMEOUT) $(H)/test.sh

# Random operations on every control surface at once, on the test-debug
# kernel (tools/testing/allocprof/fuzz.sh): one boot per seed, FUZZ_S seconds each;
# FUZZ_X=internal,... leaves classes of operations out (triage).
SEEDS  ?= 1 2 3 4 5
FUZZ_S ?= 600
FUZZ_X ?=
# FUZZ_HOTPLUG=1: boot with one CPU of two up, which the driver takes up and down.
FUZZ_HOTPLUG ?= 0
# FUZZ_TARGET=rust-numa: the NUMA test kernel, whose vm.mem_profiling takes
# the driver's writes (the debug kernel's sysctl is read-only).
FUZZ_TARGET ?= rust-debug
fuzz:
	@FUZZ_SEEDS="$(or $(SEED),$(SEEDS))" FUZZ_S=$(FUZZ_S) FUZZ_X=$(FUZZ_X) FUZZ_HOTPLUG=$(FUZZ_HOTPLUG) \
		FUZZ_TARGET=$(FUZZ_TARGET) $(H)/fuzz.sh

# Style checks of the Rust core in its kernel tree (read-only: rustfmt is
# only asked to check, so the hard-linked pristine tree is never written).
# The kernel's rustfmtcheck starts from the tree's regular files only (ours
# are symlinks there) and reaches ours through their mod declarations; the
# ones nothing declares (the selftests' Rust module) are checked where they
# are, with the rest of ours.
rustfmtcheck: tree
	@$(MAKE) -s -C $(SRC) O=$(OUT) LLVM=$(LLVM_SUFFIX) rustfmtcheck && \
		cd $(REPO) && rustfmt --check --config-path $(PRISTINE)/.rustfmt.toml --edition 2021 \
		$(RUST_OURS) && echo "rustfmtcheck: clean"

# Overhead side by side with upstream C, in one run: writes tools/testing/allocprof/bench/RESULTS.md.
bench: setup pristine
	@SETUP_BENCH=1 $(PHASE) setup $(H)/setup.sh
	@$(PHASE) bench $(REPO)/tools/testing/allocprof/bench/run.sh

# The allocinfo tool on large generated inputs (bench/allocinfo-bench.sh): a table of wall time,
# CPU time and peak memory for bench/RESULTS.md. ROWS, SEED and REPEAT pass through.
bench-tool:
	@SETUP_BENCH_TOOL=1 $(PHASE) setup $(H)/setup.sh
	@$(PHASE) bench-tool $(H)/bench/allocinfo-bench.sh

# The patch stack as a numbered series with a cover letter, checked (git am
# on pristine 6.12.118, the tested tree, checkpatch --strict, Fixes: tags),
# then every prefix built in order (SERIES_BUILD=0 skips that: it takes 30
# to 60 minutes on 2 cores).
SERIES_BUILD ?= 1
series: tree
	@$(PHASE) series $(H)/series.sh
	@if [ "$(SERIES_BUILD)" != 0 ]; then \
		$(PHASE) series-check env FRAGS="$(FRAGS)" JOBS=$(JOBS) $(H)/series-check.sh; fi

# Only the prefix builds of the series make series last made (PREFIXES=FROM-TO,
# KEEP_GOING=1: see tools/testing/allocprof/series-check.sh).
series-check: setup
	@$(PHASE) series-check env FRAGS="$(FRAGS)" JOBS=$(JOBS) $(H)/series-check.sh

# Format the Rust files of ours in place, with the kernel's rustfmt.toml.
RUST_OURS = $$(git -C $(REPO) ls-files 'rust/*.rs' 'tools/testing/selftests/alloc_tag/*.rs')
rustfmt: pristine
	@rustfmt --config-path $(PRISTINE)/.rustfmt.toml --edition 2021 \
		$(RUST_OURS)

# Clippy on the kernel crate as this BASE/VARIANT builds it, then as each of
# CLIPPY_VARIANTS does (kernel-lean.config: every optional part of the core
# off, where an item only an absent part uses shows as dead code).
CLIPPY_VARIANTS ?= lean
clippy: clippy-one
	@for v in $(CLIPPY_VARIANTS); do \
		$(MAKE) -s --no-print-directory clippy-one VARIANT=$$v || exit 1; done

clippy-one: config
	@rm -f $(OUT)/rust/kernel.o; \
	$(MAKE) -s -C $(SRC) O=$(OUT) LLVM=$(LLVM_SUFFIX) CLIPPY=1 -j$(JOBS) rust/kernel.o 2>&1 | \
		tee $(W)/clippy.log | grep -E '^(warning|error)' ; \
	n=$$(grep -cE '^(warning|error)' $(W)/clippy.log); \
	echo "clippy ($(TARGET)): $$n warnings"; [ $$n -eq 0 ]

# Which tree a BASE/VARIANT names: make where BASE=rust-conly
where:
	@echo "BASE=$(BASE) VARIANT=$(VARIANT) target=$(TARGET) tree=$(W)"

clean-cache:
	rm -rf $(W)
