// SPDX-License-Identifier: MIT
/*
 * sched-fib - fork/join with every call a spawn: results match the plain
 * function on one worker and on all of them; a pool created with
 * AGILE_SCHED_COUNT_SPAWNS counts exactly one task per spawn plus the
 * root, and any other counts the root alone.
 */
#include <agile/sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "tap.h"
#define AGILE_TEST_FIB
#include "testutil.h"

static int fib_root(struct agile_worker *w, void *arg)
{
	int64_t *io = arg;

	*io = AGILE_CALL(w, fib, (int)*io);
	return 0;
}

/* Spawns of fib(n): one per call with n >= 2, i.e. fib(n + 1) - 1. */
static uint64_t spawns_of(int n)
{
	return (uint64_t)fib_plain(n + 1) - 1;
}

static void check_pool(unsigned int nr_workers, bool count)
{
	struct agile_sched_opts opts;
	struct agile_sched_stats before, after;
	struct agile_sched *s;
	int64_t r = -1, io;
	int err;

	agile_sched_opts_init(&opts);
	opts.nr_workers = nr_workers;
	if (count)
		opts.flags |= AGILE_SCHED_COUNT_SPAWNS;
	err = agile_sched_create(&opts, &s);
	if (!tap_ok_call(err, "create"))
		return;
	tap_diag("%d workers, %s", agile_sched_nr_workers(s),
		 count ? "counting spawns" : "not counting spawns");
	agile_sched_stats(s, &before);
	err = AGILE_RUN(s, fib, 30, &r);
	tap_ok(err == 0 && r == fib_plain(30), "fib(30) = %lld", (long long)r);
	agile_sched_stats(s, &after);
	tap_ok(after.tasks - before.tasks == (count ? spawns_of(30) : 0) + 1,
	       "tasks counted: %llu (%s)",
	       (unsigned long long)(after.tasks - before.tasks),
	       count ? "spawns + root" : "the root");
	tap_diag("steals %llu, publishes %llu",
		 (unsigned long long)(after.steals - before.steals),
		 (unsigned long long)(after.publishes - before.publishes));

	bool all = true;

	for (int n = 0; n <= 24; n++) {
		io = n;
		err = agile_sched_run(s, fib_root, &io);
		all = all && !err && io == fib_plain(n);
	}
	tap_ok(all, "agile_sched_run of fib(0..24)");
	tap_ok_call(agile_sched_destroy(s), "destroy");
}

int main(void)
{
	check_pool(1, true);
	check_pool(0, true);
	check_pool(2, true);
	check_pool(1, false);
	check_pool(2, false);
	return tap_done();
}
