#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/test-gpu-bundle.sh [BUNDLE] - make check-gpu-bundle: the folder
# make gpu-bundle built (default build/gpu-bundle) is complete and finds
# its own libraries, and its run.sh, against the stand-in GPU runtime
# (--stand-in), passes; with one selftest broken, or with no GPU at all,
# it fails.  A few selftests only (GPU_TESTS), to stay under a minute.
# TAP on stdout; exits non-zero on a failure.
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
bundle=${1:-$repo/build/gpu-bundle}
bundle=$(cd "$bundle" && pwd -P) || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
quick="eu-gpu-code eu-gpu kernels-axpy"
n=0
failed=0

# t <description> <condition command...>
t() {
	local desc=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $desc"
	else
		failed=$((failed + 1))
		echo "not ok $n - $desc"
	fi
}

# Every program and library the bundle names is there; every library
# they load that is not glibc's comes from the bundle's lib/.
complete() {
	local bad=0 t
	for t in eu-gpu-bringup $(cat "$bundle/tests/gpu-tests"); do
		[ -x "$bundle/tests/$t" ] || { echo "# missing: tests/$t"; bad=1; }
	done
	for f in run.sh bin/agile-bench gpu/agile-gpu-cuda.fatbin \
		gpu/agile-gpu-cuda.targets stand-in/libcuda.so.1; do
		[ -e "$bundle/$f" ] || { echo "# missing: $f"; bad=1; }
	done
	return $bad
}
own_libs() {
	local bad=0 f
	for f in "$bundle"/tests/* "$bundle"/bin/* "$bundle"/lib/*; do
		head -c 4 "$f" | grep -q ELF || continue
		if ldd "$f" | grep -q 'not found'; then
			echo "# $f: a library not found"
			bad=1
		fi
		ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' |
			while read -r name path; do
				echo "$name $(realpath "$path")"
			done | awk -v lib="$bundle/lib/" '
			$1 !~ /^(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+)\.so/ &&
			index($2, lib) != 1 { print "# " $1 " from " $2; bad = 1 }
			END { exit bad }' || bad=1
	done
	return $bad
}
t "the bundle holds every selftest of tests/gpu-tests, agile-bench, the CUDA code object, the stand-in" complete
t "its programs load their libraries from its lib/ (RUNPATH), none missing" own_libs

# run <name> <want: pass|fail> <bundle> <run.sh args...>
run() {
	local name=$1 want=$2 dir=$3 rc
	shift 3
	GPU_TESTS=$quick "$dir/run.sh" "$@" "$tmp/$name" >"$tmp/$name.out" 2>&1
	rc=$?
	if { [ "$want" = pass ] && [ $rc -eq 0 ]; } ||
		{ [ "$want" = fail ] && [ $rc -ne 0 ]; }; then
		return 0
	fi
	echo "# run.sh $* exited $rc; its output:"
	sed 's/^/# /' "$tmp/$name.out"
	return 1
}
summary_has() { grep -q -- "$2" "$tmp/$1/summary.txt"; }

t "run.sh --stand-in: every step passes" run ok pass "$bundle" --stand-in
t "... the summary counts them: bring-up 7 passed, the bundle 2 passed" \
	eval 'summary_has ok "^gpu bring-up: 7 passed, 0 failed" &&
		summary_has ok "^gpu bundle: 2 passed, 0 failed"'
# shellcheck disable=SC2016 # expanded by eval, inside t
t "... the logs and the benchmark's CSV are written" \
	eval '[ -s "$tmp/ok/bringup.log" ] && grep -q "^time,gpu,hot," "$tmp/ok/bench-gpu.csv"'

# A copy whose eu-gpu fails as a broken GPU EU would.
cp -a "$bundle" "$tmp/broken-bundle"
printf '#!/bin/sh\necho "not ok 1 - broken on purpose"\nexit 1\n' \
	>"$tmp/broken-bundle/tests/eu-gpu"
t "one selftest broken: run.sh fails" run broken fail "$tmp/broken-bundle" --stand-in
t "... and its summary names the step" \
	eval 'summary_has broken "# step selftests: FAILED" &&
		summary_has broken "^gpu bundle: 1 passed, 1 failed (bringup)"'

# Without the stand-in and with every device hidden, there is no GPU:
# that fails too.
CUDA_VISIBLE_DEVICES=-1 HIP_VISIBLE_DEVICES=-1 ROCR_VISIBLE_DEVICES=-1 \
	t "no GPU (devices hidden, no --stand-in): run.sh fails" \
	run nogpu fail "$bundle"
t "... saying there is no usable GPU" \
	summary_has nogpu "FAIL check-gpu: no usable GPU"

echo "1..$n"
[ $failed -eq 0 ]
