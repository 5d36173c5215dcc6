// SPDX-License-Identifier: MIT
/*
 * sched-error-propagation - a negative errno anywhere in a run comes back from
 * it: from a parallel_for body, a root function, a fork/join task through
 * agile_sched_fail, a failed leaf of a task tree; the first one wins, the
 * next run starts clean, and bad options are refused with -EINVAL.
 */
#include <agile/sched.h>
#include <errno.h>
#include <stdint.h>

#include "tap.h"

static int fail_at(int64_t lo, int64_t hi, void *arg)
{
	int64_t bad = *(int64_t *)arg;

	return lo <= bad && bad < hi ? -EIO : 0;
}

static int fail_two(int64_t lo, int64_t hi, void *arg)
{
	(void)arg;
	if (lo <= 100 && 100 < hi)
		return -EIO;
	if (lo <= 9000 && 9000 < hi)
		return -ENOSPC;
	return 0;
}

static int root_eperm(struct agile_worker *w, void *arg)
{
	(void)w;
	(void)arg;
	return -EPERM;
}

AGILE_TASK(int64_t, fib_fail, w, int, n)
{
	int64_t b;

	if (n < 2) {
		if (n == 1 && agile_sched_failed(w) == 0)
			agile_sched_fail(w, -ERANGE);
		return n;
	}
	AGILE_SPAWN(w, fib_fail, n - 1);
	b = AGILE_CALL(w, fib_fail, n - 2);
	return AGILE_SYNC(w, fib_fail) + b;
}

AGILE_TASK(int, first_wins, w, int, unused)
{
	(void)unused;
	agile_sched_fail(w, -EXDEV);
	agile_sched_fail(w, -ENOENT);
	return agile_sched_failed(w);
}

static int ok_body(int64_t lo, int64_t hi, void *arg)
{
	(void)lo;
	(void)hi;
	(void)arg;
	return 0;
}

int main(void)
{
	struct agile_sched_opts opts;
	struct agile_sched *s = NULL;
	int64_t bad, r;
	int err, seen = 0;

	err = agile_sched_create(NULL, &s);
	if (!tap_ok_call(err, "create"))
		return tap_done();

	for (bad = 0; bad < 10000; bad += 997) {
		err = agile_sched_parallel_for(s, 0, 10000, 3, fail_at, &bad);
		if (err != -EIO)
			break;
	}
	tap_ok(err == -EIO, "a failing parallel_for body: -EIO");
	for (int i = 0; i < 20; i++) {
		err = agile_sched_parallel_for(s, 0, 10000, 1, fail_two, NULL);
		seen |= err == -EIO ? 1 : err == -ENOSPC ? 2 : 4;
	}
	tap_ok(!(seen & 4), "two failing bodies: one of their errors (seen %d)",
	       seen);
	tap_ok(agile_sched_parallel_for(s, 0, 10000, 1, ok_body, NULL) == 0,
	       "the next run starts clean");
	tap_ok(agile_sched_run(s, root_eperm, NULL) == -EPERM,
	       "root function's -EPERM");
	err = AGILE_RUN(s, fib_fail, 20, &r);
	tap_ok(err == -ERANGE,
	       "agile_sched_fail from deep in fork/join: -ERANGE");
	err = AGILE_RUN(s, first_wins, 0, NULL);
	tap_ok(err == -EXDEV, "first error wins");
	tap_ok(agile_sched_fail(NULL, -EIO) == -EINVAL &&
		       agile_sched_failed(NULL) == -EINVAL,
	       "NULL worker: -EINVAL");
	tap_ok(agile_sched_run(s, NULL, NULL) == -EINVAL,
	       "no function: -EINVAL");
	tap_ok(agile_sched_run(NULL, root_eperm, NULL) == -EINVAL,
	       "no pool: -EINVAL");
	tap_ok_call(agile_sched_destroy(s), "destroy");

	agile_sched_opts_init(&opts);
	opts.reserved[2] = 1;
	tap_ok(agile_sched_create(&opts, &s) == -EINVAL,
	       "reserved field: -EINVAL");
	agile_sched_opts_init(&opts);
	opts.flags = 1u << 31;
	tap_ok(agile_sched_create(&opts, &s) == -EINVAL,
	       "unknown flag: -EINVAL");
	agile_sched_opts_init(&opts);
	opts.max_frames = 1;
	tap_ok(agile_sched_create(&opts, &s) == -EINVAL, "1 frame: -EINVAL");
	agile_sched_opts_init(&opts);
	opts.nr_workers = AGILE_SCHED_MAX_WORKERS + 1;
	tap_ok(agile_sched_create(&opts, &s) == -EINVAL,
	       "too many workers: -EINVAL");
	tap_ok(agile_sched_create(NULL, NULL) == -EINVAL,
	       "no out pointer: -EINVAL");
	tap_ok(agile_sched_opts_init(NULL) == -EINVAL,
	       "opts_init(NULL): -EINVAL");
	return tap_done();
}
