#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/lint.sh - the lint of `make lint`: libagile's include order
# (tools/check-layers.sh: no layer includes one above it) and version
# (tools/check-version.sh), the man pages (tools/check-man.sh: one page per
# exported symbol, generated pages up to date, groff -ww clean), the format of every C file of the tree
# (tools/format.sh --check: clang-format), then on the kernel side
# checkpatch.pl --strict on kmod/, uapi/ and selftests/kmod/pin/ and a W=1
# build of both modules against 6.1 with sparse on every file (C=2: C=1
# would skip up-to-date objects).
# Prints one line when clean; prints the findings and exits non-zero on
# any warning.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

"$repo/tools/check-layers.sh"
"$repo/tools/check-version.sh"
"$repo/tools/check-man.sh"
"$repo/tools/extract-kernel-src.sh"
checkpatch=$repo/build/kernel-src/scripts/checkpatch.pl

if ! command -v sparse >/dev/null; then
	echo "lint: sparse not installed (tools/deps.sh)" >&2
	exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0

# The files clang-format would change, by name (make format fixes them).
"$repo/tools/format.sh" --check >>"$log" 2>&1 || status=1

# checkpatch <extra options...> -- <files...>: its spelling.txt and
# const_structs.checkpatch sit next to it, where it looks for them.
checkpatch() {
	local opts=()

	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	perl "$checkpatch" --strict --no-tree --terse --no-summary \
		--show-types "${opts[@]}" -f "$@" >>"$log" 2>&1 || status=1
}

shopt -s nullglob
sources=()
for f in kmod/*.[ch]; do
	[ "$f" = kmod/compat.h ] || sources+=("$f")
done
checkpatch -- Kbuild kmod/Kbuild "${sources[@]}" \
	selftests/kmod/pin/*.[ch] selftests/kmod/pin/Kbuild
# compat.h is the one place that tests LINUX_VERSION_CODE: an out-of-tree
# module builds for several kernels, not the one it would be merged into.
checkpatch --ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON -- kmod/compat.h
# checkpatch exempts uapi headers from BIT() only under include/uapi/;
# BIT() does not exist for userspace.
checkpatch --ignore BIT_MACRO -- uapi/linux/*.h

# Warnings from gcc (W=1) and sparse; kbuild's notes are not findings.
if ! "$repo/tools/build-kmod.sh" 6.1 W=1 C=2 >>"$log" 2>&1; then
	status=1
fi
if grep -Eq 'warning:|error:|Error [0-9]' "$log"; then
	status=1
fi

if [ "$status" -ne 0 ]; then
	grep -Ev '^(make(\[[0-9]+\])?: (Entering|Leaving) directory|  (CC|CHECK|LD|MODPOST|BTF)( \[M\])? |Skipping BTF generation)' "$log" || true
	echo "lint: FAILED" >&2
	exit 1
fi
echo "lint: clean (man pages, clang-format, checkpatch --strict, sparse C=2, W=1 on 6.1)"
