// SPDX-License-Identifier: MIT
/*
 * sched-task-tree - the seed-002 worker loop: an application task type with a
 * cutoff predicate, an uneven 3-way split and a leaf.  Every leaf goes
 * through the offload hook exactly once (counted per worker, as an EU layer
 * would see it); the default hook runs leaves on the CPU; errors from a
 * leaf, a split or the hook come back from the run.
 */
#include <agile/sched.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "tap.h"

#define N 100000

struct range {
	int64_t lo, hi;
	uint32_t depth, pad;
};

struct tree_arg {
	int64_t cutoff;
	int64_t fail_at; /* a leaf containing it fails; -1: none */
	int split_ret; /* 0: split normally, else return this */
	_Atomic uint32_t *visits;
	_Atomic int64_t max_depth;
};

static bool range_cutoff(const void *task, void *arg)
{
	const struct range *r = task;
	struct tree_arg *a = arg;

	return r->hi - r->lo <= a->cutoff;
}

/* Three uneven children: a quarter, a half, a quarter. */
static int range_split(const void *task, void *children, void *arg)
{
	const struct range *r = task;
	struct range *c = children;
	struct tree_arg *a = arg;
	int64_t n = r->hi - r->lo, q = r->lo + n / 4, h = q + n / 2;

	if (a->split_ret)
		return a->split_ret;
	c[0] = (struct range){ r->lo, q, r->depth + 1, 0 };
	c[1] = (struct range){ q, h, r->depth + 1, 0 };
	c[2] = (struct range){ h, r->hi, r->depth + 1, 0 };
	return 3;
}

static int range_leaf(void *task, void *arg)
{
	struct range *r = task;
	struct tree_arg *a = arg;
	int64_t d = r->depth;

	for (int64_t i = r->lo; i < r->hi; i++)
		atomic_fetch_add_explicit(&a->visits[i], 1,
					  memory_order_relaxed);
	for (int64_t m = atomic_load(&a->max_depth); d > m;)
		if (atomic_compare_exchange_weak(&a->max_depth, &m, d))
			break;
	return r->lo <= a->fail_at && a->fail_at < r->hi ? -EIO : 0;
}

static const struct agile_task_ops range_ops = {
	.task_size = sizeof(struct range),
	.cutoff = range_cutoff,
	.split = range_split,
	.leaf = range_leaf,
};

static _Atomic uint64_t hook_calls[64];
static _Atomic int hook_fail;

/* Stands in for an EU layer: find the worker's portion, run the leaf. */
static int counting_hook(struct agile_worker *w,
			 const struct agile_task_ops *ops, void *task,
			 void *arg, void *hook_arg)
{
	int idx = agile_sched_worker_index(w);

	if (hook_arg != (void *)&hook_calls || idx < 0 || idx >= 64)
		return -EPROTO;
	atomic_fetch_add(&hook_calls[idx], 1);
	if (atomic_load(&hook_fail))
		return atomic_load(&hook_fail);
	return ops->leaf(task, arg);
}

static _Atomic uint32_t visits[N];

static int visited_once(void)
{
	int once = 0;

	for (int i = 0; i < N; i++)
		once += atomic_exchange(&visits[i], 0) == 1;
	return once;
}

static uint64_t hook_total(void)
{
	uint64_t sum = 0;

	for (int i = 0; i < 64; i++)
		sum += atomic_exchange(&hook_calls[i], 0);
	return sum;
}

int main(void)
{
	struct tree_arg arg = { .cutoff = 100,
				.fail_at = -1,
				.visits = visits };
	struct range root = { 0, N, 0, 0 };
	struct agile_sched_opts opts;
	struct agile_sched_stats a, b;
	struct agile_sched *s;
	struct agile_task_ops bad_ops;
	int err;

	err = agile_sched_create(NULL, &s);
	if (!tap_ok_call(err, "create, default (CPU) offload"))
		return tap_done();
	agile_sched_stats(s, &a);
	err = agile_sched_run_task(s, &range_ops, &root, &arg);
	agile_sched_stats(s, &b);
	tap_ok(err == 0 && visited_once() == N, "every element in one leaf");
	tap_ok(b.offloads > a.offloads, "%llu leaves offloaded to the CPU",
	       (unsigned long long)(b.offloads - a.offloads));
	tap_ok(atomic_load(&arg.max_depth) > 5, "split %lld levels deep",
	       (long long)atomic_load(&arg.max_depth));

	arg.fail_at = 77777;
	err = agile_sched_run_task(s, &range_ops, &root, &arg);
	tap_ok(err == -EIO, "a failing leaf: -EIO");
	arg.fail_at = -1;
	visited_once();
	arg.split_ret = -ENOMEM;
	tap_ok(agile_sched_run_task(s, &range_ops, &root, &arg) == -ENOMEM,
	       "a failing split: -ENOMEM");
	arg.split_ret = 1;
	tap_ok(agile_sched_run_task(s, &range_ops, &root, &arg) == -EINVAL,
	       "a split into one child: -EINVAL");
	arg.split_ret = AGILE_TASK_SPLIT_MAX + 1;
	tap_ok(agile_sched_run_task(s, &range_ops, &root, &arg) == -EINVAL,
	       "a split into too many children: -EINVAL");
	arg.split_ret = 0;
	bad_ops = range_ops;
	bad_ops.task_size = AGILE_TASK_MAX_SIZE + 1;
	tap_ok(agile_sched_run_task(s, &bad_ops, &root, &arg) == -EINVAL,
	       "task bigger than AGILE_TASK_MAX_SIZE: -EINVAL");
	bad_ops = range_ops;
	bad_ops.leaf = NULL;
	tap_ok(agile_sched_run_task(s, &bad_ops, &root, &arg) == -EINVAL,
	       "no leaf callback: -EINVAL");
	tap_ok_call(agile_sched_destroy(s), "destroy");

	agile_sched_opts_init(&opts);
	opts.nr_workers = 3;
	opts.offload = counting_hook;
	opts.offload_arg = (void *)&hook_calls;
	err = agile_sched_create(&opts, &s);
	if (!tap_ok_call(err, "create with an offload hook"))
		return tap_done();
	agile_sched_stats(s, &a);
	err = agile_sched_run_task(s, &range_ops, &root, &arg);
	agile_sched_stats(s, &b);
	tap_ok(err == 0 && visited_once() == N,
	       "hooked leaves cover the range");
	tap_ok(hook_total() == b.offloads - a.offloads,
	       "the hook saw every offload (%llu)",
	       (unsigned long long)(b.offloads - a.offloads));
	atomic_store(&hook_fail, -EHOSTDOWN);
	tap_ok(agile_sched_run_task(s, &range_ops, &root, &arg) == -EHOSTDOWN,
	       "the hook's error: -EHOSTDOWN");
	tap_ok_call(agile_sched_destroy(s), "destroy");
	return tap_done();
}
