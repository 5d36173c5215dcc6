#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/test-agilectl.sh [AGILECTL] - agilectl on the host, where no module
# is loaded (or with a device path that does not exist): every command's
# --help, the usage errors, and a clear message with exit status 3 for a
# missing device; --version; info's first line, the backend libagile would
# take and why ($AGILE_BACKEND, the node).  TAP on stdout; exits non-zero
# on a failure.  The guest side (a real module) is
# selftests/kmod/agilectl_test.sh.  AGILECTL may be the dynamic one
# (build/install/agilectl) with LD_LIBRARY_PATH leading to libagile.so.
set -u
unset AGILE_BACKEND
repo=$(cd "$(dirname "$0")/.." && pwd)
agilectl=${1:-$repo/build/tools/agilectl}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
n=0
failed=0

# t <description> <exit status> <pattern> <agilectl args...>
t() {
	local desc=$1 want=$2 pattern=$3 got
	shift 3
	n=$((n + 1))
	"$agilectl" "$@" >"$out" 2>&1
	got=$?
	if [ "$got" = "$want" ] && grep -q -- "$pattern" "$out"; then
		echo "ok $n - $desc"
	else
		failed=$((failed + 1))
		echo "not ok $n - $desc"
		echo "# agilectl $*: exit $got, want $want and '$pattern' in:"
		sed 's/^/# /' "$out"
	fi
}

if [ ! -x "$agilectl" ]; then
	echo "1..0 # SKIP $agilectl not built (make tools)"
	exit 0
fi
nodev=/nonexistent/agile
echo "TAP version 13"
t "info without the device: a clear message, exit 3" 3 \
	'/nonexistent/agile: No such file or directory: the agile module is not loaded' \
	-D "$nodev" info
t "info without the device or AGILE_BACKEND: libagile would take user, no node" 3 \
	"^library_backend:   user (no device node; $nodev)\$" -D "$nodev" info
t "info with a node at -D: libagile would take kmod" 1 \
	'^library_backend:   kmod (the device node exists; /dev/null)$' \
	-D /dev/null info
export AGILE_BACKEND=user
t "info, AGILE_BACKEND=user and a node: libagile would take user, because of AGILE_BACKEND" 1 \
	'^library_backend:   user (AGILE_BACKEND; /dev/null)$' -D /dev/null info
export AGILE_BACKEND=bogus
t "info, AGILE_BACKEND=bogus: agile_dev_open would fail" 3 \
	'^library_backend:   none: agile_dev_open fails' -D "$nodev" info
unset AGILE_BACKEND
t "stats without the module's sysfs: exit 3" 3 'the agile module is not loaded' \
	-S /nonexistent/sysfs stats -n 1
t "tune without the module's sysfs: exit 3" 3 'not loaded' \
	-S /nonexistent/sysfs tune spin_ns=1
t "dump without the device: exit 3" 3 'not loaded' -D "$nodev" dump
t "tune of an unknown name: exit 2" 2 'no such tunable' tune bogus=1
t "no command: usage, exit 2" 2 'usage: agilectl'
t "an unknown command: exit 2" 2 'no such command' frobnicate
t "stats -d 0: exit 2" 2 'seconds above 0' stats -d 0
t "dump -r 100: not a power of two, exit 2" 2 'a power of two' dump -r 100
t "dump -f without -p: exit 2" 2 '-f needs -p PID' dump -f 3
t "dump -p of a non-number: exit 2" 2 '-p x: a process id' dump -p x
t "dump -p with -g: exit 2" 2 'exclude each other' dump -p 1 -g 1
t "dump -p without the module: exit 3" 3 'the agile module is not loaded' \
	-D "$nodev" -S /nonexistent/sysfs dump -p 1
for cmd in info stats tune dump trace; do
	t "$cmd --help" 0 "usage: agilectl $cmd" "$cmd" --help
done
t "agilectl --help" 0 'Exit status' --help
version=$(sed -n 's/^VERSION := //p' "$repo/libagile/Makefile")
t "agilectl --version: the project's version, exit 0" 0 \
	"^agilectl ${version//./\\.}\$" --version
t "an unknown option: usage, exit 2" 2 'usage: agilectl' --no-such-option
echo "1..$n"
[ "$failed" = 0 ]
