// SPDX-License-Identifier: MIT
/*
 * sched-oversubscribe - four times as many workers as processing units (at least
 * 8), pinned ($AGILE_SCHED_PIN=1): results stay right and every worker is
 * pinned when the topology is known; how far the work spread is reported
 * (the OS scheduler decides).
 */
#include <agile/sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"
#define AGILE_TEST_FIB
#include "testutil.h"

static _Atomic uint64_t per_worker[256];

static int who_body(int64_t lo, int64_t hi, void *arg)
{
	struct agile_worker *w = agile_sched_worker_self();
	uint64_t x = (uint64_t)lo;

	(void)arg;
	for (int64_t i = lo; i < hi; i++)
		for (int k = 0; k < 2000; k++)
			x = x * 6364136223846793005ULL + 1;
	__asm__ __volatile__("" : : "r"(x)); /* keep the loop */
	if (w)
		atomic_fetch_add(&per_worker[agile_sched_worker_index(w)],
				 (uint64_t)(hi - lo));
	return 0;
}

int main(void)
{
	struct agile_sched_opts opts;
	struct agile_sched_stats st;
	struct agile_sched *s;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int64_t r = 0, sum = 0;
	int err, busy = 0;

	agile_sched_opts_init(&opts);
	opts.nr_workers = (uint32_t)(cpus > 2 ? 4 * cpus : 8);
	if (opts.nr_workers > 256)
		opts.nr_workers = 256;
	setenv("AGILE_SCHED_PIN", "1", 1);
	err = agile_sched_create(&opts, &s);
	unsetenv("AGILE_SCHED_PIN");
	if (!tap_ok_call(err, "create"))
		return tap_done();
	agile_sched_stats(s, &st);
	tap_ok(st.nr_workers == opts.nr_workers, "%u workers on %ld CPUs",
	       st.nr_workers, cpus);
	tap_ok(st.pin_error || st.nr_pinned == st.nr_threads,
	       "all pinned, or a reason why not (%u pinned, error %d)",
	       st.nr_pinned, st.pin_error);

	for (int i = 0; i < 5; i++) {
		err = AGILE_RUN(s, fib, 27, &r);
		if (err || r != 196418)
			break;
	}
	tap_ok(err == 0 && r == 196418, "fib(27) five times");

	err = agile_sched_parallel_for(s, 0, 20000, 1, who_body, NULL);
	for (uint32_t i = 0; i < opts.nr_workers; i++) {
		sum += (int64_t)atomic_load(&per_worker[i]);
		busy += atomic_load(&per_worker[i]) != 0;
	}
	tap_ok(err == 0 && sum == 20000, "parallel_for: every iteration once");
	/* How many took part depends on the OS scheduler: reported, not tested. */
	tap_diag("work spread over %d workers", busy);

	tap_ok_call(agile_sched_destroy(s), "destroy");
	return tap_done();
}
