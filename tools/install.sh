#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/install.sh install|uninstall|list|install-headers - what `make
# install` and `make uninstall` do, from one list of files (manifest
# below), so that uninstall removes exactly what install put there;
# install-headers installs the headers alone (tools/test-headers.sh).
#
# Takes what is built under build/ (the Makefile builds it first), less
# the parts named in $BUILD/install/skipped, one "part: why" a line (the
# Makefile writes it: what this host lacks the dependencies of), which it
# leaves out and names ("install: skipped agile-retarget: no libclang ...");
# any other part missing from build/ is an error:
#   $LIBDIR      libagile.so.$VERSION, .so.0 and .so links, libagile.a;
#                libagile-mpi the same (part libagile-mpi: mpicc)
#   $LIBDIR/pkgconfig  agile.pc, agile-mpi.pc, prefix= and libdir= set here
#   $LIBDIR/cmake/agile  agileConfig.cmake, agileConfigVersion.cmake
#                (find_package(agile)), written here
#   $LIBDIR/agile      libagile-retarget.so (the runtime's CUDA translator,
#                part agile-retarget); the GPU code objects of
#                build/libagile/gpu, each
#                with its .targets (parts agile-gpu-hip.co: hipcc,
#                agile-gpu-cuda.fatbin: nvcc): the library looks in
#                "agile/" beside itself
#   $INCLUDEDIR/agile/ the public headers (*_mpi.h with libagile-mpi), and
#                the ABI (uapi/linux/agile.h) as agile/uapi.h, which they
#                include, under the project's own name (as liburing ships
#                liburing/io_uring.h); and $INCLUDEDIR/linux/agile.h, the
#                same file under the name the module's own programs
#                include (no kernel's uapi has one; Debian's
#                linux-libc-dev neither)
#   $BINDIR      agile-bench (part agile-bench), agile-retarget (part
#                agile-retarget; its CUDA prelude in $DATADIR/agile/retarget),
#                agilectl (build/install/, the one linked against
#                libagile.so)
#   $MANDIR      every page under man/man{1,3,4,8}/, less the skipped
#                parts' (a tool's page, the pages of *_mpi.h)
#   $UDEVRULESDIR/60-agile.rules, $MODPROBEDIR/agile.conf
#
# Environment (the Makefile passes its variables): DESTDIR (staging root,
# default none), PREFIX (/usr/local), BINDIR LIBDIR INCLUDEDIR DATADIR
# MANDIR (below PREFIX), UDEVRULESDIR (/etc/udev/rules.d: udev reads no
# /usr/local; a package sets /usr/lib/udev/rules.d), MODPROBEDIR
# (/etc/modprobe.d; a package: /usr/lib/modprobe.d), VERSION (libagile's),
# BUILD (<repo>/build), RETARGET (the agile-retarget built for $DATADIR).
#
# Installing as root without DESTDIR also creates the system group agile
# (the udev rule's) when missing and runs ldconfig; with DESTDIR it does
# neither (a package's postinst creates the group).  Uninstall leaves the
# group.  With DESTDIR, uninstall also removes the directories on the way
# to each file that it leaves empty, so that a staging tree ends as it
# began.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
action=${1:-}
DESTDIR=${DESTDIR:-}
PREFIX=${PREFIX:-/usr/local}
BINDIR=${BINDIR:-$PREFIX/bin}
LIBDIR=${LIBDIR:-$PREFIX/lib}
INCLUDEDIR=${INCLUDEDIR:-$PREFIX/include}
DATADIR=${DATADIR:-$PREFIX/share}
MANDIR=${MANDIR:-$DATADIR/man}
UDEVRULESDIR=${UDEVRULESDIR:-/etc/udev/rules.d}
MODPROBEDIR=${MODPROBEDIR:-/etc/modprobe.d}
BUILD=${BUILD:-$repo/build}
RETARGET=${RETARGET:-$BUILD/install/agile-retarget}
VERSION=${VERSION:-$(sed -n 's/^VERSION := //p' "$repo/libagile/Makefile")}
lib=$BUILD/libagile
gpu=$lib/gpu
prelude=$DATADIR/agile/retarget
skipped_list=$BUILD/install/skipped

die() {
	echo "install.sh: $*" >&2
	exit 1
}

# skipped <part>: whether the Makefile found part's dependencies missing.
skipped() {
	[ -f "$skipped_list" ] && grep -q "^$1: " "$skipped_list"
}

# leave <install|uninstall> <part>: whether part stays out of the
# manifest (installing a skipped part; uninstalling lists every part).
leave() {
	[ "$1" = install ] && skipped "$2"
}

# manifest <install|uninstall>: one line per file, "file MODE SRC DEST",
# "link TARGET DEST", "pc SRC DEST" or "cmake NAME DEST".  Installing lists what is built
# (and fails on what must be); uninstalling lists every name install may
# have used, built or not, so a cleaned build/ still uninstalls.
manifest() {
	local mode=$1 f name page l

	# The libraries: the file, its soname link, the link the linker uses.
	for l in agile agile-mpi; do
		leave "$mode" "lib$l" && continue
		echo "file 0755 $lib/lib$l.so.$VERSION $LIBDIR/lib$l.so.$VERSION"
		echo "link lib$l.so.$VERSION $LIBDIR/lib$l.so.0"
		echo "link lib$l.so.$VERSION $LIBDIR/lib$l.so"
		echo "file 0644 $lib/lib$l.a $LIBDIR/lib$l.a"
		echo "pc $lib/$l.pc $LIBDIR/pkgconfig/$l.pc"
	done
	# find_package(agile): written here, with this install's paths.
	echo "cmake agileConfig.cmake $LIBDIR/cmake/agile/agileConfig.cmake"
	echo "cmake agileConfigVersion.cmake $LIBDIR/cmake/agile/agileConfigVersion.cmake"
	headers "$mode"

	# GPU code objects, each with its targets; uninstall takes what is there.
	if [ "$mode" = install ]; then
		for f in agile-gpu-hip.co agile-gpu-cuda.fatbin; do
			skipped $f && continue
			echo "file 0644 $gpu/$f $LIBDIR/agile/$f"
			echo "file 0644 $gpu/${f%.*}.targets $LIBDIR/agile/${f%.*}.targets"
		done
	else
		for f in "$DESTDIR$LIBDIR"/agile/*; do
			[ -e "$f" ] && echo "file 0644 - $LIBDIR/agile/${f##*/}"
		done
	fi

	leave "$mode" agile-bench || echo "file 0755 $BUILD/tools/agile-bench $BINDIR/agile-bench"
	if ! leave "$mode" agile-retarget; then
		echo "file 0755 $RETARGET $BINDIR/agile-retarget"
		# The translator the runtime dlopens for -x cuda (docs/runtime.md),
		# beside the GPU code objects, where it finds it.
		echo "file 0644 ${RETARGET%/*}/libagile-retarget.so $LIBDIR/agile/libagile-retarget.so"
		echo "file 0644 $repo/tools/agile-retarget/cuda_prelude.h $prelude/cuda_prelude.h"
		for f in "$repo"/tools/agile-retarget/include/*.h "$repo"/tools/agile-retarget/include/*/*.h; do
			[ -e "$f" ] && echo "file 0644 $f $prelude/include/${f#"$repo"/tools/agile-retarget/include/}"
		done
	fi
	# agilectl linked against libagile.so (build/tools/agilectl is the
	# guests' static one).
	echo "file 0755 $BUILD/install/agilectl $BINDIR/agilectl"
	for f in "$repo"/man/man[1348]/*.[1348]; do
		[ -e "$f" ] || continue
		name=${f#"$repo"/man/}
		page=${f##*/}
		case $name in man1/*) leave "$mode" "${page%.1}" && continue ;; esac
		head -n 2 "$f" | grep -q "from agile/[a-z_]*_mpi\.h" &&
			leave "$mode" libagile-mpi && continue
		echo "file 0644 $f $MANDIR/$name"
	done

	echo "file 0644 $repo/udev/60-agile.rules $UDEVRULESDIR/60-agile.rules"
	echo "file 0644 $repo/modprobe.d/agile.conf $MODPROBEDIR/agile.conf"
}

# The headers' lines of the manifest.  agile/uapi.h is a link to
# uapi/linux/agile.h in the tree: install copies the file.
headers() {
	local mode=${1:-all} f

	for f in "$repo"/libagile/include/agile/*.h "$repo"/libagile/include/agile/*.hpp; do
		case $f in *_mpi.h) leave "$mode" libagile-mpi && continue ;; esac
		[ -e "$f" ] && echo "file 0644 $f $INCLUDEDIR/agile/${f##*/}"
	done
	echo "file 0644 $repo/uapi/linux/agile.h $INCLUDEDIR/linux/agile.h"
}

# The directories agile owns: uninstall removes them once empty.
own_dirs() {
	printf '%s\n' "$prelude/include/hip" "$prelude/include" "$prelude" \
		"$DATADIR/agile" "$LIBDIR/agile" "$INCLUDEDIR/agile" \
		"$LIBDIR/cmake/agile"
}

# agile.pc with this install's paths: libdir and includedir relative to
# prefix where they are below it, so PKG_CONFIG_SYSROOT_DIR and
# --define-prefix both work on a staged tree.
write_pc() {
	local src=$1 dest=$2 libdir=$LIBDIR includedir=$INCLUDEDIR

	case $libdir in "$PREFIX"/*) libdir="\${prefix}${libdir#"$PREFIX"}" ;; esac
	case $includedir in "$PREFIX"/*) includedir="\${prefix}${includedir#"$PREFIX"}" ;; esac
	sed -e "s|^prefix=.*|prefix=$PREFIX|" -e "s|^libdir=.*|libdir=$libdir|" \
		-e "s|^includedir=.*|includedir=$includedir|" "$src" >"$dest.tmp"
	chmod 0644 "$dest.tmp"
	mv -f "$dest.tmp" "$dest"
}

# The CMake package (find_package(agile)): imported targets agile::agile
# (libagile.so), agile::agile_static (libagile.a and what it needs) and,
# where libagile-mpi is installed, agile::agile_mpi.  Paths relative to
# the file itself, so a staged or moved tree works as pkg-config's does.
write_cmake() {
	local what=$1 dest=$2 up inc libd
	up=$(realpath -m --relative-to="$LIBDIR/cmake/agile" "$PREFIX")
	inc=$(realpath -m --relative-to="$PREFIX" "$INCLUDEDIR")
	libd=$(realpath -m --relative-to="$PREFIX" "$LIBDIR")
	mkdir -p "$(dirname "$dest")"
	if [ "$what" = agileConfigVersion.cmake ]; then
		cat >"$dest.tmp" <<-EOF
			# agileConfigVersion.cmake - written by agile's tools/install.sh.
			# Compatible: the same major version, at least the version asked
			# for (one soname, libagile.so.0, for every 0.x).
			set(PACKAGE_VERSION "$VERSION")
			string(REGEX MATCH "^[0-9]+" _agile_major "\${PACKAGE_VERSION}")
			if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION OR
			   NOT "\${PACKAGE_FIND_VERSION_MAJOR}" STREQUAL "\${_agile_major}")
			  set(PACKAGE_VERSION_COMPATIBLE FALSE)
			else()
			  set(PACKAGE_VERSION_COMPATIBLE TRUE)
			  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
			    set(PACKAGE_VERSION_EXACT TRUE)
			  endif()
			endif()
		EOF
	else
		cat >"$dest.tmp" <<-EOF
			# agileConfig.cmake - find_package(agile), written by agile's
			# tools/install.sh.  Imported targets:
			#   agile::agile         libagile.so (the headers: <agile/...>)
			#   agile::agile_static  libagile.a, with hwloc, libdrm, libdl,
			#                        libm and threads
			#   agile::agile_mpi     libagile-mpi.so, where it was installed
			#                        (find_package(MPI) for MPI::MPI_C)
			get_filename_component(_agile_prefix "\${CMAKE_CURRENT_LIST_DIR}/$up" ABSOLUTE)
			set(agile_INCLUDE_DIRS "\${_agile_prefix}/$inc")
			set(_agile_libdir "\${_agile_prefix}/$libd")
			include(CMakeFindDependencyMacro)
			find_dependency(Threads)
			if(NOT TARGET agile::agile)
			  add_library(agile::agile SHARED IMPORTED)
			  set_target_properties(agile::agile PROPERTIES
			    IMPORTED_LOCATION "\${_agile_libdir}/libagile.so.$VERSION"
			    IMPORTED_SONAME "libagile.so.0"
			    INTERFACE_INCLUDE_DIRECTORIES "\${agile_INCLUDE_DIRS}")
			  add_library(agile::agile_static STATIC IMPORTED)
			  set_target_properties(agile::agile_static PROPERTIES
			    IMPORTED_LOCATION "\${_agile_libdir}/libagile.a"
			    INTERFACE_INCLUDE_DIRECTORIES "\${agile_INCLUDE_DIRS}"
			    INTERFACE_LINK_LIBRARIES "hwloc;drm;dl;m;Threads::Threads")
			  if(EXISTS "\${_agile_libdir}/libagile-mpi.so.$VERSION")
			    find_dependency(MPI COMPONENTS C)
			    add_library(agile::agile_mpi SHARED IMPORTED)
			    set_target_properties(agile::agile_mpi PROPERTIES
			      IMPORTED_LOCATION "\${_agile_libdir}/libagile-mpi.so.$VERSION"
			      IMPORTED_SONAME "libagile-mpi.so.0"
			      INTERFACE_LINK_LIBRARIES "agile::agile;MPI::MPI_C")
			  endif()
			endif()
			unset(_agile_libdir)
			unset(_agile_prefix)
		EOF
	fi
	chmod 0644 "$dest.tmp"
	mv -f "$dest.tmp" "$dest"
}

do_install() {
	local kind a b c

	manifest install >"$BUILD/install/manifest"
	while read -r kind a b c; do
		case $kind in
		file)
			[ -e "$b" ] || die "$b not built (make install builds it; see the Makefile)"
			install -D -m "$a" "$b" "$DESTDIR$c"
			;;
		link)
			mkdir -p "$(dirname "$DESTDIR$b")"
			ln -sfn "$a" "$DESTDIR$b"
			;;
		pc)
			mkdir -p "$(dirname "$DESTDIR$b")"
			write_pc "$a" "$DESTDIR$b"
			;;
		cmake) write_cmake "$a" "$DESTDIR$b" ;;
		esac
	done <"$BUILD/install/manifest"
	echo "install: $(wc -l <"$BUILD/install/manifest") files into ${DESTDIR:-/}, prefix $PREFIX"
	if [ -f "$skipped_list" ]; then
		sed 's/^/install: skipped /' "$skipped_list"
	fi

	[ -z "$DESTDIR" ] || return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "install: not root: create the group yourself: groupadd --system agile"
		return 0
	fi
	if ! getent group agile >/dev/null; then
		groupadd --system agile
		echo "install: created the system group agile"
	fi
	ldconfig
}

do_uninstall() {
	local kind a b c dest d

	while read -r kind a b c; do
		case $kind in
		file) dest=$c ;;
		*) dest=$b ;;
		esac
		if [ -e "$DESTDIR$dest" ] || [ -L "$DESTDIR$dest" ]; then
			rm -f "$DESTDIR$dest"
		fi
		# A staging tree: the directories install made for it go too,
		# up to DESTDIR itself, where they are empty now.
		if [ -z "$DESTDIR" ] || [ "$DESTDIR" = / ]; then
			continue
		fi
		d=$(dirname "$dest")
		while [ "$d" != / ] && rmdir "$DESTDIR$d" 2>/dev/null; do
			d=$(dirname "$d")
		done
	done < <(manifest uninstall)
	while read -r d; do
		if [ -d "$DESTDIR$d" ]; then
			rmdir --ignore-fail-on-non-empty "$DESTDIR$d"
		fi
	done < <(own_dirs)
	if [ -z "$DESTDIR" ] && [ "$(id -u)" -eq 0 ]; then
		ldconfig
	fi
	echo "uninstall: agile removed from ${DESTDIR:-/}, prefix $PREFIX"
}

case $action in
install)
	mkdir -p "$BUILD/install"
	do_install
	;;
uninstall) do_uninstall ;;
install-headers)
	headers | while read -r _ mode src dest; do
		install -D -m "$mode" "$src" "$DESTDIR$dest"
	done
	;;
list) manifest uninstall | awk '{ print $NF }' ;;
*)
	echo "usage: tools/install.sh install|uninstall|list|install-headers" >&2
	exit 2
	;;
esac
