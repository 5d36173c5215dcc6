// SPDX-License-Identifier: MIT
/*
 * forall.c - agile_forall: a kernel call per segment on the node that
 * owns it (owner computes), or, in balance mode, per memory block from
 * per-node queues that idle nodes steal from.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "segmap/segmap_impl.h"

struct forall_task {
	uint32_t seg;
	uint32_t node; /* the owner */
	struct agile_grid grid; /* in the iterated field's coordinates */
};

/*
 * One node's memory-block tasks, [head, tail): the node takes from the
 * head, thieves from the tail.  A mutex per queue: a task is a kernel
 * call over a whole memory block, so the queue is never the bottleneck.
 */
struct node_queue {
	pthread_mutex_t lock;
	uint32_t head, tail;
	struct forall_task *task;
};

struct forall_run {
	struct agile_segmap *sm;
	agile_kernel_fn kernel;
	void *arg;
	const struct agile_forall_field *fields;
	uint32_t nr_fields;
	struct forall_task *tasks;
	uint32_t nr_tasks;
	struct node_queue *queues; /* balance mode: one per node */
	uint32_t *local; /* balance mode: the nodes this process runs */
	uint32_t nr_local;
	_Atomic int err;
	_Atomic uint64_t calls;
	_Atomic uint64_t steals;
};

static void record(struct forall_run *run, int err)
{
	int none = 0;

	if (err)
		atomic_compare_exchange_strong_explicit(&run->err, &none, err,
							memory_order_relaxed,
							memory_order_relaxed);
}

static int run_task(struct forall_run *run, const struct forall_task *t,
		    uint32_t node, bool thief)
{
	struct agile_acc acc[SEGMAP_FORALL_MAX_FIELDS];
	struct agile_forall_ctx ctx;
	int err;

	for (uint32_t k = 0; k < run->nr_fields; k++) {
		struct agile_field *f = run->fields[k].field;

		memset(&acc[k], 0, sizeof(acc[k]));
		acc[k].field = f;
		acc[k].node = node;
		acc[k].mode = run->fields[k].mode;
		acc[k].rank = f->grid.extent.rank;
		acc[k].elem_size = f->st->elem_size;
		acc[k].thief = thief;
		acc[k].block = UINT64_MAX;
	}
	ctx.node = node;
	ctx.segment = t->seg;
	ctx.grid = t->grid;
	ctx.acc = acc;
	ctx.nr_acc = run->nr_fields;
	ctx.worker = agile_sched_worker_self();
	err = run->kernel(&ctx, run->arg);
	for (uint32_t k = 0; k < run->nr_fields && !err; k++)
		err = acc[k].err;
	atomic_fetch_add_explicit(&run->calls, 1, memory_order_relaxed);
	if (thief)
		atomic_fetch_add_explicit(&run->steals, 1,
					  memory_order_relaxed);
	record(run, err);
	return err;
}

static int segments_body(int64_t lo, int64_t hi, void *arg)
{
	struct forall_run *run = arg;

	for (int64_t i = lo; i < hi; i++) {
		const struct forall_task *t = &run->tasks[i];
		int err = run_task(run, t, t->node, false);

		if (err)
			return err;
	}
	return 0;
}

static bool pop_own(struct node_queue *q, struct forall_task *t)
{
	bool got = false;

	pthread_mutex_lock(&q->lock);
	if (q->head < q->tail) {
		*t = q->task[q->head++];
		got = true;
	}
	pthread_mutex_unlock(&q->lock);
	return got;
}

static bool steal(struct node_queue *q, struct forall_task *t)
{
	bool got = false;

	pthread_mutex_lock(&q->lock);
	if (q->head < q->tail) {
		*t = q->task[--q->tail];
		got = true;
	}
	pthread_mutex_unlock(&q->lock);
	return got;
}

/* Node @node: its own queue from the head, then the others' tails. */
static int node_loop(struct forall_run *run, uint32_t node, bool may_steal)
{
	struct forall_task t;
	bool found;

	while (pop_own(&run->queues[node], &t))
		if (run_task(run, &t, node, false))
			return atomic_load(&run->err);
	if (!may_steal)
		return 0;
	do {
		found = false;
		for (uint32_t k = 0; k < run->nr_local; k++) {
			uint32_t victim = run->local[k];

			if (victim == node)
				continue;
			while (steal(&run->queues[victim], &t)) {
				found = true;
				if (run_task(run, &t, node, true))
					return atomic_load(&run->err);
			}
		}
	} while (found);
	return 0;
}

static int nodes_body(int64_t lo, int64_t hi, void *arg)
{
	struct forall_run *run = arg;

	for (int64_t i = lo; i < hi; i++) {
		int err = node_loop(run, run->local[i], true);

		if (err)
			return err;
	}
	return 0;
}

static int add_task(struct forall_task **tasks, uint32_t *nr, uint32_t *cap,
		    const struct forall_task *t)
{
	if (*nr == *cap) {
		uint32_t ncap = *cap ? 2 * *cap : 64;
		struct forall_task *n = realloc(*tasks, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		*tasks = n;
		*cap = ncap;
	}
	(*tasks)[(*nr)++] = *t;
	return 0;
}

/* The tasks this process runs: segments, or memory blocks (balance). */
static int make_tasks(struct forall_run *run, struct agile_field *iter,
		      bool balance)
{
	const struct segmap_store *st = iter->st;
	struct segmap_scope *sc = run->sm->scope;
	uint32_t cap = 0;
	uint64_t n = balance ? st->nr_blocks : st->rm->nr_segments;

	for (uint64_t k = 0; k < n; k++) {
		const struct agile_grid *box = balance ? &st->blocks[k].grid :
							 &st->rm->seg[k];
		struct forall_task t;

		t.seg = balance ? st->blocks[k].seg : (uint32_t)k;
		t.node = st->rm->node[t.seg];
		if (!segmap_scope_local(sc, t.node))
			continue;
		if (!segmap_box_to_view(iter, box, &t.grid))
			continue;
		if (add_task(&run->tasks, &run->nr_tasks, &cap, &t))
			return -ENOMEM;
	}
	return 0;
}

static int make_queues(struct forall_run *run)
{
	uint32_t nr_nodes = run->sm->scope->nr_nodes;
	uint32_t *count = calloc(nr_nodes, sizeof(*count));
	int err = 0;

	run->queues = calloc(nr_nodes, sizeof(*run->queues));
	run->local = calloc(nr_nodes, sizeof(*run->local));
	if (!count || !run->queues || !run->local) {
		free(count);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < run->nr_tasks; i++)
		count[run->tasks[i].node]++;
	for (uint32_t q = 0; q < nr_nodes; q++) {
		pthread_mutex_init(&run->queues[q].lock, NULL);
		if (segmap_scope_local(run->sm->scope, q))
			run->local[run->nr_local++] = q;
		run->queues[q].task = calloc(count[q] ? count[q] : 1,
					     sizeof(struct forall_task));
		if (!run->queues[q].task)
			err = -ENOMEM;
	}
	for (uint32_t i = 0; i < run->nr_tasks && !err; i++) {
		struct node_queue *q = &run->queues[run->tasks[i].node];

		q->task[q->tail++] = run->tasks[i];
	}
	free(count);
	return err;
}

static void free_queues(struct forall_run *run)
{
	if (run->queues)
		for (uint32_t q = 0; q < run->sm->scope->nr_nodes; q++) {
			pthread_mutex_destroy(&run->queues[q].lock);
			free(run->queues[q].task);
		}
	free(run->queues);
	free(run->local);
}

static int check_args(struct agile_segmap *sm, struct agile_field *iter,
		      agile_kernel_fn kernel,
		      const struct agile_forall_field *fields,
		      uint32_t nr_fields, uint32_t flags)
{
	if (!sm || !iter || !kernel || (nr_fields && !fields))
		return segmap_fail(-EINVAL, "forall: NULL argument");
	if (nr_fields > SEGMAP_FORALL_MAX_FIELDS)
		return segmap_fail(-EINVAL, "forall: %u fields, at most %u",
				   nr_fields, SEGMAP_FORALL_MAX_FIELDS);
	if (flags & ~AGILE_FORALL_FLAGS_ALL)
		return segmap_fail(-EINVAL, "forall: flags %#x", flags);
	if (iter->st->sm != sm)
		return segmap_fail(
			-EINVAL,
			"forall: the iterated field is on another segment map");
	for (uint32_t k = 0; k < nr_fields; k++) {
		if (!fields[k].field || fields[k].field->st->sm != sm)
			return segmap_fail(
				-EINVAL,
				"forall: field %u is NULL or on another segment map",
				k);
		if (!fields[k].mode || (fields[k].mode & ~AGILE_ACC_RW))
			return segmap_fail(-EINVAL,
					   "forall: field %u: mode %#x", k,
					   fields[k].mode);
	}
	return 0;
}

/* Balance mode needs every node's home addressable here. */
static bool shared_memory(const struct segmap_store *st)
{
	const struct segmap_scope *sc = st->sm->scope;

	for (uint32_t q = 0; q < sc->nr_nodes; q++)
		if (!sc->ops->home_addr(st->home, q))
			return false;
	return true;
}

int agile_forall(struct agile_segmap *sm, struct agile_field *iter,
		 agile_kernel_fn kernel, void *arg,
		 const struct agile_forall_field *fields, uint32_t nr_fields,
		 uint32_t flags, struct agile_forall_stats *stats)
{
	bool balance = flags & AGILE_FORALL_BALANCE;
	struct forall_run run;
	struct segmap_scope *sc;
	int err, berr;

	segmap_why_clear();
	err = check_args(sm, iter, kernel, fields, nr_fields, flags);
	if (err)
		return err;
	sc = sm->scope;
	if (balance && !shared_memory(iter->st))
		return segmap_fail(
			-EOPNOTSUPP,
			"forall: balance mode needs a shared-memory scope (threads, procs)");
	memset(&run, 0, sizeof(run));
	run.sm = sm;
	run.kernel = kernel;
	run.arg = arg;
	run.fields = fields;
	run.nr_fields = nr_fields;
	atomic_init(&run.err, 0);
	atomic_init(&run.calls, 0);
	atomic_init(&run.steals, 0);
	err = make_tasks(&run, iter, balance);
	if (!err && balance)
		err = make_queues(&run);
	/* every process takes part in the barrier, even one that failed */
	if (!err && run.nr_tasks) {
		if (balance && sm->pool) {
			err = agile_sched_parallel_for(
				sm->pool, 0, run.nr_local, 1, nodes_body, &run);
		} else if (balance) {
			/* one thread: nothing to balance against */
			for (uint32_t i = 0; i < run.nr_local && !err; i++)
				err = node_loop(&run, run.local[i], false);
		} else if (sm->pool) {
			err = agile_sched_parallel_for(sm->pool, 0,
						       run.nr_tasks, 1,
						       segments_body, &run);
		} else {
			err = segments_body(0, run.nr_tasks, &run);
		}
		if (!err)
			err = atomic_load(&run.err);
	}
	free_queues(&run);
	free(run.tasks);
	berr = sc->ops->barrier(sc);
	if (!err)
		err = berr;
	err = sc->ops->agree(sc, err);
	/* the next forall reads what this one wrote */
	for (uint32_t k = 0; k < nr_fields; k++)
		if (fields[k].mode & AGILE_ACC_WRITE)
			segmap_store_drop_copies(fields[k].field->st);
	if (stats) {
		stats->calls = atomic_load(&run.calls);
		stats->steals = atomic_load(&run.steals);
	}
	return err;
}
