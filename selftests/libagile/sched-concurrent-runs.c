// SPDX-License-Identifier: MIT
/*
 * sched-concurrent-runs - several outside threads submit runs to one pool at the
 * same time (fork/join, parallel_for, failing runs): each gets its own
 * result and its own error, and agile_sched_worker_self is NULL outside workers.
 */
#include <agile/sched.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "tap.h"
#define AGILE_TEST_FIB
#include "testutil.h"

#define NR_THREADS 4
#define NR_RUNS 40

static struct agile_sched *sched;

static int sum_body(int64_t lo, int64_t hi, void *arg)
{
	_Atomic int64_t *sum = arg;

	for (int64_t i = lo; i < hi; i++)
		atomic_fetch_add_explicit(sum, i, memory_order_relaxed);
	return 0;
}

static int fail_body(int64_t lo, int64_t hi, void *arg)
{
	(void)arg;
	return lo <= 500 && 500 < hi ? -ETIMEDOUT : 0;
}

static void *submitter(void *arg)
{
	intptr_t id = (intptr_t)arg, bad = 0;

	for (int i = 0; i < NR_RUNS; i++) {
		_Atomic int64_t sum = 0;
		int64_t r = 0;
		int err;

		switch ((i + id) % 3) {
		case 0:
			err = AGILE_RUN(sched, fib, 18, &r);
			bad += err || r != 2584;
			break;
		case 1:
			err = agile_sched_parallel_for(sched, 0, 1000, 7,
						       sum_body, &sum);
			bad += err || atomic_load(&sum) != 499500;
			break;
		default:
			err = agile_sched_parallel_for(sched, 0, 1000, 7,
						       fail_body, NULL);
			bad += err != -ETIMEDOUT;
			break;
		}
	}
	return (void *)bad;
}

int main(void)
{
	pthread_t threads[NR_THREADS];
	intptr_t bad = 0;
	int err;

	tap_ok(agile_sched_worker_self() == NULL,
	       "not a worker outside the pool");
	err = agile_sched_create(NULL, &sched);
	if (!tap_ok_call(err, "create"))
		return tap_done();
	for (intptr_t i = 0; i < NR_THREADS; i++)
		pthread_create(&threads[i], NULL, submitter, (void *)i);
	for (int i = 0; i < NR_THREADS; i++) {
		void *ret;

		pthread_join(threads[i], &ret);
		bad += (intptr_t)ret;
	}
	tap_ok(bad == 0,
	       "%d threads x %d runs, each with its own result and error (%ld wrong)",
	       NR_THREADS, NR_RUNS, (long)bad);
	tap_ok_call(agile_sched_destroy(sched), "destroy");
	return tap_done();
}
