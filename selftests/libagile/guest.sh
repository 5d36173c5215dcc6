#!/bin/sh
# SPDX-License-Identifier: MIT
#
# selftests/libagile/guest.sh - libagile's selftests INSIDE a test guest
# (tools/vm/run-guest.sh <K> selftests/libagile/guest.sh), as root, busybox sh.
#
# Loads agile.ko unless /dev/agile is there, then runs every test program
# (the static build of `make -C libagile guest-tests`) twice: with
# AGILE_BACKEND=kmod, against the real module, and with AGILE_BACKEND=user.
# Checks that no context is left open, and unloads the module if it loaded
# it.
#
# Prints one TAP stream on stdout: each program's results renumbered into
# it as "ok N <backend>/<program>: <test>", its diagnostics as "#" lines,
# the plan at the end.  A program that exits non-zero (but 77, a SKIP),
# dies early or prints nothing gets a "not ok" of its own, and so does one
# during which the kernel logged a splat (WARNING:, BUG:, KASAN, lockdep,
# ...: selftests/tap-merge.sh).  Ends with "N passed, N failed, N skipped";
# exits non-zero when anything failed.
#
# Environment: AGILE_LIBAGILE_TESTS (directory of the test programs,
# default /selftests/libagile), AGILE_TEST_TIMEOUT (seconds per program,
# default 600), AGILE_LIBAGILE_PROGRAMS (the programs to run, separated by
# spaces or commas; default all),
# AGILE_BACKENDS (default "kmod user"; commas separate them too, as they
# come over the guest's kernel command line: "kmod,user").  AGILE_TEST_QUICK is set (unless already set): the guests
# are emulated, about 50x slower, and the tests that honour it run
# smaller matrices.

DIR=${AGILE_LIBAGILE_TESTS:-/selftests/libagile}
export AGILE_TEST_QUICK=${AGILE_TEST_QUICK:-1}
SYSFS=/sys/class/misc/agile

# ok, not_ok, run_program, wait_for_node: one TAP stream from many programs.
. /lib/agile/tap-merge.sh

echo "TAP version 13"
echo "# libagile selftests on Linux $(uname -r) (guest ${AGILE_KERNEL:-?})"

loaded=0
if [ ! -c /dev/agile ]; then
	if modprobe agile >/tmp/.agile-modprobe 2>&1 && wait_for_node; then
		loaded=1
		ok "modprobe agile: /dev/agile appears"
	else
		not_ok "modprobe agile: /dev/agile appears"
		sed 's/^/# /' /tmp/.agile-modprobe
	fi
fi

programs=""
if [ -n "${AGILE_LIBAGILE_PROGRAMS:-}" ]; then
	for t in ${AGILE_LIBAGILE_PROGRAMS//,/ }; do
		programs="$programs $DIR/$t"
	done
else
	for t in "$DIR"/*; do
		[ -f "$t" ] && [ -x "$t" ] && programs="$programs $t"
	done
fi
if [ -z "$programs" ]; then
	not_ok "test programs in $DIR (make -C libagile guest-tests)"
fi

backends=$(echo "${AGILE_BACKENDS:-kmod user}" | tr ',' ' ')
for backend in $backends; do
	case $backend in
	kmod | user) ;;
	*)
		not_ok "AGILE_BACKENDS: '$backend' is neither kmod nor user"
		continue
		;;
	esac
	for t in $programs; do
		name=$(basename "$t")
		echo "# ---- $backend/$name"
		t0=$(cut -d' ' -f1 /proc/uptime)
		AGILE_BACKEND=$backend run_program "$t" "$backend/$name"
		echo "# $backend/$name: $(awk -v t0="$t0" '{ printf "%.1f", $1 - t0 }' /proc/uptime) s"
	done
done

if [ -r "$SYSFS/contexts" ]; then
	c=$(cat "$SYSFS/contexts")
	if [ "$c" = 0 ]; then
		ok "no agile context left open"
	else
		not_ok "no agile context left open ($c are)"
	fi
fi
if [ $loaded = 1 ]; then
	if rmmod agile >/tmp/.agile-rmmod 2>&1; then
		ok "rmmod agile"
	else
		not_ok "rmmod agile"
		sed 's/^/# /' /tmp/.agile-rmmod
	fi
fi

echo "1..$n"
echo "# libagile selftests: $((n - failed - skipped)) passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
