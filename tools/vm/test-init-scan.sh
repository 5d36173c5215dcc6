#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tools/vm/test-init-scan.sh - a host-side test of what tools/vm/init looks
# for in the guest's kernel log: each detector's report, as the 6.1-debug
# kernel prints it, must match init's splat patterns, and the harmless
# lines around them must not; init's kmemleak filter must keep the objects
# allocated during the run and drop the boot's.  The patterns and the
# filter are taken from tools/vm/init itself, so this tests what the guests
# run.  TAP on stdout; exit status 0 when all pass.
#
# That the detectors fire at all in the debug guest was checked by hand,
# once, with a throwaway module doing each bug: the report lines below are
# what the 6.1-debug guest printed then.  make mutate's kdebug mutants
# (tools/mutants.txt) check it again on agile.ko itself.

set -u

HERE=$(cd "$(dirname "$0")" && pwd)
INIT=$HERE/init

# The pattern assignments and the kmemleak filter function, out of init.
eval "$(grep -E '^SPLATS(_ANYWHERE)?=' "$INIT")"
eval "$(sed -n '/^kmemleak_since() {$/,/^}$/p' "$INIT")"
if [ -z "${SPLATS:-}" ] || [ -z "${SPLATS_ANYWHERE:-}" ]; then
	echo "Bail out! no SPLATS patterns in $INIT"
	exit 1
fi
if ! command -v kmemleak_since >/dev/null; then
	echo "Bail out! no kmemleak_since in $INIT"
	exit 1
fi

n=0
failed=0
result() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
		failed=$((failed + 1))
	fi
}

caught() {
	printf '%s\n' "$1" | grep -Eq "$SPLATS" ||
		printf '%s\n' "$1" | grep -Eq "$SPLATS_ANYWHERE"
}

# Lines a failing run prints (from the 6.1-debug guest with a broken module).
while IFS='|' read -r what line; do
	caught "$line"
	result $? "caught: $what"
done <<'EOF'
KASAN|[   11.986724] BUG: KASAN: use-after-free in bad_init+0xf8/0x1000 [bad]
KFENCE|[   11.177700] BUG: KFENCE: use-after-free read in bad_init+0x221/0x1000 [bad]
UBSAN shift|[    9.809792] UBSAN: shift-out-of-bounds in /tmp/dbgkern-bad/bad.c:66:3
UBSAN bounds|[   10.980148] UBSAN: array-index-out-of-bounds in /tmp/dbgkern-bad/bad.c:68:6
DEBUG_ATOMIC_SLEEP|[    9.990180] BUG: sleeping function called from invalid context at include/linux/sched/mm.h:274
scheduling while atomic|[   10.408321] BUG: scheduling while atomic: insmod/63/0x00000002
lockdep order|[    9.521489] WARNING: possible circular locking dependency detected
lockdep state|[    9.100000] WARNING: inconsistent lock state
lockdep header lost|[    9.100000] other info that might help us debug this: possible circular locking
kmemleak gave up|[   30.000000] kmemleak: Memory pool empty, consider increasing CONFIG_DEBUG_KMEMLEAK_MEM_POOL_SIZE
kmemleak off|[   30.000000] kmemleak: Kernel memory leak detector disabled
RCU|[   40.000000] WARNING: suspicious RCU usage
hung task|[  300.000000] INFO: task stress:123 blocked for more than 120 seconds.
EOF

# Lines every healthy debug boot prints.
while IFS='|' read -r what line; do
	! caught "$line"
	result $? "not a splat: $what"
done <<'EOF'
kmemleak ready|[    0.981163] kmemleak: Kernel memory leak detector initialized (mem pool free: 39466)
kmemleak count|[   47.634227] kmemleak: 8 new suspected memory leaks (see /sys/kernel/debug/kmemleak)
lockdep banner|[    0.000000] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar
KASAN ready|[    0.829852] kasan: KernelAddressSanitizer initialized
KFENCE ready|[    0.412000] kfence: initialized - using 2097152 bytes for 255 objects at 0x(____ptrval____)-0x(____ptrval____)
RETBleed|[    0.231000] RETBleed: WARNING: Spectre v2 mitigation leaves CPU vulnerable to RETBleed attacks, data leaks possible!
EOF

# The kmemleak filter: a boot object (before the run's jiffies) and one of
# the run's.
report=$(mktemp)
trap 'rm -f "$report"' EXIT
cat >"$report" <<'EOF'
unreferenced object 0xffff88800487c640 (size 208):
  comm "swapper/0", pid 0, jiffies 4294892296
  hex dump (first 32 bytes):
    b0 ab 03 00 00 00 00 00 00 00 00 48 00 00 00 00  ...........H....
  backtrace:
    [<(____ptrval____)>] acpi_os_create_cache+0x17/0x60
unreferenced object 0xffff888006f36800 (size 128):
  comm "insmod", pid 63, jiffies 4294894445
  hex dump (first 32 bytes):
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
  backtrace:
    [<(____ptrval____)>] kmalloc_trace+0x21/0xc0
    [<(____ptrval____)>] 0xffffffffa000505c
    [<(____ptrval____)>] do_one_initcall+0xc0/0x320
EOF
kept=$(kmemleak_since 4294894000 "$report")
[ "$(printf '%s\n' "$kept" | grep -c '^unreferenced object')" = 1 ] &&
	printf '%s\n' "$kept" | grep -q '"insmod"' &&
	! printf '%s\n' "$kept" | grep -q acpi_os_create_cache
result $? "kmemleak: the run's leak is kept, the boot's dropped"
[ -z "$(kmemleak_since 4294894446 "$report")" ]
result $? "kmemleak: nothing from before the run"
[ "$(kmemleak_since 0 "$report" | grep -c '^unreferenced object')" = 2 ]
result $? "kmemleak: since 0, every object"

echo "1..$n"
[ "$failed" = 0 ]
