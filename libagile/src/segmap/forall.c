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
 * Balance mode: node q's memory-block tasks are tasks[first[q] ..
 * first[q] + count[q]), the same list in every process (computed from the
 * map alone).  Its queue state is one 64-bit word: the tasks taken from
 * the head (low half, the owner's end) and from the tail (high half, the
 * thieves' end); the queue is empty when they add up to count[q].  Either
 * end takes a task with one CAS, so any number of runners at either end,
 * in any process, share it without a lock, and a runner that dies holds
 * nothing up.  Zero is a full queue: a word is zeroed between forall's
 * barrier (nobody touches it any more) and its agreement (nobody touches
 * it before the next forall).
 *
 * Where the words live: in this process (threads scope, a line each), or,
 * in the procs scope, in the map's shared area (struct agile_segmap
 * @queues: a home of one line per node, made by the first balanced
 * forall), node q's word at the start of q's home.
 */
#define QUEUE_LINE 64
#define TAKEN_TAIL (1ull << 32)

struct forall_run {
	struct agile_segmap *sm;
	agile_kernel_fn kernel;
	void *arg;
	const struct agile_forall_field *fields;
	uint32_t nr_fields;
	struct forall_task *tasks;
	uint32_t nr_tasks;
	/* balance mode */
	uint32_t *first; /* [nr_nodes] */
	uint32_t *count; /* [nr_nodes] */
	_Atomic uint64_t **word; /* [nr_nodes] */
	void *words; /* this process's words, where they live here */
	uint32_t *local; /* the nodes this process runs */
	uint32_t nr_local;
	uint32_t nr_runners;
	bool may_steal;
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

/*
 * Take a task of node @q's queue: from the head (@thief false) or the
 * tail.  false when it is empty.
 */
static bool take(struct forall_run *run, uint32_t q, bool thief,
		 const struct forall_task **t)
{
	_Atomic uint64_t *w = run->word[q];
	uint64_t n = run->count[q];
	uint64_t v = atomic_load_explicit(w, memory_order_acquire);
	uint64_t head, tail;

	do {
		head = v & 0xffffffffu;
		tail = v >> 32;
		if (head + tail >= n)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(
		w, &v, v + (thief ? TAKEN_TAIL : 1), memory_order_acq_rel,
		memory_order_acquire));
	*t = &run->tasks[run->first[q] + (thief ? n - 1 - tail : head)];
	return true;
}

/*
 * Node @node: its own queue from the head, then the others' tails, from
 * the next node on round the ring, until a whole round finds nothing
 * (queues only shrink).
 */
static int node_loop(struct forall_run *run, uint32_t node)
{
	uint32_t nr_nodes = run->sm->scope->nr_nodes;
	const struct forall_task *t;
	bool found;

	while (take(run, node, false, &t))
		if (run_task(run, t, node, false))
			return atomic_load(&run->err);
	if (!run->may_steal)
		return 0;
	do {
		found = false;
		for (uint32_t k = 1; k < nr_nodes; k++) {
			uint32_t victim = (node + k) % nr_nodes;

			while (take(run, victim, true, &t)) {
				found = true;
				if (run_task(run, t, node, true))
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
		int err = node_loop(run, run->local[i % run->nr_local]);

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

/*
 * The tasks: this process's segments, or, in balance mode, every node's
 * memory blocks (a thief may take any), in block order.
 */
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
		if (!balance && !segmap_scope_local(sc, t.node))
			continue;
		if (!segmap_box_to_view(iter, box, &t.grid))
			continue;
		if (add_task(&run->tasks, &run->nr_tasks, &cap, &t))
			return -ENOMEM;
	}
	return 0;
}

/* The procs scope's queue words: a line of shared memory per node. */
static int shared_words(struct agile_segmap *sm)
{
	struct segmap_scope *sc = sm->scope;
	uint64_t bytes[AGILE_SEGMAP_MAX_NODES];

	if (sm->queues)
		return 0;
	for (uint32_t q = 0; q < sc->nr_nodes; q++)
		bytes[q] = QUEUE_LINE;
	return sc->ops->home_alloc(sc, bytes, &sm->queues);
}

/* Group the tasks by node (stable: block order inside a queue). */
static int make_queues(struct forall_run *run)
{
	struct segmap_scope *sc = run->sm->scope;
	uint32_t nr_nodes = sc->nr_nodes, *fill;
	struct forall_task *sorted;

	run->first = calloc(nr_nodes, sizeof(*run->first));
	run->count = calloc(nr_nodes, sizeof(*run->count));
	run->word = calloc(nr_nodes, sizeof(*run->word));
	run->local = calloc(nr_nodes, sizeof(*run->local));
	sorted = malloc((run->nr_tasks ? run->nr_tasks : 1) * sizeof(*sorted));
	fill = calloc(nr_nodes, sizeof(*fill));
	if (!run->sm->queues)
		run->words = aligned_alloc(QUEUE_LINE, nr_nodes * QUEUE_LINE);
	if (!run->first || !run->count || !run->word || !run->local ||
	    !sorted || !fill || (!run->sm->queues && !run->words)) {
		free(sorted);
		free(fill);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < run->nr_tasks; i++)
		run->count[run->tasks[i].node]++;
	for (uint32_t q = 1; q < nr_nodes; q++)
		run->first[q] = run->first[q - 1] + run->count[q - 1];
	for (uint32_t i = 0; i < run->nr_tasks; i++) {
		uint32_t q = run->tasks[i].node;

		sorted[run->first[q] + fill[q]++] = run->tasks[i];
	}
	free(fill);
	free(run->tasks);
	run->tasks = sorted;
	for (uint32_t q = 0; q < nr_nodes; q++) {
		unsigned char *line =
			run->words ?
				(unsigned char *)run->words + q * QUEUE_LINE :
				sc->ops->home_addr(run->sm->queues, q);

		run->word[q] = (_Atomic uint64_t *)(void *)line;
		if (run->words)
			atomic_init(run->word[q], 0);
		if (segmap_scope_local(sc, q))
			run->local[run->nr_local++] = q;
	}
	return 0;
}

static void free_queues(struct forall_run *run)
{
	free(run->first);
	free(run->count);
	free(run->word);
	free(run->words);
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
	/* collective: every process's first balanced forall */
	if (balance && sc->self != UINT32_MAX) {
		err = shared_words(sm);
		if (err)
			return err;
	}
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
	/*
	 * Balance: a runner per node of this process, or, in the procs
	 * scope, a runner per pool worker for its one node; they steal
	 * where there is another runner to steal from (several nodes here,
	 * or other processes).
	 */
	if (balance) {
		int workers = sm->pool ? agile_sched_nr_workers(sm->pool) : 0;

		run.nr_runners = run.nr_local;
		if (sc->self != UINT32_MAX && workers > 1)
			run.nr_runners = (uint32_t)workers;
		run.may_steal = sm->pool || sc->self != UINT32_MAX;
	}
	/* every process takes part in the barrier, even one that failed */
	if (!err && run.nr_tasks) {
		if (balance && sm->pool) {
			err = agile_sched_parallel_for(sm->pool, 0,
						       run.nr_runners, 1,
						       nodes_body, &run);
		} else if (balance) {
			for (uint32_t i = 0; i < run.nr_local && !err; i++)
				err = node_loop(&run, run.local[i]);
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
	/* nobody takes from our queue now, nor before the agreement ends */
	if (balance && sm->queues && !berr)
		atomic_store_explicit((_Atomic uint64_t *)sc->ops->home_addr(
					      sm->queues, sc->self),
				      0, memory_order_relaxed);
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
