// SPDX-License-Identifier: MIT
/*
 * pin-fallback - when workers cannot be bound (here: a synthetic hwloc
 * topology with more processing units than the machine has), the pool
 * still starts, runs unbound where binding failed, and says why.
 */
#include <agile/sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"
#define AGILE_TEST_FIB
#include "testutil.h"

static void check(const char *what, uint32_t flags, bool expect_failure)
{
	struct agile_sched_opts opts;
	struct agile_sched_stats st;
	struct agile_sched *s;
	int64_t r = 0;
	int err;

	agile_sched_opts_init(&opts);
	opts.nr_workers = 6;
	opts.flags = AGILE_SCHED_QUIET | flags;
	err = agile_sched_create(&opts, &s);
	if (!tap_ok_call(err, what))
		return;
	agile_sched_stats(s, &st);
	if (expect_failure)
		tap_ok(st.pin_error < 0 && st.nr_pinned < st.nr_workers,
		       "%s: %u of %u pinned, error %d", what, st.nr_pinned,
		       st.nr_workers, st.pin_error);
	else
		tap_ok(st.pin_error == 0 && st.nr_pinned == 0,
		       "%s: none pinned, no error", what);
	err = AGILE_RUN(s, fib, 22, &r);
	tap_ok(err == 0 && r == 17711, "%s: fib(22) runs", what);
	tap_ok_call(agile_sched_destroy(s), "destroy");
}

int main(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);

	/* hwloc reads this at topology load: 512 units, most of them absent. */
	setenv("HWLOC_SYNTHETIC", "core:512 pu:1", 1);
	if (cpus >= 6)
		tap_diag("%ld CPUs: unit 5 may exist, binding may not fail", cpus);
	check("synthetic topology", 0, cpus < 6);
	check("AGILE_SCHED_NO_PIN", AGILE_SCHED_NO_PIN, false);
	return tap_done();
}
