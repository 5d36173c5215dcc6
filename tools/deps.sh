#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/deps.sh - install the Debian 12 packages agile needs to build and test.
#
# Checks every package with dpkg-query first, so on a machine that already has
# everything it prints nothing, touches no network and returns in well under a
# second.  Only when something is missing does it run `apt-get update` and
# install just the missing packages (as root, or through sudo).
#
# Usage: tools/deps.sh [--fuzz | --deb] [--list]
#   --fuzz  also the packages only `make fuzz` needs (FUZZ_PACKAGES)
#   --deb   only what `make deb` and `make deb-check` need: DEB_PACKAGES and
#           debian/control's Build-Depends for the build profiles in
#           DEB_BUILD_PROFILES (dpkg-checkbuilddeps; apt-get build-dep
#           installs the unmet ones), no guest kernels or QEMU
#   --list  print the package list and exit

set -eu

# The one list of packages.  Add new ones here, one per line, with the reason.
PACKAGES="
	build-essential		# gcc, make for the module, tests and library
	linux-headers-amd64	# 6.1 headers: the module is built against them
	linux-image-amd64	# 6.1 kernel booted in the guest
	linux-source-6.1	# kselftest_harness.h and checkpatch.pl come from its tarball
	qemu-system-x86		# the guest (TCG; this class of machine has no KVM)
	busybox-static		# the guest's userland
	sparse			# make lint (C=1)
	cpio			# initramfs
	xz-utils		# Debian 13 modules are .ko.xz; kernel source tarball
	zstd			# 6.12 bzImage payload (vmlinux extraction), .ko.zst
	kmod			# depmod/modinfo for the guest's module tree
	bc flex bison		# kbuild
	libelf-dev		# kbuild (objtool)
	perl			# checkpatch.pl
	clang-format		# tools/format.sh: make format, make lint (clang-format 14)
	groff-base		# tools/check-man.sh: groff -man -ww renders each man page
	man-db			# man -l to read the pages in man/
	python3			# tools/man-gen.py: section 3 pages from the headers
	gnuplot-nox		# tools/agile-bench/report.py: the report's plots
	debian-archive-keyring	# verifies the private trixie lists (6.12 guest)
	libhwloc-dev		# library: topology
	libtbb-dev		# library: baseline for benchmarks
	libomp-dev		# library: baseline for benchmarks
	libdrm-dev		# library: dma-buf / DRM interop
	libopenmpi-dev		# library: allreduce baseline
	openmpi-bin		# library: mpirun for the allreduce baseline
	iproute2		# ip netns: coll-mpi's run on two machines (namespaces)
	hipcc			# libagile/gpu: the persistent kernel for AMD (ROCm 5.2)
	libamdhip64-dev		# libagile/gpu: HIP headers and runtime for hipcc
	libclang-dev		# tools/agile-retarget: libclang's C API (clang-c/Index.h)
	pocl-opencl-icd		# agile-bench runtime, retarget: OpenCL on the CPU (PoCL), a baseline
	ocl-icd-opencl-dev	# agile-bench runtime, retarget: the OpenCL ICD loader (-lOpenCL)
	opencl-c-headers	# agile-bench runtime, retarget: CL/cl.h
	patchelf		# make gpu-bundle: the bundle's programs find its libraries (RUNPATH)
	pkg-config		# make install's test: examples built with pkg-config only
	cmake			# make install's test: find_package(agile) from agileConfig.cmake
	libudev-dev		# make install's test: pkg-config --static agile has hwloc's -ludev
	dkms			# dkms.conf's test: dkms build against 6.1 and 6.12 (never installed)
	debhelper		# debian/: dpkg-buildpackage (make deb, make deb-check)
	dh-dkms			# debian/: dh_dkms for agile-dkms
	lintian			# tools/test-deb.sh: lintian on the built packages
"

# `make deb` and `make deb-check` alone (--deb): the packaging tools here,
# the rest from debian/control's Build-Depends.
DEB_PACKAGES="
	build-essential		# dpkg-dev (dpkg-buildpackage, dpkg-checkbuilddeps), gcc
	debhelper		# debian/rules: dh
	dh-dkms			# debian/rules: dh_dkms for agile-dkms
	lintian			# tools/test-deb.sh: lintian on the built packages
	pkg-config		# tools/test-deb.sh: examples built with the unpacked agile.pc
	cpio			# tools/test-deb.sh: the copy of the tree
"

# Only for `make fuzz` (tools/fuzz.sh): the guest runs them beside agile's
# own fuzzer.  `make check` never needs them.
FUZZ_PACKAGES="
	trinity			# make fuzz: the system call fuzzer, in the guest
	stress-ng		# make fuzz: its --dev stressor on /dev/agile
"

repo=$(cd "$(dirname "$0")/.." && pwd)
deb=0
if [ "${1:-}" = "--fuzz" ]; then
	PACKAGES="$PACKAGES $FUZZ_PACKAGES"
	shift
elif [ "${1:-}" = "--deb" ]; then
	PACKAGES=$DEB_PACKAGES
	deb=1
	shift
fi
# DEB_BUILD_PROFILES' words, as dpkg-checkbuilddeps -P and apt-get -P take them.
profiles=$(printf '%s' "${DEB_BUILD_PROFILES:-}" | tr -s ' ' ',' | sed 's/^,//; s/,$//')

# debian/control's Build-Depends, met here (--deb only).
build_deps_met() {
	[ $deb = 0 ] && return 0
	command -v dpkg-checkbuilddeps >/dev/null 2>&1 &&
		(cd "$repo" && dpkg-checkbuilddeps ${profiles:+-P "$profiles"} >/dev/null 2>&1)
}

# Strip the comments: what is left is the package names.
package_names() {
	printf '%s\n' "$PACKAGES" | sed 's/#.*//' | tr -s ' \t' '\n' | sed '/^$/d'
}

if [ "${1:-}" = "--list" ]; then
	package_names
	exit 0
fi

# One dpkg-query call for the whole list (fast).  "install ok installed" is the
# only state that means usable; "rc" (removed, config left) or half-installed
# count as missing, and so do packages dpkg has never heard of.
# shellcheck disable=SC2046 # one argument per package is intended
installed=$(dpkg-query -W -f='${Package} ${Status}\n' $(package_names) 2>/dev/null |
	awk '$2 == "install" && $3 == "ok" && $4 == "installed" { print $1 }' || true)
missing=""
for pkg in $(package_names); do
	printf '%s\n' "$installed" | grep -qx -- "$pkg" || missing="$missing $pkg"
done

if build_deps_met; then
	[ -z "$missing" ] && exit 0
	builddeps=0
else
	builddeps=1
fi

if [ $builddeps = 1 ]; then
	echo "deps: installing:$missing and debian/control's unmet Build-Depends"
else
	echo "deps: installing:$missing"
fi

if [ "$(id -u)" -eq 0 ]; then
	as_root=""
elif command -v sudo >/dev/null 2>&1; then
	as_root="sudo"
else
	echo "deps: missing packages:$missing" >&2
	echo "deps: run this script as root (or install sudo), or install them by hand:" >&2
	echo "      apt-get install --no-install-recommends$missing" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# -q keeps the log readable; the update is needed because a fresh machine's
# package lists may be absent or stale.
$as_root env DEBIAN_FRONTEND=noninteractive apt-get -q update ||
	{ echo "deps: apt-get update failed" >&2; exit 1; }
if [ -n "$missing" ]; then
	# shellcheck disable=SC2086 # word splitting of the package list is intended
	$as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y install --no-install-recommends $missing ||
		{ echo "deps: apt-get install failed for:$missing" >&2; exit 1; }
fi
if [ $builddeps = 1 ]; then
	(cd "$repo" && $as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y build-dep \
		--no-install-recommends ${profiles:+-P "$profiles"} ./) ||
		{ echo "deps: apt-get build-dep ./ failed (debian/control)" >&2; exit 1; }
fi
echo "deps: done"
