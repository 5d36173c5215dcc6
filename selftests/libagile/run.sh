#!/bin/bash
# SPDX-License-Identifier: MIT
#
# run.sh BINDIR TEST... - run libagile selftests, print their TAP, and end
# with "N passed, N failed, N skipped" (one count per test program).  A
# test passes when it exits 0 and printed no "not ok"; it is skipped when
# it exits 77 (the whole program could not run here: no GPU, not root...)
# and printed no "not ok"; anything else fails.  With TAP_OUT=FILE, also
# writes one TAP line per program to FILE (for the top-level summary),
# "ok N - libagile/T # SKIP" for a skipped one.
# Each program's wall time follows its output ("# T took N ms").
# AGILE_TEST_TIMEOUT: seconds a program may run (default 600).
set -u
bindir=$1
shift
passed=0
failed=0
skipped=0
n=0
tap_lines=()
for t in "$@"; do
	n=$((n + 1))
	echo "# ---- $t"
	# A hung test fails alone (rc 124) instead of hanging the run.
	t0=$(date +%s%N)
	out=$(timeout -k 10 "${AGILE_TEST_TIMEOUT:-600}" "$bindir/$t" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	# Its wall time: make check's 40 minutes are watched test by test.
	t1=$(date +%s%N)
	echo "# $t took $(((t1 - t0) / 1000000)) ms"
	if printf '%s\n' "$out" | grep -q '^not ok'; then
		rc_ok=0
	else
		rc_ok=1
	fi
	if [ $rc -eq 0 ] && [ $rc_ok = 1 ]; then
		passed=$((passed + 1))
		tap_lines+=("ok $n - libagile/$t")
	elif [ $rc -eq 77 ] && [ $rc_ok = 1 ]; then
		skipped=$((skipped + 1))
		echo "# $t skipped (exit status 77)"
		tap_lines+=("ok $n - libagile/$t # SKIP")
	else
		failed=$((failed + 1))
		echo "# $t FAILED (exit status $rc)"
		tap_lines+=("not ok $n - libagile/$t")
	fi
done
if [ -n "${TAP_OUT:-}" ]; then
	{ printf '%s\n' "${tap_lines[@]}"; echo "1..$n"; } > "$TAP_OUT"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
