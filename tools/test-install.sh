#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/test-install.sh - make install into a staging DESTDIR with a
# PREFIX (/opt/agile), then use what it installed the way a user would:
# every example built with pkg-config alone (the installed agile.pc and
# agile-mpi.pc, whose prefix= must be PREFIX, copied with prefix= moved
# into the staging tree: PKG_CONFIG_SYSROOT_DIR or --define-prefix would
# move mpi.pc's system paths too) in an empty folder, so
# nothing of the source tree is seen, and run against the installed
# libagile.so.0 (the user backend where /dev/agile is not loaded);
# libagile-mpi linked through agile-mpi.pc; the CMake package
# (find_package(agile), shared and static targets); agile-retarget translating
# with its installed prelude; the sonames and symbol versions; make
# uninstall must leave the staging tree empty.  Last, a second staged
# install with the optional parts' dependencies taken away (mpicc, hipcc,
# nvcc, libclang) must install the library, its headers, agile.pc and
# the CMake package, skip exactly those parts and name each.  TAP on
# stdout, one line per check; exit 1 when one fails.  About 30 s; the
# first run also builds agile-bench (natively), agile-retarget and the GPU
# code objects (hipcc, nvcc), a few minutes more.
#
# Environment: MAKE (default make).
set -u

repo=$(cd "$(dirname "$0")/.." && pwd)
make=${MAKE:-make}
prefix=/opt/agile
work=$(mktemp -d "${TMPDIR:-/tmp}/agile-install.XXXXXX")
dest=$work/dest
trap 'rm -rf "$work"' EXIT
mkdir -p "$dest" "$work/user"
version=$(sed -n 's/^VERSION := //p' "$repo/libagile/Makefile")
libdir=$dest$prefix/lib

n=0
failed=0
# ok <description> <command...>: one TAP line; the output only on failure.
ok() {
	local name=$1 out
	shift
	n=$((n + 1))
	if out=$("$@" 2>&1); then
		echo "ok $n - $name"
	else
		failed=$((failed + 1))
		echo "not ok $n - $name"
		printf '%s\n' "$out" | tail -n 20 | sed 's/^/# /'
	fi
}

export PKG_CONFIG_PATH=$work/pc

# groupadd, getent and ldconfig stood in for, for the whole test: however
# broken install.sh is, the test never changes this machine's groups or
# its linker cache.  The stand-ins log their calls; getent finds nothing.
fake=$work/fake
mkdir -p "$fake"
for tool in groupadd ldconfig; do
	printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n' "$tool" "$fake" >"$fake/$tool"
done
printf '#!/bin/sh\nexit 2\n' >"$fake/getent"
chmod +x "$fake"/*
export PATH="$fake:$PATH"

ok "make install DESTDIR=... PREFIX=$prefix" \
	"$make" --no-print-directory -C "$repo" install DESTDIR="$dest" PREFIX=$prefix

# The soname is the one the symbol map's library promises, the links
# lead to the file, and the newest version node is the map's.
sonames() {
	local l newest
	newest=$(sed -n 's/^\(AGILE_[0-9]*\.[0-9]*\) {$/\1/p' \
		"$repo/libagile/src/libagile.map" | tail -n 1)
	for l in agile agile-mpi; do
		[ -e "$libdir/lib$l.so.$version" ] || {
			[ $l = agile-mpi ] && continue
			echo "no lib$l.so.$version"
			return 1
		}
		readelf -d "$libdir/lib$l.so.$version" |
			grep -q "SONAME.*\[lib$l\.so\.0\]" || {
			echo "lib$l: soname is not lib$l.so.0"
			return 1
		}
		if [ "$(readlink "$libdir/lib$l.so.0")" != "lib$l.so.$version" ] ||
			[ "$(readlink "$libdir/lib$l.so")" != "lib$l.so.$version" ] ||
			[ ! -f "$libdir/lib$l.a" ]; then
			echo "lib$l: .so.0, .so or .a missing or wrong"
			return 1
		fi
	done
	readelf --dyn-syms -W "$libdir/libagile.so.$version" | grep -q "@@$newest\$" ||
		readelf --dyn-syms -W "$libdir/libagile.so.$version" | grep -q "@@$newest " || {
		echo "libagile.so exports nothing at $newest (src/libagile.map)"
		return 1
	}
}
ok "libagile.so.$version: soname libagile.so.0, links, .a, newest symbol version" sonames

pc_paths() {
	local cflags libs pc
	mkdir -p "$work/pc"
	for pc in "$libdir"/pkgconfig/*.pc; do
		grep -qx "prefix=$prefix" "$pc" || {
			echo "$pc: prefix= is not $prefix"
			return 1
		}
		sed "s|^prefix=.*|prefix=$dest$prefix|" "$pc" >"$work/pc/${pc##*/}"
	done
	cflags=$(pkg-config --cflags agile) && libs=$(pkg-config --libs agile) || return 1
	echo "cflags: $cflags; libs: $libs"
	case " $cflags " in *" -I$dest$prefix/include "*) ;; *) return 1 ;; esac
	case " $libs " in *" -L$libdir "*) ;; *) return 1 ;; esac
	[ "$(pkg-config --modversion agile)" = "$version" ] &&
		cmp "$dest$prefix/include/agile/uapi.h" "$repo/uapi/linux/agile.h" &&
		cmp "$dest$prefix/include/linux/agile.h" "$repo/uapi/linux/agile.h"
}
ok "agile.pc: prefix=$prefix; moved to the staging tree: version $version, -I, -L; the ABI as agile/uapi.h and linux/agile.h" pc_paths

# Built in an empty folder with pkg-config's flags only.
build_example() {
	local name=$1
	# shellcheck disable=SC2046 # pkg-config's flags are words
	(cd "$work/user" && cp "$repo/examples/$name.c" . &&
		gcc -std=gnu11 -O2 -Wall -o "$name" "$name.c" $(pkg-config --cflags --libs agile) -lm)
}
# Run against the installed library: ldd must find it in the tree.
run_example() {
	local name=$1
	shift
	LD_LIBRARY_PATH=$libdir ldd "$work/user/$name" | grep -q "libagile.so.0 => $libdir/" || {
		LD_LIBRARY_PATH=$libdir ldd "$work/user/$name"
		return 1
	}
	(cd "$work/user" && LD_LIBRARY_PATH=$libdir timeout 120 "./$name" "$@")
}
# The arguments make run gives them (smaller where it does not say).
for ex in fork-join:20 offload-vector: segmap-forall: allreduce:3,262144 runtime-queue:; do
	name=${ex%%:*}
	args=${ex#*:}
	ok "example $name: built with pkg-config agile only" build_example "$name"
	# shellcheck disable=SC2086 # the arguments are words
	ok "example $name ${args//,/ }: runs against the installed libagile.so.0" \
		run_example "$name" ${args//,/ }
done
# libagile.a with the rest of pkg-config --static's list (Libs.private,
# Requires.private): what a program linking libagile statically needs.
static_example() {
	local libs
	libs=$(pkg-config --static --libs agile) || return 1
	libs=$(printf '%s\n' " $libs " | sed 's/ -lagile / -l:libagile.a /')
	echo "libs: $libs"
	# shellcheck disable=SC2046,SC2086 # the flags are words
	(cd "$work/user" && gcc -std=gnu11 -O2 -o fork-join-static fork-join.c \
		$(pkg-config --cflags agile) $libs) &&
		! ldd "$work/user/fork-join-static" | grep -q libagile &&
		"$work/user/fork-join-static" 20
}
ok "fork-join linked with libagile.a and pkg-config --static's libraries" static_example

# find_package(agile) from the installed agileConfig.cmake alone: the
# same example linked with agile::agile and with agile::agile_static, each
# run; a version the install is not (99) is refused at configure time.
cmake_project() {
	local want=$1 dir=$work/cmake-$1
	mkdir -p "$dir"
	cp "$repo/examples/fork-join.c" "$dir/"
	cat >"$dir/CMakeLists.txt" <<-EOF
		cmake_minimum_required(VERSION 3.13)
		project(agile_user C)
		find_package(agile $want REQUIRED)
		add_executable(fj fork-join.c)
		target_link_libraries(fj agile::agile m)
		add_executable(fj_static fork-join.c)
		target_link_libraries(fj_static agile::agile_static m)
	EOF
	cmake -S "$dir" -B "$dir/b" -DCMAKE_PREFIX_PATH="$dest$prefix" >"$dir/log" 2>&1 || {
		cat "$dir/log"
		return 1
	}
	cmake --build "$dir/b" >>"$dir/log" 2>&1 || {
		cat "$dir/log"
		return 1
	}
	ldd "$dir/b/fj" | grep -q "libagile.so.0 => $libdir/" &&
		! ldd "$dir/b/fj_static" | grep -q libagile &&
		"$dir/b/fj" 20 && "$dir/b/fj_static" 20
}
cmake_package() {
	cmake_project "${version%.*}" || return 1
	if cmake_project 99 >/dev/null 2>&1; then
		echo "find_package(agile 99) was accepted"
		return 1
	fi
	grep -q "agileConfigVersion.cmake, version: $version" "$work/cmake-99/log" ||
		grep -q "version: $version" "$work/cmake-99/log"
}
if command -v cmake >/dev/null; then
	ok "find_package(agile ${version%.*}): agile::agile and agile::agile_static built and run; agile 99 refused" \
		cmake_package
else
	n=$((n + 1))
	echo "ok $n - find_package(agile) # SKIP no cmake"
fi

run_kmod() {
	AGILE_BACKEND=kmod run_example segmap-forall procs 4
}
if [ -c /dev/agile ]; then
	ok "example segmap-forall procs 4: the kmod backend" run_kmod
fi

# libagile-mpi through agile-mpi.pc (Requires: agile mpi): linked only.
mpi_link() {
	cat >"$work/user/mpi-link.c" <<-'EOF'
		#include <agile/coll_mpi.h>
		int main(void) { return agile_coll_mpi_create(MPI_COMM_WORLD, 0, 0) == 12345; }
	EOF
	# shellcheck disable=SC2046
	(cd "$work/user" && gcc -std=gnu11 -o mpi-link mpi-link.c \
		$(pkg-config --cflags --libs agile-mpi) -Wl,-rpath-link,"$libdir") &&
		LD_LIBRARY_PATH=$libdir ldd "$work/user/mpi-link" | grep -q "libagile-mpi.so.0 => $libdir/"
}
if [ -f "$libdir/pkgconfig/agile-mpi.pc" ]; then
	ok "libagile-mpi: a program linked with pkg-config agile-mpi" mpi_link
else
	n=$((n + 1))
	echo "ok $n - libagile-mpi: a program linked with pkg-config agile-mpi # SKIP not built (no mpicc)"
fi

# agile-retarget with the prelude make install put beside it (its
# compiled-in place is $prefix/share/...: the staging tree says where).
retarget() {
	AGILE_RETARGET_PRELUDE_DIR=$dest$prefix/share/agile/retarget \
		"$dest$prefix/bin/agile-retarget" -o "$work/user/reduce-rt.c" \
		-H "$work/user/reduce-rt.h" "$repo/selftests/libagile/retarget/reduce.cu" &&
		[ -s "$work/user/reduce-rt.c" ] &&
		strings "$dest$prefix/bin/agile-retarget" | grep -qx "$prefix/share/agile/retarget"
}
ok "agile-retarget: translates with its installed prelude (compiled in: $prefix/share/agile/retarget)" retarget

# The installed agilectl is the one linked against libagile.so (a PIE, not
# the guests' static one), and passes tools/test-agilectl.sh on the
# installed library.
agilectl_installed() {
	LD_LIBRARY_PATH=$libdir ldd "$dest$prefix/bin/agilectl" |
		grep -q "libagile.so.0 => $libdir/" || {
		LD_LIBRARY_PATH=$libdir ldd "$dest$prefix/bin/agilectl"
		return 1
	}
	LD_LIBRARY_PATH=$libdir "$repo/tools/test-agilectl.sh" "$dest$prefix/bin/agilectl"
}
ok "agilectl: linked against the installed libagile.so.0, passes tools/test-agilectl.sh" \
	agilectl_installed

installed_rest() {
	local f
	for f in "$dest$prefix/bin/agile-bench" "$dest/etc/udev/rules.d/60-agile.rules" \
		"$dest/etc/modprobe.d/agile.conf"; do
		[ -e "$f" ] || {
			echo "missing: $f"
			return 1
		}
	done
	for f in "$repo"/build/libagile/gpu/*.co "$repo"/build/libagile/gpu/*.fatbin \
		"$repo"/build/libagile/gpu/*.targets; do
		[ -e "$f" ] || continue
		cmp "$f" "$libdir/agile/${f##*/}" || return 1
	done
}
ok "agile-bench, the udev rule, modprobe.d/agile.conf, the GPU code objects in lib/agile/" installed_rest

# Every module parameter of kmod/ is documented in modprobe.d/agile.conf.
params_documented() {
	local p missing=0 seen=0
	while read -r p; do
		seen=$((seen + 1))
		grep -q "^#options agile $p=" "$repo/modprobe.d/agile.conf" || {
			echo "module parameter $p is not in modprobe.d/agile.conf"
			missing=1
		}
	done < <(sed -n 's/^module_param[a-z_]*(\([a-z_]*\),.*/\1/p' "$repo"/kmod/*.c)
	echo "$seen module parameters"
	[ "$seen" -gt 0 ] && return $missing
}
ok "modprobe.d/agile.conf documents every module_param of kmod/" params_documented

empty_after_uninstall() {
	"$make" --no-print-directory -C "$repo" uninstall DESTDIR="$dest" PREFIX=$prefix || return 1
	if [ -n "$(find "$dest" -mindepth 1)" ]; then
		echo "left behind:"
		find "$dest" -mindepth 1
		return 1
	fi
}
ok "make uninstall leaves the staging tree empty" empty_after_uninstall

# The group: install creates it as root without DESTDIR (never with one).
# Into a PREFIX in the scratch folder; the stand-ins log the calls.
group_rule() {
	local env
	env=(BUILD="$repo/build" RETARGET="$repo/build/install/agile-retarget"
		UDEVRULESDIR="$work/sys/udev" MODPROBEDIR="$work/sys/modprobe.d")
	rm -f "$fake/calls"
	env "${env[@]}" DESTDIR="$work/staged" PREFIX=/opt/agile "$repo/tools/install.sh" install ||
		return 1
	if [ -e "$fake/calls" ]; then
		echo "with DESTDIR: $(cat "$fake/calls")"
		return 1
	fi
	env "${env[@]}" DESTDIR= PREFIX="$work/sys/prefix" "$repo/tools/install.sh" install &&
		grep -qx "groupadd --system agile" "$fake/calls" && grep -qx "ldconfig " "$fake/calls" &&
		env "${env[@]}" DESTDIR= PREFIX="$work/sys/prefix" "$repo/tools/install.sh" uninstall &&
		[ -z "$(find "$work/sys" -type f)" ]
}
if [ "$(id -u)" -eq 0 ]; then
	ok "as root: groupadd --system agile without DESTDIR, never with one" group_rule
else
	n=$((n + 1))
	echo "ok $n - as root: groupadd --system agile without DESTDIR, never with one # SKIP not root"
fi

# make install where only the library's own dependencies are: each part
# that needs more is left out and named ("install: skipped <part>: why"),
# and what is installed is usable: an example built with its agile.pc.
parts_dest=$work/parts
parts_install() {
	local out f skipped
	out=$("$make" --no-print-directory -C "$repo" install DESTDIR="$parts_dest" PREFIX=$prefix \
		LLVM_CONFIG=/nonexistent HIPCC= NVCC= MPICC=) || {
		printf '%s\n' "$out"
		return 1
	}
	skipped=$(printf '%s\n' "$out" | sed -n 's/^install: skipped \([^:]*\): .*/\1/p' | sort | xargs)
	echo "skipped: $skipped"
	[ "$skipped" = "agile-bench agile-gpu-cuda.fatbin agile-gpu-hip.co agile-retarget libagile-mpi" ] ||
		return 1
	printf '%s\n' "$out" | grep -qx "install: skipped agile-retarget: no libclang (llvm-config not found: /nonexistent)" ||
		return 1
	for f in lib/libagile.so.$version lib/libagile.so.0 lib/libagile.a lib/pkgconfig/agile.pc \
		lib/cmake/agile/agileConfig.cmake include/agile/agile.h include/linux/agile.h \
		bin/agilectl share/man/man3/agile_dev_open.3; do
		[ -e "$parts_dest$prefix/$f" ] || {
			echo "missing: $prefix/$f"
			return 1
		}
	done
	for f in bin/agile-retarget bin/agile-bench share/agile lib/agile lib/libagile-mpi.so.0 \
		lib/pkgconfig/agile-mpi.pc include/agile/coll_mpi.h share/man/man1/agile-retarget.1 \
		share/man/man3/agile_coll_mpi_create.3; do
		[ ! -e "$parts_dest$prefix/$f" ] || {
			echo "installed though skipped: $prefix/$f"
			return 1
		}
	done
	mkdir -p "$work/parts-pc" "$work/parts-user"
	sed "s|^prefix=.*|prefix=$parts_dest$prefix|" "$parts_dest$prefix/lib/pkgconfig/agile.pc" \
		>"$work/parts-pc/agile.pc"
	# shellcheck disable=SC2046 # pkg-config's flags are words
	(cd "$work/parts-user" && cp "$repo/examples/fork-join.c" . &&
		gcc -std=gnu11 -O2 -o fork-join fork-join.c \
			$(PKG_CONFIG_PATH=$work/parts-pc pkg-config --cflags --libs agile) -lm &&
		LD_LIBRARY_PATH=$parts_dest$prefix/lib ./fork-join 20) || return 1
	"$make" --no-print-directory -C "$repo" uninstall DESTDIR="$parts_dest" PREFIX=$prefix &&
		[ -z "$(find "$parts_dest" -mindepth 1)" ]
}
ok "make install LLVM_CONFIG=/nonexistent HIPCC= NVCC= MPICC=: the library, headers, agile.pc, CMake package, agilectl; agile-retarget, agile-bench, GPU code, libagile-mpi skipped and named" \
	parts_install

echo "1..$n"
[ $failed = 0 ]
