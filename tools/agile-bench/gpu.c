// SPDX-License-Identifier: MIT
/*
 * gpu - a small leaf on a GPU: axpy on 4096 doubles (the built-in kernel,
 * 64 lanes), dispatched N times
 *
 *    doorbell   through a slot's doorbell to the persistent kernel
 *               (agile_eu_call on a GPU EU): post, the work-group runs it,
 *               wait for IDLE
 *    launch     the same task by a plain kernel launch of the same GPU
 *               code (hipModuleLaunchKernel / cuLaunchKernel) and a
 *               stream synchronise (agile_eu_run_launch): the baseline
 *    SPEC §5: launch / doorbell >= 3 (the doorbell at least 3x sooner).
 *
 * N is --trips / 200 (1000 by default).  The poster spins while it
 * waits.  Without a GPU that starts GPU EUs both rows are "skipped" with
 * the reason in a note, which is not a failure.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/kernels.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define GPU_N 4096
#define WAIT_NS (10ULL * 1000 * 1000 * 1000)

struct gpu_run {
	struct agile_eu_pool *pool;
	int64_t trips;
	int err; /* the first failure of any repetition */
};

static void run_doorbell(void *arg)
{
	struct gpu_run *r = arg;

	for (int64_t i = 0; i < r->trips && !r->err; i++)
		r->err = agile_eu_call(r->pool, 0, WAIT_NS, NULL);
}

static void run_launch(void *arg)
{
	struct gpu_run *r = arg;

	for (int64_t i = 0; i < r->trips && !r->err; i++)
		r->err = agile_eu_run_launch(r->pool, 0, NULL);
}

static void skipped(const char *why)
{
	bench_row_na("gpu", "doorbell", 1, "skipped: no GPU EUs");
	bench_row_na("gpu", "launch", 1, "skipped: no GPU EUs");
	bench_note("gpu: skipped: %s", why);
	fprintf(stderr, "  gpu    skipped: %s\n", why);
}

int bench_gpu(const struct bench_opts *o)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes = (GPU_N * sizeof(double) + page - 1) / page * page;
	struct agile_eu_pool_opts po;
	struct agile_eu_pool_info info;
	struct agile_kernels *kernels = NULL;
	const struct agile_kernel *axpy;
	struct agile_eu_pool *pool = NULL;
	struct agile_dev_opts dopts;
	struct agile_dev *dev = NULL;
	struct agile_task_reg *reg;
	struct gpu_run run = { 0 };
	struct contender c[2];
	double *x = NULL, *y = NULL, a = 0.5;
	uint64_t dx, dy, a_bits;
	char why[AGILE_EU_REASON_LEN + 64];
	int err;

	err = agile_kernels_create(&kernels);
	if (!err)
		err = agile_kernels_register_builtins(kernels);
	if (!err) {
		agile_dev_opts_init(&dopts);
		dopts.nr_slots = 1;
		err = agile_dev_open(&dopts, &dev);
	}
	if (err) {
		snprintf(why, sizeof(why), "setup: %s", agile_strerror(err));
		skipped(why);
		goto out;
	}
	agile_eu_pool_opts_init(&po);
	po.nr_eus = 1;
	po.flags = AGILE_EU_POOL_AUTO;
	/* Both sides spin, as in the doorbell row: latency, not wake-ups. */
	po.wait_spin_ns = 1000000000ULL;
	setenv("AGILE_QUIET", "1", 0);
	err = agile_eu_pool_create(dev, kernels, &po, &pool);
	if (err || agile_eu_pool_info(pool, &info) ||
	    info.kind != AGILE_EU_KIND_GPU) {
		snprintf(why, sizeof(why), "%s",
			 err ? agile_strerror(err) : info.reason);
		skipped(why);
		err = 0;
		goto out;
	}

	x = aligned_alloc(page, bytes);
	y = aligned_alloc(page, bytes);
	if (!x || !y) {
		err = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < GPU_N; i++) {
		x[i] = i;
		y[i] = 0;
	}
	err = agile_eu_pool_map(pool, x, bytes, &dx);
	if (!err)
		err = agile_eu_pool_map(pool, y, bytes, &dy);
	if (!err)
		err = agile_kernels_find(kernels, AGILE_KERNEL_AXPY, &axpy);
	if (!err)
		err = agile_eu_task_reg(pool, 0, &reg, NULL);
	if (err)
		goto out;
	memcpy(&a_bits, &a, sizeof(a_bits));
	reg->opcode = axpy->opcode;
	reg->nr_parts = AGILE_MAX_LANES;
	reg->flags = 0;
	reg->args[0] = a_bits;
	reg->args[1] = dx;
	reg->args[2] = dy;
	reg->args[3] = GPU_N;

	run.pool = pool;
	run.trips = o->trips / 200 > 0 ? o->trips / 200 : 1;
	c[0] = (struct contender){ "doorbell", 1, run_doorbell, &run, o->reps };
	c[1] = (struct contender){ "launch", 1, run_launch, &run, o->reps };
	bench_run("gpu", c, 2);
	err = run.err;
	if (!err) {
		struct timing td, tl;

		bench_compare("gpu", "doorbell", "launch", true, ">= 3");
		if (!bench_find_timing("gpu", "doorbell", &td) &&
		    !bench_find_timing("gpu", "launch", &tl))
			bench_note("gpu: per task (median run of %lld): "
				   "doorbell %.1f us, launch + synchronise "
				   "%.1f us",
				   (long long)run.trips,
				   td.median_ms * 1e3 / (double)run.trips,
				   tl.median_ms * 1e3 / (double)run.trips);
	}
out:
	if (pool) {
		agile_eu_pool_destroy(pool);
	}
	free(x);
	free(y);
	if (dev)
		agile_dev_close(dev);
	if (kernels)
		agile_kernels_destroy(kernels);
	return err;
}
