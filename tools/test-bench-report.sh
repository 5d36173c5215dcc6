#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/test-bench-report.sh - agile-bench's CSV and its report: a quick
# real run (agile-bench doorbell) and a made-up allreduce table through
# tools/agile-bench/report.py (and --version, a bad option's exit 2);
# the report must hold each table, verdict and
# note, and a PNG per benchmark (bandwidth against size for allreduce).
# TAP on stdout.
set -u
cd "$(dirname "$0")/.." || exit 2
bench=build/tools/agile-bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fails=0
ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		fails=$((fails + 1))
	fi
}
png() { [ "$(head -c 8 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; }

# The native agile-bench (make all builds the guests' static one only).
make --no-print-directory -C tools/agile-bench "$PWD/$bench" >"$tmp/build.log" 2>&1
ok $? "agile-bench builds"
version=$(sed -n 's/^VERSION := //p' libagile/Makefile)
[ "$("$bench" --version 2>&1)" = "agile-bench $version" ]
ok $? "agile-bench --version: the project's version ($version), exit 0"
"$bench" --no-such-option doorbell >/dev/null 2>&1
[ $? = 2 ]
ok $? "agile-bench with an unknown option: exit 2"
"$bench" --csv "$tmp/d.csv" -r 3 -T 2000 doorbell >"$tmp/d.out" 2>&1
ok $? "agile-bench doorbell --csv"
python3 - "$tmp/d.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert len({len(r) for r in rows}) == 1, "rows of different lengths"
assert any(r[0] == "note" for r in rows), "no note rows"
PY
ok $? "every CSV row has the header's columns; the notes are in it"
python3 tools/agile-bench/report.py "$tmp/d.csv" "$tmp/d" >/dev/null
ok $? "report.py on it"
grep -q '^## doorbell$' "$tmp/d/report.md" &&
	grep -q '^| one-line | ' "$tmp/d/report.md" &&
	grep -q '^| dev-user time over same-lines | ' "$tmp/d/report.md" &&
	grep -q '^- per round trip' "$tmp/d/report.md"
ok $? "the report has doorbell's table, its verdicts and its note"
png "$tmp/d/doorbell.png"
ok $? "doorbell.png is a PNG"

# An allreduce table as agile-bench writes it, a reason with a comma too.
h=kind,bench,variant,threads,reps,min_ms,median_ms,baseline,ratio,target,verdict,bytes,bandwidth_Bps,p10_ms,p90_ms,max_ms,moved_bytes,moved_min_bytes
{
	echo "$h"
	for who in agile ompi-best; do
		for kb in 4 64 1024; do
			b=$((kb * 1024))
			echo "time,allreduce,$who-${kb}K-np2,2,15,0.1,0.2,,,,,$b,$((b * 5000)),0.15,0.25,0.3,,"
		done
	done
	echo 'na,allreduce,memcpy-4K-np2,1,,,,,,,"not measured, no time",,,,,,,'
	echo 'speedup,allreduce,agile-4K-np2,,,,,ompi-best-4K-np2,1.2000,>= 1,met,,,,,,,'
	echo 'note,,"allreduce: a note, with a comma",,,,,,,,,,,,,,,'
} >"$tmp/a.csv"
python3 tools/agile-bench/report.py "$tmp/a.csv" "$tmp/a" >/dev/null
ok $? "report.py on an allreduce table"
grep -q 'n/a: not measured, no time' "$tmp/a/report.md" &&
	grep -q '^- a note, with a comma$' "$tmp/a/report.md" &&
	grep -q '^| agile-4K-np2 faster than ompi-best-4K-np2 | 1.20x | >= 1 | met |$' "$tmp/a/report.md"
ok $? "quoted fields read back whole; the verdict's row"
png "$tmp/a/allreduce.png"
ok $? "allreduce.png (bandwidth against size) is a PNG"
python3 tools/agile-bench/report.py "$tmp/none.csv" "$tmp/x" >/dev/null 2>&1
[ $? = 1 ]
ok $? "a missing CSV: exit status 1"
echo "1..$n"
[ "$fails" = 0 ]
