#!/bin/sh
# SPDX-License-Identifier: MIT
#
# tools/agile-bench/guest.sh - the doorbell and sleep benchmarks INSIDE a
# test guest, where /dev/agile exists, so the kmod rows are measured too:
#
#	make -C tools/agile-bench static
#	tools/vm/run-guest.sh 6.12 tools/agile-bench/guest.sh
#
# The guests are software-emulated (TCG, both vCPUs in one host thread):
# their times say nothing about real hardware, and the spinning rows are
# slow there, so few round trips are run.  AGILE_BENCH_ARGS overrides the
# arguments (default "-T 1000 -r 1 doorbell sleep").
set -e
[ -c /dev/agile ] || modprobe agile
i=0
while [ ! -c /dev/agile ] && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
# No in-kernel spin before sleeping: the sleep rows then measure the
# SIGNAL and poller wake-ups, not the module's spin catching the store.
echo 0 >/sys/class/misc/agile/spin_ns
echo "# agile-bench on Linux $(uname -r) (guest ${AGILE_KERNEL:-?})"
# shellcheck disable=SC2086
agile-bench-static ${AGILE_BENCH_ARGS:--T 1000 -r 1 doorbell sleep} 2>&1 |
	sed 's/^/# /'
