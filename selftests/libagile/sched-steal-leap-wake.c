// SPDX-License-Identifier: MIT
/*
 * sched-steal-leap-wake - the scheduler's mechanisms, each shown to happen, on a
 * pool of two workers.  Each scenario waits (with a bound) for a flag that
 * only the mechanism can set, so a scheduler without it fails here rather
 * than running everything on one worker:
 *
 *  - steal: a task spawns a child and, without syncing, waits for the
 *    flag the child sets: the child runs only if the other worker steals
 *    it (stats: a steal);
 *  - leap: the stolen child spawns a grandchild and waits for its flag,
 *    while the parent syncs the stolen child: only the parent, helping its
 *    thief (leapfrogging), can run the grandchild (stats: a leap);
 *  - publish on demand: a task deeper than the eagerly published frames
 *    is stolen only when its worker publishes it for the hungry thief;
 *  - wake: with the pool's thread asleep (stats: sleeping), a run started
 *    by the caller (worker 0 of the pool of two) spawns a child whose
 *    publish wakes the thread, which steals it.
 *
 * A scenario runs on a thread of its own; one that has not ended after a
 * generous bound is a hang (a missing wake-up), reported as a failure.
 */
#define _GNU_SOURCE
#include <agile/sched.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "testutil.h"

/* Bounds on waits for a flag, and for a whole scenario: never reached. */
#define FLAG_BOUND_MS 10000
#define SCENARIO_BOUND_S 60

static struct agile_sched *pool;
static _Atomic int flag_child, flag_grandchild, flag_deep;
static _Atomic int child_worker, grandchild_worker, deep_worker;

static void ms_sleep(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static struct agile_sched_stats stats(void)
{
	struct agile_sched_stats st;

	agile_sched_stats(pool, &st);
	return st;
}

/* ---- steal ---- */

AGILE_VOID_TASK(mark_child, w, int, unused)
{
	(void)unused;
	atomic_store(&child_worker, agile_sched_worker_index(w));
	atomic_store_explicit(&flag_child, 1, memory_order_release);
}

/* 1 when the child ran before its parent synced it: it was stolen. */
AGILE_TASK(int, steal_root, w, int, unused)
{
	int stolen;

	(void)unused;
	AGILE_SPAWN(w, mark_child, 0);
	stolen = await_flag(&flag_child, FLAG_BOUND_MS);
	AGILE_SYNC(w, mark_child);
	return stolen &&
	       atomic_load(&child_worker) != agile_sched_worker_index(w);
}

/* ---- leap ---- */

AGILE_VOID_TASK(mark_grandchild, w, int, unused)
{
	(void)unused;
	atomic_store(&grandchild_worker, agile_sched_worker_index(w));
	atomic_store_explicit(&flag_grandchild, 1, memory_order_release);
}

/* On the thief: its own spawn runs before its sync only if leapt to. */
AGILE_TASK(int, leap_child, w, int, unused)
{
	int leapt;

	(void)unused;
	atomic_store(&child_worker, agile_sched_worker_index(w));
	atomic_store_explicit(&flag_child, 1, memory_order_release);
	AGILE_SPAWN(w, mark_grandchild, 0);
	leapt = await_flag(&flag_grandchild, FLAG_BOUND_MS);
	AGILE_SYNC(w, mark_grandchild);
	return leapt;
}

AGILE_TASK(int, leap_root, w, int, unused)
{
	int stolen, leapt;

	(void)unused;
	AGILE_SPAWN(w, leap_child, 0);
	/* Synced only once the thief runs it: then the sync has to leap. */
	stolen = await_flag(&flag_child, FLAG_BOUND_MS);
	leapt = AGILE_SYNC(w, leap_child);
	return stolen && leapt &&
	       atomic_load(&grandchild_worker) == agile_sched_worker_index(w);
}

/* ---- publish on demand ---- */

AGILE_VOID_TASK(nothing, w, int, unused)
{
	(void)w;
	(void)unused;
}

AGILE_VOID_TASK(mark_deep, w, int, unused)
{
	(void)unused;
	atomic_store(&deep_worker, agile_sched_worker_index(w));
	atomic_store_explicit(&flag_deep, 1, memory_order_release);
}

/*
 * Eight spawns fill the eagerly published frames (the thief takes them);
 * the ninth, mark_deep, stays private until a thief that found nothing
 * raises the hungry flag and a later spawn publishes it.
 */
AGILE_TASK(int, deep_root, w, int, unused)
{
	int stolen = 0;

	(void)unused;
	for (int i = 0; i < 8; i++)
		AGILE_SPAWN(w, nothing, 0);
	AGILE_SPAWN(w, mark_deep, 0);
	for (int i = 0; i < FLAG_BOUND_MS * 10 && !stolen; i++) {
		/* A spawn is where a hungry thief's request is answered. */
		AGILE_SPAWN(w, nothing, 0);
		AGILE_SYNC(w, nothing);
		stolen = atomic_load_explicit(&flag_deep, memory_order_acquire);
		if (!stolen)
			usleep(100);
	}
	AGILE_SYNC(w, mark_deep);
	for (int i = 0; i < 8; i++)
		AGILE_SYNC(w, nothing);
	return stolen &&
	       atomic_load(&deep_worker) != agile_sched_worker_index(w);
}

/* ---- the scenarios, each bounded ---- */

struct scenario {
	const char *what;
	int (*run)(void);
	_Atomic int done;
	int ok;
};

static int run_steal(void)
{
	int ok = 0, err;
	uint64_t steals0 = stats().steals;

	atomic_store(&flag_child, 0);
	err = AGILE_RUN(pool, steal_root, 0, &ok);
	return !err && ok && stats().steals > steals0;
}

static int run_leap(void)
{
	struct agile_sched_stats st0 = stats(), st1;
	int ok = 0, err;

	atomic_store(&flag_child, 0);
	atomic_store(&flag_grandchild, 0);
	err = AGILE_RUN(pool, leap_root, 0, &ok);
	st1 = stats();
	return !err && ok && st1.leaps > st0.leaps && st1.steals > st0.steals;
}

static int run_deep(void)
{
	int ok = 0, err;

	atomic_store(&flag_deep, 0);
	err = AGILE_RUN(pool, deep_root, 0, &ok);
	return !err && ok;
}

/* Both workers asleep, then a run that needs both. */
static int run_wake(void)
{
	struct agile_sched_stats st = stats();
	int ok = 0, err;

	for (int i = 0; i < FLAG_BOUND_MS / 10 && st.sleeping < st.nr_threads;
	     i++) {
		ms_sleep(10);
		st = stats();
	}
	if (st.sleeping != st.nr_threads) {
		tap_diag("only %u of %u threads went to sleep", st.sleeping,
			 st.nr_threads);
		return 0;
	}
	atomic_store(&flag_child, 0);
	err = AGILE_RUN(pool, steal_root, 0, &ok);
	return !err && ok;
}

static void *scenario_main(void *arg)
{
	struct scenario *sc = arg;

	sc->ok = sc->run();
	atomic_store_explicit(&sc->done, 1, memory_order_release);
	return NULL;
}

static void run_bounded(struct scenario *sc)
{
	pthread_t t;

	if (pthread_create(&t, NULL, scenario_main, sc)) {
		tap_ok(0, "%s: start", sc->what);
		return;
	}
	for (int i = 0; i < SCENARIO_BOUND_S * 100 &&
			!atomic_load_explicit(&sc->done, memory_order_acquire);
	     i++)
		ms_sleep(10);
	if (!atomic_load_explicit(&sc->done, memory_order_acquire)) {
		/* Hung: nothing can be torn down; report and leave. */
		tap_ok(0, "%s: hung for %d s", sc->what, SCENARIO_BOUND_S);
		tap_done();
		_exit(1);
	}
	pthread_join(t, NULL);
	tap_ok(sc->ok, "%s", sc->what);
}

int main(void)
{
	static struct scenario scenarios[] = {
		{ .what = "steal: a child runs on the other worker before its "
			  "parent syncs it",
		  .run = run_steal },
		{ .what = "leap: a parent syncing a stolen child runs the "
			  "thief's spawn",
		  .run = run_leap },
		{ .what = "publish: a private frame is published for a hungry "
			  "thief and stolen",
		  .run = run_deep },
		{ .what = "wake: the pool's sleeping thread is woken by a run and "
			  "its spawn",
		  .run = run_wake },
	};
	struct agile_sched_opts o;
	struct agile_sched_stats st;
	int err;

	agile_sched_opts_init(&o);
	o.nr_workers = 2;
	o.flags = AGILE_SCHED_QUIET;
	err = agile_sched_create(&o, &pool);
	if (!tap_ok(!err, "a pool of 2 workers: %s", strerror(-err)))
		return tap_done();
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		run_bounded(&scenarios[i]);
	st = stats();
	tap_diag("%llu steals, %llu leaps, %llu publishes, %llu sleeps",
		 (unsigned long long)st.steals, (unsigned long long)st.leaps,
		 (unsigned long long)st.publishes,
		 (unsigned long long)st.sleeps);
	tap_ok(agile_sched_destroy(pool) == 0, "destroy");
	return tap_done();
}
