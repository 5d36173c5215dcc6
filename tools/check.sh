#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/check.sh - what `make check` runs after tools/deps.sh: build, lint,
# the GPU code's compile for every target, the library's suites (native,
# ASan+UBSan, TSan), the MPI collectives under mpirun (native), then the
# kmod and libagile selftests inside each guest kernel, one after the
# other, while the kmod selftests run inside the debug guest kernel (KASAN,
# lockdep, kmemleak...: tools/vm/debug.config) in the background, all but
# poll, which runs there alone at the end; after the debug guest, the
# Debian and DKMS packages' tests take the background's core.  Each step's
# verdict is a TAP line in build/results/steps.tap, its seconds a line of
# build/results/steps-time.txt; every suite writes its
# own TAP file beside it, and the last line counts them all: "N passed, N
# failed".
#
# Environment: KERNELS (default "6.1 6.12"), DEBUG_KERNELS (default
# "6.1-debug"; empty: none), MAKE (default make), and
# AGILE_DEBUG_FUZZ_SECONDS: the fuzzer's budget in the debug guest
# (default: run.sh's own).
set -u
cd "$(dirname "$0")/.." || exit 1
results=$PWD/build/results
kernels=${KERNELS:-6.1 6.12}
debug_kernels=${DEBUG_KERNELS-6.1-debug}
make=${MAKE:-make}
start=$(date +%s)

rm -rf "$results"
mkdir -p "$results"
n=0
failed=0

# step <name> <log> <command...>: run a step, log its output, one TAP line.
step() {
	local name=$1 log=$results/$2 t0 rc=0
	shift 2
	t0=$(date +%s)
	echo "=== $name"
	"$@" >"$log" 2>&1 || rc=$?
	step_done "$name" "$log" $rc $(($(date +%s) - t0))
}

# step_done <name> <log> <rc> <seconds>: a step's TAP line and time.
step_done() {
	local name=$1 log=$2 rc=$3
	n=$((n + 1))
	# How long each step took: the 40-minute budget is watched from here.
	echo "$4 s	$name" | tee -a "$results/steps-time.txt"
	if [ "$rc" -eq 0 ]; then
		echo "ok $n $name" >>"$results/steps.tap"
		return 0
	fi
	failed=$((failed + 1))
	echo "not ok $n $name" >>"$results/steps.tap"
	echo "--- $name failed; the end of $log:"
	tail -n 30 "$log"
	return 1
}

# step_bg <name> <log> <command...>: step's twin in the background; its TAP
# line and time are written by step_wait, numbered when it is collected.
# With BG_AFTER=<an earlier step_bg's log>, it starts when that one has
# ended: a lane of steps, one after the other, beside the foreground.
bg_names=()
bg_logs=()
bg_pids=()
step_bg() {
	local name=$1 log=$results/$2 after=${BG_AFTER:-}
	shift 2
	echo "=== $name (in the background${after:+, after $(basename "$after")})"
	(
		if [ -n "$after" ]; then
			while [ ! -e "$after.done" ]; do sleep 1; done
		fi
		t0=$(date +%s)
		rc=0
		"$@" >"$log" 2>&1 || rc=$?
		echo "$rc $(($(date +%s) - t0))" >"$log.rc"
		: >"$log.done" # kept: a later step of the lane waits for it
	) &
	bg_names+=("$name")
	bg_logs+=("$log")
	bg_pids+=($!)
}

# step_wait: wait for every step_bg and account for each, in start order.
step_wait() {
	local i rc secs
	for i in "${!bg_pids[@]}"; do
		wait "${bg_pids[$i]}"
		rc=1
		secs=0
		[ -r "${bg_logs[$i]}.rc" ] && read -r rc secs <"${bg_logs[$i]}.rc"
		rm -f "${bg_logs[$i]}.rc"
		step_done "${bg_names[$i]}" "${bg_logs[$i]}" "$rc" "$secs" || true
		case ${bg_names[$i]} in
		*dkms* | *Debian*) cp "${bg_logs[$i]}" "${bg_logs[$i]%.log}.tap" ;;
		esac
	done
	bg_pids=()
}

built=1
step "build (modules for $kernels, selftests, libagile, tools)" build.log \
	"$make" --no-print-directory KERNELS="$kernels" all || built=0
step "lint (checkpatch --strict, sparse, W=1)" lint.log \
	"$make" --no-print-directory lint
# Also inside lint; a line of its own so that a stale page is named here.
step "man pages (tools/check-man.sh: a page per exported symbol, up to date, groff -ww clean)" \
	man.log tools/check-man.sh
# agilectl without a module: the host never loads it (guests run the rest).
step "agilectl on the host without /dev/agile (tools/test-agilectl.sh)" \
	agilectl-host.log tools/test-agilectl.sh
cp "$results/agilectl-host.log" "$results/agilectl-host.tap"
step "agile-bench's CSV and report.py's report and plots (tools/test-bench-report.sh)" \
	bench-report.log tools/test-bench-report.sh
cp "$results/bench-report.log" "$results/bench-report.tap"
# No GPU here: the persistent kernel is compiled for every target only.
step "GPU persistent kernel compiles (HIP and CUDA targets; ISA/PTX read back)" gpu.log \
	"$make" --no-print-directory -C libagile gpu
grep -E 'compiled|code object|not found|check-gpu-isa' "$results/gpu.log"
# GPU EUs where there is a GPU; a SKIP line (a pass) elsewhere.
step "libagile check-gpu (GPU EUs; SKIP without a GPU)" check-gpu.log \
	"$make" --no-print-directory -C libagile check-gpu
grep -E '^(SKIP|FAIL|check-gpu)|^[0-9]+ passed' "$results/check-gpu.log"
# check-gpu's steps prebuilt in build/gpu-bundle, run against the stand-in.
step "GPU bundle: its run.sh passes on the stand-in runtime, fails when a step fails (make check-gpu-bundle)" \
	gpu-bundle.log "$make" --no-print-directory check-gpu-bundle
grep -E '^(ok|not ok) |^1\.\.' "$results/gpu-bundle.log" >"$results/gpu-bundle.tap"

# The test programs are built with a job per CPU first (their Makefile
# builds in parallel safely), then run one after the other (several time
# themselves against each other).
jobs=$(nproc 2>/dev/null || echo 1)
libagile_check() {
	"$make" --no-print-directory -j"$jobs" -C selftests/libagile "$1" &&
		"$make" --no-print-directory -C libagile "$2" TAP_OUT="$3"
}
for v in check check-asan check-tsan; do
	case $v in
	check) programs=native-tests ;;
	*) programs=${v#check-}-tests ;;
	esac
	step "libagile $v" "libagile-$v.log" \
		libagile_check "$programs" "$v" "$results/libagile-$v.tap"
	grep -E '^[0-9]+ passed' "$results/libagile-$v.log"
done

# The machines scope (libagile-mpi) natively, under mpirun over TCP.
step "libagile check-mpi (coll over MPI, 1 to 9 processes, faked nodes)" \
	libagile-check-mpi.log "$make" --no-print-directory -C libagile check-mpi \
	TAP_OUT="$results/libagile-check-mpi.tap"
grep -E '^[0-9]+ passed' "$results/libagile-check-mpi.log"

# The static libraries: agile* globals only; a program that defines the
# library's internal names links with them and runs (a TAP stream of its own).
step "libagile.a and libagile-mpi.a: agile* globals only, an application's own user_alloc links (tools/test-archives.sh)" \
	archives.log tools/test-archives.sh
cp "$results/archives.log" "$results/archives.tap"

# Each installed header alone, -pedantic, as C11 and C++17 with gcc and
# clang; the task register's layout in both languages (TAP of its own).
step "every installed header compiles alone: C11 and C++17, gcc and clang, -pedantic (tools/test-headers.sh)" \
	headers.log tools/test-headers.sh
cp "$results/headers.log" "$results/headers.tap"

# make install into a staging tree, the examples built from it with
# pkg-config and run, make uninstall (a TAP stream of its own, counted).
step "make install: examples from the installed tree with pkg-config; uninstall (tools/test-install.sh)" \
	install.log tools/test-install.sh
cp "$results/install.log" "$results/install.tap"

# What the guests' init fails a run on (a TAP stream of its own, counted).
step "guest log scanner catches each detector's report (tools/vm/test-init-scan.sh)" \
	init-scan.log tools/vm/test-init-scan.sh
cp "$results/init-scan.log" "$results/init-scan.tap"

# The debug kernel: built from linux-source once (about a quarter of an hour
# on two cores), then cached in $AGILE_CACHE; its guest runs the kmod
# selftests (and the fuzzer, run.sh's) under KASAN, lockdep,
# DEBUG_ATOMIC_SLEEP, UBSAN and KFENCE, and init's kmemleak scan at the end
# fails the run on any leak.  QEMU's TCG runs single-threaded here (one host
# core a guest, run-guest.sh), so the debug guest, the longest, runs in the
# background beside the other guests, one after the other, on the second
# core: about eight minutes less than one guest at a time.
debug_runs=()
for k in $debug_kernels; do
	step "debug kernel $k and the module for it (KASAN, lockdep, kmemleak, UBSAN, KFENCE)" \
		"build-$k.log" "$make" --no-print-directory debug-modules \
		DEBUG_KERNELS="$k" || continue
	[ $built = 1 ] || continue
	step_bg "kmod selftests but poll in the Linux $k guest (detectors on, kmemleak scan)" \
		"guest-$k.log" env AGILE_KMOD_SKIP=poll \
		${AGILE_DEBUG_FUZZ_SECONDS:+AGILE_FUZZ_SECONDS="$AGILE_DEBUG_FUZZ_SECONDS"} \
		tools/vm/run-guest.sh --tap "$results/guest-$k.tap" \
		"$k" selftests/kmod/run.sh
	debug_runs+=("$k")
done

# The Debian packages (dpkg-buildpackage in a copy of the tree under
# build/deb/src, lintian, the .debs unpacked with dpkg -x, never
# installed, and used: several minutes) and the DKMS package (dkms add and
# build, never install, for every guest kernel in a private dkms tree
# under build/dkms): neither touches what the guests take from build/, so
# they run in the background on the second core, after the debug guest,
# at a lower priority than the guests (one core each, their runners'
# timeouts).
deb_after=
[ ${#debug_runs[@]} -gt 0 ] &&
	deb_after=$results/guest-${debug_runs[$((${#debug_runs[@]} - 1))]}.log
BG_AFTER=$deb_after step_bg "Debian packages built, linted, unpacked and used (tools/test-deb.sh)" \
	deb.log nice -n 10 tools/test-deb.sh
BG_AFTER=$results/deb.log step_bg "dkms build of agile.ko for $kernels (tools/test-dkms.sh, private dkms tree)" \
	dkms.log env KERNELS="$kernels" nice -n 10 tools/test-dkms.sh

if [ $built = 1 ]; then
	for k in $kernels; do
		step "kmod selftests in the Linux $k guest" "guest-$k.log" \
			tools/vm/run-guest.sh --tap "$results/guest-$k.tap" \
			"$k" selftests/kmod/run.sh
		grep -E '^(not ok|# agile selftests:)' "$results/guest-$k.tap"
		# The user backend needs no module: the host's own check runs it
		# on Debian 12's kernel, 6.1, so the 6.1 guest runs kmod only.
		backends=kmod,user
		[ "$k" = 6.1 ] && backends=kmod
		step "libagile selftests in the Linux $k guest (backends: ${backends/,/, })" \
			"guest-libagile-$k.log" env AGILE_BACKENDS="$backends" \
			tools/vm/run-guest.sh --tap "$results/guest-libagile-$k.tap" \
			"$k" selftests/libagile/guest.sh
		grep -E '^not ok' "$results/guest-libagile-$k.tap"
	done
fi

step_wait
for k in "${debug_runs[@]}"; do
	grep -E '^(not ok|# agile selftests:)' "$results/guest-$k.tap"
	grep -E 'AGILE-INIT: (kmemleak|lockdep|kernel splats)' "$results/guest-$k.log"
	# poll alone: beside another guest its 128 sleepers ran 2-3x slower
	# than alone (417-609 s against 192-245), past their 300 s sleep and
	# the runner's 600 s limit.
	step "kmod poll selftest in the Linux $k guest, alone (detectors on, kmemleak scan)" \
		"guest-$k-poll.log" env AGILE_KMOD_PROGRAMS=poll \
		tools/vm/run-guest.sh --tap "$results/guest-$k-poll.tap" \
		"$k" selftests/kmod/run.sh
	grep -E '^(not ok|# agile selftests:)' "$results/guest-$k-poll.tap"
	grep -E 'AGILE-INIT: (kmemleak|lockdep|kernel splats)' "$results/guest-$k-poll.log"
done

echo "1..$n" >>"$results/steps.tap"
echo "make check: $(($(date +%s) - start)) s; logs and TAP in build/results/"
tools/vm/tap-summary.sh "$results"/*.tap
summary=$?
[ $failed = 0 ] && [ $summary = 0 ]
