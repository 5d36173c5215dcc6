#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/test-headers.sh - every installed header compiles alone: the
# headers as tools/install.sh installs them (install-headers, into a
# scratch DESTDIR), each the only #include of a translation unit, with
# -Wall -Wextra -pedantic -Werror and no -I but the installed include
# folder, as C11 (gcc, clang) and C++17 (g++, clang++; *.hpp too).  The
# MPI headers (agile/coll_mpi.h, agile/segmap_mpi.h) get mpicc's include
# folders as system ones, and are left out where there is no mpicc.  Then
# the ABI's layout in each language: struct agile_task_reg is 32 bytes
# with args at 32, through agile/uapi.h and linux/agile.h together.  A
# compiler that is not installed is skipped, with a SKIP line.  TAP on
# stdout, one line per check; exit 1 when one fails.  About 20 s.
set -u

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/agile-headers.XXXXXX")
trap 'rm -rf "$work"' EXIT
inc=$work/dest/usr/include
warn=(-Wall -Wextra -pedantic -Werror)

n=0
failed=0
# ok <description> <command...>: one TAP line; the output only on failure.
ok() {
	local name=$1 out
	shift
	n=$((n + 1))
	if out=$("$@" 2>&1); then
		echo "ok $n - $name"
	else
		failed=$((failed + 1))
		echo "not ok $n - $name"
		printf '%s\n' "$out" | tail -n 20 | sed 's/^/# /'
	fi
}
skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

ok "tools/install.sh install-headers into a scratch DESTDIR" \
	env DESTDIR="$work/dest" PREFIX=/usr "$repo/tools/install.sh" install-headers

mpi_flags=()
if command -v mpicc >/dev/null; then
	for f in $(mpicc --showme:compile 2>/dev/null); do
		case $f in -I*) mpi_flags+=(-isystem "${f#-I}") ;; esac
	done
fi

# alone <compiler> <-x language> <-std=...>: each header in its own TU.
alone() {
	local cc=$1 lang=$2 std=$3 h name bad=0 extra

	for h in "$inc"/agile/*.h "$inc"/agile/*.hpp "$inc"/linux/agile.h; do
		name=${h#"$inc"/}
		case $name in *.hpp) [ "$lang" = c++ ] || continue ;; esac
		extra=()
		case $name in
		agile/coll_mpi.h | agile/segmap_mpi.h)
			[ ${#mpi_flags[@]} -gt 0 ] || continue
			extra=("${mpi_flags[@]}")
			;;
		esac
		printf '#include <%s>\n' "$name" >"$work/tu"
		"$cc" -x "$lang" "$std" "${warn[@]}" -I"$inc" "${extra[@]}" \
			-fsyntax-only "$work/tu" || {
			echo "^ $name"
			bad=1
		}
	done
	[ ${#mpi_flags[@]} -gt 0 ] || echo "no mpicc: the MPI headers left out"
	return $bad
}

# layout <compiler> <-x language> <-std=...>: the task register's ABI.
layout() {
	local assert=_Static_assert
	[ "$2" = c++ ] && assert=static_assert
	cat >"$work/tu" <<-EOF
		#include <agile/uapi.h>
		#include <linux/agile.h>
		#include <stddef.h>
		$assert(sizeof(struct agile_task_reg) == 32, "sizeof");
		$assert(offsetof(struct agile_task_reg, status) == 24, "status");
		$assert(offsetof(struct agile_task_reg, args) == 32, "args");
	EOF
	"$1" -x "$2" "$3" "${warn[@]}" -I"$inc" -fsyntax-only "$work/tu"
}

for mode in gcc:c:-std=c11 clang:c:-std=c11 g++:c++:-std=c++17 clang++:c++:-std=c++17; do
	IFS=: read -r cc lang std <<<"$mode"
	if ! command -v "$cc" >/dev/null; then
		skip "every header alone, $cc $std -pedantic" "$cc not installed"
		skip "struct agile_task_reg's layout, $cc $std" "$cc not installed"
		continue
	fi
	ok "every header alone, $cc $std -pedantic" alone "$cc" "$lang" "$std"
	ok "struct agile_task_reg's layout, $cc $std" layout "$cc" "$lang" "$std"
done

echo "1..$n"
[ $failed = 0 ]
