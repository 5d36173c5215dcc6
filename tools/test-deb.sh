#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/test-deb.sh [--build-only] - the Debian packages of debian/ built
# by `dpkg-buildpackage -us -uc -b` in a copy of the tree (the files git
# tracks or would track, as they are now) under build/deb/src/, the
# .debs moved to build/deb/; then, unless --build-only, lintian on them
# (no E: or W: line), and each unpacked with dpkg -x into build/deb/root/
# (never installed on this machine) and used: the files where the
# packages promise them, no GPU code object in any package (built only
# under DEB_BUILD_PROFILES=gpu or cuda, into libagile0-gpu; this test
# checks them there under those profiles), the
# dependencies and maintainer scripts dh made (dkms, the group; no
# libclang for agile-tools, no MPI for libagile-dev), the autopkgtest
# (debian/tests/build-examples) and the examples built with pkg-config
# against the unpacked libagile-dev and run against the unpacked libagile0.
# TAP on stdout; exit 1 when a check fails.
#
# Takes several minutes on two cores: the package build (libagile,
# libagile-mpi, agile-bench, agile-retarget from scratch), then lintian.
# Needs what tools/deps.sh --deb installs (make deb-check runs it).
set -u

repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo/build/deb
version=$(sed -n 's/^VERSION := //p' "$repo/libagile/Makefile")
src=$out/src/agile-$version
root=$out/root
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=$root/usr/lib/$multiarch
build_only=0
[ "${1:-}" = --build-only ] && build_only=1
# DEB_BUILD_PROFILES (dpkg-buildpackage reads it): gpu and cuda add
# libagile0-gpu, with the HIP code object and the CUDA fatbin.
gpu_code=
case " ${DEB_BUILD_PROFILES:-} " in *" gpu "*) gpu_code="agile-gpu-hip.co" ;; esac
case " ${DEB_BUILD_PROFILES:-} " in *" cuda "*) gpu_code="$gpu_code agile-gpu-cuda.fatbin" ;; esac

n=0
failed=0
ok() {
	local name=$1 log
	shift
	n=$((n + 1))
	log=$(mktemp)
	if "$@" >"$log" 2>&1; then
		echo "ok $n - $name"
	else
		failed=$((failed + 1))
		echo "not ok $n - $name"
		tail -n 25 "$log" | sed 's/^/# /'
	fi
	rm -f "$log"
}

# The tree as git sees it, uncommitted changes included, build/ not.
copy_tree() {
	rm -rf "$out"
	mkdir -p "$src"
	(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do
			[ -e "$f" ] && printf '%s\0' "$f"
		done | cpio -0pdm --quiet "$src")
}

build_debs() {
	(cd "$src" && dpkg-buildpackage -us -uc -b) || return 1
	mv "$out"/src/*.deb "$out"/ && ls "$out"/*.deb
}

ok "a copy of the tree in build/deb/src/agile-$version" copy_tree
ok "dpkg-buildpackage -us -uc -b (libagile0, libagile-mpi0, libagile-dev, agile-mpi-dev, agile-tools, agile-retarget, agile-dkms)" \
	build_debs
if [ $build_only = 1 ]; then
	echo "1..$n"
	[ $failed = 0 ]
	exit
fi

deb() {
	echo "$out/${1}_${version}_$2.deb"
}
unpack() {
	local p
	rm -rf "$root"
	mkdir -p "$root"
	for p in $packages; do
		dpkg -x "$(deb "${p%:*}" "${p#*:}")" "$root" || return 1
	done
}
packages="libagile0:amd64 libagile-mpi0:amd64 libagile-dev:amd64 agile-mpi-dev:amd64
	agile-tools:amd64 agile-retarget:amd64 agile-dkms:all${gpu_code:+ libagile0-gpu:amd64}"
ok "dpkg -x of the packages into build/deb/root/${gpu_code:+ (libagile0-gpu too)}" unpack

# lintian's errors and warnings, none overridden (debian/ has no
# lintian-overrides): each E: or W: line fails.
lint() {
	local p f debs=() report
	for p in $packages; do
		f=$(deb "${p%:*}" "${p#*:}")
		[ -f "$f" ] || {
			echo "no $f"
			return 1
		}
		debs+=("$f")
	done
	report=$(lintian --tag-display-limit 0 "${debs[@]}" 2>&1)
	printf '%s\n' "$report"
	! printf '%s\n' "$report" | grep -q '^[EW]: '
}
ok "lintian: no error or warning on the packages" lint

contents() {
	local f
	for f in "$libdir/libagile.so.$version" "$libdir/libagile-mpi.so.$version" \
		"$libdir/libagile.a" "$libdir/pkgconfig/agile.pc" \
		"$libdir/cmake/agile/agileConfig.cmake" \
		"$libdir/cmake/agile/agileConfigVersion.cmake" \
		"$root/usr/include/agile/agile.h" "$root/usr/include/agile/uapi.h" \
		"$root/usr/include/linux/agile.h" \
		"$root/usr/bin/agile-bench" "$root/usr/bin/agile-retarget" \
		"$root/usr/bin/agilectl" "$root/usr/share/man/man8/agilectl.8.gz" \
		"$root/usr/share/agile/retarget/cuda_prelude.h" \
		"$root/usr/lib/udev/rules.d/60-agile.rules" \
		"$root/usr/lib/modprobe.d/agile.conf" \
		"$root/usr/src/agile-$version/dkms.conf" \
		"$root/usr/src/agile-$version/kmod/main.c"; do
		[ -e "$f" ] || {
			echo "missing: ${f#"$root"}"
			return 1
		}
	done
	# No GPU code object without a profile, whatever compilers are here;
	# with one, its code objects in libagile0-gpu alone.
	# (lib/agile/ also holds agile-retarget's libagile-retarget.so.)
	if [ -z "$gpu_code" ] && { ls "$libdir"/agile/*.co "$libdir"/agile/*.fatbin \
		"$libdir"/agile/*.targets >/dev/null 2>&1 ||
		ls "$out"/libagile0-gpu_* >/dev/null 2>&1; }; then
		echo "GPU code built without DEB_BUILD_PROFILES=gpu or cuda:"
		ls "$libdir/agile" "$out"/libagile0-gpu_*
		return 1
	fi
	for f in $gpu_code; do
		if ! { dpkg-deb -c "$(deb libagile0-gpu amd64)" | grep -q "/agile/$f\$" &&
			dpkg-deb -c "$(deb libagile0-gpu amd64)" | grep -q "/agile/${f%.*}.targets\$"; }; then
			echo "libagile0-gpu lacks $f or its .targets (DEB_BUILD_PROFILES=$DEB_BUILD_PROFILES)"
			return 1
		fi
	done
	if dpkg-deb -c "$(deb libagile0 amd64)" | grep "/agile/"; then
		echo "libagile0 holds GPU code (libagile0-gpu's)"
		return 1
	fi
	# libagile-dev without MPI; agile-mpi-dev with it.
	if dpkg-deb -c "$(deb libagile-dev amd64)" | grep -E "_mpi|agile-mpi"; then
		echo "libagile-dev holds libagile-mpi's files (agile-mpi-dev's)"
		return 1
	fi
	if ! { dpkg-deb -c "$(deb agile-mpi-dev amd64)" | grep -q "usr/include/agile/coll_mpi.h" &&
		dpkg-deb -c "$(deb agile-mpi-dev amd64)" | grep -q "pkgconfig/agile-mpi.pc" &&
		dpkg-deb -c "$(deb agile-retarget amd64)" | grep -q "usr/bin/agile-retarget" &&
		dpkg-deb -c "$(deb agile-retarget amd64)" | grep -q "/agile/libagile-retarget.so\$" &&
		! dpkg-deb -c "$(deb agile-tools amd64)" | grep -q "agile-retarget"; }; then
		echo "agile-mpi-dev or agile-retarget lacks its files, or agile-tools has agile-retarget's"
		return 1
	fi
	# The module loads on the first open of /dev/agile, not at boot:
	# no modules-load.d entry; the udev rule also sets the static node's
	# permissions.
	[ ! -e "$root/usr/lib/modules-load.d/agile.conf" ] || {
		echo "agile-dkms installs modules-load.d/agile.conf"
		return 1
	}
	grep -q 'OPTIONS+="static_node=agile"' \
		"$root/usr/lib/udev/rules.d/60-agile.rules" || {
		echo "60-agile.rules has no static_node=agile"
		return 1
	}
	[ "$(readlink "$libdir/libagile.so.0")" = "libagile.so.$version" ] &&
		dpkg-deb -c "$(deb libagile0 amd64)" | grep -q "libagile.so.0 -> " &&
		dpkg-deb -c "$(deb libagile-dev amd64)" | grep -q "libagile.so -> " &&
		grep -qx "prefix=/usr" "$libdir/pkgconfig/agile.pc" &&
		grep -q "PACKAGE_VERSION=\"$version\"" "$root/usr/src/agile-$version/dkms.conf"
}
ok "files: libraries in /usr/lib/$multiarch (no GPU code), headers, tools, udev rule (static_node), modprobe.d, no modules-load.d, /usr/src/agile-$version; MPI files in agile-mpi-dev alone" \
	contents

# debian/rules builds with dpkg-buildflags' hardening=+all: the shared
# libraries and agile-bench are linked with relro and bind now and
# compiled with the stack protector and _FORTIFY_SOURCE (their _chk
# imports); agilectl too, and it is a PIE that needs libagile.so.0 (not
# the guests' static one: lintian's statically-linked-binary) and runs on
# the unpacked libagile0.
hardened() {
	local f
	for f in "$libdir/libagile.so.$version" "$libdir/libagile-mpi.so.$version" \
		"$root/usr/bin/agile-bench" "$root/usr/bin/agilectl"; do
		readelf -dW "$f" | grep -q "(FLAGS) *BIND_NOW" &&
			readelf -lW "$f" | grep -q GNU_RELRO &&
			readelf --dyn-syms -W "$f" | grep -q "__stack_chk_fail" || {
			echo "${f#"$root"}: no BIND_NOW, GNU_RELRO or __stack_chk_fail:"
			readelf -dW "$f" | grep FLAGS
			return 1
		}
	done
	readelf --dyn-syms -W "$libdir/libagile.so.$version" |
		grep -q "__[a-z]*_chk@" || {
		echo "libagile.so: no _FORTIFY_SOURCE _chk import"
		return 1
	}
	# libclang through the dynamic linker's own path: no RUNPATH.
	if readelf -dW "$root/usr/bin/agile-retarget" | grep -E "RUNPATH|RPATH"; then
		echo "agile-retarget carries a RUNPATH"
		return 1
	fi
	readelf -hW "$root/usr/bin/agilectl" | grep -q "Type: *DYN" || {
		echo "agilectl is not a PIE"
		return 1
	}
	readelf -dW "$root/usr/bin/agilectl" | grep -q "(NEEDED).*\[libagile\.so\.0\]" || {
		echo "agilectl does not link libagile.so.0"
		return 1
	}
	LD_LIBRARY_PATH=$libdir AGILE_BACKEND=user "$root/usr/bin/agilectl" \
		-D /nonexistent/agile info | grep -q "^library_backend: *user (AGILE_BACKEND"
}
ok "hardened: libagile, libagile-mpi, agile-bench, agilectl with relro, bind now, stack protector, fortify; agile-retarget without RUNPATH; agilectl a PIE on libagile0, runs" \
	hardened

# The maintainer scripts and relations dh wrote from debian/.
relations() {
	local d
	d=$(mktemp -d)
	dpkg-deb -e "$(deb agile-dkms all)" "$d/dkms" &&
		grep -q "groupadd --system agile" "$d/dkms/postinst" &&
		grep -q "dkms" "$d/dkms/postinst" && grep -q "dkms" "$d/dkms/prerm" &&
		dpkg-deb -f "$(deb agile-dkms all)" Depends | grep -q "dkms" &&
		dpkg-deb -e "$(deb libagile0 amd64)" "$d/lib" &&
		grep -q "^ AGILE_0\.1@AGILE_0\.1 0\.1\.0" "$d/lib/symbols" &&
		dpkg-deb -f "$(deb libagile-dev amd64)" Depends |
		grep -q "libagile0 (= $version)" &&
		dpkg-deb -f "$(deb agile-retarget amd64)" Depends | grep -q "libclang" &&
		! dpkg-deb -f "$(deb agile-tools amd64)" Depends | grep -q "libclang\|libLLVM" &&
		dpkg-deb -f "$(deb agile-tools amd64)" Depends | grep -q "libagile0 (>= " &&
		! dpkg-deb -f "$(deb libagile-dev amd64)" Depends | grep -q "dkms\|mpi" &&
		dpkg-deb -f "$(deb agile-mpi-dev amd64)" Depends | grep -q "libopenmpi-dev" &&
		dpkg-deb -f "$(deb agile-mpi-dev amd64)" Depends | grep -q "libagile-mpi0 (= $version)"
	local rc=$?
	rm -rf "$d"
	return $rc
}
ok "agile-dkms: postinst dkms + groupadd, prerm dkms, Depends dkms (it alone); libagile0.symbols; -dev = libagile0, no MPI; libclang for agile-retarget alone; agile-tools on libagile0 (agilectl)" \
	relations

# debian/tests/build-examples, the autopkgtest, against the unpacked
# packages: agile.pc moved into build/deb/root, the library found there.
autopkgtest() {
	local pc=$out/pc tmp=$out/autopkgtest
	rm -rf "$tmp"
	mkdir -p "$pc" "$tmp"
	sed "s|^prefix=.*|prefix=$root/usr|" "$libdir/pkgconfig/agile.pc" >"$pc/agile.pc"
	grep -qx "Tests: build-examples" "$repo/debian/tests/control" &&
		(cd "$repo" && AUTOPKGTEST_TMP=$tmp PKG_CONFIG_PATH=$pc LD_LIBRARY_PATH=$libdir \
			debian/tests/build-examples) &&
		LD_LIBRARY_PATH=$libdir ldd "$tmp/fork-join" | grep -q "libagile.so.0 => $libdir/"
}
ok "autopkgtest debian/tests/build-examples against the unpacked packages" autopkgtest

# A user's program: pkg-config against the unpacked libagile-dev (its
# agile.pc with prefix= moved into build/deb/root), run against
# the unpacked libagile0.
example() {
	local name=$1 pc=$out/pc
	shift
	mkdir -p "$pc" "$out/user"
	sed "s|^prefix=.*|prefix=$root/usr|" "$libdir/pkgconfig/agile.pc" >"$pc/agile.pc"
	cp "$repo/examples/$name.c" "$out/user/"
	# shellcheck disable=SC2046 # pkg-config's flags are words
	(cd "$out/user" && PKG_CONFIG_PATH=$pc gcc -std=gnu11 -O2 -o "$name" "$name.c" \
		$(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs agile) -lm) || return 1
	LD_LIBRARY_PATH=$libdir ldd "$out/user/$name" | grep -q "libagile.so.0 => $libdir/" &&
		(cd "$out/user" && LD_LIBRARY_PATH=$libdir timeout 120 "./$name" "$@")
}
ok "offload-vector built with the unpacked libagile-dev's agile.pc, run on libagile0" \
	example offload-vector
ok "fork-join 20 built with the unpacked libagile-dev's agile.pc, run on libagile0" \
	example fork-join 20

echo "1..$n"
[ $failed = 0 ]
