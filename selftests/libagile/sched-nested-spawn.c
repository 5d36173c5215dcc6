// SPDX-License-Identifier: MIT
/*
 * sched-nested-spawn - spawns inside spawned tasks: wide fan-out (many spawns
 * before the syncs), void tasks, a deep chain, parallel_for and
 * agile_sched_run called from inside tasks (nested runs), and a tree where
 * each node's result depends on all its children.
 */
#include <agile/sched.h>
#include <errno.h>
#include <stdint.h>

#include "tap.h"

struct fan {
	int depth, width;
};

/* Number of nodes in a tree of @depth levels below, @width children each. */
AGILE_TASK(int64_t, count_nodes, w, struct fan, f)
{
	struct fan child = { f.depth - 1, f.width };
	int64_t nodes = 1;

	if (f.depth == 0)
		return 1;
	for (int i = 0; i < f.width; i++)
		AGILE_SPAWN(w, count_nodes, child);
	for (int i = 0; i < f.width; i++)
		nodes += AGILE_SYNC(w, count_nodes);
	return nodes;
}

static _Atomic int64_t void_hits;

AGILE_VOID_TASK(touch, w, int, depth)
{
	atomic_fetch_add_explicit(&void_hits, 1, memory_order_relaxed);
	if (depth == 0)
		return;
	AGILE_SPAWN(w, touch, depth - 1);
	AGILE_SPAWN(w, touch, depth - 1);
	AGILE_CALL(w, touch, depth - 1);
	AGILE_SYNC(w, touch);
	AGILE_SYNC(w, touch);
}

/* A chain: each level spawns the next and syncs it. */
AGILE_TASK(int, chain, w, int, n)
{
	if (n == 0)
		return 0;
	AGILE_SPAWN(w, chain, n - 1);
	return AGILE_SYNC(w, chain) + 1;
}

static _Atomic int64_t inner_sum;

static int inner_body(int64_t lo, int64_t hi, void *arg)
{
	(void)arg;
	for (int64_t i = lo; i < hi; i++)
		atomic_fetch_add_explicit(&inner_sum, i, memory_order_relaxed);
	return 0;
}

static int outer_body(int64_t lo, int64_t hi, void *arg)
{
	struct agile_sched *s = arg;

	for (int64_t i = lo; i < hi; i++) {
		int err = agile_sched_parallel_for(s, 0, 1000, 10, inner_body,
						   NULL);

		if (err)
			return err;
	}
	return 0;
}

static int nested_run_root(struct agile_worker *w, void *arg)
{
	struct agile_sched *s = arg;
	struct fan f = { 4, 5 };
	int64_t nodes = 0;
	int err;

	if (agile_sched_worker_self() != w)
		return -EPROTO;
	/* Spawn outside work first, so the nested run sits on a busy stack. */
	AGILE_SPAWN(w, count_nodes, f);
	err = AGILE_RUN(s, count_nodes, f, &nodes);
	if (!err && nodes != 781)
		err = -EPROTO;
	if (AGILE_SYNC(w, count_nodes) != 781)
		err = -EPROTO;
	return err;
}

int main(void)
{
	struct agile_sched *s;
	struct fan f = { 6, 6 };
	int64_t nodes = 0;
	int r = 0, err;

	err = agile_sched_create(NULL, &s);
	if (!tap_ok_call(err, "create"))
		return tap_done();

	err = AGILE_RUN(s, count_nodes, f, &nodes);
	tap_ok(err == 0 && nodes == 55987, "6 levels x 6 children: %lld nodes",
	       (long long)nodes);
	f.depth = 1;
	f.width = 5000;
	err = AGILE_RUN(s, count_nodes, f, &nodes);
	tap_ok(err == 0 && nodes == 5001, "5000 spawns before the first sync");

	err = AGILE_RUN(s, touch, 14, NULL);
	tap_ok(err == 0 && atomic_load(&void_hits) == (14348907 - 1) / 2,
	       "void tasks, 3-way: %lld calls",
	       (long long)atomic_load(&void_hits));

	err = AGILE_RUN(s, chain, 20000, &r);
	tap_ok(err == 0 && r == 20000, "a chain 20000 spawns deep");

	err = agile_sched_parallel_for(s, 0, 100, 1, outer_body, s);
	tap_ok(err == 0 && atomic_load(&inner_sum) == 100 * 499500LL,
	       "parallel_for nested in parallel_for");

	err = agile_sched_run(s, nested_run_root, s);
	tap_ok_call(err, "AGILE_RUN nested in a task with spawns outstanding");

	tap_ok_call(agile_sched_destroy(s), "destroy");
	return tap_done();
}
