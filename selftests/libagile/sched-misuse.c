// SPDX-License-Identifier: MIT
/*
 * sched-misuse - spawn and sync used wrongly end the run with AGILE_E_SYNC,
 * never with success and a wrong result: a sync of another task than the
 * newest spawn, a task that returns with spawns unsynced (what it left is
 * still run), a sync with no spawn left, each on one worker and on two
 * (where thieves hold the frames), in and out of the spill stack, and from
 * a root function.  Correct programs on the same pools still succeed.
 */
#include <agile/agile.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>

#include "tap.h"

static _Atomic int64_t ran; /* tasks that ran, left-over ones included */

AGILE_TASK(int64_t, square, w, int64_t, x)
{
	(void)w;
	atomic_fetch_add(&ran, 1);
	return x * x;
}

AGILE_TASK(double, half, w, double, x)
{
	(void)w;
	atomic_fetch_add(&ran, 1);
	return x / 2;
}

/* Right: spawn half, spawn square, sync square, sync half. */
AGILE_TASK(int64_t, in_order, w, int64_t, x)
{
	int64_t s;
	double h;

	AGILE_SPAWN(w, half, (double)x);
	AGILE_SPAWN(w, square, x);
	s = AGILE_SYNC(w, square);
	h = AGILE_SYNC(w, half);
	return s + (int64_t)h;
}

/* Wrong: the syncs in spawn order, not reverse. */
AGILE_TASK(int64_t, out_of_order, w, int64_t, x)
{
	double h;
	int64_t s;

	AGILE_SPAWN(w, half, (double)x);
	AGILE_SPAWN(w, square, x);
	h = AGILE_SYNC(w, half);
	s = AGILE_SYNC(w, square);
	return s + (int64_t)h;
}

/* sum(n) = n + (n - 1) + ... + 1, every level a spawn. */
AGILE_TASK(int64_t, sum, w, int, n, int, forget_at)
{
	int64_t rest;

	atomic_fetch_add(&ran, 1);
	if (n == 0)
		return 0;
	AGILE_SPAWN(w, sum, n - 1, forget_at);
	if (n == forget_at)
		return n; /* wrong: returns with its spawn unsynced */
	rest = AGILE_SYNC(w, sum);
	return n + rest;
}

/* Syncs one more than it spawned at level @extra_at. */
AGILE_TASK(int64_t, sum_extra, w, int, n, int, extra_at)
{
	int64_t rest;

	if (n == 0)
		return 0;
	AGILE_SPAWN(w, sum_extra, n - 1, extra_at);
	rest = AGILE_SYNC(w, sum_extra);
	if (n == extra_at)
		rest += AGILE_SYNC(w, sum_extra); /* wrong: no spawn left */
	return n + rest;
}

static int pool(uint32_t workers, uint32_t max_frames, struct agile_sched **s)
{
	struct agile_sched_opts o;

	agile_sched_opts_init(&o);
	o.nr_workers = workers;
	o.max_frames = max_frames;
	o.flags = AGILE_SCHED_QUIET;
	return agile_sched_create(&o, s);
}

static void test_order(struct agile_sched *s, const char *on)
{
	int64_t r = -1;
	int err;

	err = AGILE_RUN(s, in_order, 10, &r);
	tap_ok(!err && r == 105, "%s: syncs in reverse order of spawns: %lld",
	       on, (long long)r);
	r = -1;
	err = AGILE_RUN(s, out_of_order, 10, &r);
	tap_ok(err == -AGILE_E_SYNC && r == -1,
	       "%s: a sync of the older spawn first fails the run (%s)", on,
	       agile_strerror(err));
}

static void test_missing(struct agile_sched *s, const char *on, int n)
{
	int64_t r = -1;
	int err;

	atomic_store(&ran, 0);
	err = AGILE_RUN(s, sum, n, -1, &r);
	tap_ok(!err && r == (int64_t)n * (n + 1) / 2,
	       "%s: sum(%d) with every spawn synced: %lld", on, n,
	       (long long)r);
	for (int at = 1; at <= n; at += n / 4 ? n / 4 : 1) {
		atomic_store(&ran, 0);
		r = -1;
		err = AGILE_RUN(s, sum, n, at, &r);
		tap_ok(err == -AGILE_E_SYNC && r == -1 &&
			       atomic_load(&ran) == n + 1,
		       "%s: sum(%d) with level %d returning before its sync "
		       "fails the run (%s); all %d tasks still ran (%lld)",
		       on, n, at, agile_strerror(err), n + 1,
		       (long long)atomic_load(&ran));
	}
}

static void test_extra(struct agile_sched *s, const char *on, int n)
{
	int64_t r = -1;
	int err;

	for (int at = 1; at <= n; at += n / 4 ? n / 4 : 1) {
		r = -1;
		err = AGILE_RUN(s, sum_extra, n, at, &r);
		tap_ok(err == -AGILE_E_SYNC && r == -1,
		       "%s: level %d of %d syncing with no spawn left fails "
		       "the run (%s)",
		       on, at, n, agile_strerror(err));
	}
	err = AGILE_RUN(s, sum_extra, n, -1, &r);
	tap_ok(!err && r == (int64_t)n * (n + 1) / 2,
	       "%s: and without the extra sync it succeeds", on);
}

/* A root function (outside any task body) that syncs once too often. */
static int root_extra(struct agile_worker *w, void *arg)
{
	int64_t *out = arg;

	AGILE_SPAWN(w, square, 7);
	*out = AGILE_SYNC(w, square);
	*out += AGILE_SYNC(w, square);
	return 0;
}

static int root_forgets(struct agile_worker *w, void *arg)
{
	(void)arg;
	AGILE_SPAWN(w, square, 3);
	AGILE_SPAWN(w, square, 4);
	return 0;
}

static void test_root(struct agile_sched *s, const char *on)
{
	int64_t r = 0;
	int err;

	err = agile_sched_run(s, root_extra, &r);
	tap_ok(err == -AGILE_E_SYNC && r == 49,
	       "%s: a root function's sync with no spawn left: %s", on,
	       agile_strerror(err));
	atomic_store(&ran, 0);
	err = agile_sched_run(s, root_forgets, NULL);
	tap_ok(err == -AGILE_E_SYNC && atomic_load(&ran) == 2,
	       "%s: a root function returning with 2 spawns unsynced: %s, "
	       "both ran",
	       on, agile_strerror(err));
}

int main(void)
{
	static const struct {
		uint32_t workers, max_frames;
		const char *name;
	} pools[] = {
		{ 1, 0, "1 worker" },
		{ 2, 0, "2 workers" },
		{ 1, 4, "1 worker, 4 frames (spill)" },
		{ 2, 4, "2 workers, 4 frames (spill)" },
	};

	for (size_t i = 0; i < sizeof(pools) / sizeof(pools[0]); i++) {
		struct agile_sched *s;

		if (!tap_ok_call(pool(pools[i].workers, pools[i].max_frames,
				      &s),
				 pools[i].name))
			continue;
		test_order(s, pools[i].name);
		/* Deep enough for thieves and for the spill stack. */
		for (int round = 0; round < 20; round++)
			test_missing(s, pools[i].name, 64);
		for (int round = 0; round < 20; round++)
			test_extra(s, pools[i].name, 64);
		test_root(s, pools[i].name);
		tap_ok_call(agile_sched_destroy(s), "destroy the pool");
	}
	return tap_done();
}
