// SPDX-License-Identifier: MIT
/*
 * sched-pfor-uneven - parallel_for over iterations of very different cost: every
 * index is visited exactly once whatever the grain, ranges may start
 * anywhere, and bad arguments are refused.
 */
#include <agile/sched.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "tap.h"

#define N 20000

static _Atomic uint32_t visits[N];
static _Atomic uint64_t sink; /* keeps the loop from being optimised away */

static int uneven_body(int64_t lo, int64_t hi, void *arg)
{
	int64_t base = *(int64_t *)arg;

	for (int64_t i = lo; i < hi; i++) {
		uint64_t x = (uint64_t)i,
			 spins = (uint64_t)(i - base) % 97 == 0 ? 20000 : 10;

		for (uint64_t k = 0; k < spins; k++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		atomic_store_explicit(&sink, x, memory_order_relaxed);
		atomic_fetch_add_explicit(&visits[i - base], 1,
					  memory_order_relaxed);
	}
	return 0;
}

static int count_once(void)
{
	int once = 0;

	for (int i = 0; i < N; i++)
		once += atomic_exchange(&visits[i], 0) == 1;
	return once;
}

static int never_called(int64_t lo, int64_t hi, void *arg)
{
	(void)lo;
	(void)hi;
	(void)arg;
	return -EFAULT;
}

int main(void)
{
	static const int64_t grains[] = { 0, 1, 7, 64, 1000, N, 10 * N };
	struct agile_sched *s;
	int64_t base;
	int err;

	err = agile_sched_create(NULL, &s);
	if (!tap_ok_call(err, "create"))
		return tap_done();

	for (size_t g = 0; g < sizeof(grains) / sizeof(grains[0]); g++) {
		base = 0;
		err = agile_sched_parallel_for(s, 0, N, grains[g], uneven_body,
					       &base);
		tap_ok(err == 0 && count_once() == N,
		       "uneven range, grain %lld: each index once",
		       (long long)grains[g]);
	}
	base = -12345;
	err = agile_sched_parallel_for(s, base, base + N, 3, uneven_body,
				       &base);
	tap_ok(err == 0 && count_once() == N, "range starting below zero");
	base = INT64_MAX - N;
	err = agile_sched_parallel_for(s, base, INT64_MAX, 5, uneven_body,
				       &base);
	tap_ok(err == 0 && count_once() == N, "range ending at INT64_MAX");

	err = agile_sched_parallel_for(s, 5, 5, 1, never_called, NULL);
	tap_ok(err == 0, "empty range runs nothing");
	tap_ok(agile_sched_parallel_for(s, 5, 4, 1, never_called, NULL) ==
		       -EINVAL,
	       "end < begin: -EINVAL");
	tap_ok(agile_sched_parallel_for(s, 0, 4, -1, never_called, NULL) ==
		       -EINVAL,
	       "negative grain: -EINVAL");
	tap_ok(agile_sched_parallel_for(s, INT64_MIN, INT64_MAX, 1,
					never_called, NULL) == -EINVAL,
	       "range wider than int64: -EINVAL");
	tap_ok(agile_sched_parallel_for(s, 0, 4, 1, NULL, NULL) == -EINVAL,
	       "no body: -EINVAL");
	tap_ok(agile_sched_parallel_for(NULL, 0, 4, 1, never_called, NULL) ==
		       -EINVAL,
	       "no pool: -EINVAL");

	tap_ok_call(agile_sched_destroy(s), "destroy");
	return tap_done();
}
