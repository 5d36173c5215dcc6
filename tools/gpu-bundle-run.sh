#!/bin/bash
# SPDX-License-Identifier: MIT
#
# run.sh [--stand-in] [OUTDIR] - the GPU bundle's one command (make
# gpu-bundle copies tools/gpu-bundle-run.sh here): on a machine with a GPU
# driver and nothing else, GPU EUs' bring-up and their selftests
# (tests/gpu-bringup.sh, as make check-gpu runs them), then agile-bench gpu.
# Everything goes under OUTDIR (default $OUT, else ./gpu-bundle-out):
#
#   summary.txt      the machine, each step's verdict and seconds, the
#                    selftests' count, the benchmark's rows and ratios
#   bringup.log      every step of the bring-up and every selftest's TAP
#   bench-gpu.log    agile-bench gpu's table and notes; bench-gpu.csv
#
# Exits 1 when any step failed, or when no usable GPU was found (a SKIP
# is a failure here: the bundle is meant for a machine with one).  The
# steps are bounded: the bring-up by BUNDLE_BRINGUP_S (default 210), the
# benchmark by BUNDLE_BENCH_S (default 60): within 5 minutes all told.
#
#   --stand-in   run against the stand-in CUDA driver in stand-in/
#                (selftests/libagile/gpu-mock.c, work-groups on CPU
#                threads) instead of the machine's: tests this script
#                where there is no GPU.  Fewer echoes, a short benchmark,
#                and rt-program-gpu and rt-retarget-gpu are left out (the
#                stand-in cannot run the cubins NVRTC builds, and
#                rt-retarget-gpu's NVRTC builds take minutes on a small
#                machine).
#
# Environment: GPU_TESTS (the selftests; default tests/gpu-tests),
# BRINGUP_ECHOES (default 1000000; 2000 with --stand-in), BENCH_ARGS
# (agile-bench's options; default none; "-r 3 -T 2000" with --stand-in).
set -u
here=$(cd "$(dirname "$0")" && pwd)
stand_in=
usage() {
	echo "usage: $0 [--stand-in] [OUTDIR]   (OUTDIR default: \$OUT, else ./gpu-bundle-out)"
}
while [ $# -gt 0 ]; do
	case $1 in
	--stand-in) stand_in=1 ;;
	-h | --help)
		usage
		exit 0
		;;
	-*)
		usage >&2
		exit 2
		;;
	*) break ;;
	esac
	shift
done
out=${1:-${OUT:-$PWD/gpu-bundle-out}}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
summary=$out/summary.txt

tests=$(cat "$here/tests/gpu-tests")
echoes=1000000
bench_args=
export AGILE_GPU_CODE_DIR=$here/gpu
if [ -n "$stand_in" ]; then
	export LD_LIBRARY_PATH=$here/stand-in${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	tests=$(printf '%s\n' "$tests" | grep -vx -e rt-program-gpu -e rt-retarget-gpu)
	echoes=2000
	bench_args="-r 3 -T 2000"
fi
tests=$(tr -s ' \n' ' ' <<<"${GPU_TESTS:-$tests}")
echoes=${BRINGUP_ECHOES:-$echoes}
bench_args=${BENCH_ARGS:-$bench_args}

passed=0
failed=0
failures=()
: >"$summary"
say() { printf '%s\n' "$*" | tee -a "$summary"; }

# verdict NAME RC SECONDS LIMIT: a step's line in the summary.
verdict() {
	local name=$1 rc=$2 secs=$3 limit=$4
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1))
		say "step $name: passed in ${secs}s"
		return
	fi
	failed=$((failed + 1))
	failures+=("$name")
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		say "step $name: FAILED: still running after ${limit}s"
	else
		say "step $name: FAILED (exit status $rc) in ${secs}s"
	fi
}

say "# gpu bundle: $(cat "$here/VERSION" 2>/dev/null)"
say "# run $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n), $(uname -r), $(nproc) CPUs${stand_in:+, against the stand-in GPU runtime}"
if [ -z "$stand_in" ] && command -v nvidia-smi >/dev/null 2>&1; then
	timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total \
		--format=csv,noheader 2>&1 | sed 's/^/# GPU: /' | tee -a "$summary"
fi
say "# selftests: $tests"

limit=${BUNDLE_BRINGUP_S:-210}
t0=$(date +%s)
# gpu-bringup.sh writes bringup.log itself; its own steps are capped
# below the whole so that a hang is named by its step.
timeout -k 10 "$limit" env BRINGUP_REQUIRE_GPU=1 \
	BRINGUP_LOG="$out/bringup.log" BRINGUP_ECHOES="$echoes" \
	BRINGUP_LIMIT_S=$((limit - 20)) GPU_TESTS="$tests" \
	"$here/tests/gpu-bringup.sh" "$here/tests" >/dev/null 2>&1
rc=$?
grep -E '^# probe|^# step |^FAIL|^[0-9]+ passed|^gpu bring-up' \
	"$out/bringup.log" | tee -a "$summary"
verdict bringup "$rc" $(($(date +%s) - t0)) "$limit"

limit=${BUNDLE_BENCH_S:-60}
t0=$(date +%s)
# shellcheck disable=SC2086 # bench_args is a list of options
timeout -k 10 "$limit" "$here/bin/agile-bench" $bench_args \
	-c "$out/bench-gpu.csv" gpu >"$out/bench-gpu.log" 2>&1
rc=$?
grep -E '^gpu |^note: gpu' "$out/bench-gpu.log" | tee -a "$summary"
verdict bench-gpu "$rc" $(($(date +%s) - t0)) "$limit"

say "gpu bundle: $passed passed, $failed failed${failures:+ (${failures[*]})}; logs in $out"
[ "$failed" -eq 0 ]
