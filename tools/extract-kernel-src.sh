#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Extract the few files agile needs from Debian's linux-source-6.1 tarball
# into build/kernel-src/, once: the kselftest harness headers for the
# selftests and checkpatch.pl with its data files for tools/lint.sh.
# Nothing from the kernel tree is kept in the repository.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
tarball=${AGILE_KERNEL_SRC_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
dest=$repo/build/kernel-src
stamp=$dest/.extracted

files=(
	tools/testing/selftests/kselftest_harness.h
	tools/testing/selftests/kselftest.h
	scripts/checkpatch.pl
	scripts/spelling.txt
	scripts/const_structs.checkpatch
)

[ -f "$stamp" ] && exit 0

if [ ! -r "$tarball" ]; then
	echo "extract-kernel-src: $tarball missing (apt-get install linux-source-6.1)" >&2
	exit 1
fi

# The first member names the top directory (tar dies of SIGPIPE: fine).
top=$(tar -tJf "$tarball" | head -n 1 || true)
top=${top%%/*}

mkdir -p "$repo/build"
tmp=$(mktemp -d "$repo/build/.kernel-src.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tar -xJf "$tarball" -C "$tmp" --strip-components=1 --occurrence=1 \
	"${files[@]/#/$top/}"

mkdir -p "$dest"
for f in "${files[@]}"; do
	mkdir -p "$dest/$(dirname "$f")"
	mv -f "$tmp/$f" "$dest/$f"
done
touch "$stamp"
