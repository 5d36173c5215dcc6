#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/check-man.sh - the man pages' lint, run by make lint and as a step
# of make check:
#   - every symbol exported by libagile/src/libagile.map and
#     libagile-mpi.map has man/man3/<symbol>.3, and man/man3 has no page
#     named for a symbol that is not exported (nor a documented macro or
#     inline call of the public headers, nor agile_cxx.3) (the overview libagile.3
#     aside);
#   - the generated pages (section 3 and man4/agile.4) are what
#     tools/man-gen.py makes from the headers now;
#   - the EXAMPLE programs of man/examples/ compile against the headers
#     and, where libagile is built, link, run and exit 0;
#   - agilectl(8) names every subcommand of tools/agilectl.c;
#   - every page renders with groff -man -ww without a warning.
# Prints one line when clean; the findings and exit 1 otherwise.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
status=0
fail() {
	echo "check-man: $*" >&2
	status=1
}

for tool in groff python3; do
	command -v "$tool" >/dev/null || {
		echo "check-man: $tool not installed (tools/deps.sh)" >&2
		exit 1
	}
done

# The global symbols of the version scripts.
exported() {
	sed -e 's|/\*.*\*/||' libagile/src/libagile.map \
		libagile/src/libagile-mpi.map |
		awk '/global:/ { g = 1; next } /local:|}/ { g = 0 }
			g && /;/ { gsub(/[ \t;]/, ""); if ($0 != "") print }'
}
symbols=$(exported | sort -u)
[ -n "$symbols" ] || fail "no symbols read from the .map files"
for s in $symbols; do
	[ -f "man/man3/$s.3" ] || fail "$s is exported but man/man3/$s.3 is missing"
done
for page in man/man3/*.3; do
	name=$(basename "$page" .3)
	[ "$name" = libagile ] && continue
	# The C++ wrapper's page, and the documented macros and inline
	# calls of the public headers (man-gen.py makes both).
	[ "$name" = agile_cxx ] && continue
	grep -Eq "^ \* $name(\(\))? - " libagile/include/agile/*.h && continue
	grep -qx "$name" <<<"$symbols" ||
		fail "$page: $name is not exported by libagile.map or libagile-mpi.map, nor a documented macro or inline call of libagile/include/agile/"
done

python3 tools/man-gen.py --check || status=1

# Where libagile is built (make lib), each example also links and runs
# (user backend: no module needed) and must exit 0.
lib=build/libagile/libagile.so
exdir=$(mktemp -d)
trap 'rm -rf "$exdir"' EXIT
for ex in man/examples/*.c; do
	"${CC:-gcc}" -std=gnu11 -Wall -Wextra -Werror -fsyntax-only \
		-Ilibagile/include -Iuapi "$ex" ||
		fail "$ex does not compile"
	if [ -f "$lib" ]; then
		bin=$exdir/$(basename "$ex" .c)
		if ! "${CC:-gcc}" -std=gnu11 -O1 -pthread -Ilibagile/include \
			-Iuapi -o "$bin" "$ex" -L"$(dirname "$lib")" -lagile \
			-Wl,-rpath,"$repo/$(dirname "$lib")"; then
			fail "$ex does not link against $lib"
		elif ! (cd "$exdir" && AGILE_BACKEND=user timeout 120 "$bin" >/dev/null); then
			fail "$ex: the example program failed"
		fi
	fi
	[ -f "man/man3/$(basename "$ex" .c).3" ] ||
		fail "$ex: no page of that name shows it"
done

commands=$(grep -o '{ "[a-z]*", cmd_' tools/agilectl.c | cut -d'"' -f2)
[ -n "$commands" ] || fail "no subcommands read from tools/agilectl.c"
while read -r cmd; do
	grep -q "^\.SS $cmd\b" man/man8/agilectl.8 2>/dev/null ||
		fail "man/man8/agilectl.8 has no section for agilectl $cmd"
done <<<"$commands"

for page in man/man1/*.1 man/man3/*.3 man/man4/*.4 man/man7/*.7 man/man8/*.8; do
	[ -f "$page" ] || continue
	warnings=$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$page" 2>&1)
	[ -z "$warnings" ] || fail "$page: $warnings"
done
for page in man/man1/agile-bench.1 man/man1/agile-retarget.1 \
	man/man4/agile.4 man/man8/agilectl.8; do
	[ -f "$page" ] || fail "$page is missing"
done

if [ "$status" != 0 ]; then
	echo "check-man: FAILED" >&2
	exit 1
fi
echo "check-man: $(wc -w <<<"$symbols") exported symbols, each with its page; generated pages up to date; $(find man/man? -type f | wc -l) pages render cleanly"
