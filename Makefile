# SPDX-License-Identifier: MIT
#
# The one top-level make of agile.  Userspace parts build here; the kernel
# module builds once per guest kernel (6.1 = Debian 12, 6.12 = Debian 13)
# through tools/build-kmod.sh, and its tests run inside those kernels
# booted under QEMU (tools/vm/).  Everything generated lives in build/.
#
#   make          build modules, selftests and tools
#   make run      the demo, against /dev/agile or in the 6.1 guest
#   make check    lint, build, every test in every guest; "N passed, N failed"
#   make debug-modules  the debug guest kernel (built once from linux-source,
#                 cached) and the module for it
#   make lint     clang-format --check on the tree; checkpatch --strict,
#                 sparse and W=1 on the module
#   make format   clang-format every C source and header in place
#   make bench    agile-bench: every benchmark beside its baseline; a CSV,
#                 a markdown report and PNG plots (build/tools/bench-report)
#   make check-gpu  GPU EUs' bring-up sequence on a real GPU, the EU tests on
#                 GPU EUs, agile-bench gpu; a SKIP line without a GPU
#   make gpu-bundle  the same, prebuilt, in build/gpu-bundle/ (+ .tar.gz):
#                 its run.sh runs them where there is a GPU driver and no
#                 make (docs/gpu.md, "The GPU bundle")
#   make check-gpu-bundle  the bundle's run.sh against the stand-in GPU
#                 runtime: passes, and fails when a step fails
#   make mutate   break agile on purpose (tools/mutants.txt): the tests must fail
#   make fuzz     agile's fuzzer, trinity and stress-ng --dev in a guest for
#                 FUZZ_MINUTES (default 10; FUZZ_KERNEL, default 6.1)
#   make install  libagile, libagile-mpi, headers, agile.pc, tools, GPU code
#                 objects, the udev rule and modprobe.d file into DESTDIR +
#                 PREFIX (default /usr/local; tools/install.sh); a part whose
#                 dependencies are missing (mpicc, hipcc, nvcc, libclang,
#                 oneTBB, OpenCL) is skipped and named; make uninstall
#                 removes them
#   make install-dkms  the module's source and dkms.conf into
#                 DESTDIR/usr/src/agile-VERSION/ (then dkms add/build/install;
#                 the module then loads on the first open of /dev/agile);
#                 make uninstall-dkms removes it
#   make deb      the Debian packages (debian/) into build/deb/; installs
#                 only their build dependencies (tools/deps.sh --deb)
#   make deb-check  build them, lintian them and use the unpacked ones
#                 (tools/test-deb.sh)

KERNELS ?= 6.1 6.12
FUZZ_MINUTES ?= 10
FUZZ_KERNEL ?= 6.1
# Guest kernels built here with KASAN, lockdep, kmemleak, UBSAN and KFENCE
# (tools/vm/debug.config); make check runs the kmod selftests in them too.
DEBUG_KERNELS ?= 6.1-debug
# Jobs of the sub-makes whose Makefiles build in parallel safely (the
# library, the test programs, the tools; kbuild takes its own): one per
# CPU.  This Makefile itself runs its steps one after the other: several
# of them ask libagile's Makefile for the same library.
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
BUILD := $(CURDIR)/build
CC ?= gcc
TOOL_CFLAGS := -O2 -g -Wall -Wextra -Werror -pthread -I$(CURDIR)/uapi
export AGILE_CACHE ?= $(HOME)/.cache/agile
# libagile's version: the library's, the module's DKMS package's, debian/'s.
VERSION := $(shell sed -n 's/^VERSION := //p' libagile/Makefile)
# make install's places (tools/install.sh has the defaults of the others:
# BINDIR LIBDIR INCLUDEDIR MANDIR UDEVRULESDIR MODPROBEDIR).
PREFIX ?= /usr/local
DATADIR ?= $(PREFIX)/share
DESTDIR ?=
INSTALL_VARS := DESTDIR PREFIX BINDIR LIBDIR INCLUDEDIR DATADIR MANDIR \
	UDEVRULESDIR MODPROBEDIR
INSTALL_ENV = $(foreach v,$(INSTALL_VARS),$(v)="$($(v))") VERSION=$(VERSION) \
	BUILD=$(BUILD)
DKMS_SRC := $(BUILD)/dkms/agile-$(VERSION)
# libagile's build folder O, its variants' libagile.a (LIB_static) and
# flags (CFLAGS_BASE, CFLAGS_<variant>, LDLIBS_<variant>): agilectl's.
include mk/flags.mk

.PHONY: all deps kernels kernel-src modules debug-modules selftests lib gpu check-gpu \
	gpu-bundle check-gpu-bundle \
	tools lint format check fuzz run bench mutate clean \
	install uninstall dkms-src install-dkms uninstall-dkms deb deb-check

all: modules selftests lib tools

deps:
	@tools/deps.sh

kernels: deps
	@for k in $(KERNELS); do tools/vm/kernels.sh $$k || exit 1; done

kernel-src: deps
	@tools/extract-kernel-src.sh

modules: kernels
	@for k in $(KERNELS); do tools/build-kmod.sh $$k || exit 1; done

# The first call builds the debug kernel (about a quarter of an hour on two
# cores); later ones find it in $(AGILE_CACHE)/kernels/.
debug-modules: deps
	@for k in $(DEBUG_KERNELS); do \
		tools/vm/kernels.sh $$k && tools/build-kmod.sh $$k || exit 1; \
	done

# Both suites run in the guests, so both are linked statically.
selftests: kernel-src
	@$(MAKE) --no-print-directory -j$(JOBS) -C selftests/kmod OUT=$(BUILD)/selftests/kmod
	@$(MAKE) --no-print-directory -j$(JOBS) -C libagile guest-tests

# libagile, and libagile-mpi (coll among machines; needs mpicc).
lib:
	@$(MAKE) --no-print-directory -j$(JOBS) -C libagile lib mpi

# The persistent GPU kernel for every HIP and CUDA target: the code objects.
gpu: deps
	@$(MAKE) --no-print-directory -C libagile gpu

# The EU tests on GPU EUs (AGILE_EU_POOL=gpu); one SKIP line, exit 0,
# where there is no usable GPU.
check-gpu: deps
	@$(MAKE) --no-print-directory -C tools/agile-bench $(BUILD)/tools/agile-bench
	@$(MAKE) --no-print-directory -j$(JOBS) -C libagile check-gpu \
		AGILE_BENCH=$(BUILD)/tools/agile-bench

# check-gpu's programs, code objects and steps in one folder to carry to a
# machine with a GPU: build/gpu-bundle/run.sh there (tools/gpu-bundle.sh).
gpu-bundle: deps
	@$(MAKE) --no-print-directory -C tools/agile-bench $(BUILD)/tools/agile-bench
	@$(MAKE) --no-print-directory -C libagile gpu-bundle \
		AGILE_BENCH=$(BUILD)/tools/agile-bench

check-gpu-bundle: gpu-bundle
	@tools/test-gpu-bundle.sh $(BUILD)/gpu-bundle

# Tools go into the guests too, so they are linked statically (not
# agile-retarget: it translates on the host, with libclang).  What
# installs is built apart: $(BUILD)/install/agilectl (make install).
tools: $(BUILD)/tools/agile-demo $(BUILD)/tools/agilectl
	@$(MAKE) --no-print-directory -j$(JOBS) -C tools/agile-retarget
	@$(MAKE) --no-print-directory -j$(JOBS) -C tools/agile-bench static
	@$(MAKE) --no-print-directory -j$(JOBS) -C libagile examples-static

$(BUILD)/tools/agile-demo: tools/agile-demo.c uapi/linux/agile.h
	@mkdir -p $(@D)
	$(CC) -static $(TOOL_CFLAGS) -o $@ $<

# agilectl(8): info, stats, tune, dump, trace of the module, and which
# backend libagile would take (agile_dev_backend_choose), so it links
# libagile.  Twice: for the guests statically, with the static variant of
# libagile.a; and, to install, a PIE linked against libagile.so with the
# builder's CPPFLAGS, CFLAGS and LDFLAGS (dpkg-buildflags) after ours, as
# a distribution wants it (lintian: statically-linked-binary, no PIE).
$(BUILD)/tools/agilectl: tools/agilectl.c $(PUBLIC_HDRS) $(LIB_static)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_BASE) $(CFLAGS_static) $(AGILE_VERSION_DEF) -o $@ $< \
		$(LIB_static) $(LDLIBS_static)

$(BUILD)/install/agilectl: tools/agilectl.c $(PUBLIC_HDRS) $(O)/libagile.so
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_BASE) $(CFLAGS_native) $(AGILE_VERSION_DEF) -o $@ $< \
		-L$(O) -lagile $(LDFLAGS)

# libagile is its own Makefile's business: asked every time, relinked
# against only when a source changed.
$(LIB_static): FORCE
	@$(MAKE) --no-print-directory -C libagile lib-static
$(O)/libagile.so: FORCE
	@$(MAKE) --no-print-directory -C libagile $@
FORCE:

lint: kernels kernel-src
	@tools/lint.sh

# Every tracked *.c *.h *.cpp *.cu through clang-format (.clang-format).
format: deps
	@tools/format.sh --fix

bench: lib
	@$(MAKE) --no-print-directory -C tools/agile-bench run
	@python3 tools/agile-bench/report.py $(BUILD)/tools/agile-bench.csv \
		$(BUILD)/tools/bench-report

# Build, lint, the library's suites, the selftests in every guest;
# tools/check.sh ends with one line "N passed, N failed".
check: deps
	@KERNELS="$(KERNELS)" DEBUG_KERNELS="$(DEBUG_KERNELS)" tools/check.sh

# Each mutant of tools/mutants.txt must make its suite fail; a table of
# mutant -> failing tests in build/mutate/table.md.
mutate: deps
	@tools/mutate.sh

# Long fuzzing in a guest: tools/fuzz.sh installs trinity and stress-ng
# (tools/deps.sh --fuzz), which nothing else needs.
fuzz:
	@FUZZ_MINUTES=$(FUZZ_MINUTES) FUZZ_KERNEL=$(FUZZ_KERNEL) tools/fuzz.sh

run: deps
	@$(MAKE) --no-print-directory KERNELS=6.1 modules tools
	@if [ -c /dev/agile ]; then \
		$(BUILD)/tools/agile-demo && $(BUILD)/tools/offload-vector && \
		$(BUILD)/tools/segmap-forall && \
		AGILE_BACKEND=kmod $(BUILD)/tools/segmap-forall procs 4 && \
		$(BUILD)/tools/allreduce 3 262144 && \
		$(BUILD)/tools/agile-bench-static -T 20000 -r 1 doorbell sleep; \
	else \
		echo "/dev/agile is not loaded here: booting the Linux 6.1 guest with the module"; \
		tools/vm/run-guest.sh 6.1 tools/demo-guest.sh; \
	fi

# What installs, built first: the libraries (libagile-mpi where mpicc is),
# agilectl, and each part whose dependencies are here: the GPU code
# objects (hipcc, nvcc), agile-bench (oneTBB, OpenCL, and agile-retarget
# for its kernels), agile-retarget (libclang) looking for its prelude
# where it goes.  The parts left out are in build/install/skipped, one
# "part: why" a line (each Makefile's missing target); tools/install.sh
# installs the rest and says what it skipped.  agilectl is the one linked
# against libagile.so (build/install/agilectl); the man pages install where
# they exist (man/man{1,3,4,8}/).
install: lib $(BUILD)/install/agilectl
	@mkdir -p $(BUILD)/install
	@for d in libagile libagile/gpu tools/agile-retarget tools/agile-bench; do \
		$(MAKE) -s --no-print-directory -C $$d missing || exit 1; \
	done >$(BUILD)/install/skipped
	@$(MAKE) --no-print-directory -C libagile gpu
	@grep -q '^agile-bench:' $(BUILD)/install/skipped || \
		$(MAKE) --no-print-directory -C tools/agile-bench $(BUILD)/tools/agile-bench
	@grep -q '^agile-retarget:' $(BUILD)/install/skipped || \
		$(MAKE) --no-print-directory -C tools/agile-retarget \
		RETARGET=$(BUILD)/install/agile-retarget \
		PRELUDE_DIR=$(DATADIR)/agile/retarget
	@$(INSTALL_ENV) tools/install.sh install

uninstall:
	@$(INSTALL_ENV) tools/install.sh uninstall

# The module's DKMS source tree: what builds agile.ko out of tree, and
# dkms.conf and kmod/agile_version.h (MODULE_VERSION) with VERSION filled in.
dkms-src:
	@rm -rf $(DKMS_SRC)
	@mkdir -p $(DKMS_SRC)/kmod $(DKMS_SRC)/uapi/linux
	@cp Kbuild $(DKMS_SRC)/
	@cp kmod/Kbuild kmod/*.[ch] $(DKMS_SRC)/kmod/
	@sed 's/@VERSION@/$(VERSION)/' kmod/agile_version.h.in \
		>$(DKMS_SRC)/kmod/agile_version.h
	@cp uapi/linux/agile.h $(DKMS_SRC)/uapi/linux/
	@sed 's/@VERSION@/$(VERSION)/' dkms.conf.in >$(DKMS_SRC)/dkms.conf

# Then, as root: dkms add agile/$(VERSION) && dkms install agile/$(VERSION)
# (dkms install runs depmod: modules.devname and modules.alias name agile,
# and the module loads on the first open of /dev/agile; README.md).
# modules-load.d/agile.conf, which loads it at boot instead, is not
# installed: a site that wants it copies it into /etc/modules-load.d/.
install-dkms: dkms-src
	@mkdir -p $(DESTDIR)/usr/src
	@rm -rf $(DESTDIR)/usr/src/agile-$(VERSION)
	@cp -R $(DKMS_SRC) $(DESTDIR)/usr/src/agile-$(VERSION)
	@echo "install-dkms: $(DESTDIR)/usr/src/agile-$(VERSION); then: dkms add agile/$(VERSION) && dkms install agile/$(VERSION)"

# After dkms remove agile/$(VERSION) --all.
uninstall-dkms:
	rm -rf $(DESTDIR)/usr/src/agile-$(VERSION)

# libagile0, libagile-mpi0, libagile-dev, agile-mpi-dev, agile-tools,
# agile-retarget, agile-dkms (and libagile0-gpu under DEB_BUILD_PROFILES=gpu
# or cuda), built by dpkg-buildpackage in a copy of the tree
# (tools/test-deb.sh --build-only).  Only their build dependencies are
# installed (tools/deps.sh --deb: debian/control's Build-Depends).
deb:
	@tools/deps.sh --deb
	@tools/test-deb.sh --build-only

deb-check:
	@tools/deps.sh --deb
	@tools/test-deb.sh

clean:
	rm -rf $(BUILD)
