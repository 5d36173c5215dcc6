// SPDX-License-Identifier: MIT
/*
 * sched-task-api - the task API beyond one argument: tasks of two to six
 * arguments of mixed types, a spawn argument with commas (a compound
 * literal), AGILE_SYNC_ALL, tasks declared in a header and defined in
 * another file (sched-task-api-tasks.c), AGILE_RUN with several
 * arguments, agile_sched_parallel_reduce (bit-identical float sums on 1
 * and 2 workers, against the same tree summed serially), the worker forms
 * of parallel-for and reduce nested in a task, and their errors.
 */
#include <agile/agile.h>
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched-task-api.h"
#include "tap.h"

/* Six arguments of six types; the sum of a binary tree of them. */
AGILE_TASK(int64_t, mix6, w, int8_t, a, int16_t, b, int32_t, c, int64_t, d,
	   double, e, const char *, f)
{
	int64_t left, right;

	if (a <= 0)
		return b + c + d + (int64_t)e + (int64_t)strlen(f);
	AGILE_SPAWN(w, mix6, (int8_t)(a - 1), b, c, d, e, f);
	right = AGILE_CALL(w, mix6, (int8_t)(a - 1), b, c, d, e, f + 1);
	left = AGILE_SYNC(w, mix6);
	return left + right;
}

/* The same, serially. */
static int64_t mix6_plain(int a, int b, int c, int64_t d, double e,
			  const char *f)
{
	if (a <= 0)
		return b + c + d + (int64_t)e + (int64_t)strlen(f);
	return mix6_plain(a - 1, b, c, d, e, f) +
	       mix6_plain(a - 1, b, c, d, e, f + 1);
}

struct pair {
	int32_t x, y;
};

AGILE_TASK(int64_t, pair_sum, w, struct pair, p, int, depth)
{
	int64_t s;

	if (!depth)
		return p.x + p.y;
	AGILE_SPAWN(w, pair_sum, (struct pair){ p.x + 1, p.y * 2 }, depth - 1);
	s = AGILE_CALL(w, pair_sum, (struct pair){ p.y, p.x }, depth - 1);
	return s + AGILE_SYNC(w, pair_sum);
}

static int64_t pair_plain(int32_t x, int32_t y, int depth)
{
	if (!depth)
		return x + y;
	return pair_plain(x + 1, y * 2, depth - 1) +
	       pair_plain(y, x, depth - 1);
}

/* A loop of void spawns joined with AGILE_SYNC_ALL. */
AGILE_VOID_TASK(mark, w, int *, slots, int, i)
{
	(void)w;
	slots[i] = i + 1;
}

AGILE_TASK(int, mark_all, w, int *, slots, int, n)
{
	for (int i = 0; i < n; i++)
		AGILE_SPAWN(w, mark, slots, i);
	AGILE_SYNC_ALL(w);
	return 0;
}

static int64_t fib_plain(int n)
{
	return n < 2 ? n : fib_plain(n - 1) + fib_plain(n - 2);
}

static int64_t touch_plain(int n)
{
	return n < 2 ? n : n + touch_plain(n - 1) + touch_plain(n - 2);
}

/* ---- reduce ---- */

/* Values whose float sum depends on the order of the additions. */
static double value(int64_t i)
{
	return (i % 3 ? 1.0 : -1.0) * ldexp(1.0 + (double)(i % 7) / 7, i % 60);
}

static int sum_body(int64_t lo, int64_t hi, void *acc, void *arg)
{
	(void)arg;
	for (int64_t i = lo; i < hi; i++)
		*(double *)acc += value(i);
	return 0;
}

static void add(void *acc, const void *other, void *arg)
{
	(void)arg;
	*(double *)acc += *(const double *)other;
}

/* The reduction's tree, serially: halves, lower + upper. */
static double tree_sum(int64_t lo, int64_t hi, int64_t grain)
{
	double acc = 0;

	if (hi - lo <= grain) {
		sum_body(lo, hi, &acc, NULL);
		return acc;
	}
	acc = tree_sum(lo, lo + (hi - lo) / 2, grain);
	return acc + tree_sum(lo + (hi - lo) / 2, hi, grain);
}

static int failing_body(int64_t lo, int64_t hi, void *acc, void *arg)
{
	(void)acc;
	(void)arg;
	return lo <= 5000 && 5000 < hi ? -EDOM : 0;
}

static _Atomic int64_t pfor_total;

static int pfor_body(int64_t lo, int64_t hi, void *arg)
{
	(void)arg;
	for (int64_t i = lo; i < hi; i++)
		atomic_fetch_add_explicit(&pfor_total, i, memory_order_relaxed);
	return 0;
}

static int pfor_failing(int64_t lo, int64_t hi, void *arg)
{
	(void)arg;
	return lo <= 700 && 700 < hi ? -ERANGE : 0;
}

struct nested {
	double sum;
	int reduce_err, pfor_err, bad_err;
};

/* Inside a task: the worker forms, nested, and their errors. */
static int nested_root(struct agile_worker *w, void *arg)
{
	struct nested *r = arg;
	double zero = 0;

	atomic_store(&pfor_total, 0);
	r->pfor_err =
		agile_sched_parallel_for_w(w, 0, 100000, 0, pfor_body, NULL);
	r->reduce_err = agile_sched_parallel_reduce_w(w, 0, 20000, 64,
						      sizeof(double), &zero,
						      sum_body, add, NULL,
						      &r->sum);
	r->bad_err =
		agile_sched_parallel_for_w(w, 0, 1000, 10, pfor_failing, NULL);
	return 0;
}

static void test_pool(uint32_t workers)
{
	struct agile_sched_opts o;
	struct agile_sched *s;
	int slots[300] = { 0 };
	_Atomic int64_t touched = 0;
	struct nested nr = { 0 };
	int64_t r = -1;
	double sum, zero = 0, first = 0;
	int err, ok;

	agile_sched_opts_init(&o);
	o.nr_workers = workers;
	o.flags = AGILE_SCHED_QUIET;
	if (!tap_ok_call(agile_sched_create(&o, &s), "create a pool"))
		return;

	err = AGILE_RUN(s, mix6, 10, 3, -7, 1000000000000LL, 2.5,
			"abcdefghijkl", &r);
	tap_ok(!err && r == mix6_plain(10, 3, -7, 1000000000000LL, 2.5,
				       "abcdefghijkl"),
	       "%u workers: a task of six arguments, 1023 spawns: %lld",
	       workers, (long long)r);
	err = AGILE_RUN(s, pair_sum, (struct pair){ 3, 5 }, 12, &r);
	tap_ok(!err && r == pair_plain(3, 5, 12),
	       "%u workers: compound literals as spawn arguments: %lld",
	       workers, (long long)r);
	err = AGILE_RUN(s, mark_all, slots, 300, NULL);
	ok = !err;
	for (int i = 0; i < 300; i++)
		ok &= slots[i] == i + 1;
	tap_ok(ok, "%u workers: 300 void spawns joined by AGILE_SYNC_ALL",
	       workers);
	err = AGILE_RUN(s, shared_fib, 24, 1000, &r);
	tap_ok(!err && r == fib_plain(24) + 1000,
	       "%u workers: a task declared in a header, defined in another "
	       "file: %lld",
	       workers, (long long)r);
	err = AGILE_RUN(s, shared_touch, &touched, 20, NULL);
	tap_ok(!err && atomic_load(&touched) == touch_plain(20),
	       "%u workers: a void task from the header, AGILE_SYNC_ALL in it",
	       workers);

	for (int round = 0; round < 10; round++) {
		sum = -1;
		err = agile_sched_parallel_reduce(s, 0, 20000, 64,
						  sizeof(double), &zero,
						  sum_body, add, NULL, &sum);
		if (!round)
			first = sum;
		if (err || memcmp(&sum, &first, sizeof(sum)))
			break;
	}
	sum = tree_sum(0, 20000, 64);
	tap_ok(!err && !memcmp(&first, &sum, sizeof(sum)),
	       "%u workers: parallel_reduce of order-sensitive doubles gives "
	       "the serial tree's bits, 10 runs alike (%.17g)",
	       workers, first);
	sum = 123;
	err = agile_sched_parallel_reduce(s, 5, 5, 0, sizeof(double), &zero,
					  sum_body, add, NULL, &sum);
	tap_ok(!err && sum == 0,
	       "%u workers: an empty range gives the identity", workers);
	err = agile_sched_parallel_reduce(s, 0, 20000, 64, sizeof(double),
					  &zero, failing_body, add, NULL, &sum);
	tap_ok(err == -EDOM, "%u workers: a body's error is the reduce's: %s",
	       workers, agile_strerror(err));
	tap_ok(agile_sched_parallel_reduce(s, 0, 10, 0, 0, &zero, sum_body, add,
					   NULL, &sum) == -EINVAL &&
		       agile_sched_parallel_reduce(
			       s, 0, 10, 0, AGILE_REDUCE_MAX_SIZE + 1, &zero,
			       sum_body, add, NULL, &sum) == -EINVAL &&
		       agile_sched_parallel_reduce(s, 10, 0, 0, sizeof(double),
						   &zero, sum_body, add, NULL,
						   &sum) == -EINVAL &&
		       agile_sched_parallel_reduce(s, 0, 10, 0, sizeof(double),
						   NULL, sum_body, add, NULL,
						   &sum) == -EINVAL,
	       "%u workers: size 0, size over AGILE_REDUCE_MAX_SIZE, end < "
	       "begin, no identity: -EINVAL",
	       workers);

	err = agile_sched_run(s, nested_root, &nr);
	sum = tree_sum(0, 20000, 64);
	tap_ok(!err && !nr.pfor_err &&
		       atomic_load(&pfor_total) == 100000LL * 99999 / 2 &&
		       !nr.reduce_err && !memcmp(&nr.sum, &sum, sizeof(sum)),
	       "%u workers: parallel_for_w and parallel_reduce_w inside a task",
	       workers);
	tap_ok(nr.bad_err == -ERANGE && !err,
	       "%u workers: a failing parallel_for_w returns its error (%s), "
	       "the run succeeds",
	       workers, agile_strerror(nr.bad_err));
	tap_ok(agile_sched_parallel_for_w(NULL, 0, 1, 0, pfor_body, NULL) ==
			       -EINVAL &&
		       agile_sched_parallel_reduce_w(NULL, 0, 1, 0, 8, &zero,
						     sum_body, add, NULL,
						     &sum) == -EINVAL,
	       "%u workers: the worker forms without a worker: -EINVAL",
	       workers);
	tap_ok_call(agile_sched_destroy(s), "destroy the pool");
}

int main(void)
{
	test_pool(1);
	test_pool(2);
	return tap_done();
}
