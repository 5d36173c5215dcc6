// SPDX-License-Identifier: MIT
/*
 * retarget.c - agile-bench retarget: unmodified CUDA kernels
 * (selftests/libagile/retarget/ .cu files) translated by agile-retarget and run
 * through agile_launch on -t CPU threads, beside the same kernels in
 * OpenCL C on PoCL's CPU device and beside hand-written OpenMP or serial
 * C, in one run; each contender's results checked against the latter's.
 *
 *	matlist    A[m] = A[m] B[m], 16x16 matrices, a block (256 threads)
 *	           each; B[m] a permutation, so repeated runs stay bounded
 *	reduce     a block's sum per 256 elements, a tree in shared memory,
 *	           and the grand total by an atomic add
 *	transpose  32x32 tiles through shared memory, then two rounds of a
 *	           5-point smoothing in the tile (barriers in a loop)
 *	histogram  64 bins, a block-local histogram in shared memory by
 *	           atomics (plain ones once translated: one OS thread runs a
 *	           block), merged into the global one atomically; against
 *	           one serial loop
 *	scan       each block's inclusive running sums, Hillis and Steele in
 *	           shared memory (log2(block) rounds of two barriers);
 *	           against one serial loop
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "histogram-rt.h"
#include "matlist-rt.h"
#include "reduce-rt.h"
#include "retarget.h"
#include "scan-rt.h"
#include "transpose-rt.h"

#define MM_COUNT 8192
#define MM_DIM 16
#define RED_N (8u << 20)
#define RED_BLOCK 256
#define TR_N 2048
#define TR_PASSES 2
#define HIST_N (16u << 20)
#define HIST_BLOCK 256
#define HIST_PER_BLOCK 16384
#define SCAN_N (4u << 20)
#define SCAN_BLOCK 256
#define NR_KERNELS 5

struct rt_job {
	struct rt_work *w;
	struct agile_launch_pool *pool;
	struct rt_ocl *ocl;
	int threads;
	int err;
};

static void agile_matlist(void *arg)
{
	struct rt_job *j = arg;
	struct rt_work *w = j->w;
	int err = small_mm_list_launch(
		j->pool, (struct agile_dim3){ (uint32_t)w->mm_count, 1, 1 },
		(struct agile_dim3){ (uint32_t)w->mm_dim, (uint32_t)w->mm_dim,
				     1 },
		0, w->mm_a, w->mm_b, w->mm_dim);

	if (err && !j->err)
		j->err = err;
}

static void agile_reduce(void *arg)
{
	struct rt_job *j = arg;
	struct rt_work *w = j->w;
	unsigned nr_blocks = (w->red_n + w->red_block - 1) / w->red_block;
	int err;

	w->red_total = 0;
	err = block_sum_launch(j->pool, (struct agile_dim3){ nr_blocks, 1, 1 },
			       (struct agile_dim3){ w->red_block, 1, 1 }, 0,
			       w->red_in, w->red_out, w->red_n, &w->red_total);
	if (err && !j->err)
		j->err = err;
}

static void agile_transpose(void *arg)
{
	struct rt_job *j = arg;
	struct rt_work *w = j->w;
	uint32_t tiles = (uint32_t)((w->tr_n + RT_TILE - 1) / RT_TILE);
	int err = transpose_smooth_launch(
		j->pool, (struct agile_dim3){ tiles, tiles, 1 },
		(struct agile_dim3){ RT_TILE, RT_TILE_ROWS, 1 }, 0, w->tr_in,
		w->tr_out, w->tr_smooth, w->tr_n, w->tr_passes);

	if (err && !j->err)
		j->err = err;
}

static void agile_histogram(void *arg)
{
	struct rt_job *j = arg;
	struct rt_work *w = j->w;
	unsigned nr_blocks =
		(w->hist_n + w->hist_per_block - 1) / w->hist_per_block;
	int err;

	memset(w->hist_out, 0, sizeof(w->hist_out));
	err = shared_histogram_launch(
		j->pool, (struct agile_dim3){ nr_blocks, 1, 1 },
		(struct agile_dim3){ w->hist_block, 1, 1 }, 0, w->hist_in,
		w->hist_n, w->hist_per_block, w->hist_out);
	if (err && !j->err)
		j->err = err;
}

static void agile_scan(void *arg)
{
	struct rt_job *j = arg;
	struct rt_work *w = j->w;
	unsigned nr_blocks = (w->scan_n + w->scan_block - 1) / w->scan_block;
	int err = block_scan_launch(j->pool,
				    (struct agile_dim3){ nr_blocks, 1, 1 },
				    (struct agile_dim3){ w->scan_block, 1, 1 },
				    0, w->scan_in, w->scan_out, w->scan_n);

	if (err && !j->err)
		j->err = err;
}

static void ocl_matlist(void *arg)
{
	struct rt_job *j = arg;
	int err = rt_ocl_matlist(j->ocl);

	if (err && !j->err)
		j->err = err;
}

static void ocl_reduce(void *arg)
{
	struct rt_job *j = arg;
	int err;

	j->w->red_total = 0;
	err = rt_ocl_reduce(j->ocl);
	if (err && !j->err)
		j->err = err;
}

static void ocl_transpose(void *arg)
{
	struct rt_job *j = arg;
	int err = rt_ocl_transpose(j->ocl);

	if (err && !j->err)
		j->err = err;
}

static void ocl_histogram(void *arg)
{
	struct rt_job *j = arg;
	int err;

	memset(j->w->hist_out, 0, sizeof(j->w->hist_out));
	err = rt_ocl_histogram(j->ocl);
	if (err && !j->err)
		j->err = err;
}

static void ocl_scan(void *arg)
{
	struct rt_job *j = arg;
	int err = rt_ocl_scan(j->ocl);

	if (err && !j->err)
		j->err = err;
}

static void omp_matlist(void *arg)
{
	struct rt_job *j = arg;

	rt_omp_matlist(j->w, j->threads);
}

static void omp_reduce(void *arg)
{
	struct rt_job *j = arg;

	rt_omp_reduce(j->w, j->threads);
}

static void omp_transpose(void *arg)
{
	struct rt_job *j = arg;

	rt_omp_transpose(j->w, j->threads);
}

static void serial_histogram(void *arg)
{
	struct rt_job *j = arg;

	rt_serial_histogram(j->w);
}

static void serial_scan(void *arg)
{
	struct rt_job *j = arg;

	rt_serial_scan(j->w);
}

/* ---- the data, and what each contender must get ---- */

static void fill(struct rt_work *w)
{
	size_t mm = (size_t)w->mm_count * w->mm_dim * w->mm_dim;
	size_t tr = (size_t)w->tr_n * w->tr_n;
	int dim = w->mm_dim;

	for (size_t i = 0; i < mm; i++)
		w->mm_a[i] = (float)((i * 7) % 11) - 5.0f;
	/* B[m]: the permutation that rotates A's columns by m + 1 */
	memset(w->mm_b, 0, mm * sizeof(float));
	for (int m = 0; m < w->mm_count; m++)
		for (int c = 0; c < dim; c++)
			w->mm_b[(size_t)m * dim * dim + c * dim +
				(c + m + 1) % dim] = 1.0f;
	for (unsigned i = 0; i < w->red_n; i++)
		w->red_in[i] = (float)(i * 2654435761u % 8);
	for (size_t i = 0; i < tr; i++)
		w->tr_in[i] = (float)((i * 37) % 101) * 0.5f;
	for (unsigned i = 0; i < w->hist_n; i++)
		w->hist_in[i] = i * 2654435761u >> 7;
	for (unsigned i = 0; i < w->scan_n; i++)
		w->scan_in[i] = (float)(i * 2654435761u % 8);
}

struct rt_results {
	float *mm_a, *red_out, *tr_out, *tr_smooth, *scan_out;
	unsigned long long red_total;
	unsigned hist_out[RT_HIST_BINS];
};

static size_t mm_bytes(const struct rt_work *w)
{
	return (size_t)w->mm_count * w->mm_dim * w->mm_dim * sizeof(float);
}

static size_t tr_bytes(const struct rt_work *w)
{
	return (size_t)w->tr_n * w->tr_n * sizeof(float);
}

static size_t red_bytes(const struct rt_work *w)
{
	return (w->red_n + w->red_block - 1) / w->red_block * sizeof(float);
}

static size_t scan_bytes(const struct rt_work *w)
{
	return w->scan_n * sizeof(float);
}

static void keep(const struct rt_work *w, struct rt_results *r)
{
	memcpy(r->mm_a, w->mm_a, mm_bytes(w));
	memcpy(r->red_out, w->red_out, red_bytes(w));
	memcpy(r->tr_out, w->tr_out, tr_bytes(w));
	memcpy(r->tr_smooth, w->tr_smooth, tr_bytes(w));
	r->red_total = w->red_total;
	memcpy(r->hist_out, w->hist_out, sizeof(r->hist_out));
	memcpy(r->scan_out, w->scan_out, scan_bytes(w));
}

static int same(const float *x, const float *y, size_t bytes)
{
	for (size_t i = 0; i < bytes / sizeof(float); i++)
		if (fabsf(x[i] - y[i]) > 1e-4f * (1.0f + fabsf(y[i])))
			return 0;
	return 1;
}

/* One checked run of each kernel from fresh data, against @want. */
static int check(struct rt_work *w, struct rt_job *j,
		 void (*const fns[NR_KERNELS])(void *),
		 const struct rt_results *want, const char *who)
{
	fill(w);
	for (int k = 0; k < NR_KERNELS; k++)
		fns[k](j);
	if (j->err)
		return j->err;
	if (!same(w->mm_a, want->mm_a, mm_bytes(w)) ||
	    !same(w->red_out, want->red_out, red_bytes(w)) ||
	    w->red_total != want->red_total ||
	    !same(w->tr_out, want->tr_out, tr_bytes(w)) ||
	    !same(w->tr_smooth, want->tr_smooth, tr_bytes(w)) ||
	    memcmp(w->hist_out, want->hist_out, sizeof(w->hist_out)) ||
	    !same(w->scan_out, want->scan_out, scan_bytes(w))) {
		fprintf(stderr, "agile-bench retarget: %s: wrong results\n",
			who);
		return -EPROTO;
	}
	return 0;
}

static void work_free(struct rt_work *w, struct rt_results *r)
{
	free(w->mm_a);
	free(w->mm_b);
	free(w->red_in);
	free(w->red_out);
	free(w->tr_in);
	free(w->tr_out);
	free(w->tr_smooth);
	free(w->hist_in);
	free(w->scan_in);
	free(w->scan_out);
	free(r->mm_a);
	free(r->red_out);
	free(r->tr_out);
	free(r->tr_smooth);
	free(r->scan_out);
}

static int work_alloc(struct rt_work *w, struct rt_results *r)
{
	w->mm_count = MM_COUNT;
	w->mm_dim = MM_DIM;
	w->red_n = RED_N;
	w->red_block = RED_BLOCK;
	w->tr_n = TR_N;
	w->tr_passes = TR_PASSES;
	w->hist_n = HIST_N;
	w->hist_block = HIST_BLOCK;
	w->hist_per_block = HIST_PER_BLOCK;
	w->scan_n = SCAN_N;
	w->scan_block = SCAN_BLOCK;
	w->mm_a = malloc(mm_bytes(w));
	w->mm_b = malloc(mm_bytes(w));
	w->red_in = malloc(w->red_n * sizeof(float));
	w->red_out = malloc(red_bytes(w));
	w->tr_in = malloc(tr_bytes(w));
	w->tr_out = malloc(tr_bytes(w));
	w->tr_smooth = malloc(tr_bytes(w));
	r->mm_a = malloc(mm_bytes(w));
	r->red_out = malloc(red_bytes(w));
	r->tr_out = malloc(tr_bytes(w));
	r->tr_smooth = malloc(tr_bytes(w));
	w->hist_in = malloc(w->hist_n * sizeof(unsigned));
	w->scan_in = malloc(scan_bytes(w));
	w->scan_out = malloc(scan_bytes(w));
	r->scan_out = malloc(scan_bytes(w));
	if (!w->mm_a || !w->mm_b || !w->red_in || !w->red_out || !w->tr_in ||
	    !w->tr_out || !w->tr_smooth || !r->mm_a || !r->red_out ||
	    !r->tr_out || !r->tr_smooth || !w->hist_in || !w->scan_in ||
	    !w->scan_out || !r->scan_out)
		return -ENOMEM;
	return 0;
}

int bench_retarget(const struct bench_opts *o)
{
	static const char *const names[NR_KERNELS] = { "matlist", "reduce",
						       "transpose", "histogram",
						       "scan" };
	/* agile-retarget / serial C: the targets */
	static const char *const serial_target[NR_KERNELS] = { NULL, NULL, NULL,
							       "<= 5",
							       "<= 10" };
	void (*const agile_fns[NR_KERNELS])(
		void *) = { agile_matlist, agile_reduce, agile_transpose,
			    agile_histogram, agile_scan };
	void (*const ocl_fns[NR_KERNELS])(void *) = { ocl_matlist, ocl_reduce,
						      ocl_transpose,
						      ocl_histogram, ocl_scan };
	/* the baseline and reference: OpenMP, or serial C */
	void (*const base_fns[NR_KERNELS])(
		void *) = { omp_matlist, omp_reduce, omp_transpose,
			    serial_histogram, serial_scan };
	struct rt_work w = { 0 };
	struct rt_results want = { 0 };
	struct rt_job job = { .w = &w, .threads = o->threads };
	char agile_name[32], omp_name[32], why[256] = "";
	int err;

	err = work_alloc(&w, &want);
	if (err)
		goto out;
	err = agile_launch_pool_create((uint32_t)o->threads, &job.pool);
	if (err)
		goto out;
	/* the reference: the baselines, from fresh data */
	fill(&w);
	for (int k = 0; k < NR_KERNELS; k++)
		base_fns[k](&job);
	keep(&w, &want);
	err = check(&w, &job, agile_fns, &want, "agile-retarget");
	if (err)
		goto out;
	/* PoCL's worker threads: as many as ours, unless the user says */
	snprintf(why, sizeof(why), "%d", o->threads);
	setenv("POCL_MAX_PTHREAD_COUNT", why, 0);
	if (rt_ocl_open(&w, &job.ocl, why, sizeof(why)) == 0) {
		err = check(&w, &job, ocl_fns, &want, "OpenCL");
		if (err)
			goto out;
	}

	snprintf(agile_name, sizeof(agile_name), "agile-retarget-%dt",
		 o->threads);
	snprintf(omp_name, sizeof(omp_name), "omp-%dt", o->threads);
	for (int k = 0; k < NR_KERNELS; k++) {
		const bool serial = k >= 3;
		const char *base = serial ? "serial" : omp_name;
		char bench[32];
		struct contender c[3] = {
			{ agile_name, o->threads, agile_fns[k], &job, o->reps },
			{ base, serial ? 1 : o->threads, base_fns[k], &job,
			  o->reps },
			{ "pocl", o->threads, ocl_fns[k], &job, o->reps },
		};

		snprintf(bench, sizeof(bench), "retarget-%s", names[k]);
		bench_run(bench, c, job.ocl ? 3 : 2);
		if (!job.ocl)
			bench_row_na(bench, "pocl", o->threads, why);
		bench_compare(bench, agile_name, base, false, serial_target[k]);
		if (job.ocl)
			bench_compare(bench, agile_name, "pocl", false, NULL);
	}
	err = job.err;
	bench_note(
		"retarget: %d %dx%d matrices; %u floats in blocks of %u; %dx%d transpose + %d smoothing rounds; histogram of %u values in blocks of %u threads, %u values a block; scan of %u floats in blocks of %u%s%s%s",
		MM_COUNT, MM_DIM, MM_DIM, RED_N, RED_BLOCK, TR_N, TR_N,
		TR_PASSES, HIST_N, HIST_BLOCK, HIST_PER_BLOCK, SCAN_N,
		SCAN_BLOCK, job.ocl ? "; OpenCL device: " : "",
		job.ocl ? rt_ocl_device(job.ocl) : "",
		job.ocl ? " (POCL_MAX_PTHREAD_COUNT threads)" : "");
out:
	rt_ocl_close(job.ocl);
	if (job.pool)
		agile_launch_pool_destroy(job.pool);
	work_free(&w, &want);
	return err;
}
