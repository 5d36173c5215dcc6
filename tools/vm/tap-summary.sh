#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/vm/tap-summary.sh [-v] <tap files...>
#
# Counts the results in TAP files (the guest's TAP, build/results/<K>.tap) and
# prints one line:  N passed, N failed, N skipped
#
# A result is a line starting in column 0 with "ok" or "not ok" (what
# kselftest_harness.h prints; indented lines are nested subtests already
# counted by their parent).  "# SKIP" in an ok line counts as skipped, not
# passed.  When a plan ("1..N") promises more results than follow it before the
# next plan or the end of the file (a test binary that crashed or hung), the
# missing ones count as failed, with a note on stderr (a plan may also follow
# its results, as TAP allows).
#
# -v: also one line per file on stderr.
# Exit status: 0 when nothing failed and at least one test passed, 1 otherwise
# (a run that ran nothing is not a success), 2 on usage errors.

set -eu

verbose=0
if [ "${1:-}" = "-v" ]; then
	verbose=1
	shift
fi
[ $# -ge 1 ] || {
	echo "usage: tools/vm/tap-summary.sh [-v] <tap files...>" >&2
	exit 2
}
for f in "$@"; do
	[ -r "$f" ] || {
		echo "tap-summary.sh: cannot read $f" >&2
		exit 2
	}
done

# Serial consoles add CRs; strip them before matching.
awk -v verbose="$verbose" '
function close_plan() {
	if (planned > seen) {
		printf "tap-summary.sh: %s: plan 1..%d but only %d results: %d counted as failed\n",
			FILENAME_prev, planned, seen, planned - seen > "/dev/stderr"
		fail += planned - seen
		ffail += planned - seen
	}
	planned = 0
	seen = 0
}
function close_file() {
	close_plan()
	if (verbose && FILENAME_prev != "")
		printf "%s: %d passed, %d failed, %d skipped\n", FILENAME_prev, fpass, ffail, fskip > "/dev/stderr"
	fpass = ffail = fskip = 0
}
FNR == 1 { close_file(); FILENAME_prev = FILENAME }
{ sub(/\r$/, "") }
/^1\.\.[0-9]+/ {
	if (planned == 0 && seen > 0) {
		# A plan after its results (allowed by TAP): it covers them.
		planned = substr($1, 4) + 0
		close_plan()
	} else {
		close_plan()
		planned = substr($1, 4) + 0
	}
	next
}
/^not ok( |$)/ {
	seen++
	if ($0 ~ /#[ \t]*[Ss][Kk][Ii][Pp]/) { skip++; fskip++ } else { fail++; ffail++ }
	next
}
/^ok( |$)/ {
	seen++
	if ($0 ~ /#[ \t]*[Ss][Kk][Ii][Pp]/) { skip++; fskip++ } else { pass++; fpass++ }
	next
}
END {
	close_file()
	printf "%d passed, %d failed, %d skipped\n", pass, fail, skip
	exit (fail == 0 && pass > 0) ? 0 : 1
}' "$@"
