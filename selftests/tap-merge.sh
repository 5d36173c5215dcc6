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
#                            non-zero (77: skipped, see below) with every
#                            test passed or prints no TAP gets one "not ok";
#                            one that exits 77 (skipped here) with no
#                            failure and no result gets one "ok ... # SKIP";
#                            and a program during which the kernel logged
#                            a splat gets a "not ok" naming it
#   wait_for_node            waits up to 5 s for /dev/agile
# $n counts lines, $failed the failures, $skipped the "ok ... # SKIP" lines.
# AGILE_TEST_TIMEOUT: seconds per program (default 600).
#
# The kernel log per program: run_program writes a mark into it
# (/dev/kmsg) before the program starts and, once it ends, scans the lines
# after the mark for the splats tools/vm/init fails a whole run on (its
# SPLATS and SPLATS_ANYWHERE, which init exports: one list for both).
# init's own scan at the end stays: it also sees what no program caused.

n=0
failed=0
skipped=0
TAP_MERGE_STATE=/tmp/.agile-tap-merge.state
TAP_MERGE_LIMIT=${AGILE_TEST_TIMEOUT:-600}
TAP_MERGE_MARKS=0
# Outside init (a guest script started by hand): init's lists, from /init.
if [ -z "${SPLATS:-}" ] && [ -r /init ]; then
	eval "$(grep -E '^SPLATS(_ANYWHERE)?=' /init)"
fi

ok() {
	n=$((n + 1))
	case "$*" in
	*"# SKIP"*) skipped=$((skipped + 1)) ;;
	esac
	echo "ok $n $*"
}

not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n $*"
}

# kmsg_mark <label>: a line in the kernel log that run_program's scan
# starts after; sets TAP_MERGE_MARK (empty when /dev/kmsg is not writable).
kmsg_mark() {
	TAP_MERGE_MARKS=$((TAP_MERGE_MARKS + 1))
	TAP_MERGE_MARK="agile-tap-merge: program $TAP_MERGE_MARKS starts: $1"
	echo "$TAP_MERGE_MARK" 2>/dev/null >/dev/kmsg || TAP_MERGE_MARK=""
}

# kmsg_splats: the splat lines of the kernel log after the last mark (all
# of the log when the mark scrolled out of the ring buffer); none when
# there is no mark or no list of splats.
kmsg_splats() {
	[ -n "$TAP_MERGE_MARK" ] && [ -n "${SPLATS:-}" ] || return 0
	dmesg 2>/dev/null | awk -v mark="$TAP_MERGE_MARK" '
		{ line[NR] = $0 }
		length($0) >= length(mark) &&
		substr($0, length($0) - length(mark) + 1) == mark { from = NR }
		END { for (i = from + 1; i <= NR; i++) print line[i] }' \
		>/tmp/.agile-tap-merge.kmsg
	{
		grep -E "$SPLATS" /tmp/.agile-tap-merge.kmsg
		[ -z "${SPLATS_ANYWHERE:-}" ] ||
			grep -E "$SPLATS_ANYWHERE" /tmp/.agile-tap-merge.kmsg
	} | awk '!seen[$0]++'
}

run_program() {
	kmsg_mark "$2"
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
				skips += (desc ~ /#[ \t]*SKIP/)
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
			} else if (rc == 77 && fails == 0 && count == 0) {
				extra = 1
				skips++
				emit("ok " (base + 1) " " prog " # SKIP exit 77: nothing to run here")
			} else if (rc == 77 && fails == 0) {
				# skipped as a whole: its results say SKIP
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
			print (count + extra) " " (fails + 0) " " (skips + 0) > state
		}'
	read -r lines fails skip <"$TAP_MERGE_STATE" || {
		lines=0
		fails=0
		skip=0
	}
	n=$((n + lines))
	failed=$((failed + fails))
	skipped=$((skipped + skip))
	kmsg_splats >/tmp/.agile-tap-merge.splats
	if [ -s /tmp/.agile-tap-merge.splats ]; then
		not_ok "$2: kernel log: $(head -n 1 /tmp/.agile-tap-merge.splats)"
		sed 's/^/# /' /tmp/.agile-tap-merge.splats
	fi
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
