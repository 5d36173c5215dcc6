#!/bin/bash
# SPDX-License-Identifier: MIT
#
# gpu-bringup.sh TESTS_DIR [AGILE_BENCH] - make check-gpu: the bring-up
# sequence of GPU EUs on a real GPU, each step under its own timeout, so
# that a hang names its step instead of hanging the run:
#
#   1 versions   the machine, the driver and runtime, the device, the code
#                object, the AGILE_GPU_* settings (eu-gpu-bringup versions;
#                nvidia-smi / rocm-smi when present); no usable GPU: one
#                SKIP line, exit 0 (with BRINGUP_REQUIRE_GPU=1: a FAIL
#                line, exit 1, for a machine that was meant to have one)
#   2 launch     one EU loaded, launched and DISCONNECTed
#   3 opcode     an unknown opcode: the opcode error, no lane run
#   4 echo       BRINGUP_ECHOES (default 1000000) sequence-number echoes
#                on one EU, then
#   5 echo-all   as many over every EU the device's share allows
#   6 map        map, unmap and a one-shot launch while the kernel runs
#   7 badptr     a task's bad pointer reported, not hung
#   8 the EU selftests with AGILE_EU_POOL=gpu (GPU EUs or fail)
#   9 agile-bench gpu (when AGILE_BENCH is given): p50/p99 of a hot and an
#                idle EU, launch + synchronise beside them, scaling
#
# Everything also goes to $BRINGUP_LOG (default TESTS_DIR/../gpu-bringup.log).
# BRINGUP_LIMIT_S caps every step's timeout (a short first contact).
# Ends with "gpu bring-up: N passed, N failed" and exits 1 on any failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
tests=$1
bench=${2:-}
echoes=${BRINGUP_ECHOES:-1000000}
log=${BRINGUP_LOG:-$tests/../gpu-bringup.log}
passed=0
failed=0
failures=()

: >"$log"
say() { printf '%s\n' "$*" | tee -a "$log"; }

# step NAME SECONDS COMMAND...: one step, its output to the log and here.
step() {
	local name=$1 limit=$2 rc
	shift 2
	if [ -n "${BRINGUP_LIMIT_S:-}" ] && [ "$BRINGUP_LIMIT_S" -lt "$limit" ]; then
		limit=$BRINGUP_LIMIT_S
	fi
	say "# ---- step $name (at most ${limit}s): $*"
	timeout -k 10 "$limit" "$@" 2>&1 | tee -a "$log"
	rc=${PIPESTATUS[0]}
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1))
		say "# step $name: passed"
	else
		failed=$((failed + 1))
		failures+=("$name")
		if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
			say "# step $name: FAILED: still running after ${limit}s (a hang)"
		else
			say "# step $name: FAILED (exit status $rc)"
		fi
	fi
	return "$rc"
}

say "# gpu bring-up, $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n), $(uname -r)"
if command -v nvidia-smi >/dev/null 2>&1; then
	timeout 30 nvidia-smi --query-gpu=name,driver_version,pci.bus_id,memory.total,compute_mode,clocks.sm,clocks.max.sm,persistence_mode \
		--format=csv 2>&1 | tee -a "$log"
fi
if command -v rocm-smi >/dev/null 2>&1; then
	timeout 30 rocm-smi --showproductname --showdriverversion 2>&1 | tee -a "$log"
fi
timeout -k 10 60 "$tests/eu-gpu-bringup" versions 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -eq 77 ] && [ -n "${BRINGUP_REQUIRE_GPU:-}" ]; then
	say "FAIL check-gpu: no usable GPU, and BRINGUP_REQUIRE_GPU asks for one (the probe's account is above)"
	exit 1
elif [ "$rc" -eq 77 ]; then
	say "SKIP check-gpu: no usable GPU (the probe's account is above)"
	exit 0
elif [ "$rc" -ne 0 ]; then
	say "FAIL check-gpu: the probe failed (exit status $rc)"
	exit 1
fi

step launch 120 "$tests/eu-gpu-bringup" launch
step opcode 60 "$tests/eu-gpu-bringup" opcode
step echo 300 "$tests/eu-gpu-bringup" echo "$echoes"
step echo-all 300 "$tests/eu-gpu-bringup" echo-all "$echoes"
step map 120 "$tests/eu-gpu-bringup" map
step badptr 120 "$tests/eu-gpu-bringup" badptr
# shellcheck disable=SC2086 # GPU_TESTS is a list of names
step selftests 600 env AGILE_EU_POOL=gpu AGILE_TEST_TIMEOUT=120 \
	"$here/run.sh" "$tests" ${GPU_TESTS:-eu-gpu}
if [ -n "$bench" ]; then
	step bench 300 "$bench" gpu
fi

say "gpu bring-up: $passed passed, $failed failed${failures:+ (${failures[*]})}"
[ "$failed" -eq 0 ]
