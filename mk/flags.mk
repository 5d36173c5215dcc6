# SPDX-License-Identifier: MIT
#
# mk/flags.mk - what every Makefile of libagile's userspace shares: where
# things go, the compilers, the warnings, the build variants.  Included by
# libagile/Makefile, libagile/gpu/Makefile, selftests/libagile/Makefile,
# examples/Makefile and tools/agile-bench/Makefile; none sets these itself.
#
# Variants: native (-O2), asan (ASan+UBSan), tsan (TSan) and static (for
# the test guests: no shared libraries there).  LIB_<variant> is the
# libagile.a of a variant; CFLAGS_BASE CFLAGS_<variant> and
# LDLIBS_<variant> build a program against it.

ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))..)
# The project's version (libagile/Makefile's VERSION, tools/check-version.sh):
# what the tools' --version prints.
AGILE_VERSION := $(shell sed -n 's/^VERSION := //p' $(ROOT)/libagile/Makefile)
AGILE_VERSION_DEF := -DAGILE_PROJECT_VERSION='"$(AGILE_VERSION)"'
O ?= $(ROOT)/build/libagile
CC ?= gcc
CXX ?= g++
AR ?= ar
OBJCOPY ?= objcopy
PREFIX ?= /usr/local

# libdrm's headers include <drm.h> from their own directory.
DRM_CFLAGS := $(or $(shell pkg-config --cflags libdrm 2>/dev/null),\
	-I/usr/include/libdrm)
# GPU EUs look for their code objects here, after $AGILE_GPU_CODE_DIR.
GPU_CODE_DIR := $(O)/gpu
# The runtime looks for the CUDA translator, libagile-retarget.so, here
# after $AGILE_RETARGET_DIR (tools/agile-retarget/Makefile puts it here).
RETARGET_BUILD_DIR := $(ROOT)/build/tools
# Library, tests and examples share the warnings; the variants add theirs.
CFLAGS_BASE := -std=gnu11 -g -pthread -Wall -Wextra -Werror \
	-I$(ROOT)/libagile/include -I$(ROOT)/uapi $(DRM_CFLAGS) \
	-DAGILE_GPU_BUILD_DIR='"$(GPU_CODE_DIR)"'
CXXFLAGS_BASE := -std=c++17 -g -pthread -Wall -Wextra -Werror \
	-I$(ROOT)/libagile/include -I$(ROOT)/uapi
# The builder's CPPFLAGS, CFLAGS and LDFLAGS (from the environment or the
# command line: a distribution's dpkg-buildflags, hardening) go after ours
# into the native variant, the one that installs, and into its links; the
# sanitizer and static variants are test builds and keep their own.
CFLAGS_native := -O2 $(CPPFLAGS) $(CFLAGS)
CFLAGS_asan := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=all
# TSan does not model atomic_thread_fence (gcc warns, -Wtsan).  The fences
# here order atomics against atomics (the Chase-Lev store-load fence, the
# sleep/wake handshake); every happens-before edge that plain data relies
# on is a release/acquire pair TSan does see.
CFLAGS_tsan := -O1 -fsanitize=thread -Wno-tsan
# The guests have no shared libraries, and a static libhwloc needs a static
# libudev that Debian does not ship: the static build goes without hwloc.
# Nor can it dlopen the GPU runtimes (no shared libraries there): it goes
# without them too (libagile/src/eu/gpu.c), but keeps libdrm, which has a
# static library.  Without libdrm.a, add -DAGILE_NO_DRM and drop -ldrm below.
CFLAGS_static := -O2 -DAGILE_NO_HWLOC -DAGILE_NO_DLOPEN
LDLIBS := -lhwloc -ldrm -ldl -lm -pthread
LDLIBS_native := $(LDFLAGS) $(LDLIBS)
LDLIBS_asan := $(LDLIBS)
LDLIBS_tsan := $(LDLIBS)
LDLIBS_static := -static -ldrm -lm -pthread

VARIANTS := native asan tsan static
# Where each variant's objects and libagile.a go.
DIR_native := $(O)
DIR_asan := $(O)/asan
DIR_tsan := $(O)/tsan
DIR_static := $(O)/static
$(foreach v,$(VARIANTS),$(eval LIB_$(v) := $(DIR_$(v))/libagile.a))

# libagile-mpi (coll among machines) is compiled with mpicc.
MPICC ?= $(shell command -v mpicc 2>/dev/null)

# The public headers and the ABI: what every program here depends on.
PUBLIC_HDRS := $(wildcard $(ROOT)/libagile/include/agile/*.h \
	$(ROOT)/libagile/include/agile/*.hpp) \
	$(ROOT)/uapi/linux/agile.h
