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
#include <stdlib.h>
#include <string.h>

#define LEAF_KERNEL "agile.leaf"

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
	/*
	 * Task registers of the workers that own no EU, for running an
	 * encoded leaf on their own CPU; worker k's is at k * reg_size.
	 * Each worker touches only its own.
	 */
	unsigned char *inline_regs;
};

/*
 * The phase of "agile.leaf": a leaf of agile_sched_run_task as a one-lane
 * kernel.  args: the task type, the task, the run's argument.  A host
 * function call, so for CPU EUs only (GPU kernels are pure phases).
 */
static int leaf_phase(uint32_t lane, uint32_t nr_lanes, const __u64 *args,
		      void *state, void *shared)
{
	const struct agile_task_ops *ops =
		(const struct agile_task_ops *)(uintptr_t)args[0];
	int err;

	(void)lane;
	(void)nr_lanes;
	(void)state;
	(void)shared;
	err = ops->leaf((void *)(uintptr_t)args[1], (void *)(uintptr_t)args[2]);
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
	agile_eu_task_reg(pool, 0, &reg, &off->nr_args);
	off->reg_size = sizeof(*reg) + off->nr_args * sizeof(uint64_t);
	if (!off->encode) {
		err = leaf_kernel(pool, &off->leaf_opcode);
		if (err)
			goto fail;
	}
	if (off->nr_eus < off->nr_workers && off->encode) {
		err = -ENOMEM;
		off->inline_regs =
			aligned_alloc(64, off->nr_workers * off->reg_size);
		if (!off->inline_regs)
			goto fail;
	}
	*out = off;
	return 0;
fail:
	free(off);
	return err;
}

int agile_offload_destroy(struct agile_offload *off)
{
	if (!off)
		return -EINVAL;
	free(off->inline_regs);
	free(off);
	return 0;
}

/* A leaf as one "agile.leaf" task: the task type, the task, the argument. */
static void encode_leaf(const struct agile_offload *off,
			const struct agile_task_ops *ops, void *task, void *arg,
			struct agile_task_reg *reg)
{
	reg->opcode = off->leaf_opcode;
	reg->nr_parts = 1;
	reg->flags = 0;
	reg->args[0] = (uintptr_t)ops;
	reg->args[1] = (uintptr_t)task;
	reg->args[2] = (uintptr_t)arg;
}

/* A worker that owns no EU: the leaf on its own CPU, as an EU would run it. */
static int run_on_cpu(struct agile_offload *off, uint32_t worker,
		      const struct agile_task_ops *ops, void *task, void *arg)
{
	struct agile_task_reg *reg;
	int err;

	if (!off->encode || !off->inline_regs || worker >= off->nr_workers)
		return ops->leaf(task, arg);
	reg = (struct agile_task_reg *)(off->inline_regs +
					worker * off->reg_size);
	memset(reg, 0, off->reg_size);
	err = off->encode(task, arg, 0, 1, reg, off->nr_args, off->encode_arg);
	return err ? err : agile_eu_run_inline(off->pool, reg, NULL);
}

/*
 * The offload hook (process 600a on each of the worker's EUs): write and
 * post every part, then wait for every part that was posted, so no EU is
 * left running a part of this leaf when the hook returns.
 */
static int offload_leaf(struct agile_worker *w,
			const struct agile_task_ops *ops, void *task, void *arg,
			void *hook_arg)
{
	struct agile_offload *off = hook_arg;
	uint32_t first, count, posted = 0;
	int worker = agile_worker_index(w), err = 0;

	if (worker < 0 ||
	    agile_offload_eus(off, (uint32_t)worker, &first, &count) || !count)
		return run_on_cpu(off, (uint32_t)worker, ops, task, arg);
	if (!off->encode)
		count = 1; /* an opaque leaf cannot be cut */
	for (uint32_t part = 0; part < count; part++) {
		struct agile_task_reg *reg;

		err = agile_eu_task_reg(off->pool, first + part, &reg, NULL);
		if (err)
			break;
		if (off->encode)
			err = off->encode(task, arg, part, count, reg,
					  off->nr_args, off->encode_arg);
		else
			encode_leaf(off, ops, task, arg, reg);
		if (!err)
			err = agile_eu_submit(off->pool, first + part);
		if (err)
			break;
		posted++;
	}
	for (uint32_t part = 0; part < posted; part++) {
		int e = agile_eu_wait(off->pool, first + part, off->timeout_ns,
				      NULL);

		if (!err)
			err = e;
	}
	return err;
}

int agile_sched_opts_use_eus(struct agile_sched_opts *opts,
			     struct agile_offload *off)
{
	if (!opts || !off)
		return -EINVAL;
	opts->nr_workers = off->nr_workers;
	opts->offload = offload_leaf;
	opts->offload_arg = off;
	return 0;
}
