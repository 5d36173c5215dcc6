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
 *  - with an encoder: a worker with n EUs that can take a part (all it
 *    owns, unless some failed: Faults below) asks it for parts 0 .. n-1
 *    of the leaf, each written into one EU's task register (a registered
 *    kernel's opcode, nr_parts lanes and arguments); all n are posted,
 *    then all n are waited for.  This is how a leaf is split across a
 *    worker's EUs;
 *  - without one: the leaf goes whole to the worker's first EU that can
 *    take it, as a call of ops->leaf(copy, arg) (the "agile.leaf" kernel, registered in the
 *    EU pool's registry on first use; CPU EUs only), on a copy of the
 *    task: in the task register when it fits (registers of 128 bytes and
 *    up hold any task), else in a buffer of the EU's that the offload
 *    object owns.  The task itself lives on the worker's stack, which a
 *    leaf that outlives its timeout outlives too.
 *
 * Faults:
 *  - timeout: a part that outlives timeout_ns fails the leaf, and so the
 *    run, with -ETIMEDOUT, while the EU goes on running it.  That EU is
 *    quarantined: its register and buffer are not touched until its
 *    doorbell is IDLE again, when it rejoins (looked for at each of its
 *    worker's leaves).  The late leaf still uses the task type (@ops) and
 *    the run's @arg: keep them valid until agile_offload_destroy succeeds.
 *  - disconnect: an EU found disconnected (agile_eu_disconnect, or its
 *    loop ended) is gone for good; the part that found it runs on the
 *    worker's CPU.
 * Leaves go around quarantined and gone EUs: split across the worker's
 * other EUs (one fewer part each), or, when none is left, run on the
 * worker's own CPU as for a worker that owns no EU.  agile_offload_stats
 * counts each case.  A CPU run of an encoded part goes through
 * agile_eu_run_inline, so its args must be addresses the CPU can use.
 *
 * Thread safety: create and destroy are not thread safe against the
 * scheduler running; the hook runs concurrently on every worker, each on
 * its own EUs; agile_offload_stats may be called at any time.  Destroy
 * the scheduler first, then the offload object, then the EU pool (which
 * DISCONNECTs its EUs).
 */
#ifndef AGILE_OFFLOAD_H
#define AGILE_OFFLOAD_H

#include <stdint.h>

#include <agile/eu.h>
#include <agile/sched.h>

#ifdef __cplusplus
extern "C" {
#endif

struct agile_offload;

/**
 * agile_offload_encode_fn - write part @part of @nr_parts of a leaf
 * @task:       the leaf (agile_task_ops.task_size bytes)
 * @arg:        the run's argument (agile_sched_run_task's @arg)
 * @part:       which part, 0 .. @nr_parts - 1
 * @nr_parts:   how many parts the leaf is cut into
 * @reg:        the task register to fill in: opcode, nr_parts, args
 * @nr_args:    how many argument words @reg holds
 * @encode_arg: agile_offload_opts.encode_arg
 *
 * Write values into @reg, not pointers into @task: it is the worker's, on
 * its stack, only until the hook returns (a part may outlive that: see
 * Faults above).  A part whose EU turns out to be gone is encoded again
 * (same @part and @nr_parts) into a register of the worker's own, to run
 * on its CPU; a leaf none of whose EUs can take it is encoded as part 0
 * of 1.
 *
 * Thread safety: called concurrently from every worker, each with its
 * own @reg.
 *
 * Return: 0 or a negative errno (the leaf fails with it).
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
 *              AGILE_TIMEOUT_INFINITE); -ETIMEDOUT fails the run and
 *              quarantines the EU (Faults, above)
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

/**
 * agile_offload_opts_init - fill @opts with the defaults
 * @opts: the options
 *
 * One worker, no encoder (whole-leaf calls), AGILE_TIMEOUT_INFINITE.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, or -EINVAL if @opts is NULL.
 */
int agile_offload_opts_init(struct agile_offload_opts *opts);

/**
 * agile_offload_create - map workers to the EUs of @pool
 * @pool: the EU pool; must outlive the offload object
 * @opts: NULL for the defaults
 * @out:  receives the offload object
 *
 * Thread safety: thread safe (the "agile.leaf" kernel is registered
 * through the registry's lock).
 *
 * Return: 0, -EINVAL (bad arguments), -ENOMEM, or an error registering
 * the "agile.leaf" kernel.
 */
int agile_offload_create(struct agile_eu_pool *pool,
			 const struct agile_offload_opts *opts,
			 struct agile_offload **out);

/**
 * agile_offload_destroy - free @off (the EUs stay)
 * @off: the offload object
 *
 * Thread safety: not thread safe against the scheduler running with @off
 * as its hook, nor other calls on @off: destroy the scheduler first.
 *
 * Return: 0, -EINVAL, or -EBUSY (a quarantined EU still runs a leaf whose
 * copy @off holds: nothing was freed; try again once it is done).
 */
int agile_offload_destroy(struct agile_offload *off);

/**
 * struct agile_offload_stats - where the leaves went (agile_offload_stats)
 * @eu_leaves:       leaves that ran on EUs (once each, whatever the parts)
 * @cpu_leaves:      leaves run on the CPU of a worker that owns no EU
 * @fallback_leaves: leaves run on a worker's CPU because none of its EUs
 *                   could take them (all quarantined or gone)
 * @rerouted_leaves: leaves that went around a quarantined or gone EU of
 *                   their worker (to its other EUs, or a part to its CPU)
 * @timeouts:        EU tasks that outlived timeout_ns (each quarantined
 *                   its EU)
 * @rejoins:         quarantined EUs that came back, IDLE again
 * @eus_gone:        EUs found disconnected, never used again
 * @quarantined:     EUs quarantined now
 * @reserved:        zero
 *
 * Every leaf that ran counts in exactly one of @eu_leaves, @cpu_leaves
 * and @fallback_leaves.
 */
struct agile_offload_stats {
	uint64_t eu_leaves;
	uint64_t cpu_leaves;
	uint64_t fallback_leaves;
	uint64_t rerouted_leaves;
	uint64_t timeouts;
	uint64_t rejoins;
	uint64_t eus_gone;
	uint32_t quarantined;
	uint32_t reserved;
};

/**
 * agile_offload_stats - @off's counters into @stats, summed over workers
 * @off:   the offload object
 * @stats: receives the counters
 *
 * A recent snapshot while the scheduler runs, exact once it is idle.
 *
 * Thread safety: thread safe, also while the hook runs.
 *
 * Return: 0 or -EINVAL (NULL pointers).
 */
int agile_offload_stats(const struct agile_offload *off,
			struct agile_offload_stats *stats);

/**
 * agile_offload_bind - make a scheduler built with @opts offload to @off
 * @opts: scheduler options, for agile_sched_create
 * @off:  the offload object
 *
 * Sets @opts->nr_workers to the offload's W, and the offload hook and its
 * argument.
 *
 * Thread safety: thread safe (writes @opts only).
 *
 * Return: 0 or -EINVAL (NULL pointers).
 */
int agile_offload_bind(struct agile_sched_opts *opts,
		       struct agile_offload *off);

/**
 * agile_offload_eus - which EUs worker @worker owns
 * @off:    the offload object
 * @worker: the worker's index, 0 .. W - 1
 * @first:  receives its first EU
 * @count:  receives how many (0: it runs leaves on its own CPU)
 *
 * Thread safety: thread safe.
 *
 * Return: 0 or -EINVAL (NULL pointers, @worker out of range).
 */
int agile_offload_eus(const struct agile_offload *off, uint32_t worker,
		      uint32_t *first, uint32_t *count);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_OFFLOAD_H */
