// SPDX-License-Identifier: MIT
/*
 * offload.c - the scheduler's offload hook on execution units: process
 * 500a's worker-to-EU mapping, and process 600a run by each worker on its
 * own EUs.  It sits above both sched and eu and calls down into them.
 */
#define _GNU_SOURCE
#include <agile/error.h>
#include <agile/offload.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define LEAF_KERNEL "agile.leaf"
/*
 * "agile.leaf" args: the task type, the run's argument, where the task's
 * copy is, its size; then, when it fits, the copy itself, from
 * LEAF_COPY_ARG on (the first argument word 16-byte aligned: tasks may
 * need it, and the register is 64-byte aligned with args at byte 32).
 */
#define LEAF_ARG_OPS 0
#define LEAF_ARG_ARG 1
#define LEAF_ARG_TASK 2
#define LEAF_ARG_SIZE 3
#define LEAF_COPY_ARG 4

/* What an EU is to its worker. */
enum eu_state {
	EU_READY = 0,
	/*
	 * A task outlived timeout_ns: the EU may still be running it, so
	 * its register and leaf buffer are not ours until its doorbell is
	 * IDLE again (then it rejoins).
	 */
	EU_QUARANTINED,
	EU_GONE, /* disconnected, or its loop ended: never again */
};

/*
 * One EU's part of the offload object.  Written by the worker that owns
 * the EU; @state is read by agile_offload_stats at any time.
 */
struct eu_slot {
	_Atomic uint32_t state;
	bool posted; /* the owner's: a part of the current leaf is on it */
	/*
	 * A whole leaf's copy when it does not fit in the register: the
	 * EU reads it until it stores IDLE, the worker writes it only
	 * while the EU is READY (the post's release publishes it).
	 */
	_Alignas(16) unsigned char leaf[AGILE_TASK_MAX_SIZE];
} __attribute__((aligned(128)));

/* One worker's counters: it alone writes them, stats reads them. */
struct worker_counts {
	_Atomic uint64_t eu_leaves, cpu_leaves, fallback_leaves;
	_Atomic uint64_t rerouted_leaves, timeouts, rejoins, eus_gone;
} __attribute__((aligned(128)));

struct agile_offload {
	struct agile_eu_pool *pool;
	uint32_t nr_workers;
	uint32_t nr_eus;
	uint32_t leaf_opcode; /* the "agile.leaf" kernel, without an encoder */
	uint32_t nr_args;
	size_t reg_size;
	agile_offload_encode_fn encode;
	void *encode_arg;
	uint64_t timeout_ns;
	struct eu_slot *eus;
	struct worker_counts *counts;
	/*
	 * With an encoder: task registers for running encoded parts on the
	 * workers' own CPUs (a worker that owns no EU, or whose EUs cannot
	 * take them); worker k's is at k * reg_size.  Each worker touches
	 * only its own.
	 */
	unsigned char *inline_regs;
};

/* Owner-only counter bump: a relaxed load and store. */
static void bump(_Atomic uint64_t *counter)
{
	atomic_store_explicit(
		counter,
		atomic_load_explicit(counter, memory_order_relaxed) + 1,
		memory_order_relaxed);
}

static uint32_t eu_state(const struct eu_slot *slot)
{
	return atomic_load_explicit(&slot->state, memory_order_relaxed);
}

static void set_eu_state(struct eu_slot *slot, uint32_t state)
{
	atomic_store_explicit(&slot->state, state, memory_order_relaxed);
}

/*
 * The phase of "agile.leaf": a leaf of agile_sched_run_task as a one-lane
 * kernel, on the EU's copy of the task (LEAF_ARG_*).  A host function
 * call, so for CPU EUs only (GPU kernels are pure phases).
 */
static int leaf_phase(uint32_t lane, uint32_t nr_lanes, const __u64 *args,
		      void *state, void *shared)
{
	const struct agile_task_ops *ops =
		(const struct agile_task_ops *)(uintptr_t)args[LEAF_ARG_OPS];
	int err;

	(void)lane;
	(void)nr_lanes;
	(void)state;
	(void)shared;
	err = ops->leaf((void *)(uintptr_t)args[LEAF_ARG_TASK],
			(void *)(uintptr_t)args[LEAF_ARG_ARG]);
	/* The scheduler's contract: only a negative return is an error. */
	return err < 0 ? err : 0;
}

static const agile_phase_fn leaf_phases[] = { leaf_phase };

static int leaf_kernel(struct agile_eu_pool *pool, uint32_t *opcode)
{
	static const struct agile_kernel leaf = {
		.name = LEAF_KERNEL,
		.nr_phases = 1,
		.phases = leaf_phases,
		.max_lanes = 1,
	};
	const struct agile_kernel *k;
	struct agile_kernels *reg;
	int err;

	agile_eu_pool_kernels(pool, &reg);
	err = agile_kernels_register(reg, &leaf, opcode);
	if (err != -EEXIST)
		return err;
	/* Registered before (by another offload object, or a race). */
	err = agile_kernels_find(reg, LEAF_KERNEL, &k);
	if (err)
		return err;
	if (k->phases[0] != leaf_phase)
		return -EEXIST; /* someone else's kernel took the name */
	*opcode = k->opcode;
	return 0;
}

int agile_offload_opts_init(struct agile_offload_opts *opts)
{
	if (!opts)
		return -EINVAL;
	memset(opts, 0, sizeof(*opts));
	opts->nr_workers = 1;
	opts->timeout_ns = AGILE_TIMEOUT_INFINITE;
	return 0;
}

int agile_offload_eus(const struct agile_offload *off, uint32_t worker,
		      uint32_t *first, uint32_t *count)
{
	uint32_t base, extra;

	if (!off || worker >= off->nr_workers || !first || !count)
		return -EINVAL;
	/* Process 500a: M / W each, one more for the first M % W workers. */
	base = off->nr_eus / off->nr_workers;
	extra = off->nr_eus % off->nr_workers;
	*first = worker * base + (worker < extra ? worker : extra);
	*count = base + (worker < extra);
	return 0;
}

static void offload_free(struct agile_offload *off)
{
	free(off->inline_regs);
	free(off->counts);
	free(off->eus);
	free(off);
}

int agile_offload_create(struct agile_eu_pool *pool,
			 const struct agile_offload_opts *opts,
			 struct agile_offload **out)
{
	struct agile_offload_opts defaults;
	struct agile_task_reg *reg;
	struct agile_offload *off;
	int err;

	if (!pool || !out)
		return -EINVAL;
	if (!opts) {
		agile_offload_opts_init(&defaults);
		opts = &defaults;
	}
	for (size_t i = 0;
	     i < sizeof(opts->reserved) / sizeof(opts->reserved[0]); i++)
		if (opts->reserved[i])
			return -EINVAL;
	if (opts->flags || !opts->nr_workers ||
	    opts->nr_workers > AGILE_SCHED_MAX_WORKERS)
		return -EINVAL;

	off = calloc(1, sizeof(*off));
	if (!off)
		return -ENOMEM;
	off->pool = pool;
	off->nr_workers = opts->nr_workers;
	off->nr_eus = (uint32_t)agile_eu_pool_nr_eus(pool);
	off->encode = opts->encode;
	off->encode_arg = opts->encode_arg;
	off->timeout_ns = opts->timeout_ns;
	/* The count comes back even while EU 0 is busy (-EBUSY). */
	agile_eu_task_reg(pool, 0, &reg, &off->nr_args);
	off->reg_size =
		sizeof(struct agile_task_reg) + off->nr_args * sizeof(uint64_t);
	err = -ENOMEM;
	off->eus = aligned_alloc(_Alignof(struct eu_slot),
				 (off->nr_eus ? off->nr_eus : 1) *
					 sizeof(struct eu_slot));
	off->counts =
		aligned_alloc(_Alignof(struct worker_counts),
			      off->nr_workers * sizeof(struct worker_counts));
	if (!off->eus || !off->counts)
		goto fail;
	memset(off->eus, 0, off->nr_eus * sizeof(struct eu_slot));
	memset(off->counts, 0, off->nr_workers * sizeof(struct worker_counts));
	if (off->encode) {
		off->inline_regs =
			aligned_alloc(64, off->nr_workers * off->reg_size);
		if (!off->inline_regs)
			goto fail;
	} else {
		err = leaf_kernel(pool, &off->leaf_opcode);
		if (err)
			goto fail;
	}
	*out = off;
	return 0;
fail:
	offload_free(off);
	return err;
}

/*
 * Whether quarantined EU @eu is back: its doorbell IDLE again (the wait's
 * acquire load pairs with the EU's release store of IDLE, so it is done
 * with its register and leaf buffer).  The late task's outcome is not
 * anybody's any more.
 */
static bool eu_back(struct agile_offload *off, uint32_t eu)
{
	struct agile_task_reg *reg;

	if (agile_eu_wait(off->pool, eu, 0, NULL) == -ETIMEDOUT)
		return false;
	return !agile_eu_task_reg(off->pool, eu, &reg, NULL);
}

int agile_offload_destroy(struct agile_offload *off)
{
	if (!off)
		return -EINVAL;
	/* A quarantined EU may still read its leaf buffer: keep it. */
	for (uint32_t i = 0; i < off->nr_eus; i++)
		if (eu_state(&off->eus[i]) == EU_QUARANTINED &&
		    !eu_back(off, i))
			return -EBUSY;
	offload_free(off);
	return 0;
}

int agile_offload_stats(const struct agile_offload *off,
			struct agile_offload_stats *st)
{
	if (!off || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	for (uint32_t k = 0; k < off->nr_workers; k++) {
		const struct worker_counts *c = &off->counts[k];

#define LOAD(x) atomic_load_explicit(&c->x, memory_order_relaxed)
		st->eu_leaves += LOAD(eu_leaves);
		st->cpu_leaves += LOAD(cpu_leaves);
		st->fallback_leaves += LOAD(fallback_leaves);
		st->rerouted_leaves += LOAD(rerouted_leaves);
		st->timeouts += LOAD(timeouts);
		st->rejoins += LOAD(rejoins);
		st->eus_gone += LOAD(eus_gone);
#undef LOAD
	}
	for (uint32_t i = 0; i < off->nr_eus; i++)
		st->quarantined += eu_state(&off->eus[i]) == EU_QUARANTINED;
	return 0;
}

/*
 * A leaf as one "agile.leaf" task on EU @eu: the task type, the run's
 * argument and a copy of the task, in the register when it fits, else in
 * the EU's leaf buffer.  Never a pointer to @task: it lives on the
 * worker's stack, and a leaf that outlives the timeout outlives that.
 */
static void encode_leaf(struct agile_offload *off, uint32_t eu,
			const struct agile_task_ops *ops, const void *task,
			void *arg, struct agile_task_reg *reg)
{
	void *copy = off->eus[eu].leaf;

	if (off->nr_args >= LEAF_COPY_ARG &&
	    ops->task_size <= (off->nr_args - LEAF_COPY_ARG) * sizeof(uint64_t))
		copy = &reg->args[LEAF_COPY_ARG];
	memcpy(copy, task, ops->task_size);
	reg->opcode = off->leaf_opcode;
	reg->nr_parts = 1;
	reg->flags = 0;
	reg->args[LEAF_ARG_OPS] = (uintptr_t)ops;
	reg->args[LEAF_ARG_ARG] = (uintptr_t)arg;
	reg->args[LEAF_ARG_TASK] = (uintptr_t)copy;
	reg->args[LEAF_ARG_SIZE] = ops->task_size;
}

/*
 * Part @part of @nr_parts of a leaf on worker @worker's own CPU, as an EU
 * would run it: through the encoder and the worker's inline register, or
 * (opaque leaves) as the leaf call itself.
 */
static int run_part_on_cpu(struct agile_offload *off, uint32_t worker,
			   const struct agile_task_ops *ops, void *task,
			   void *arg, uint32_t part, uint32_t nr_parts)
{
	struct agile_task_reg *reg;
	int err;

	if (!off->encode) {
		/* The scheduler's contract: only a negative return fails. */
		err = ops->leaf(task, arg);
		return err < 0 ? err : 0;
	}
	reg = (struct agile_task_reg *)(off->inline_regs +
					worker * off->reg_size);
	memset(reg, 0, off->reg_size);
	err = off->encode(task, arg, part, nr_parts, reg, off->nr_args,
			  off->encode_arg);
	return err ? err : agile_eu_run_inline(off->pool, reg, NULL);
}

/*
 * How many of the worker's EUs [@first, @first + @count) can take a part
 * now; quarantined ones that are IDLE again rejoin first.
 */
static uint32_t ready_eus(struct agile_offload *off, struct worker_counts *c,
			  uint32_t first, uint32_t count)
{
	uint32_t n = 0;

	for (uint32_t eu = first; eu < first + count; eu++) {
		struct eu_slot *slot = &off->eus[eu];

		if (eu_state(slot) == EU_QUARANTINED && eu_back(off, eu)) {
			set_eu_state(slot, EU_READY);
			bump(&c->rejoins);
		}
		n += eu_state(slot) == EU_READY;
	}
	return n;
}

/*
 * The offload hook (process 600a on each of the worker's EUs): the leaf
 * is cut into one part per EU that can take one (one part in all for an
 * opaque leaf), each part written and posted, then every part posted is
 * waited for.  An EU whose part outlives timeout_ns is quarantined (the
 * leaf fails with -ETIMEDOUT); one found disconnected is gone for good,
 * and its part runs on the worker's CPU.  Leaves go around both: to the
 * worker's other EUs, or its CPU when it has none left.  Only this
 * worker posts to its EUs and changes their state.
 */
static int offload_leaf(struct agile_worker *w,
			const struct agile_task_ops *ops, void *task, void *arg,
			void *hook_arg)
{
	struct agile_offload *off = hook_arg;
	uint32_t first, count, nr_parts, part = 0, eu;
	int worker = agile_sched_worker_index(w), err = 0;
	bool rerouted, ran_on_eu = false, ran_on_cpu = false;
	struct worker_counts *c;

	if (worker < 0 ||
	    agile_offload_eus(off, (uint32_t)worker, &first, &count))
		return ops->leaf(task, arg);
	c = &off->counts[worker];
	if (!count) {
		bump(&c->cpu_leaves);
		return run_part_on_cpu(off, (uint32_t)worker, ops, task, arg, 0,
				       1);
	}
	nr_parts = ready_eus(off, c, first, count);
	if (!nr_parts) {
		bump(&c->fallback_leaves);
		return run_part_on_cpu(off, (uint32_t)worker, ops, task, arg, 0,
				       1);
	}
	rerouted = nr_parts < count;
	if (!off->encode)
		nr_parts = 1; /* an opaque leaf cannot be cut */
	for (eu = first; eu < first + count && part < nr_parts && !err; eu++) {
		struct eu_slot *slot = &off->eus[eu];
		struct agile_task_reg *reg;

		if (eu_state(slot) != EU_READY)
			continue;
		/* READY: its last task was seen finished, the slot IDLE. */
		err = agile_eu_task_reg(off->pool, eu, &reg, NULL);
		if (err)
			break;
		if (off->encode)
			err = off->encode(task, arg, part, nr_parts, reg,
					  off->nr_args, off->encode_arg);
		else
			encode_leaf(off, eu, ops, task, arg, reg);
		if (!err)
			err = agile_eu_submit(off->pool, eu);
		if (!err)
			slot->posted = true;
		if (err == -ENOTCONN) {
			/* Disconnected since: gone, and this part runs here. */
			set_eu_state(slot, EU_GONE);
			bump(&c->eus_gone);
			rerouted = true;
			ran_on_cpu = true;
			err = run_part_on_cpu(off, (uint32_t)worker, ops, task,
					      arg, part, nr_parts);
		}
		part++;
	}
	/* Every part posted is waited for, even after an error. */
	for (eu = first; eu < first + count; eu++) {
		struct eu_slot *slot = &off->eus[eu];
		int e;

		if (!slot->posted)
			continue;
		slot->posted = false;
		ran_on_eu = true;
		e = agile_eu_wait(off->pool, eu, off->timeout_ns, NULL);
		if (e == -ETIMEDOUT) {
			set_eu_state(slot, EU_QUARANTINED);
			bump(&c->timeouts);
		}
		if (!err)
			err = e;
	}
	if (ran_on_eu)
		bump(&c->eu_leaves);
	else if (ran_on_cpu)
		bump(&c->fallback_leaves);
	if (rerouted)
		bump(&c->rerouted_leaves);
	return err;
}

int agile_offload_bind(struct agile_sched_opts *opts, struct agile_offload *off)
{
	if (!opts || !off)
		return -EINVAL;
	opts->nr_workers = off->nr_workers;
	opts->offload = offload_leaf;
	opts->offload_arg = off;
	return 0;
}
