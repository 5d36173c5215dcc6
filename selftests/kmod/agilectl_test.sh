#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# selftests/kmod/agilectl_test.sh - agilectl (tools/agilectl.c) against the
# loaded module, INSIDE a test guest (busybox sh, root); run.sh runs it as
# one of its programs.  Checks what `agilectl info` reports against sysfs
# (and that libagile would take kmod here),
# `stats -n 1` (module counters, and the row of a context that ctx_hold
# holds in a known state, or one line for it when run as another user),
# a `tune` round trip and its range and name errors, `dump` of its own
# context, of ctx_hold's (-p PID, -f FD) and of a missing group, `trace
# -n` while agile-demo runs, a user refused by the node's mode, and a
# missing device.
# TAP on stdout; exits 77 (skip) when agilectl is not on PATH.

SYSFS=/sys/class/misc/agile
out=/tmp/.agilectl-out
n=0
failed=0

command -v agilectl >/dev/null || {
	echo "1..0 # SKIP agilectl not built (make tools)"
	exit 77
}

# t <description> <command...>: one TAP line; a failure shows the output.
t() {
	desc=$1
	shift
	n=$((n + 1))
	if "$@" >/tmp/.agilectl-check 2>&1; then
		echo "ok $n - $desc"
	else
		failed=$((failed + 1))
		echo "not ok $n - $desc"
		sed 's/^/# /' /tmp/.agilectl-check
	fi
}

# run <expected exit status> <agilectl args...>: output in $out.
run() {
	want=$1
	shift
	agilectl "$@" >"$out" 2>&1
	got=$?
	[ "$got" = "$want" ] || {
		echo "agilectl $*: exit $got, want $want"
		cat "$out"
		return 1
	}
}

has() {
	grep -q -- "$1" "$out" || {
		echo "no '$1' in:"
		cat "$out"
		return 1
	}
}

info_fields() {
	run 0 info || return 1
	for f in 'abi_version: *1 ' 'features: .*WAIT_ANY.*GROUP_ENDED' \
		"max_slots: *$(cat $SYSFS/max_slots)\$" \
		"spin_ns: *$(cat $SYSFS/spin_ns)\$" \
		"page_size: *$(getconf PAGESIZE 2>/dev/null || echo 4096)" \
		'task_reg_size: *64 .. 4096' 'wait_any_max: *64' \
		"max_segment_bytes: *$(cat $SYSFS/max_segment_bytes)" \
		'poll_max_checks .*\[64, 65536\]' 'dev_mode .*0660' \
		'contexts  *[0-9]' \
		'^library_backend: *kmod (the device node exists; /dev/agile)$'; do
		has "$f" || return 1
	done
}

stats_once() {
	run 0 stats -n 1 && has '^signals  *[0-9]' && has '^poll_ticks ' &&
		has '^contexts (/proc/PID/fdinfo of /dev/agile): 0 shown'
}

# ctx_hold (a helper beside the tests) holds a context of 4 slots: slot 2
# SIGNALed 5 times, last with 77, its task register's opcode 17.
hold_pid=
hold_fd=
hold_start() {
	command -v ctx_hold >/dev/null || {
		echo "ctx_hold not on PATH"
		return 1
	}
	ctx_hold 4 5 2 77 17 >/tmp/.agilectl-hold 2>&1 &
	hold_pid=$!
	i=0
	while [ $i -lt 100 ] && ! grep -q '^fd ' /tmp/.agilectl-hold; do
		sleep 0.1
		i=$((i + 1))
	done
	hold_fd=$(sed -n 's/^fd //p' /tmp/.agilectl-hold)
	[ -n "$hold_fd" ] || {
		cat /tmp/.agilectl-hold
		return 1
	}
}

hold_stop() {
	[ -n "$hold_pid" ] && kill "$hold_pid" 2>/dev/null
	wait "$hold_pid" 2>/dev/null
	hold_pid=
}

# Its row: pid, fd, command, context id, 4 slots, 0 sleepers, 5 signals,
# 0 waits; and root's row of the poller's work, no context on its list.
stats_context() {
	run 0 stats -n 1 &&
		has '^contexts (/proc/PID/fdinfo of /dev/agile): 1 shown' &&
		has "^ *$hold_pid  *$hold_fd ctx_hold  *[0-9][0-9]*  *4  *0  *5  *0 " &&
		has '^poller by context owner' && has '^ *0  *0  *[0-9]' &&
		! has 'not shown'
}

# nobody may not look into root's process: the context is counted.
stats_other_user() {
	su -s /bin/sh nobody -c "agilectl stats -n 1" >"$out" 2>&1 || {
		cat "$out"
		return 1
	}
	has '1 contexts of other users not shown: run as root' &&
		has ': 0 shown' && ! grep -q ctx_hold "$out"
}

dump_pid() {
	run 0 dump -p "$hold_pid" &&
		has "^process $hold_pid (ctx_hold) fd $hold_fd: context [0-9]*: 4 slots, task registers of 64 bytes, 2 pages" &&
		has '^slot 2$' &&
		has 'value=77 (protocol value) sleepers=0$' &&
		has 'opcode=17 (user) nr_parts=0' && ! has '^slot [013]$' &&
		has '^slots in use: *1 ' && has '^group: *none' &&
		has '^stats: signals=5 waits=0 ' &&
		run 0 dump -p "$hold_pid" -f "$hold_fd" && has '^slot 2$' &&
		run 1 dump -p "$hold_pid" -f 0 &&
		has "fd 0 is not an open file of /dev/agile" &&
		run 1 dump -p $$ && has "holds no open file of /dev/agile"
}

# 40 slots in use: the module lists 32, dump says how many more there are.
dump_pid_bounded() {
	ctx_hold 40 1 0 1 16 fill >/tmp/.agilectl-hold2 2>&1 &
	pid2=$!
	i=0
	while [ $i -lt 100 ] && ! grep -q '^fd ' /tmp/.agilectl-hold2; do
		sleep 0.1
		i=$((i + 1))
	done
	run 0 dump -p "$pid2"
	got=$?
	kill "$pid2"
	wait "$pid2" 2>/dev/null
	[ "$got" = 0 ] &&
		has '^slots in use: *40 .*; 8 more not listed by the module' &&
		has '^slot 31$' && ! has '^slot 32$' &&
		[ "$(grep -c '^slot ' "$out")" = 32 ]
}

dump_pid_other_user() {
	su -s /bin/sh nobody -c "agilectl dump -p $hold_pid" >"$out" 2>&1
	got=$?
	[ "$got" = 1 ] || {
		echo "exit $got, want 1"
		cat "$out"
		return 1
	}
	has "another user's process: run as root"
}

stats_twice() {
	run 0 stats -d 0.2 -n 2 && has 'rates over' && has 'per second'
}

tune_round_trip() {
	old=$(cat $SYSFS/spin_ns)
	run 0 tune spin_ns=1234 && has "spin_ns: $old -> 1234" &&
		[ "$(cat $SYSFS/spin_ns)" = 1234 ] &&
		run 0 info && has 'spin_ns: *1234$' &&
		run 0 tune "spin_ns=$old" && [ "$(cat $SYSFS/spin_ns)" = "$old" ]
}

tune_range_error() {
	old=$(cat $SYSFS/poll_max_checks)
	run 1 tune poll_max_checks=63 &&
		has 'out of range: poll_max_checks takes a decimal integer from 64 to 65536' &&
		has "still $old" && [ "$(cat $SYSFS/poll_max_checks)" = "$old" ] &&
		run 1 tune spin_ns=x && has 'out of range'
}

tune_name_error() {
	run 2 tune no_such_knob=1 && has 'no such tunable' &&
		run 2 tune spin_ns && has 'not NAME=VALUE'
}

dump_own() {
	run 0 dump -s 3 -r 128 && has '3 slots, task registers of 128 bytes' &&
		has '^slot 2$' && has 'value=0 (idle) sleepers=0' &&
		has 'opcode=0 (DISCONNECT)' && has '^stats: signals=0' &&
		[ "$(cat $SYSFS/contexts)" = 0 ]
}

dump_group() {
	run 1 dump -g 0x5eed && has 'no group has this key'
}

trace_events() {
	command -v agile-demo >/dev/null || {
		echo "agile-demo not on PATH"
		return 1
	}
	agilectl trace -n 3 >"$out" 2>/tmp/.agilectl-trace-err &
	pid=$!
	# The instance is made before the first event is read.
	i=0
	while [ $i -lt 50 ] && ! grep -q tracing /tmp/.agilectl-trace-err; do
		sleep 0.1
		i=$((i + 1))
	done
	agile-demo 20 >/dev/null 2>&1
	i=0
	while [ $i -lt 100 ] && kill -0 $pid 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 $pid 2>/dev/null; then
		kill -INT $pid
		wait $pid
		echo "trace -n 3 still running after agile-demo"
		return 1
	fi
	wait $pid || return 1
	cat /tmp/.agilectl-trace-err
	[ "$(grep -c 'agile_' "$out")" = 3 ] && has 'ctx=' &&
		! ls -d /sys/kernel/tracing/instances/agilectl-* 2>/dev/null &&
		! ls -d /sys/kernel/debug/tracing/instances/agilectl-* 2>/dev/null
}

# nobody is outside group agile: the node's 0660 refuses it, and says so.
user_refused() {
	su -s /bin/sh nobody -c "agilectl info" >"$out" 2>&1
	got=$?
	[ "$got" = 3 ] || {
		echo "exit $got, want 3"
		cat "$out"
		return 1
	}
	has 'Permission denied' && has 'group "agile"'
}

user_allowed() {
	chmod 0666 /dev/agile || return 1
	su -s /bin/sh nobody -c "agilectl info" >"$out" 2>&1
	got=$?
	chmod 0660 /dev/agile
	[ "$got" = 0 ] && has 'abi_version'
}

# sysfs tunables are 0644: a user's tune is refused and told why.
user_tune_refused() {
	old=$(cat $SYSFS/spin_ns)
	su -s /bin/sh nobody -c "agilectl tune spin_ns=1" >"$out" 2>&1
	got=$?
	[ "$got" = 1 ] || {
		echo "exit $got, want 1"
		cat "$out"
		return 1
	}
	has 'Permission denied: tunables are written by root' &&
		[ "$(cat $SYSFS/spin_ns)" = "$old" ]
}

no_device() {
	run 3 -D /nonexistent/agile info &&
		has 'the agile module is not loaded'
}

echo "TAP version 13"
t "info: ABI, features, limits and tunables match sysfs" info_fields
t "stats -n 1: the module counters once" stats_once
t "stats -d 0.2 -n 2: rates over the interval" stats_twice
if hold_start; then
	t "stats -n 1: a held context's row, its 5 signals" stats_context
	t "stats as another user: the context counted, not shown" stats_other_user
	t "dump -p PID [-f FD]: another process's slot 2 decoded" dump_pid
	t "dump -p of root's process as another user: refused, explained" \
		dump_pid_other_user
	t "dump -p of 40 slots in use: 32 listed, 8 more counted" \
		dump_pid_bounded
else
	t "ctx_hold holds a context" false
fi
hold_stop
t "tune spin_ns=1234 and back: a round trip through sysfs" tune_round_trip
t "tune poll_max_checks=63: out of range, explained, unchanged" tune_range_error
t "tune: unknown name and missing value are usage errors" tune_name_error
t "dump: its own context's slots decoded, freed after" dump_own
t "dump -g: a missing group is reported" dump_group
t "trace -n 3: agile-demo's events decoded, instance removed" trace_events
t "a user outside the node's group is refused with a hint" user_refused
t "a user may read info where the mode allows" user_allowed
t "a user's tune is refused: written by root" user_tune_refused
t "a missing device: a clear message, exit 3" no_device
echo "1..$n"
[ "$failed" = 0 ]
