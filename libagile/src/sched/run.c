// SPDX-License-Identifier: MIT
/*
 * run.c - fork/join tasks the library itself is made of
 * (agile_sched_run, agile_sched_parallel_for) and seed 002's task tree
 * (agile_sched_run_task: cutoff, split, offload).
 */
#define _GNU_SOURCE
#include <agile/sched.h>

#include <assert.h>
#include <errno.h>
#ifndef AGILE_NO_HWLOC
#include <hwloc.h>
#include <hwloc/glibc-sched.h>
#endif
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sched/sched_impl.h"
#include "sys.h"

/* ---- fork/join tasks the library itself is made of ---- */

struct root_call {
	int (*fn)(struct agile_worker *w, void *arg);
	void *arg;
};

AGILE_TASK(int, root_task, w, struct root_call, call)
{
	int err = call.fn(w, call.arg);

	if (err < 0)
		agile_sched_fail(w, err);
	return err;
}

int agile_sched_run(struct agile_sched *s,
		    int (*fn)(struct agile_worker *w, void *arg), void *arg)
{
	struct root_call call = { .fn = fn, .arg = arg };

	if (!s || !fn)
		return -EINVAL;
	return AGILE_RUN(s, root_task, call, NULL);
}

/*
 * A parallel loop: what its tasks share.  @error is the loop's first
 * error; @fail_run: whether an error also fails the run (the pool's forms,
 * where the loop is the run, do; the worker's forms hand it back to the
 * caller, whose run goes on).
 */
struct loop_ctx {
	int (*body)(int64_t lo, int64_t hi, void *arg);
	int (*reduce_body)(int64_t lo, int64_t hi, void *acc, void *arg);
	void (*combine)(void *acc, const void *other, void *arg);
	const void *identity;
	size_t size;
	void *arg;
	int64_t grain;
	_Atomic int error;
	bool fail_run;
};

/* Should a loop task still start bodies? */
static bool loop_going(struct agile_worker *w, struct loop_ctx *c)
{
	return !atomic_load_explicit(&c->error, memory_order_relaxed) &&
	       (!c->fail_run || !agile_sched_failed(w));
}

/* Record a body's error: the loop's first, and the run's if it is ours. */
static int loop_fail(struct agile_worker *w, struct loop_ctx *c, int err)
{
	int none = 0;

	atomic_compare_exchange_strong(&c->error, &none, err);
	if (c->fail_run)
		agile_sched_fail(w, err);
	return err;
}

/* Split off right halves (biggest first, for thieves), run the leaf, sync. */
AGILE_TASK(int, pfor_task, w, struct loop_ctx *, c, int64_t, lo, int64_t, hi)
{
	int nr = 0, err = 0;

	while (hi - lo > c->grain) {
		int64_t mid = lo + (hi - lo) / 2;

		AGILE_SPAWN(w, pfor_task, c, mid, hi);
		hi = mid;
		nr++;
	}
	if (loop_going(w, c)) {
		err = c->body(lo, hi, c->arg);
		err = err < 0 ? loop_fail(w, c, err) : 0;
	}
	while (nr--) {
		int e = AGILE_SYNC(w, pfor_task);

		if (!err)
			err = e;
	}
	return err;
}

/*
 * The reduction of [lo, hi) into @out: halves, the left one here and the
 * right one spawned, combined left with right (so the association is the
 * same in every run, whoever steals what).  A leaf starts from the
 * identity.
 */
AGILE_TASK(int, reduce_task, w, struct loop_ctx *, c, int64_t, lo, int64_t, hi,
	   void *, out)
{
	int err, e;

	if (hi - lo <= c->grain) {
		memcpy(out, c->identity, c->size);
		if (!loop_going(w, c))
			return 0;
		err = c->reduce_body(lo, hi, out, c->arg);
		return err < 0 ? loop_fail(w, c, err) : 0;
	}
	{
		int64_t mid = lo + (hi - lo) / 2;
		_Alignas(16) unsigned char right[c->size];

		AGILE_SPAWN(w, reduce_task, c, mid, hi, right);
		err = AGILE_CALL(w, reduce_task, c, lo, mid, out);
		e = AGILE_SYNC(w, reduce_task);
		if (!err)
			err = e;
		if (!err && loop_going(w, c))
			c->combine(out, right, c->arg);
	}
	return err;
}

/*
 * Check a loop's range and pick its grain: 0 and the number of
 * iterations in *@n, or -EINVAL.  @nr_workers: for the default grain.
 */
static int loop_range(int64_t begin, int64_t end, int64_t *grain,
		      uint32_t nr_workers, int64_t *n)
{
	if (*grain < 0 || end < begin || __builtin_sub_overflow(end, begin, n))
		return -EINVAL;
	if (!*grain) {
		*grain = *n / ((int64_t)nr_workers * PFOR_LEAVES_PER_WORKER);
		if (*grain < 1)
			*grain = 1;
	}
	return 0;
}

static uint32_t workers_of(struct agile_worker *w)
{
	return to_worker(w)->sched->nr_workers;
}

int agile_sched_parallel_for(struct agile_sched *s, int64_t begin, int64_t end,
			     int64_t grain,
			     int (*body)(int64_t lo, int64_t hi, void *arg),
			     void *arg)
{
	struct loop_ctx ctx = { .body = body, .arg = arg, .fail_run = true };
	int64_t n;

	if (!s || !body || loop_range(begin, end, &grain, s->nr_workers, &n))
		return -EINVAL;
	if (!n)
		return 0;
	ctx.grain = grain;
	return AGILE_RUN(s, pfor_task, &ctx, begin, end, NULL);
}

int agile_sched_parallel_for_w(struct agile_worker *w, int64_t begin,
			       int64_t end, int64_t grain,
			       int (*body)(int64_t lo, int64_t hi, void *arg),
			       void *arg)
{
	struct loop_ctx ctx = { .body = body, .arg = arg };
	int64_t n;

	if (!w || !body || loop_range(begin, end, &grain, workers_of(w), &n))
		return -EINVAL;
	if (!n)
		return 0;
	ctx.grain = grain;
	AGILE_CALL(w, pfor_task, &ctx, begin, end);
	return atomic_load_explicit(&ctx.error, memory_order_relaxed);
}

/* The arguments both reduce forms check; fills @c. */
static int reduce_args(struct loop_ctx *c, size_t size, const void *identity,
		       int (*body)(int64_t lo, int64_t hi, void *acc,
				   void *arg),
		       void (*combine)(void *acc, const void *other, void *arg),
		       void *arg, void *result)
{
	if (!size || size > AGILE_REDUCE_MAX_SIZE || !identity || !body ||
	    !combine || !result)
		return -EINVAL;
	c->size = size;
	c->identity = identity;
	c->reduce_body = body;
	c->combine = combine;
	c->arg = arg;
	return 0;
}

/*
 * Both reduce forms: from pool @s (a run of its own, whose error the
 * loop's is) or from worker @w (within the caller's run).
 */
static int
parallel_reduce(struct agile_sched *s, struct agile_worker *w, int64_t begin,
		int64_t end, int64_t grain, size_t size, const void *identity,
		int (*body)(int64_t lo, int64_t hi, void *acc, void *arg),
		void (*combine)(void *acc, const void *other, void *arg),
		void *arg, void *result)
{
	struct loop_ctx ctx = { .fail_run = !w };
	int64_t n;
	int err;

	if ((!s && !w) || loop_range(begin, end, &grain,
				     s ? s->nr_workers : workers_of(w), &n))
		return -EINVAL;
	err = reduce_args(&ctx, size, identity, body, combine, arg, result);
	if (err)
		return err;
	ctx.grain = grain;
	if (!n) {
		memcpy(result, identity, size);
		return 0;
	}
	if (s)
		return AGILE_RUN(s, reduce_task, &ctx, begin, end, result,
				 NULL);
	AGILE_CALL(w, reduce_task, &ctx, begin, end, result);
	return atomic_load_explicit(&ctx.error, memory_order_relaxed);
}

int agile_sched_parallel_reduce(
	struct agile_sched *s, int64_t begin, int64_t end, int64_t grain,
	size_t size, const void *identity,
	int (*body)(int64_t lo, int64_t hi, void *acc, void *arg),
	void (*combine)(void *acc, const void *other, void *arg), void *arg,
	void *result)
{
	if (!s)
		return -EINVAL;
	return parallel_reduce(s, NULL, begin, end, grain, size, identity, body,
			       combine, arg, result);
}

int agile_sched_parallel_reduce_w(
	struct agile_worker *w, int64_t begin, int64_t end, int64_t grain,
	size_t size, const void *identity,
	int (*body)(int64_t lo, int64_t hi, void *acc, void *arg),
	void (*combine)(void *acc, const void *other, void *arg), void *arg,
	void *result)
{
	if (!w)
		return -EINVAL;
	return parallel_reduce(NULL, w, begin, end, grain, size, identity, body,
			       combine, arg, result);
}

/* ---- seed 002: cutoff, split, offload ---- */

struct tree_node {
	const struct agile_task_ops *ops;
	void *arg;
	_Alignas(16) unsigned char task[AGILE_TASK_MAX_SIZE];
};

static int tree_process(struct agile_worker *w,
			const struct agile_task_ops *ops, void *arg,
			void *task);

AGILE_TASK(int, tree_task, w, struct tree_node, node)
{
	return tree_process(w, node.ops, node.arg, node.task);
}

/* Step 528: the leaf goes to the offload hook, by default the CPU. */
static int offload_leaf(struct agile_worker *aw,
			const struct agile_task_ops *ops, void *arg, void *task)
{
	struct worker *w = to_worker(aw);
	struct agile_sched *s = w->sched;
	int err;

	agile__count(&w->nr_offloads);
	if (s->offload)
		err = s->offload(aw, ops, task, arg, s->offload_arg);
	else
		err = ops->leaf(task, arg);
	if (err < 0) {
		agile_sched_fail(aw, err);
		return err;
	}
	return 0;
}

static int tree_fail(struct agile_worker *w, int err)
{
	agile_sched_fail(w, err);
	return err;
}

/* Process 500b for one task: cutoff (524), split and push (526), or leaf. */
static int tree_process(struct agile_worker *w,
			const struct agile_task_ops *ops, void *arg, void *task)
{
	_Alignas(16) unsigned char
		children[AGILE_TASK_SPLIT_MAX * AGILE_TASK_MAX_SIZE];
	struct tree_node node = { .ops = ops, .arg = arg };
	int nr, i, err;

	if (agile_sched_failed(w))
		return 0;
	if (ops->cutoff(task, arg))
		return offload_leaf(w, ops, arg, task);
	nr = ops->split(task, children, arg);
	if (nr < 0)
		return tree_fail(w, nr);
	if (nr < 2 || nr > AGILE_TASK_SPLIT_MAX)
		return tree_fail(w, -EINVAL);
	for (i = 1; i < nr; i++) {
		memcpy(node.task, children + (size_t)i * ops->task_size,
		       ops->task_size);
		AGILE_SPAWN(w, tree_task, node);
	}
	err = tree_process(w, ops, arg, children);
	for (i = 1; i < nr; i++) {
		int e = AGILE_SYNC(w, tree_task);

		if (!err)
			err = e;
	}
	return err;
}

int agile_sched_run_task(struct agile_sched *s,
			 const struct agile_task_ops *ops, const void *task,
			 void *arg)
{
	struct tree_node root = { .ops = ops, .arg = arg };

	if (!s || !ops || !task || !ops->cutoff || !ops->split || !ops->leaf ||
	    !ops->task_size || ops->task_size > AGILE_TASK_MAX_SIZE)
		return -EINVAL;
	memcpy(root.task, task, ops->task_size);
	return AGILE_RUN(s, tree_task, root, NULL);
}
