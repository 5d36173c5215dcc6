#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/fuzz.sh - what `make fuzz` runs: a long fuzzing run of agile.ko in a
# guest.  Installs trinity and stress-ng (tools/deps.sh --fuzz: `make check`
# never needs them), builds the module and the selftests for the kernel, then
# boots it with both tools and runs selftests/kmod/fuzz-guest.sh: agile's own
# fuzzer (selftests/kmod/fuzz), trinity and stress-ng's --dev stressor on
# /dev/agile at once, for FUZZ_MINUTES.  The guest's init fails the run on
# any kernel splat.  The TAP report is build/results/fuzz-<K>.tap; the last
# line says "N passed, N failed".
#
# Environment: FUZZ_MINUTES (default 10), FUZZ_KERNEL (default 6.1),
# AGILE_FUZZ_SEED (agile's fuzzer's seed; default random, printed),
# AGILE_VM_MEM (default 2G: three fuzzers in one guest).
set -eu
cd "$(dirname "$0")/.."

minutes=${FUZZ_MINUTES:-10}
k=${FUZZ_KERNEL:-6.1}
case $minutes in
'' | *[!0-9]* | 0) echo "fuzz: FUZZ_MINUTES must be a whole number of minutes" >&2; exit 2 ;;
esac

tools/deps.sh --fuzz
make --no-print-directory KERNELS="$k" modules selftests

results=$PWD/build/results
mkdir -p "$results"
export AGILE_FUZZ_SECONDS=$((minutes * 60))
# Boot, the unload checks and a stuck fuzzer's watchdog fit in 5 minutes.
export AGILE_VM_TIMEOUT=$((minutes * 60 + 300))
export AGILE_VM_MEM=${AGILE_VM_MEM:-2G}
echo "fuzz: Linux $k guest, $minutes min of agile's fuzzer, trinity and stress-ng --dev"
rc=0
tools/vm/run-guest.sh --tap "$results/fuzz-$k.tap" "$k" \
	selftests/kmod/fuzz-guest.sh "$(command -v trinity)" \
	"$(command -v stress-ng)" >"$results/fuzz-$k.log" 2>&1 || rc=$?
grep -E '^(not ok|ok .*(fuzz|trinity|stress-ng))|^# (fuzz: seed|VIOLATION|watchdog)' \
	"$results/fuzz-$k.tap" || true
tail -n 1 "$results/fuzz-$k.log"
tools/vm/tap-summary.sh "$results/fuzz-$k.tap" || rc=1
exit $rc
