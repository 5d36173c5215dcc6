#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/format.sh - clang-format (the top-level .clang-format: the kernel's
# style) over every C, C++ and CUDA source and header git tracks.
#
# Usage: tools/format.sh --check | --fix [FILE...]
#   --check  list the files clang-format would change; exit 1 if any
#   --fix    rewrite them in place
# Without FILEs: every tracked *.c *.h *.cpp *.cu.  Nothing is excluded;
# the few constructs clang-format cannot lay out are fenced in the source
# with /* clang-format off */ ... /* clang-format on */ or named in
# .clang-format (WhitespaceSensitiveMacros, StatementMacros).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

usage() {
	echo "usage: $0 --check | --fix [FILE...]" >&2
	exit 2
}

[ $# -ge 1 ] || usage
mode=$1
shift
case "$mode" in
--check | --fix) ;;
*) usage ;;
esac

# The style is written for clang-format 14 (Debian 12): an older one does
# not know some of its keys, a newer one may lay lines out differently.
clang_format=${CLANG_FORMAT:-clang-format}
if ! command -v "$clang_format" >/dev/null; then
	echo "format: $clang_format not installed: run make deps" >&2
	exit 1
fi

if [ ! -f .clang-format ]; then
	echo "format: $repo/.clang-format missing" >&2
	exit 1
fi

files=()
if [ $# -gt 0 ]; then
	files=("$@")
else
	while IFS= read -r -d '' f; do
		files+=("$f")
	done < <(git ls-files -z -- '*.c' '*.h' '*.cpp' '*.cu')
fi

# A style clang-format cannot read is an error, not a clean tree.
if ! "$clang_format" --style=file --dump-config >/dev/null; then
	echo "format: $clang_format cannot read .clang-format" >&2
	exit 1
fi

jobs=$(nproc 2>/dev/null || echo 2)
if [ "$mode" = --fix ]; then
	printf '%s\0' "${files[@]}" |
		xargs -0 -r -n 16 -P "$jobs" "$clang_format" --style=file -i
	exit 0
fi

# --check: clang-format names each file it would change in its first
# "FILE:LINE:COL: error: code should be clang-formatted" line.
changed=$(printf '%s\0' "${files[@]}" |
	xargs -0 -r -n 16 -P "$jobs" "$clang_format" --style=file \
		--dry-run --Werror --ferror-limit=1 2>&1 |
	sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*$/\1/p' |
	sort -u || true)
if [ -n "$changed" ]; then
	printf '%s\n' "$changed"
	echo "format: clang-format would change the files above:" \
		"make format (tools/format.sh --fix) rewrites them" >&2
	exit 1
fi
