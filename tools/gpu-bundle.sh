#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/gpu-bundle.sh DEST TESTS_DIR "GPU_TESTS" AGILE_BENCH GPU_CODE_DIR -
# make gpu-bundle: a folder that runs GPU EUs' bring-up, their selftests
# and agile-bench gpu on a machine with a GPU driver and nothing else (no
# make, no compiler, no apt), then DEST.tar.gz of it.  DEST is emptied
# first.
#
#   DEST/run.sh          tools/gpu-bundle-run.sh: every step, a summary
#   DEST/tests/          eu-gpu-bringup and GPU_TESTS (their list in
#                        tests/gpu-tests), gpu-bringup.sh and run.sh of
#                        selftests/libagile
#   DEST/bin/agile-bench
#   DEST/gpu/            the code objects and their .targets
#   DEST/lib/            what the programs link that a CUDA runtime image
#                        lacks (everything ldd names but glibc, libgcc_s
#                        and libstdc++)
#   DEST/stand-in/       the stand-in CUDA driver (gpu-mock.c), for
#                        run.sh --stand-in alone
#   DEST/VERSION         the commit and the day it was built
#
# The programs' RUNPATH is $ORIGIN/../lib and the libraries' $ORIGIN
# (RUNPATH is not inherited: each library finds its own), so nothing needs
# LD_LIBRARY_PATH.  run.sh names gpu/ in AGILE_GPU_CODE_DIR: the build
# folder compiled into the programs is not there on the GPU's machine.
set -eu
dest=$1
tests_dir=$2
gpu_tests=$3
bench=$4
code_dir=$5
repo=$(cd "$(dirname "$0")/.." && pwd)

# The C library and the compiler's run-time libraries every image has; a
# copy of them would fight the system's.
base_libs='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil|libgcc_s|libstdc\+\+)\.so'

command -v patchelf >/dev/null || {
	echo "gpu-bundle: patchelf not found (tools/deps.sh installs it)" >&2
	exit 1
}
rm -rf "$dest" "$dest.tar.gz"
mkdir -p "$dest/tests" "$dest/bin" "$dest/gpu" "$dest/lib" "$dest/stand-in"

progs=()
for t in eu-gpu-bringup $gpu_tests; do
	cp "$tests_dir/$t" "$dest/tests/"
	progs+=("$dest/tests/$t")
done
# shellcheck disable=SC2086 # a list of names, one a line
printf '%s\n' $gpu_tests >"$dest/tests/gpu-tests"
cp "$repo/selftests/libagile/gpu-bringup.sh" "$repo/selftests/libagile/run.sh" \
	"$dest/tests/"
cp "$bench" "$dest/bin/agile-bench"
progs+=("$dest/bin/agile-bench")
cp "$repo/tools/gpu-bundle-run.sh" "$dest/run.sh"
for f in agile-gpu-cuda.fatbin agile-gpu-cuda.targets agile-gpu-hip.co \
	agile-gpu-hip.targets; do
	[ -f "$code_dir/$f" ] && cp "$code_dir/$f" "$dest/gpu/"
done
[ -f "$dest/gpu/agile-gpu-cuda.fatbin" ] || {
	echo "gpu-bundle: no $code_dir/agile-gpu-cuda.fatbin (no nvcc?)" >&2
	exit 1
}
cp "$code_dir/mock/cuda/libcuda.so.1" "$dest/stand-in/"

# ldd lists the whole closure: the libraries' own needs too.
for p in "${progs[@]}"; do
	ldd "$p" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
	if ! [[ $name =~ $base_libs ]]; then
		cp -L "$path" "$dest/lib/$name"
	fi
done
# shellcheck disable=SC2016 # $ORIGIN is ld.so's, not the shell's
for p in "${progs[@]}"; do
	patchelf --set-rpath '$ORIGIN/../lib' "$p"
done
# shellcheck disable=SC2016
for l in "$dest"/lib/*; do
	chmod u+w "$l"
	patchelf --set-rpath '$ORIGIN' "$l"
done

printf 'agile %s, built %s on %s\n' \
	"$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)" \
	"$(date -u '+%Y-%m-%d %H:%M UTC')" "$(uname -n)" >"$dest/VERSION"
tar -C "$(dirname "$dest")" -czf "$dest.tar.gz" "$(basename "$dest")"
echo "gpu-bundle: $dest ($(du -sh "$dest" | cut -f1)), $dest.tar.gz ($(du -h "$dest.tar.gz" | cut -f1))"
