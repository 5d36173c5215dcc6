#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/build-kmod.sh <K> [make args...]
#
# Build agile.ko and the test-only agile_pin_test.ko out of tree for
# kernel <K> (6.1, 6.12, 6.1-debug) and copy them to build/kernels/<K>/out/.
# Extra arguments go to make (W=1, C=1, ...).
#
# The kernel comes from build/kernels/<K>/kbuild.env (KDIR, KMAKE_ARGS),
# written by tools/vm/kernels.sh.  Without it, 6.1 falls back to the
# host's newest /lib/modules/6.1.*/build.
#
# Objects go to build/kmod/<K>/, a tree of symlinks to the sources, so
# that two kernels never share objects and the source tree stays clean.
# kmod/agile_version.h is made there from kmod/agile_version.h.in with
# libagile/Makefile's VERSION (MODULE_VERSION), and the built agile.ko's
# modinfo version is checked against it.
# When <K>'s kernel tree is another one than last time (the debug kernel
# rebuilt from a changed debug.config), that tree starts afresh.
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 <kernel: 6.1|6.12> [make args...]" >&2
	exit 2
fi
K=$1
shift

repo=$(cd "$(dirname "$0")/.." && pwd)
env_file=$repo/build/kernels/$K/kbuild.env
KDIR=
KMAKE_ARGS=
if [ -f "$env_file" ]; then
	# shellcheck source=/dev/null
	. "$env_file"
elif [ "$K" = 6.1 ]; then
	for d in /lib/modules/6.1.*/build; do
		[ -d "$d" ] && KDIR=$(printf '%s\n' "$KDIR" "$d" | sort -V | tail -n 1)
	done
fi
if [ -z "$KDIR" ] || [ ! -d "$KDIR" ]; then
	echo "build-kmod: no kernel build dir for $K (run tools/vm/kernels.sh $K)" >&2
	exit 1
fi

tree=$repo/build/kmod/$K
out=$repo/build/kernels/$K/out

# Mirror each source directory as a real directory of per-file symlinks;
# drop links whose source is gone.
mirror() {
	local src=$1 dst=$2 f
	mkdir -p "$dst"
	for f in "$dst"/*; do
		[ -L "$f" ] && [ ! -e "$f" ] && rm -f "$f"
	done
	for f in "$src"/*; do
		[ -f "$f" ] && ln -sfn "$f" "$dst/"
	done
	return 0
}

# The kernel tree the objects were built against, symlinks resolved.
kdir_real=$(cd "$KDIR" && pwd -P)
if [ -d "$tree" ] && [ "$(cat "$tree/.kdir" 2>/dev/null)" != "$kdir_real" ]; then
	rm -rf "$tree"
fi
mkdir -p "$tree"
printf '%s\n' "$kdir_real" >"$tree/.kdir"
ln -sfn "$repo/Kbuild" "$tree/Kbuild"
ln -sfn "$repo/uapi" "$tree/uapi"
mirror "$repo/kmod" "$tree/kmod"
mirror "$repo/selftests/kmod/pin" "$tree/pin"
version=$(sed -n 's/^VERSION := //p' "$repo/libagile/Makefile")
sed "s/@VERSION@/$version/" "$repo/kmod/agile_version.h.in" >"$tree/kmod/agile_version.h.new"
# Rewritten only when it changes: kbuild would rebuild main.o otherwise.
if cmp -s "$tree/kmod/agile_version.h.new" "$tree/kmod/agile_version.h"; then
	rm -f "$tree/kmod/agile_version.h.new"
else
	mv -f "$tree/kmod/agile_version.h.new" "$tree/kmod/agile_version.h"
fi

jobs=$(nproc 2>/dev/null || echo 1)
# shellcheck disable=SC2086 # KMAKE_ARGS is a list of words
make -C "$KDIR" M="$tree" -j"$jobs" $KMAKE_ARGS "$@" modules
# shellcheck disable=SC2086
make -C "$KDIR" M="$tree/pin" -j"$jobs" $KMAKE_ARGS "$@" modules

mkdir -p "$out"
cp -f "$tree/kmod/agile.ko" "$tree/pin/agile_pin_test.ko" "$out/"
ko_version=$(modinfo -F version "$out/agile.ko")
if [ "$ko_version" != "$version" ]; then
	echo "build-kmod: $out/agile.ko says version '$ko_version', not $version (libagile/Makefile)" >&2
	exit 1
fi
