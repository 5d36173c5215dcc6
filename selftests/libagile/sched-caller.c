// SPDX-License-Identifier: MIT
/*
 * sched-caller - the thread that runs something on a pool works on it: on
 * a pool of two or more, a thread that is no pool's worker runs its root
 * task itself as worker 0 (the pool has one thread fewer), the pool's
 * threads steal from it; a second caller meanwhile, a worker of another
 * pool, and any caller of a pool of one queue their runs for the threads.
 * Many callers at once all finish with the right results.
 */
#include <agile/agile.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

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
		       !atomic_load(&root_here),
	       "pool of 1: the root runs on the pool's thread");
	agile_sched_stats(one, &st);
	tap_ok(st.nr_workers == 1 && st.nr_threads == 1,
	       "pool of 1: 1 worker, 1 thread (%u, %u)", st.nr_workers,
	       st.nr_threads);

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
	agile_sched_stats(two, &st);
	tap_ok(st.tasks > 0 && !st.pin_error, "pool of 2: %llu tasks",
	       (unsigned long long)st.tasks);

	/* A worker of another pool does not take worker 0: it queues. */
	three = pool_of(3);
	tap_ok(three && !agile_sched_run(three, cross, two),
	       "a worker of a pool of 3 running on the pool of 2 queues its "
	       "run for the pool's thread");
	tap_ok(!three || !agile_sched_destroy(three), "destroy the pool of 3");
	tap_ok(!agile_sched_destroy(two) && !agile_sched_destroy(one),
	       "destroy the pools");
	return tap_done();
}
