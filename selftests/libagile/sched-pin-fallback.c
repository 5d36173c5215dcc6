// SPDX-License-Identifier: MIT
/*
 * sched-pin-fallback - when workers cannot be bound, the pool still starts,
 * runs unbound where binding failed, and says why.
 *
 * A synthetic hwloc topology with one unit more than the highest CPU a
 * thread here can be bound to (asked of the kernel, one CPU at a time):
 * as many workers as units, unit i bound to CPU i.  Exactly the workers
 * on CPUs that can be bound are pinned, whatever the machine has (the
 * last unit never is), and the error says why the rest are not.  Without
 * hwloc (the static build of the guests) no worker is pinned and the
 * error is -ENOSYS.  Pinning is asked for with $AGILE_SCHED_PIN=1; without
 * it (the default) and with AGILE_SCHED_NO_PIN none is pinned, with no
 * error.
 */
#define _GNU_SOURCE
#include <agile/sched.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"
#define AGILE_TEST_FIB
#include "testutil.h"

static void run_fib(struct agile_sched *s, const char *what)
{
	int64_t r = 0;
	int err = AGILE_RUN(s, fib, 22, &r);

	tap_ok(err == 0 && r == 17711, "%s: fib(22) runs", what);
	tap_ok_call(agile_sched_destroy(s), "destroy");
}

/*
 * The CPUs a thread of ours can be bound to (online, in our cpuset: not
 * only those of our own mask), found by binding this one to each in turn.
 * Returns how many, with the highest in *@last; -1 if we cannot tell.
 */
static int bindable_cpus(int *last)
{
	cpu_set_t saved, one;
	int n = 0;

	if (sched_getaffinity(0, sizeof(saved), &saved))
		return -1;
	*last = -1;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (!sched_setaffinity(0, sizeof(one), &one)) {
			n++;
			*last = cpu;
		}
	}
	return sched_setaffinity(0, sizeof(saved), &saved) ? -1 : n;
}

static void test_synthetic(void)
{
	struct agile_sched_opts opts;
	struct agile_sched_stats st;
	struct agile_sched *s;
	char topology[64];
	int last, nr_bindable, err;

	nr_bindable = bindable_cpus(&last);
	if (nr_bindable <= 0) {
		tap_skip("synthetic topology", "no CPU to bind to found");
		return;
	}
	if (last + 3 > AGILE_SCHED_MAX_WORKERS || last + 2 > CPU_SETSIZE) {
		tap_skip("synthetic topology", "CPU %d is beyond the test",
			 last);
		return;
	}
	/* hwloc reads this at topology load: units 0 .. last + 1. */
	snprintf(topology, sizeof(topology), "core:%d pu:1", last + 2);
	setenv("HWLOC_SYNTHETIC", topology, 1);
	setenv("AGILE_SCHED_PIN", "1", 1);
	agile_sched_opts_init(&opts);
	/* One thread per unit: the caller's worker 0 has none (sched.h). */
	opts.nr_workers = (uint32_t)last + 3;
	opts.flags = AGILE_SCHED_QUIET;
	err = agile_sched_create(&opts, &s);
	unsetenv("AGILE_SCHED_PIN");
	unsetenv("HWLOC_SYNTHETIC");
	if (!tap_ok_call(err, "synthetic topology: create"))
		return;
	agile_sched_stats(s, &st);
#ifdef AGILE_NO_HWLOC
	tap_ok(st.pin_error == -ENOSYS && st.nr_pinned == 0,
	       "no hwloc in this build: none of %u pinned, error %d",
	       st.nr_workers, st.pin_error);
#else
	tap_ok(st.nr_threads == (uint32_t)last + 2 &&
		       st.nr_pinned == (uint32_t)nr_bindable &&
		       st.pin_error < 0,
	       "%u units, %d CPUs to bind to: %u pinned of %u threads, the "
	       "others not, error %d",
	       last + 2, nr_bindable, st.nr_pinned, st.nr_threads,
	       st.pin_error);
#endif
	run_fib(s, "synthetic topology");
}

static void test_no_pin(uint32_t flags, const char *pin_env, const char *what)
{
	struct agile_sched_opts opts;
	struct agile_sched_stats st;
	struct agile_sched *s;
	int err;

	agile_sched_opts_init(&opts);
	opts.nr_workers = 6;
	opts.flags = AGILE_SCHED_QUIET | flags;
	if (pin_env)
		setenv("AGILE_SCHED_PIN", pin_env, 1);
	err = agile_sched_create(&opts, &s);
	unsetenv("AGILE_SCHED_PIN");
	if (!tap_ok(!err, "%s: create (%d)", what, err))
		return;
	agile_sched_stats(s, &st);
	tap_ok(st.pin_error == 0 && st.nr_pinned == 0,
	       "%s: none pinned, no error", what);
	run_fib(s, what);
}

int main(void)
{
	test_synthetic();
	test_no_pin(0, NULL, "the default");
	test_no_pin(0, "0", "AGILE_SCHED_PIN=0");
	test_no_pin(AGILE_SCHED_NO_PIN, NULL, "AGILE_SCHED_NO_PIN");
	test_no_pin(AGILE_SCHED_NO_PIN, "1",
		    "AGILE_SCHED_NO_PIN with AGILE_SCHED_PIN=1");
	return tap_done();
}
