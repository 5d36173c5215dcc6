#!/bin/sh
# SPDX-License-Identifier: MIT
#
# tools/agile-bench/pollcost-guest.sh - agile-bench pollcost INSIDE a test
# guest, with the module under test and, when /extra/agile-old.ko is there
# (an older build given to run-guest.sh as an extra file), with that one,
# back to back in one boot so their rows compare:
#
#	tools/agile-bench/pollcost.sh [OLD-REF]
#
# Order: new, old, new, old (two runs each, AGILE_POLLCOST_ROUNDS), so a
# drift of the emulated machine's speed shows between a module's runs.
# AGILE_POLLCOST_ARGS: agile-bench's arguments before "pollcost" (default
# "-r 5 -p 1000 -S 0,100,1000,3000"); AGILE_POLLCOST_OLD_ARGS: the same for
# the old module (default: AGILE_POLLCOST_ARGS), whose cost grows with
# every sleeping context and may stall the guest at the larger counts.
set -u
SYSFS=/sys/class/misc/agile
ARGS=${AGILE_POLLCOST_ARGS:--r 5 -p 1000 -S 0,100,1000,3000}
OLD_ARGS=${AGILE_POLLCOST_OLD_ARGS:-$ARGS}
ROUNDS=${AGILE_POLLCOST_ROUNDS:-2}

load() {
	[ -d /sys/module/agile ] && rmmod agile
	if [ "$1" = new ]; then
		modprobe agile || return 1
	else
		insmod /extra/agile-old.ko || return 1
	fi
	i=0
	while [ ! -c /dev/agile ] && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -c /dev/agile ]
}

echo "# agile-bench pollcost on Linux $(uname -r) (guest ${AGILE_KERNEL:-?}), $(nproc) CPUs"
status=0
round=1
while [ $round -le "$ROUNDS" ]; do
	for m in new old; do
		[ $m = old ] && [ ! -f /extra/agile-old.ko ] && continue
		if ! load $m; then
			echo "# cannot load the $m module"
			status=1
			continue
		fi
		echo "# ---- round $round, $m module ($([ -r $SYSFS/poll_max_checks ] &&
			echo "one poller, poll_max_checks $(cat $SYSFS/poll_max_checks)" ||
			echo "one timer per context"))"
		args=$ARGS
		[ $m = old ] && args=$OLD_ARGS
		# shellcheck disable=SC2086
		agile-bench-static $args pollcost 2>&1 | sed 's/^/# /' || status=1
	done
	round=$((round + 1))
done
[ -d /sys/module/agile ] && rmmod agile
exit $status
