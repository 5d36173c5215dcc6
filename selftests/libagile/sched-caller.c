// SPDX-License-Identifier: MIT
/*
 * sched-caller - the thread that runs something on a pool works on it: a
 * thread that is no pool's worker runs its root task itself as worker 0
 * (the pool has one thread fewer), the pool's threads steal from it; on a
 * pool of two or more a second caller meanwhile and a worker of another
 * pool queue their runs for the threads.  A pool of one has no thread:
 * its callers, workers of other pools included, take turns at running
 * the queue on their own threads; two pools of one whose runs call into
 * each other, and a run that comes back to the pool it started from
 * through another, finish.  Many callers at once all finish with the
 * right results.
 */
#include <agile/agile.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdint.h>
#include <unistd.h>

#define AGILE_TEST_FIB
#include "tap.h"
#include "testutil.h"

static _Atomic int root_here, root_index;
static pthread_t caller;

/* Notes where it runs, then fib(n) with every call a spawn. */
AGILE_TASK(int64_t, where, w, int, n)
{
	atomic_store(&root_here, pthread_equal(pthread_self(), caller));
	atomic_store(&root_index, agile_sched_worker_index(w));
	return AGILE_CALL(w, fib, n);
}

static struct agile_sched *pool_of(uint32_t workers)
{
	struct agile_sched_opts o;
	struct agile_sched *s = NULL;

	agile_sched_opts_init(&o);
	o.nr_workers = workers;
	o.flags = AGILE_SCHED_QUIET;
	return agile_sched_create(&o, &s) ? NULL : s;
}

struct many {
	struct agile_sched *s;
	_Atomic int *go;
	int ok;
};

static void *many_main(void *arg)
{
	struct many *m = arg;
	int64_t r;

	while (!atomic_load(m->go))
		;
	m->ok = 1;
	for (int i = 0; i < 20; i++) {
		r = -1;
		m->ok &= !AGILE_RUN(m->s, fib, 18, &r) && r == 2584;
	}
	return NULL;
}

/* A worker of pool @arg's other pool runs on @arg: queued, not worker 0. */
static int cross(struct agile_worker *w, void *arg)
{
	struct agile_sched *other = arg;
	int64_t r = -1;

	(void)w;
	caller = pthread_self();
	if (AGILE_RUN(other, where, 15, &r) || r != 610)
		return -EPROTO;
	return atomic_load(&root_here) ? -EPROTO : 0;
}

/* The same on a pool of one: the worker runs it on its own thread. */
static int cross_one(struct agile_worker *w, void *arg)
{
	struct agile_sched *one = arg;
	int64_t r = -1;

	(void)w;
	caller = pthread_self();
	if (AGILE_RUN(one, where, 15, &r) || r != 610)
		return -EPROTO;
	return atomic_load(&root_here) ? 0 : -EPROTO;
}

/*
 * Hand-over on a pool of one: the holder's root waits for @release while
 * a second thread queues its run; once the holder has left, the second
 * run must finish though nobody else comes by.
 */
static _Atomic int holding, release, second_done;

static int hold_root(struct agile_worker *w, void *arg)
{
	(void)w;
	(void)arg;
	atomic_store(&holding, 1);
	while (!atomic_load(&release))
		sched_yield();
	return 0;
}

static int second_root(struct agile_worker *w, void *arg)
{
	(void)w;
	(void)arg;
	return 0;
}

static void *second_main(void *arg)
{
	if (!agile_sched_run(arg, second_root, NULL))
		atomic_store(&second_done, 1);
	return NULL;
}

static void *holder_main(void *arg)
{
	agile_sched_run(arg, hold_root, NULL);
	return NULL;
}

static int hand_over(struct agile_sched *one)
{
	pthread_t h, b;
	int waited = 0;

	if (pthread_create(&h, NULL, holder_main, one))
		return 0;
	while (!atomic_load(&holding))
		sched_yield();
	if (pthread_create(&b, NULL, second_main, one))
		return 0;
	/* The second run queues and its thread goes to sleep. */
	usleep(100 * 1000);
	atomic_store(&release, 1);
	pthread_join(h, NULL);
	while (!atomic_load(&second_done) && waited++ < 5000)
		usleep(1000);
	if (!atomic_load(&second_done))
		return 0;
	pthread_join(b, NULL);
	return 1;
}

/*
 * Pools of one calling into each other: ping on pool A runs pong on pool
 * B, which runs ping on A again, down to depth 0.  From several threads
 * at once, the runs interleave through both pools' slots.
 */
static struct agile_sched *ping_pools[2];

AGILE_TASK(int64_t, ping, w, int, depth)
{
	int64_t r = -1;

	if (!depth)
		return AGILE_CALL(w, fib, 10);
	if (AGILE_RUN(ping_pools[depth & 1], ping, depth - 1, &r))
		return -1;
	return r + 1;
}

static void *ping_main(void *arg)
{
	int *ok = arg;
	int64_t r;

	*ok = 1;
	for (int i = 0; i < 10; i++) {
		r = -1;
		*ok &= !AGILE_RUN(ping_pools[i & 1], ping, 6, &r) && r == 61;
	}
	return NULL;
}

int main(void)
{
	struct agile_sched *two = pool_of(2), *one = pool_of(1), *three;
	struct agile_sched_stats st;
	struct many m[4];
	pthread_t t[4];
	_Atomic int go = 0;
	int64_t r = -1;
	int ok;

	if (!tap_ok(two && one, "pools of 2 and of 1"))
		return tap_done();
	caller = pthread_self();
	tap_ok(!AGILE_RUN(two, where, 20, &r) && r == 6765 &&
		       atomic_load(&root_here) && atomic_load(&root_index) == 0,
	       "pool of 2: the caller runs its root itself, as worker 0");
	agile_sched_stats(two, &st);
	tap_ok(st.nr_workers == 2 && st.nr_threads == 1,
	       "pool of 2: 2 workers, 1 thread of its own (%u, %u)",
	       st.nr_workers, st.nr_threads);
	r = -1;
	tap_ok(!AGILE_RUN(one, where, 20, &r) && r == 6765 &&
		       atomic_load(&root_here) && atomic_load(&root_index) == 0,
	       "pool of 1: the caller runs its root itself, as worker 0");
	agile_sched_stats(one, &st);
	tap_ok(st.nr_workers == 1 && st.nr_threads == 0,
	       "pool of 1: 1 worker, no thread of its own (%u, %u)",
	       st.nr_workers, st.nr_threads);

	/* Four callers at once: one is worker 0, the others queue. */
	for (int i = 0; i < 4; i++) {
		m[i] = (struct many){ .s = two, .go = &go };
		if (pthread_create(&t[i], NULL, many_main, &m[i]))
			return tap_done();
	}
	atomic_store(&go, 1);
	ok = 1;
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ok &= m[i].ok;
	}
	tap_ok(ok, "pool of 2: 4 threads running 20 runs each at once: all "
		   "right");
	atomic_store(&go, 0);
	for (int i = 0; i < 4; i++) {
		m[i] = (struct many){ .s = one, .go = &go };
		if (pthread_create(&t[i], NULL, many_main, &m[i]))
			return tap_done();
	}
	atomic_store(&go, 1);
	ok = 1;
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ok &= m[i].ok;
	}
	tap_ok(ok, "pool of 1: 4 threads running 20 runs each at once, taking "
		   "turns: all right");
	agile_sched_stats(two, &st);
	tap_ok(st.tasks > 0 && !st.pin_error, "pool of 2: %llu tasks",
	       (unsigned long long)st.tasks);

	tap_ok(hand_over(one), "pool of 1: the holder leaves with a run "
			       "queued: that run's thread takes the slot "
			       "(within 5 s)");

	/* A worker of another pool does not take worker 0: it queues. */
	three = pool_of(3);
	tap_ok(three && !agile_sched_run(three, cross, two),
	       "a worker of a pool of 3 running on the pool of 2 queues its "
	       "run for the pool's thread");
	tap_ok(three && !agile_sched_run(three, cross_one, one),
	       "a worker of a pool of 3 running on the pool of 1 runs it on "
	       "its own thread, as its worker 0");
	tap_ok(!three || !agile_sched_destroy(three), "destroy the pool of 3");

	ping_pools[0] = pool_of(1);
	ping_pools[1] = pool_of(1);
	if (ping_pools[0] && ping_pools[1]) {
		int pok[3];

		for (int i = 0; i < 3; i++)
			if (pthread_create(&t[i], NULL, ping_main, &pok[i]))
				return tap_done();
		ok = 1;
		for (int i = 0; i < 3; i++) {
			pthread_join(t[i], NULL);
			ok &= pok[i];
		}
	} else {
		ok = 0;
	}
	tap_ok(ok, "two pools of 1 whose runs call into each other, 3 "
		   "threads at once: no deadlock, all right");
	tap_ok(ping_pools[0] && !agile_sched_destroy(ping_pools[0]) &&
		       ping_pools[1] && !agile_sched_destroy(ping_pools[1]),
	       "destroy the pools of 1");
	tap_ok(!agile_sched_destroy(two) && !agile_sched_destroy(one),
	       "destroy the pools");
	return tap_done();
}
