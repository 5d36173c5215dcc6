# SPDX-License-Identifier: MIT
#
# selftests/tap-merge.sh - sourced by the guest scripts (selftests/kmod/run.sh,
# selftests/libagile/guest.sh) INSIDE a test guest, busybox sh;
# tools/vm/run-guest.sh installs it as /lib/agile/tap-merge.sh.
#
# Builds one TAP stream out of several test programs:
#   ok/not_ok <text>         a line of the script's own, numbered
#   run_program <path> <label>
#                            the program's results renumbered into the
#                            stream as "ok N <label>: <test>" (kselftest
#                            harness "ok N name" and tap.h "ok N - name"
#                            alike), its diagnostics as "#" lines; a
#                            program that dies early gets "not ok" for the
#                            tests it never reported, one that exits
#                            non-zero with every test passed or prints no
#                            TAP gets one "not ok"
#   wait_for_node            waits up to 5 s for /dev/agile
# $n counts lines, $failed the failures.  AGILE_TEST_TIMEOUT: seconds per
# program (default 600).

n=0
failed=0
TAP_MERGE_STATE=/tmp/.agile-tap-merge.state
TAP_MERGE_LIMIT=${AGILE_TEST_TIMEOUT:-600}

ok() {
	n=$((n + 1))
	echo "ok $n $*"
}

not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n $*"
}

run_program() {
	{
		timeout "$TAP_MERGE_LIMIT" "$1" 2>&1
		echo "@@agile-rc $?"
	} </dev/null | awk -v base="$n" -v prog="$2" -v state="$TAP_MERGE_STATE" '
		function emit(s) { print s; fflush() }
		/^TAP version/ { next }
		/^1\.\.[0-9]+$/ { plan = substr($0, 4) + 0; emit("# " prog ": plan " plan); next }
		/^@@agile-rc / { rc = $2 + 0; next }
		/^#  RUN / {
			name = $0
			sub(/^#  RUN +/, "", name)
			sub(/ \.\.\.$/, "", name)
			emit($0)
			next
		}
		/^(not )?ok [0-9]+/ {
			bad = ($1 == "not")
			desc = $0
			sub(/^(not )?ok [0-9]+ ?(- )?/, "", desc)
			count++
			if (desc ~ /^# /)	# a harness SKIP line names no test
				desc = name " " desc
			if (bad) {
				fails++
				emit("not ok " (base + count) " " prog ": " desc)
			} else {
				emit("ok " (base + count) " " prog ": " desc)
			}
			next
		}
		/^#/ { emit($0); next }
		{ emit("# " $0) }
		END {
			extra = 0
			if (count < plan) {
				extra = 1
				fails++
				emit("not ok " (base + count + 1) " " prog ": " (plan - count) \
				     " of " plan " tests never reported (exit " rc ")")
			} else if (rc != 0 && fails == 0) {
				extra = 1
				fails++
				emit("not ok " (base + count + 1) " " prog ": exited with " rc \
				     " though every test passed")
			} else if (count == 0) {
				extra = 1
				fails++
				emit("not ok " (base + 1) " " prog ": no TAP output (exit " rc ")")
			}
			print (count + extra) " " (fails + 0) > state
		}'
	read -r lines fails <"$TAP_MERGE_STATE" || {
		lines=0
		fails=0
	}
	n=$((n + lines))
	failed=$((failed + fails))
}

wait_for_node() {
	i=0
	while [ ! -c /dev/agile ] && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -c /dev/agile ] || {
		echo "/dev/agile did not appear"
		return 1
	}
}
