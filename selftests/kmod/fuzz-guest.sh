#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# selftests/kmod/fuzz-guest.sh - the guest side of `make fuzz` (tools/fuzz.sh),
# run INSIDE a test guest as root, busybox sh:
#   tools/vm/run-guest.sh <K> selftests/kmod/fuzz-guest.sh trinity stress-ng
#
# Loads agile.ko and runs three fuzzers at once for AGILE_FUZZ_SECONDS:
#   - fuzz, agile's own structure-aware fuzzer (selftests/kmod/fuzz.c);
#   - trinity on the calls that reach a device (ioctl, mmap and the rest of
#     the vm group, read, write, poll, ...) with /dev/agile as its victim
#     file.  trinity refuses to fuzz as root: --dropprivs makes its children
#     nobody, so /dev/agile is opened up to everyone for the run;
#   - stress-ng's --dev stressor on /dev/agile (--dev-file: the other device
#     nodes include the serial ports that carry this run's results).
# Then: no context or group left, and agile.ko unloads.  One TAP stream.
#
# trinity and stress-ng are the extra files run-guest.sh put in /extra
# (with their libraries); without them their lines are SKIPs.

S=${AGILE_FUZZ_SECONDS:-600}
SYSFS=/sys/class/misc/agile
# The fuzzer runs for S seconds; its watchdog may add a few minutes.
export AGILE_TEST_TIMEOUT=$((S + 240))

. /lib/agile/tap-merge.sh

# check <description> <command...>
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

sysfs_is() {
	v=$(cat "$SYSFS/$1" 2>&1)
	[ "$v" = "$2" ] || {
		echo "$SYSFS/$1 is '$v', want '$2'"
		return 1
	}
}

# ran <name> <rc file> <log>: a tool that ran its whole budget was stopped by
# timeout (124); anything else is worth a look.
ran() {
	rc=$(cat "$2" 2>/dev/null || echo missing)
	case $rc in
	0 | 124 | 137)
		ok "$1 ran for $S s (exit $rc)"
		grep -E 'victim|[Ff]ilenames|iterations|Ran [0-9]+ syscalls|bogo|exercised' \
			"$3" | tail -n 8 | sed 's/^/# /'
		;;
	*)
		not_ok "$1 stopped early (exit $rc)"
		grep -v 'Marking syscall' "$3" | tail -n 20 | sed 's/^/# /'
		;;
	esac
}

echo "TAP version 13"
echo "# make fuzz on Linux $(uname -r) (guest ${AGILE_KERNEL:-?}): $S s of fuzz, trinity and stress-ng --dev"

KO=/ko/agile.ko
[ -f "$KO" ] || KO=$(find / -xdev -name agile.ko 2>/dev/null | head -n 1)
check "insmod agile.ko" insmod "$KO"
check "/dev/agile appears" wait_for_node
[ -c /dev/agile ] || {
	echo "1..$n"
	exit 1
}
chmod 0666 /dev/agile

TRINITY=$(command -v trinity)
if [ -n "$TRINITY" ]; then
	mkdir -p /tmp/trinity
	chown nobody /tmp/trinity
	(
		cd /tmp/trinity || exit 1
		# SIGINT: trinity stops and prints its count; KILL if not.
		timeout -s INT -k 30 "$S" "$TRINITY" --dropprivs -l off \
			-V /dev/agile -C 4 --disable-fds=sockets,pipes,perf,epoll,eventfd,pseudo,timerfd,testfile,memfd,drm \
			-c ioctl -c mmap -c munmap -c mremap -c mprotect \
			-c madvise -c msync -c mlock -c mlock2 -c munlock \
			-c mincore -c remap_file_pages -c read -c write \
			-c pread64 -c pwrite64 -c poll -c fcntl -c dup \
			-c dup3 -c newfstat -c lseek -c splice \
			>/tmp/trinity.log 2>&1
		echo $? >/tmp/trinity.rc
	) &
fi
STRESS=$(command -v stress-ng)
if [ -n "$STRESS" ]; then
	(
		cd /tmp || exit 1
		timeout -s KILL $((S + 60)) "$STRESS" --dev 2 \
			--dev-file /dev/agile --timeout "${S}s" \
			--metrics-brief >/tmp/stress-ng.log 2>&1
		echo $? >/tmp/stress-ng.rc
	) &
fi

echo "# ---- fuzz"
run_program /selftests/kmod/fuzz fuzz
wait

echo "# ---- trinity, stress-ng"
if [ -n "$TRINITY" ]; then
	ran trinity /tmp/trinity.rc /tmp/trinity.log
else
	ok "trinity # SKIP not in the guest"
fi
if [ -n "$STRESS" ]; then
	ran "stress-ng --dev" /tmp/stress-ng.rc /tmp/stress-ng.log
else
	ok "stress-ng --dev # SKIP not in the guest"
fi

echo "# ---- unload"
check "no context left (sysfs contexts is 0)" sysfs_is contexts 0
check "no group left (sysfs groups is 0)" sysfs_is groups 0
check "rmmod agile" rmmod agile

echo "1..$n"
echo "# make fuzz: $((n - failed)) passed, $failed failed"
[ "$failed" = 0 ]
