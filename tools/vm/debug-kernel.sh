#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/vm/debug-kernel.sh - build the "6.1-debug" guest kernel once and cache
# it; print the directory that holds it.  tools/vm/kernels.sh 6.1-debug calls
# this and links build/kernels/6.1-debug/ to the result.
#
# The kernel is Debian's linux-source-6.1 (the tarball in /usr/src, package
# linux-source-6.1), configured from allnoconfig plus tools/vm/debug.config
# (KASAN, lockdep, DEBUG_ATOMIC_SLEEP, kmemleak, UBSAN, KFENCE and what the
# guests need) and built in place, without debug info.  The cache entry is
#
#   ${AGILE_CACHE:-~/.cache/agile}/kernels/6.1-debug/<source version>-<hash>/
#     src/        the configured, built tree: `make -C src M=...` builds
#                 out-of-tree modules against it (objects of the kernel
#                 itself are deleted; what kbuild needs for M= stays)
#     bzImage     the kernel the guest boots (gzip: it unpacks itself in
#                 under a second under TCG).  No PVH vmlinux: with KASAN, the
#                 PVH entry's C code calls the instrumented memcmp() before
#                 KASAN's shadow is mapped, and faults (triple fault, no
#                 output); the bzImage's path never runs that code
#     release     its uname -r
#     modules/    modules_install's lib/modules/<release>/ (vgem and co)
#     build.log   the build's output; .done when complete
#
# where <hash> covers debug.config's settings (not its comments), this
# script's FORMAT and the compiler: a changed fragment builds a new entry,
# an unchanged one is reused at once.
# Entries not used for a while go (all but the newest $KEEP).  Nothing of
# the kernel's sources lands in the repository.
#
# Environment:
#   AGILE_CACHE                 cache root (default ~/.cache/agile)
#   AGILE_KERNEL_SRC_TARBALL    default /usr/src/linux-source-6.1.tar.xz
#   AGILE_DEBUG_JOBS            make -j (default: nproc)

set -eu

# Bump when the recipe below changes in a way that needs a rebuild.
FORMAT=1
# Cache entries kept (the one in use and the last other), 1.6 GB each.
KEEP=2

die() {
	echo "debug-kernel.sh: $*" >&2
	exit 1
}

HERE=$(cd "$(dirname "$0")" && pwd)
FRAGMENT=$HERE/debug.config
CACHE=${AGILE_CACHE:-$HOME/.cache/agile}
TARBALL=${AGILE_KERNEL_SRC_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
JOBS=${AGILE_DEBUG_JOBS:-$(nproc 2>/dev/null || echo 1)}
TOP=$CACHE/kernels/6.1-debug

[ -r "$FRAGMENT" ] || die "$FRAGMENT missing"
[ -r "$TARBALL" ] || die "$TARBALL missing (apt-get install linux-source-6.1; tools/deps.sh)"
VERSION=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null) ||
	VERSION=$(stat -c %s-%Y "$TARBALL")
HASH=$({
	echo "format=$FORMAT"
	gcc -dumpfullversion
	grep -E '^(CONFIG_|# CONFIG_[A-Za-z0-9_]* is not set$)' "$FRAGMENT"
} | sha256sum | cut -c1-12)
ENTRY=$TOP/$VERSION-$HASH

mkdir -p "$TOP"
# One build at a time, whichever worktree asks: a second caller waits and
# then finds the entry done.
exec 7>"$TOP/.lock"
flock 7

if [ -f "$ENTRY/.done" ]; then
	touch "$ENTRY/.done"
	printf '%s\n' "$ENTRY"
	exit 0
fi

# ---------------------------------------------------------------------------
# build

log=$ENTRY/build.log
rm -rf "$ENTRY"
mkdir -p "$ENTRY/src"
start=$(date +%s)
echo "debug-kernel.sh: building the 6.1-debug kernel (linux-source $VERSION," \
	"debug.config $HASH) in $ENTRY with -j$JOBS; log $log" >&2

# All of it: Kconfig reads files all over (every architecture's
# crypto/Kconfig, Documentation/Kconfig).
tar -xJf "$TARBALL" -C "$ENTRY/src" --strip-components=1 ||
	die "could not extract $TARBALL"
if [ ! -f "$ENTRY/src/Makefile" ] || [ ! -d "$ENTRY/src/arch/x86" ]; then
	die "unexpected layout in $TARBALL"
fi

cd "$ENTRY/src"
export ARCH=x86_64
# allnoconfig + the fragment: symbols the fragment does not name are off.
scripts/kconfig/merge_config.sh -n "$FRAGMENT" >"$log" 2>&1 ||
	die "merge_config.sh failed: $(tail -n 20 "$log")"

# Every line of the fragment must hold in the result; merge_config.sh only
# warns about the ones Kconfig dropped for unmet dependencies.
bad=$(sed -n 's/^\(CONFIG_[A-Za-z0-9_]*\)=\(.*\)$/\1 \2/p; s/^# \(CONFIG_[A-Za-z0-9_]*\) is not set$/\1 n/p' \
	"$FRAGMENT" | while read -r sym val; do
	if [ "$val" = n ]; then
		grep -Eq "^$sym=" .config && echo "$sym: wanted n, got $(grep "^$sym=" .config)"
	else
		grep -qxF "$sym=$val" .config ||
			echo "$sym: wanted $val, got $(grep -E "^(# )?${sym}[= ]" .config || echo nothing)"
	fi
done)
[ -z "$bad" ] || die "debug.config does not hold in the final .config:
$bad"

make -j"$JOBS" all >>"$log" 2>&1 || die "the kernel build failed: $(tail -n 30 "$log")"
make -j"$JOBS" INSTALL_MOD_PATH="$ENTRY/modroot" modules_install >>"$log" 2>&1 ||
	die "modules_install failed: $(tail -n 20 "$log")"
release=$(make -s kernelrelease)
cp arch/x86/boot/bzImage "$ENTRY/bzImage"
mv "$ENTRY/modroot/lib/modules/$release" "$ENTRY/modules"
rm -rf "$ENTRY/modroot"
rm -f "$ENTRY/modules/build" "$ENTRY/modules/source"
printf '%s\n' "$release" >"$ENTRY/release"

# Out-of-tree modules need the configuration, the headers, the generated
# files, Module.symvers and the host tools (scripts/, tools/objtool), not
# the kernel's own objects: drop those (most of the tree's size).
find . \( -path ./scripts -o -path ./tools \) -prune -o \
	\( -name '*.o' -o -name '*.a' -o -name '*.ko' -o -name vmlinux \) -type f -print0 |
	xargs -0 rm -f
touch "$ENTRY/.done"
echo "debug-kernel.sh: 6.1-debug ($release) built in $(($(date +%s) - start)) s" >&2

# Forget the oldest other entries, and any a killed build left half done
# (the lock is ours: no build is running).
cd "$TOP"
for d in */; do
	if [ -d "$d" ] && [ ! -f "$d.done" ]; then
		rm -rf -- "$d"
	fi
done
# shellcheck disable=SC2012 # names are ours: <version>-<hex>
ls -1t -- */.done 2>/dev/null | tail -n +$((KEEP + 1)) | while read -r stamp; do
	rm -rf -- "${stamp%/.done}"
done
printf '%s\n' "$ENTRY"
