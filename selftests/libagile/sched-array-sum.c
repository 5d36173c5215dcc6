// SPDX-License-Identifier: MIT
/*
 * sched-array-sum - the sum of an array three ways: agile_sched_parallel_for with a
 * shared atomic total, a fork/join task over halves of the array, and a
 * task that spawns one child per block before syncing them all.
 */
#include <agile/sched.h>
#include <stdint.h>
#include <stdlib.h>

#include "tap.h"

#define N 3000001

static int64_t *data;
static _Atomic int64_t total;

static int sum_body(int64_t lo, int64_t hi, void *arg)
{
	int64_t sum = 0;

	(void)arg;
	for (int64_t i = lo; i < hi; i++)
		sum += data[i];
	atomic_fetch_add_explicit(&total, sum, memory_order_relaxed);
	return 0;
}

struct span {
	const int64_t *a;
	int64_t n;
};

AGILE_TASK(int64_t, sum_halves, w, struct span, s)
{
	struct span right;
	int64_t left;

	if (s.n <= 1000) {
		int64_t sum = 0;

		for (int64_t i = 0; i < s.n; i++)
			sum += s.a[i];
		return sum;
	}
	right.a = s.a + s.n / 2;
	right.n = s.n - s.n / 2;
	s.n /= 2;
	AGILE_SPAWN(w, sum_halves, right);
	left = AGILE_CALL(w, sum_halves, s);
	return left + AGILE_SYNC(w, sum_halves);
}

/* Flat: one spawn per block of 4096, then every sync (deep frame stack). */
AGILE_TASK(int64_t, sum_blocks, w, struct span, s)
{
	int64_t sum = 0, nr = 0;

	for (int64_t off = 0; off < s.n; off += 4096, nr++) {
		struct span block = { s.a + off,
				      s.n - off < 4096 ? s.n - off : 4096 };

		AGILE_SPAWN(w, sum_halves, block);
	}
	while (nr--)
		sum += AGILE_SYNC(w, sum_halves);
	return sum;
}

int main(void)
{
	struct agile_sched *s;
	struct span all;
	int64_t expect = 0, got = 0;
	int err;

	data = malloc(N * sizeof(*data));
	if (!data)
		return 1;
	for (int64_t i = 0; i < N; i++) {
		data[i] = (i * 2654435761u) % 1000 - 500;
		expect += data[i];
	}
	all.a = data;
	all.n = N;

	err = agile_sched_create(NULL, &s);
	if (!tap_ok_call(err, "create"))
		return tap_done();

	for (int64_t grain = 0; grain <= 100000;
	     grain = grain ? grain * 10 : 1) {
		atomic_store(&total, 0);
		err = agile_sched_parallel_for(s, 0, N, grain, sum_body, NULL);
		tap_ok(err == 0 && atomic_load(&total) == expect,
		       "parallel_for sum, grain %lld", (long long)grain);
	}
	err = AGILE_RUN(s, sum_halves, all, &got);
	tap_ok(err == 0 && got == expect, "fork/join sum over halves");
	got = 0;
	err = AGILE_RUN(s, sum_blocks, all, &got);
	tap_ok(err == 0 && got == expect,
	       "fork/join sum, %d blocks spawned flat", N / 4096 + 1);

	tap_ok_call(agile_sched_destroy(s), "destroy");
	free(data);
	return tap_done();
}
