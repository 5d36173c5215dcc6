/* SPDX-License-Identifier: MIT */
/*
 * agile/offload.h - the scheduler's leaves on execution units (seed 002,
 * process 500a step 4 and process 600a)
 *
 * An offload object maps each worker of an agile_sched pool to its own
 * EUs of an agile_eu_pool, and is the pool's offload hook: a leaf of
 * agile_sched_run_task goes to the EUs of the worker that holds it, which
 * waits for them and returns the first error (so a failed lane's error
 * is what agile_sched_run_task returns).
 *
 * The mapping: with M EUs and W workers, worker k owns the contiguous EUs
 * [first_k, first_k + count_k), count_k being M / W, plus one for the
 * first M % W workers; so when the EUs do not divide evenly, the last
 * workers get one fewer.  A worker that owns no EU (M < W) runs its leaves
 * on its own CPU, through the same code an EU would run.
 *
 * How a leaf becomes EU tasks:
 *  - with an encoder: a worker owning n EUs asks it for parts 0 .. n-1 of
 *    the leaf, each written into one EU's task register (a registered
 *    kernel's opcode, nr_parts lanes and arguments); all n are posted,
 *    then all n are waited for.  This is how a leaf is split across a
 *    worker's EUs;
 *  - without one: the leaf goes whole to the worker's first EU as a call
 *    of ops->leaf(task, arg) (the "agile.leaf" kernel, registered in the
 *    EU pool's registry on first use; CPU EUs only).
 *
 * Thread safety: create and destroy are not thread safe against the
 * scheduler running; the hook runs concurrently on every worker, each on
 * its own EUs.  Destroy the scheduler first, then the offload object, then
 * the EU pool (which DISCONNECTs its EUs).
 */
#ifndef AGILE_OFFLOAD_H
#define AGILE_OFFLOAD_H

#include <stdint.h>

#include <agile/eu.h>
#include <agile/sched.h>

struct agile_offload;

/**
 * agile_offload_encode_fn - write part @part of @nr_parts of a leaf
 * @task:       the leaf (agile_task_ops.task_size bytes)
 * @arg:        the run's argument (agile_sched_run_task's @arg)
 * @reg:        the task register to fill in: opcode, nr_parts, args
 * @nr_args:    how many argument words @reg holds
 * @encode_arg: agile_offload_opts.encode_arg
 *
 * Returns 0 or a negative errno (the leaf fails with it).
 */
typedef int (*agile_offload_encode_fn)(const void *task, void *arg,
				       uint32_t part, uint32_t nr_parts,
				       struct agile_task_reg *reg,
				       uint32_t nr_args, void *encode_arg);

/**
 * struct agile_offload_opts - agile_offload_opts_init gives the defaults
 * @nr_workers: W, the scheduler's worker count (1 .. AGILE_SCHED_MAX_WORKERS)
 * @flags:      must be zero
 * @encode:     how to cut a leaf into EU tasks; NULL: whole-leaf calls
 * @encode_arg: passed to @encode
 * @timeout_ns: how long a worker waits for one EU task (default
 *              AGILE_TIMEOUT_INFINITE); -ETIMEDOUT fails the run
 * @reserved:   must be zero
 */
struct agile_offload_opts {
	uint32_t nr_workers;
	uint32_t flags;
	agile_offload_encode_fn encode;
	void *encode_arg;
	uint64_t timeout_ns;
	uint64_t reserved[4];
};

/* agile_offload_opts_init - defaults (one worker).  0 or -EINVAL. */
int agile_offload_opts_init(struct agile_offload_opts *opts);

/**
 * agile_offload_create - map workers to the EUs of @pool
 *
 * Returns 0, -EINVAL (bad arguments), -ENOMEM, or an error registering
 * the "agile.leaf" kernel.
 */
int agile_offload_create(struct agile_eu_pool *pool,
			 const struct agile_offload_opts *opts,
			 struct agile_offload **out);

/* agile_offload_destroy - free @off (the EUs stay).  0 or -EINVAL. */
int agile_offload_destroy(struct agile_offload *off);

/**
 * agile_sched_opts_use_eus - make a scheduler built with @opts offload to @off
 *
 * Sets @opts->nr_workers to the offload's W, and the offload hook and its
 * argument.  Returns 0 or -EINVAL.
 */
int agile_sched_opts_use_eus(struct agile_sched_opts *opts,
			     struct agile_offload *off);

/**
 * agile_offload_eus - which EUs worker @worker owns
 * @first: receives its first EU
 * @count: receives how many (0: it runs leaves on its own CPU)
 *
 * Returns 0 or -EINVAL.  Thread safe.
 */
int agile_offload_eus(const struct agile_offload *off, uint32_t worker,
		      uint32_t *first, uint32_t *count);

#endif /* AGILE_OFFLOAD_H */
