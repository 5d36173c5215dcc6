// SPDX-License-Identifier: MIT
/*
 * sched-cross-pool - runs that wait on another pool's runs: a worker of pool B
 * that waits for a run on pool A keeps working for B meanwhile, so pools
 * that wait on each other finish.
 *
 *  - A with one worker: a task on A waits for a run on B, whose task waits
 *    for a run on A.  A's only worker is the one waiting; it runs the run
 *    queued on A (before: a deadlock).  B with two workers, then with one.
 *  - Larger pools: a parallel_for on A (3 workers) whose every body runs a
 *    parallel_for on B (2 workers) whose every body runs a task on A:
 *    more waits than workers on both sides, every result right.
 *
 * A hang is the failure here: the chains run on a thread of their own,
 * and the main thread fails the test when they have not ended after a
 * generous bound (a deadlock, not a slow machine: they take milliseconds).
 */
#define _GNU_SOURCE
#include <agile/sched.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

#define BOUND_S 120

static struct agile_sched *pool_a, *pool_b;
static _Atomic int64_t total;

static _Atomic int leaf_ran;

static int leaf_on_a(struct agile_worker *w, void *arg)
{
	(void)w;
	(void)arg;
	atomic_store(&leaf_ran, 1);
	return 0;
}

static int b_waits_on_a(struct agile_worker *w, void *arg)
{
	int err;

	(void)w;
	(void)arg;
	err = agile_sched_run(pool_a, leaf_on_a, NULL);
	return err < 0 ? err : 0;
}

static int a_waits_on_b(struct agile_worker *w, void *arg)
{
	(void)w;
	(void)arg;
	return agile_sched_run(pool_b, b_waits_on_a, NULL);
}

static int add_on_a(struct agile_worker *w, void *arg)
{
	(void)w;
	atomic_fetch_add(&total, *(int64_t *)arg);
	return 0;
}

/* On B: a task on A for each index. */
static int b_body(int64_t lo, int64_t hi, void *arg)
{
	(void)arg;
	for (int64_t i = lo; i < hi; i++) {
		int err = agile_sched_run(pool_a, add_on_a, &i);

		if (err)
			return err;
	}
	return 0;
}

/* On A: a parallel_for on B for each index. */
static int a_body(int64_t lo, int64_t hi, void *arg)
{
	(void)arg;
	for (int64_t i = lo; i < hi; i++) {
		int err = agile_sched_parallel_for(pool_b, 0, 16, 1, b_body,
						   NULL);

		if (err)
			return err;
	}
	return 0;
}

static struct agile_sched *make_pool(uint32_t nr_workers)
{
	struct agile_sched_opts o;
	struct agile_sched *s = NULL;

	agile_sched_opts_init(&o);
	o.nr_workers = nr_workers;
	o.flags = AGILE_SCHED_QUIET;
	return agile_sched_create(&o, &s) ? NULL : s;
}

struct chain {
	const char *what;
	uint32_t workers_a, workers_b;
	int wide;
	int err;
	_Atomic int done;
};

static void *chain_main(void *arg)
{
	struct chain *c = arg;

	pool_a = make_pool(c->workers_a);
	pool_b = make_pool(c->workers_b);
	if (!pool_a || !pool_b) {
		c->err = -ENOMEM;
	} else if (c->wide) {
		atomic_store(&total, 0);
		c->err = agile_sched_parallel_for(pool_a, 0, 12, 1, a_body,
						  NULL);
		if (!c->err && atomic_load(&total) != 12 * (15 * 16 / 2))
			c->err = -EPROTO;
	} else {
		atomic_store(&leaf_ran, 0);
		c->err = agile_sched_run(pool_a, a_waits_on_b, NULL);
		if (!c->err && !atomic_load(&leaf_ran))
			c->err = -EPROTO;
	}
	if (pool_a && agile_sched_destroy(pool_a) && !c->err)
		c->err = -EBUSY;
	if (pool_b && agile_sched_destroy(pool_b) && !c->err)
		c->err = -EBUSY;
	atomic_store_explicit(&c->done, 1, memory_order_release);
	return NULL;
}

static void run_chain(struct chain *c)
{
	pthread_t t;

	if (pthread_create(&t, NULL, chain_main, c)) {
		tap_ok(0, "%s: start", c->what);
		return;
	}
	for (int i = 0; i < BOUND_S * 100; i++) {
		if (atomic_load_explicit(&c->done, memory_order_acquire))
			break;
		usleep(10000);
	}
	if (!atomic_load_explicit(&c->done, memory_order_acquire)) {
		/* Deadlocked: nothing can be torn down; report and leave. */
		tap_ok(0, "%s: did not finish in %d s: deadlock", c->what,
		       BOUND_S);
		tap_done();
		_exit(1);
	}
	pthread_join(t, NULL);
	tap_ok(!c->err, "%s: done (%s)", c->what, strerror(-c->err));
}

int main(void)
{
	static struct chain chains[] = {
		{ .what = "A (1 worker) waits on B (2), whose task waits on A",
		  .workers_a = 1,
		  .workers_b = 2 },
		{ .what = "A (1 worker) waits on B (1), whose task waits on A",
		  .workers_a = 1,
		  .workers_b = 1 },
		{ .what = "12 bodies on A (3 workers), 16 each on B (2), each "
			  "a run on A",
		  .workers_a = 3,
		  .workers_b = 2,
		  .wide = 1 },
		{ .what = "the same with one worker each",
		  .workers_a = 1,
		  .workers_b = 1,
		  .wide = 1 },
	};

	for (size_t i = 0; i < sizeof(chains) / sizeof(chains[0]); i++)
		run_chain(&chains[i]);
	return tap_done();
}
