// SPDX-License-Identifier: MIT
/*
 * sched-descheduled - a worker whose thief is off its CPU keeps working.
 *
 *  - thief off CPU: worker A syncs a child that worker B stole; B spawns
 *    pieces of its work (the shallow frames B publishes as it spawns
 *    them) only once A is waiting at the sync, then leaves its CPU (it
 *    sleeps, as a thread the OS has descheduled) until every piece has
 *    run, up to a bound.  Only A, looking for work while it waits (steal
 *    back from the thief, yield, nap briefly, look again), can run them:
 *    a waiter that sleeps until its child is done leaves them all to B
 *    and fails here after the bound.
 *  - a busy CPU: the process on one CPU beside a busy loop, a pool of two
 *    workers runs fib to the right result within a generous bound.
 *
 * $AGILE_TEST_QUICK (the emulated guests): a smaller fib.
 */
#define _GNU_SOURCE
#include <agile/sched.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define AGILE_TEST_FIB
#include "tap.h"
#include "testutil.h"

#define NR_PIECES 6 /* fewer than the frames published as they are spawned */
/* Bounds: a waiter that looks for work meets them with seconds to spare. */
#define FLAG_BOUND_MS 10000
#define PIECES_BOUND_MS 5000
#define BUSY_BOUND_S 120

static _Atomic int child_started, parent_waiting, pieces_done;
static _Atomic int pieces_by_parent;
static _Atomic int parent_index = -1;

AGILE_VOID_TASK(piece, w, int, unused)
{
	(void)unused;
	if (agile_sched_worker_index(w) == atomic_load(&parent_index))
		atomic_fetch_add(&pieces_by_parent, 1);
	atomic_fetch_add_explicit(&pieces_done, 1, memory_order_release);
}

/* True when all the pieces ran while this worker was away. */
AGILE_TASK(int, away_child, w, int, unused)
{
	int all = 0;

	(void)unused;
	atomic_store_explicit(&child_started, 1, memory_order_release);
	if (!await_flag(&parent_waiting, FLAG_BOUND_MS))
		return 0;
	/* Let the parent's wait get past its first looks for work. */
	usleep(20000);
	for (int i = 0; i < NR_PIECES; i++)
		AGILE_SPAWN(w, piece, 0);
	for (int i = 0; i < PIECES_BOUND_MS && !all; i++) {
		all = atomic_load_explicit(&pieces_done,
					   memory_order_acquire) == NR_PIECES;
		if (!all)
			usleep(1000);
	}
	for (int i = 0; i < NR_PIECES; i++)
		AGILE_SYNC(w, piece);
	return all;
}

AGILE_TASK(int, away_root, w, int, unused)
{
	int stolen, all;

	(void)unused;
	atomic_store(&parent_index, agile_sched_worker_index(w));
	AGILE_SPAWN(w, away_child, 0);
	stolen = await_flag(&child_started, FLAG_BOUND_MS);
	atomic_store_explicit(&parent_waiting, 1, memory_order_release);
	all = AGILE_SYNC(w, away_child);
	return stolen && all;
}

static void test_thief_away(void)
{
	struct agile_sched_opts o;
	struct agile_sched *s;
	int ok = 0, err;

	agile_sched_opts_init(&o);
	o.nr_workers = 2;
	o.flags = AGILE_SCHED_QUIET;
	err = agile_sched_create(&o, &s);
	if (!tap_ok(!err, "thief away: a pool of 2 workers (%d)", err))
		return;
	err = AGILE_RUN(s, away_root, 0, &ok);
	tap_ok(!err && ok && atomic_load(&pieces_by_parent) == NR_PIECES,
	       "thief away: the waiting worker ran all %d pieces of its thief (%d ran, %d by it, err %d)",
	       NR_PIECES, atomic_load(&pieces_done),
	       atomic_load(&pieces_by_parent), err);
	tap_ok(agile_sched_destroy(s) == 0, "thief away: destroy");
}

/* ---- beside a busy loop on the same CPU ---- */

static _Atomic int busy_stop;

static void *busy_main(void *arg)
{
	while (!atomic_load_explicit(&busy_stop, memory_order_relaxed))
		;
	return arg;
}

struct fib_job {
	struct agile_sched *s;
	int n, err;
	int64_t result;
	_Atomic int done;
};

static void *fib_main(void *arg)
{
	struct fib_job *j = arg;

	j->err = AGILE_RUN(j->s, fib, j->n, &j->result);
	atomic_store_explicit(&j->done, 1, memory_order_release);
	return NULL;
}

static void test_busy_cpu(void)
{
	struct fib_job job = { .n = getenv("AGILE_TEST_QUICK") ? 20 : 25 };
	struct agile_sched_opts o;
	cpu_set_t all, one;
	pthread_t busy, runner;
	int cpu = -1, err;

	if (sched_getaffinity(0, sizeof(all), &all)) {
		tap_skip("busy CPU", "sched_getaffinity: %s", strerror(errno));
		return;
	}
	for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
		if (CPU_ISSET(c, &all))
			cpu = c;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	/* Threads inherit the mask: the busy loop and both workers share one CPU. */
	if (sched_setaffinity(0, sizeof(one), &one)) {
		tap_skip("busy CPU", "sched_setaffinity: %s", strerror(errno));
		return;
	}
	agile_sched_opts_init(&o);
	o.nr_workers = 2;
	o.flags = AGILE_SCHED_QUIET;
	err = agile_sched_create(&o, &job.s);
	if (!tap_ok(!err, "busy CPU: a pool of 2 workers on CPU %d (%d)", cpu,
		    err))
		goto out;
	if (pthread_create(&busy, NULL, busy_main, NULL)) {
		tap_ok(0, "busy CPU: start the busy loop");
		agile_sched_destroy(job.s);
		goto out;
	}
	if (pthread_create(&runner, NULL, fib_main, &job)) {
		tap_ok(0, "busy CPU: start the run");
	} else {
		int ended = 0;

		for (int i = 0; i < BUSY_BOUND_S * 100 && !ended; i++) {
			ended = atomic_load_explicit(&job.done,
						     memory_order_acquire);
			if (!ended)
				usleep(10000);
		}
		if (!ended) {
			tap_ok(0, "busy CPU: fib(%d) still running after %d s",
			       job.n, BUSY_BOUND_S);
			tap_done();
			_exit(1);
		}
		pthread_join(runner, NULL);
		tap_ok(!job.err && job.result == fib_plain(job.n),
		       "busy CPU: fib(%d) = %lld beside a busy loop (err %d)",
		       job.n, (long long)job.result, job.err);
	}
	atomic_store(&busy_stop, 1);
	pthread_join(busy, NULL);
	tap_ok(agile_sched_destroy(job.s) == 0, "busy CPU: destroy");
out:
	sched_setaffinity(0, sizeof(all), &all);
}

int main(void)
{
	test_thief_away();
	test_busy_cpu();
	return tap_done();
}
