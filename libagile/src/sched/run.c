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

struct pfor_ctx {
	int (*body)(int64_t lo, int64_t hi, void *arg);
	void *arg;
	int64_t grain;
};

struct pfor_range {
	const struct pfor_ctx *ctx;
	int64_t lo, hi;
};

/* Split off right halves (biggest first, for thieves), run the leaf, sync. */
AGILE_TASK(int, pfor_task, w, struct pfor_range, r)
{
	int nr = 0, err = 0;

	while (r.hi - r.lo > r.ctx->grain) {
		int64_t mid = r.lo + (r.hi - r.lo) / 2;
		struct pfor_range right = { r.ctx, mid, r.hi };

		AGILE_SPAWN(w, pfor_task, right);
		r.hi = mid;
		nr++;
	}
	if (!agile_sched_failed(w)) {
		err = r.ctx->body(r.lo, r.hi, r.ctx->arg);
		if (err < 0)
			agile_sched_fail(w, err);
		else
			err = 0;
	}
	while (nr--) {
		int e = AGILE_SYNC(w, pfor_task);

		if (!err)
			err = e;
	}
	return err;
}

int agile_sched_parallel_for(struct agile_sched *s, int64_t begin, int64_t end,
			     int64_t grain,
			     int (*body)(int64_t lo, int64_t hi, void *arg),
			     void *arg)
{
	struct pfor_ctx ctx = { .body = body, .arg = arg, .grain = grain };
	struct pfor_range range = { .ctx = &ctx, .lo = begin, .hi = end };
	int64_t n;

	if (!s || !body || grain < 0 || end < begin ||
	    __builtin_sub_overflow(end, begin, &n))
		return -EINVAL;
	if (!n)
		return 0;
	if (!grain) {
		grain = n / ((int64_t)s->nr_workers * PFOR_LEAVES_PER_WORKER);
		ctx.grain = grain > 0 ? grain : 1;
	}
	return AGILE_RUN(s, pfor_task, range, NULL);
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
