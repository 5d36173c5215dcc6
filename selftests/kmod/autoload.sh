#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# selftests/kmod/autoload.sh - agile loads on the first open of /dev/agile,
# as fuse does, INSIDE a test guest (busybox sh, root).  run.sh runs it
# first, before it loads agile.ko itself: the module must not be loaded.
#
# The guest's /lib/modules/$(uname -r)/extra/ holds agile.ko, and the
# host's depmod (kmod's, as on a real system, where DKMS runs it) wrote
# modules.devname and modules.alias (tools/vm/run-guest.sh, which also
# puts the host's kmod in /lib/agile/).  The test does what the rest of a
# system does: it makes /dev/agile as the line of `kmod static-nodes`
# says (from modules.devname's "agile agile c10:MINOR"; mode 0600), as
# systemd-tmpfiles does at boot, opens it, and checks that the open
# succeeded and loaded the module: misc_open() requested
# "char-major-10-MINOR", the kernel ran /proc/sys/kernel/modprobe (kmod's
# modprobe for the while; busybox's without kmod), which found the alias
# in modules.alias (MODULE_ALIAS_MISCDEV).  Then, with
# agile_pin_test.ko holding that minor, agile must still load, on a
# dynamic minor.  Leaves agile unloaded and no /dev/agile behind.
# TAP on stdout; exits 77 (skip) when agile.ko is not in the module tree.

REL=$(uname -r)
MODDIR=/lib/modules/$REL
# The host's kmod, with its libraries (tools/vm/run-guest.sh).
KMOD=/lib/agile/kmod
n=0
failed=0

# t <description> <command...>: one TAP line; a failure shows the output.
t() {
	desc=$1
	shift
	n=$((n + 1))
	if "$@" >/tmp/.autoload-check 2>&1; then
		echo "ok $n - $desc"
	else
		failed=$((failed + 1))
		echo "not ok $n - $desc"
		sed 's/^/# /' /tmp/.autoload-check
	fi
}

[ -f "$MODDIR/extra/agile.ko" ] || {
	echo "1..0 # SKIP no $MODDIR/extra/agile.ko (tools/vm/run-guest.sh installs it)"
	exit 77
}

loaded() {
	[ -d /sys/module/agile ] && grep -q '^agile ' /proc/modules
}

not_loaded() {
	if [ -d /sys/module/agile ] || grep -q '^agile ' /proc/modules; then
		echo "agile is loaded"
		return 1
	fi
}

# The node kmod static-nodes would make, from modules.devname.
devname() {
	line=$(grep '^agile ' "$MODDIR/modules.devname" 2>&1)
	echo "$line"
	echo "$line" | grep -Eqx 'agile agile c10:[0-9]+'
}

[ -d /sys/module/agile ] && rmmod agile
rm -f /dev/agile
t "agile is not loaded before the first open" not_loaded
t "modules.devname: agile agile c10:MINOR (MODULE_ALIAS(\"devname:agile\"))" devname
minor=$(sed -n 's/^agile agile c10:\([0-9]*\)$/\1/p' "$MODDIR/modules.devname")
# kmod's depmod writes the line only when the module has both aliases,
# devname:agile and char-major-10-MINOR: without either, nothing to open.
[ -n "$minor" ] || {
	echo "1..$n"
	exit 1
}
t "modules.alias: char-major-10-$minor is agile (MODULE_ALIAS_MISCDEV)" \
	grep -qx "alias char-major-10-$minor agile" "$MODDIR/modules.alias"

# kmod static-nodes' line, as systemd-tmpfiles-setup-dev reads it at boot.
static_nodes() {
	# --output: the guest has no /dev/stdout, kmod's default.
	"$KMOD" static-nodes --format=tmpfiles --output=/tmp/.autoload-nodes ||
		return 1
	cat /tmp/.autoload-nodes
	grep -qx "c! /dev/agile 0600 - - - 10:$minor" /tmp/.autoload-nodes
}
modprobe_was=$(cat /proc/sys/kernel/modprobe)
if [ -x "$KMOD" ]; then
	t "kmod static-nodes: c! /dev/agile 0600 - - - 10:$minor" static_nodes
	# The kernel runs kmod's modprobe, as on Debian, not busybox's.
	ln -sf kmod /lib/agile/modprobe
	echo /lib/agile/modprobe >/proc/sys/kernel/modprobe
else
	echo "# no $KMOD: the node from modules.devname, busybox modprobe"
fi
echo "# minor $minor; modprobe: $(cat /proc/sys/kernel/modprobe)"
t "mknod -m 600 /dev/agile c 10 $minor (as kmod static-nodes)" \
	mknod -m 600 /dev/agile c 10 "$minor"
t "agile is still not loaded" not_loaded

# While the first open holds the node: agile loaded, and the node is its.
opened=0
while_open() {
	opened=1
	t "agile is loaded (/sys/module/agile, /proc/modules)" loaded
	t "/sys/class/misc/agile/dev is 10:$minor" \
		grep -qx "10:$minor" /sys/class/misc/agile/dev
	t "rmmod agile refused while the node is open" not rmmod agile
}
not() {
	! "$@"
}
# A failed open: the shell's message on stderr, which run.sh shows.
while_open 3<>/dev/agile
n=$((n + 1))
if [ "$opened" = 1 ]; then
	echo "ok $n - the first open of /dev/agile succeeds"
else
	failed=$((failed + 1))
	echo "not ok $n - the first open of /dev/agile succeeds"
fi
echo "$modprobe_was" >/proc/sys/kernel/modprobe
t "rmmod agile once closed" rmmod agile
# devtmpfs removes only the nodes it made, not this one.
rm -f /dev/agile

# Another driver has the minor: agile takes a dynamic one and says so.
pin=$MODDIR/extra/agile_pin_test.ko
fallback() {
	dev=$(cat /sys/class/misc/agile/dev) || return 1
	case $dev in
	10:"$minor" | "")
		echo "agile's device is $dev"
		return 1
		;;
	10:*) ;;
	*)
		echo "agile's device is $dev, not misc"
		return 1
		;;
	esac
	echo "# agile's device with $minor taken: $dev" >&3
	dmesg | grep -q "misc minor $minor is taken by another driver"
}
if [ -f "$pin" ]; then
	t "insmod agile_pin_test.ko minor=$minor" insmod "$pin" minor="$minor"
	t "modprobe agile with minor $minor taken: loads on a dynamic minor, with a warning" \
		modprobe agile
	t "... which is in /sys/class/misc/agile/dev and the kernel log" fallback 3>&1
	t "rmmod agile, agile_pin_test" rmmod agile agile_pin_test
else
	n=$((n + 1))
	echo "ok $n - minor taken: dynamic minor # SKIP no agile_pin_test.ko"
fi
t "agile is not loaded at the end" not_loaded

echo "1..$n"
[ "$failed" = 0 ]
