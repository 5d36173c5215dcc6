#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# selftests/kmod/run.sh - the selftest runner, run INSIDE a test guest
# (tools/vm/run-guest.sh <K> selftests/kmod/run.sh), as root, busybox sh.
#
# Runs autoload (autoload.sh: agile loads on the first open of /dev/agile)
# before anything loads the module, then loads agile.ko (first with
# non-default parameters, to check that they set the sysfs defaults and
# the device's mode, then plainly), agile_pin_test.ko
# and vgem (for the dmabuf test's import), gives /dev/agile the group
# "agile" as udev/60-agile.rules would (the guest has no udev; run-guest.sh
# writes the group into /etc/group), runs every test
# program, then checks that agile.ko cannot go while /dev/agile is open and
# unloads once everything is closed.
#
# Prints one TAP stream on stdout: each program's test cases renumbered
# into it as "ok N <program>: <test>", the module steps as their own lines,
# the programs' diagnostics as "#" lines, and the plan at the end; a
# program during which the kernel logged a splat gets a "not ok" naming it
# (selftests/tap-merge.sh), one that exits 77 is a SKIP.  Ends with "N
# passed, N failed, N skipped"; exits non-zero when anything failed.
#
# Environment: AGILE_SELFTESTS (directory of the test programs, default
# the one holding this script's programs on PATH), AGILE_KO_DIR (where
# agile.ko and agile_pin_test.ko are; default: searched), AGILE_TEST_TIMEOUT
# (seconds per program, default 600), AGILE_KMOD_PROGRAMS (the programs to
# run, default all), AGILE_KMOD_SKIP (programs not to run), AGILE_FUZZ_SECONDS (the fuzzer's budget, default 60)
# AGILE_FUZZ_SEED (its seed, default random) and AGILE_FUZZ_HARDENED
# (default 1: the fuzzer requires the hardened ABI).

# AGILE_KMOD_PROGRAMS narrows the run to some programs (make mutate),
# AGILE_KMOD_SKIP leaves some out (make check's debug guest runs poll
# apart); commas separate them too, as they come over a guest's kernel
# command line.  fuzz last: it runs for its budget over what the others
# left, and the unload checks below then see that it leaked nothing.
PROGRAMS=$(echo "${AGILE_KMOD_PROGRAMS:-"autoload abi mmap fence wait_any sysfs pin memcg limits trace seg dmabuf group stall rdonly poll fdinfo stress agilectl_test fuzz"}" | tr ',' ' ')
for skip in $(echo "${AGILE_KMOD_SKIP:-}" | tr ',' ' '); do
	# Words on one line: the case below looks for " autoload ".
	PROGRAMS=$(for p in $PROGRAMS; do [ "$p" = "$skip" ] || printf '%s ' "$p"; done)
done
export AGILE_FUZZ_SECONDS="${AGILE_FUZZ_SECONDS:-60}"
# The module is hardened: the fuzzer requires it (read-only files refused,
# out-of-range timeouts EINVAL, waits restarted after stop signals).
export AGILE_FUZZ_HARDENED="${AGILE_FUZZ_HARDENED:-1}"
SYSFS=/sys/class/misc/agile

# ok, not_ok, run_program, wait_for_node: one TAP stream from many programs.
. /lib/agile/tap-merge.sh

# check <description> <command...>: one TAP line; the output of a failed
# command becomes diagnostics.
check() {
	desc=$1
	shift
	if "$@" >/tmp/.agile-check 2>&1; then
		ok "$desc"
	else
		not_ok "$desc"
		sed 's/^/# /' /tmp/.agile-check
	fi
}

find_ko() {
	for d in ${AGILE_KO_DIR:-} /ko "/lib/modules/$(uname -r)/extra" \
		/lib/agile /extra; do
		if [ -f "$d/$1.ko" ]; then
			echo "$d/$1.ko"
			return 0
		fi
	done
	find / -xdev -name "$1.ko" 2>/dev/null | head -n 1
}

find_tests() {
	if [ -n "${AGILE_SELFTESTS:-}" ]; then
		echo "$AGILE_SELFTESTS"
		return
	fi
	p=$(command -v abi 2>/dev/null)
	if [ -n "$p" ]; then
		dirname "$p"
	else
		echo /selftests/kmod
	fi
}

# sysfs_is <file> <value>
sysfs_is() {
	v=$(cat "$SYSFS/$1" 2>&1)
	[ "$v" = "$2" ] || {
		echo "$SYSFS/$1 is '$v', want '$2'"
		return 1
	}
}

# node_is <mode> <group>: /dev/agile's mode (octal) and group name.
node_is() {
	v=$(stat -c '%a %G' /dev/agile 2>&1)
	[ "$v" = "$1 $2" ] || {
		echo "/dev/agile is '$v', want '$1 $2'"
		return 1
	}
}

param_defaults() {
	sysfs_is poll_interval_us 200 && sysfs_is spin_ns 0 &&
		sysfs_is max_slots 16 && sysfs_is max_contexts_per_user 7 &&
		sysfs_is poll_max_checks 128 && sysfs_is poll_cpu_permille 200 &&
		node_is 666 root &&
		param_is dev_mode 0666
}

plain_defaults() {
	sysfs_is poll_interval_us 100 && sysfs_is spin_ns 2000 &&
		sysfs_is max_slots 4096 && sysfs_is max_contexts_per_user 1024 &&
		sysfs_is poll_max_checks 256 && sysfs_is poll_cpu_permille 50 &&
		node_is 660 root && param_is dev_mode 0660
}

# param_is <name> <value>: /sys/module/agile/parameters/<name>
param_is() {
	v=$(cat "/sys/module/agile/parameters/$1" 2>&1)
	[ "$v" = "$2" ] || {
		echo "parameter $1 is '$v', want '$2'"
		return 1
	}
}

# What udev/60-agile.rules does where udev runs, but for its MODE, which
# would only repeat the module's default: the tests see the module's mode.
udev_rule() {
	chgrp agile /dev/agile && node_is 660 agile
}

# dev_mode=0600 makes a root-only node; insmod refuses a dev_mode outside
# 0600, 0660, 0666.
dev_modes() {
	insmod "$AGILE_KO" dev_mode=600 && wait_for_node && node_is 600 root &&
		param_is dev_mode 0600 && rmmod agile || return 1
	for mode in 0777 0644 0606 0 666x; do
		if insmod "$AGILE_KO" dev_mode=$mode 2>/dev/null; then
			echo "dev_mode=$mode was accepted"
			rmmod agile
			return 1
		fi
	done
	[ ! -d /sys/module/agile ]
}

echo "TAP version 13"
echo "# agile kmod selftests on Linux $(uname -r) (guest ${AGILE_KERNEL:-?})"

AGILE_KO=$(find_ko agile)
PIN_KO=$(find_ko agile_pin_test)
TESTS=$(find_tests)

if [ -z "$AGILE_KO" ]; then
	not_ok "find agile.ko"
	echo "1..$n"
	exit 1
fi
echo "# agile.ko: $AGILE_KO"
echo "# agile_pin_test.ko: ${PIN_KO:-none}"
echo "# tests: $TESTS"
[ -d /sys/module/agile ] && rmmod agile 2>/dev/null

# autoload first: it needs the module not loaded, and loads it itself
# through the first open of /dev/agile.
case " $PROGRAMS " in
*" autoload "*)
	PROGRAMS=$(for p in $PROGRAMS; do [ "$p" = autoload ] || printf '%s ' "$p"; done)
	if [ -x "$TESTS/autoload" ]; then
		echo "# ---- autoload"
		run_program "$TESTS/autoload" autoload
	else
		not_ok "autoload: $TESTS/autoload missing"
	fi
	;;
esac

# Module parameters set the defaults of the sysfs tunables and the mode.
params="poll_interval_us=200 spin_ns=0 max_slots=16"
params="$params max_contexts_per_user=7 dev_mode=0666 poll_max_checks=128"
params="$params poll_cpu_permille=200"
if insmod "$AGILE_KO" $params >/tmp/.agile-check 2>&1; then
	ok "insmod agile.ko $params"
	check "/dev/agile appears (parameters)" wait_for_node
	check "module parameters are the sysfs defaults and the mode" \
		param_defaults
	check "rmmod agile (parameters)" rmmod agile
else
	not_ok "insmod agile.ko $params"
	sed 's/^/# /' /tmp/.agile-check
fi
check "dev_mode=600; insmod refuses other than 0600, 0660, 0666" dev_modes

# ... and obey the same ranges.
for bad in poll_max_checks=63 poll_cpu_permille=0 poll_cpu_permille=1001; do
	if insmod "$AGILE_KO" "$bad" >/tmp/.agile-check 2>&1; then
		not_ok "insmod agile.ko $bad refused"
		rmmod agile
	else
		ok "insmod agile.ko $bad refused"
	fi
done

check "insmod agile.ko" insmod "$AGILE_KO"
if [ ! -d /sys/module/agile ]; then
	echo "1..$n"
	exit 1
fi
check "/dev/agile appears" wait_for_node
check "defaults: 100 us, 2000 ns, 4096 slots, 1024 contexts, 256 checks, 50 permille, mode 0660" \
	plain_defaults
check "/dev/agile gets group agile (the udev rule)" udev_rule

if [ -n "$PIN_KO" ]; then
	check "insmod agile_pin_test.ko" insmod "$PIN_KO"
else
	ok "insmod agile_pin_test.ko # SKIP not built"
fi

# vgem imports agile's dma-bufs in the dmabuf test.
if modprobe vgem >/tmp/.agile-check 2>&1; then
	ok "modprobe vgem"
else
	ok "modprobe vgem # SKIP $(head -n 1 /tmp/.agile-check)"
fi

for prog in $PROGRAMS; do
	if [ -x "$TESTS/$prog" ]; then
		echo "# ---- $prog"
		t0=$(cut -d' ' -f1 /proc/uptime)
		run_program "$TESTS/$prog" "$prog"
		echo "# $prog: $(awk -v t0="$t0" '{ printf "%.1f", $1 - t0 }' /proc/uptime) s"
	else
		not_ok "$prog: $TESTS/$prog missing"
	fi
done

echo "# ---- unload"
[ -d /sys/module/agile_pin_test ] && check "rmmod agile_pin_test" rmmod agile_pin_test
[ -d /sys/module/vgem ] && check "rmmod vgem" rmmod vgem
check "no context left (sysfs contexts is 0)" sysfs_is contexts 0

# The misc device holds the module while any file is open.
exec 3<>/dev/agile
if rmmod agile >/tmp/.agile-check 2>&1; then
	not_ok "rmmod agile refused while /dev/agile is open"
	exec 3>&-
else
	ok "rmmod agile refused while /dev/agile is open"
	exec 3>&-
	check "rmmod agile after everything is closed" rmmod agile
fi
check "/dev/agile is gone" test ! -e /dev/agile

echo "1..$n"
echo "# agile selftests: $((n - failed - skipped)) passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
