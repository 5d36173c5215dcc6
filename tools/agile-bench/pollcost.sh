#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/agile-bench/pollcost.sh [OLD-REF] - measure the module's poller
# with `agile-bench pollcost` in the 6.1 guest (tools/vm/run-guest.sh):
# builds this tree's module and the static agile-bench, and with OLD-REF
# (a git revision, e.g. one from before the one-poller design) also that
# revision's module, which the guest runs back to back with this one
# (tools/agile-bench/pollcost-guest.sh).  The guest's output, with the
# tables, goes to stdout and build/vm/6.1/guest.tap.
#
# Environment: AGILE_POLLCOST_ARGS, AGILE_POLLCOST_OLD_ARGS,
# AGILE_POLLCOST_ROUNDS (see
# pollcost-guest.sh), AGILE_VM_SMP and the rest of run-guest.sh's.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
K=6.1
cd "$repo"
make --no-print-directory modules >/dev/null
make --no-print-directory -C tools/agile-bench static >/dev/null

extra=()
if [ $# -ge 1 ]; then
	old=$repo/build/pollcost-old
	rm -rf "$old"
	mkdir -p "$old/src"
	git archive "$1" Kbuild kmod uapi | tar -x -C "$old/src"
	# shellcheck source=/dev/null
	. "$repo/build/kernels/$K/kbuild.env"
	# shellcheck disable=SC2086 # KMAKE_ARGS is a list of words
	make -C "$KDIR" M="$old/src" $KMAKE_ARGS modules >"$old/build.log" 2>&1 ||
		{ cat "$old/build.log" >&2; exit 1; }
	cp "$old/src/kmod/agile.ko" "$old/agile-old.ko"
	extra=("$old/agile-old.ko")
fi

script=$repo/build/pollcost-guest.sh
{
	echo '#!/bin/sh'
	for v in AGILE_POLLCOST_ARGS AGILE_POLLCOST_OLD_ARGS AGILE_POLLCOST_ROUNDS; do
		[ -n "${!v:-}" ] && printf 'export %s=%q\n' "$v" "${!v}"
	done
	tail -n +2 tools/agile-bench/pollcost-guest.sh
} >"$script"
chmod +x "$script"
exec tools/vm/run-guest.sh "$K" "$script" "${extra[@]}"
