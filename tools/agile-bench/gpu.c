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
 * waits.
 *
 * Then the distribution of single round trips (each timed alone; notes
 * give p50, p99 and the maximum, rows the median and spread):
 *    hot        back to back, the EU's poll never backs off
 *    idle       each after 2 ms of nothing, the EU polling at its
 *               slowest backoff
 *    launch-1   one plain launch + synchronise, for the ratio
 *    echo, echo-launch   the same two for the smallest leaf (axpy of one
 *               element on one lane): the cost of the dispatch alone
 * and scaling: echoes per second with 1, 2, 4 ... EUs (up to what the
 * device's share allows, AGILE_GPU_SHARE), posted by up to 8 threads,
 * each posting to all its EUs and then waiting for them.
 *
 * Without a GPU that starts GPU EUs every row is "skipped" with the
 * reason in a note, which is not a failure.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/kernels.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define GPU_N 4096
#define WAIT_NS (10ULL * 1000 * 1000 * 1000)
#define IDLE_GAP_NS (2 * 1000 * 1000)
#define MAX_SCALE_EUS 1024
#define MAX_POSTERS 8
/* Each EU's y in a cache line of its own in the scaling runs. */
#define LINE_DOUBLES 8
#define MAX_REPS_SCALE 64

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
	bench_row_na("gpu", "hot", 1, "skipped: no GPU EUs");
	bench_row_na("gpu", "idle", 1, "skipped: no GPU EUs");
	bench_row_na("gpu", "launch-1", 1, "skipped: no GPU EUs");
	bench_note("gpu: skipped: %s", why);
	fprintf(stderr, "  gpu    skipped: %s\n", why);
}

static int cmp_ms(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of @n sorted samples. */
static double percentile(const double *sorted, int n, double p)
{
	int k = (int)(p / 100.0 * n + 0.999999);

	return sorted[k < 1 ? 0 : (k > n ? n : k) - 1];
}

/*
 * @n single round trips of EU 0's task, each timed alone, @gap_ns of
 * sleep before each; a row and a note with p50, p99 and the maximum.
 */
static int one_by_one(struct agile_eu_pool *pool, const char *variant, int n,
		      long gap_ns, bool launch)
{
	struct timespec gap = { 0, gap_ns };
	double *ms = calloc((size_t)n, sizeof(*ms)), p50, p99;
	int err = ms ? 0 : -ENOMEM;

	for (int i = 0; i < n && !err; i++) {
		double t;

		if (gap_ns)
			nanosleep(&gap, NULL);
		t = bench_now_ms();
		err = launch ? agile_eu_run_launch(pool, 0, NULL) :
			       agile_eu_call(pool, 0, WAIT_NS, NULL);
		ms[i] = bench_now_ms() - t;
	}
	if (!err) {
		qsort(ms, (size_t)n, sizeof(*ms), cmp_ms);
		p50 = percentile(ms, n, 50);
		p99 = percentile(ms, n, 99);
		bench_note("gpu: %s: %d round trips: p50 %.2f us, p99 %.2f us, "
			   "max %.2f us",
			   variant, n, p50 * 1e3, p99 * 1e3, ms[n - 1] * 1e3);
		bench_row("gpu", variant, 1, bench_summarize(ms, n));
	}
	free(ms);
	return err;
}

struct scale_poster {
	struct agile_eu_pool *pool;
	double *y; /* one line per EU */
	uint64_t dx, dy, a_opcode;
	uint32_t first, stride, nr_eus;
	int64_t rounds;
	int err;
};

/* Post to each of this thread's EUs, then wait for each; check the echo. */
static void *scale_post(void *arg)
{
	struct scale_poster *p = arg;

	for (int64_t round = 1; round <= p->rounds && !p->err; round++) {
		for (uint32_t eu = p->first; eu < p->nr_eus && !p->err;
		     eu += p->stride) {
			struct agile_task_reg *reg;
			double seq = (double)(round * MAX_SCALE_EUS + eu);

			p->err = agile_eu_task_reg(p->pool, eu, &reg, NULL);
			if (p->err)
				break;
			p->y[eu * LINE_DOUBLES] = 0;
			reg->opcode = (uint32_t)p->a_opcode;
			reg->nr_parts = 1;
			reg->flags = 0;
			memcpy(&reg->args[0], &seq, sizeof(seq));
			reg->args[1] = p->dx;
			reg->args[2] = p->dy + (uint64_t)eu * LINE_DOUBLES *
						       sizeof(double);
			reg->args[3] = 1;
			p->err = agile_eu_submit(p->pool, eu);
		}
		for (uint32_t eu = p->first; eu < p->nr_eus && !p->err;
		     eu += p->stride) {
			p->err = agile_eu_wait(p->pool, eu, WAIT_NS, NULL);
			if (!p->err &&
			    p->y[eu * LINE_DOUBLES] !=
				    (double)(round * MAX_SCALE_EUS + eu))
				p->err = -EPROTO;
		}
	}
	return NULL;
}

/*
 * Echoes per second on @nr_eus EUs of a pool of their own, the median of
 * @reps runs of @tasks echoes.  -ENOSPC: more EUs than the share allows.
 */
static int scale_run(struct agile_kernels *kernels, uint32_t opcode,
		     uint32_t nr_eus, int64_t tasks, int reps, double *rate)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t ybytes =
		((size_t)nr_eus * LINE_DOUBLES * sizeof(double) + page - 1) /
		page * page;
	struct scale_poster posters[MAX_POSTERS];
	pthread_t threads[MAX_POSTERS];
	struct agile_eu_pool_opts po;
	struct agile_eu_pool_info info;
	struct agile_eu_pool *pool = NULL;
	struct agile_dev_opts dopts;
	struct agile_dev *dev = NULL;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t nr_posters = nr_eus < MAX_POSTERS ? nr_eus : MAX_POSTERS;
	double *x = aligned_alloc(page, page), *y = aligned_alloc(page, ybytes);
	double per_s[MAX_REPS_SCALE];
	uint64_t dx = 0, dy = 0;
	int err = x && y ? 0 : -ENOMEM;

	if (cpus > 1 && nr_posters > (uint32_t)cpus - 1)
		nr_posters = (uint32_t)cpus - 1;
	if (reps > MAX_REPS_SCALE)
		reps = MAX_REPS_SCALE;
	if (!err) {
		memset(x, 0, page);
		x[0] = 1;
		agile_dev_opts_init(&dopts);
		dopts.nr_slots = nr_eus;
		err = agile_dev_open(&dopts, &dev);
	}
	if (!err) {
		agile_eu_pool_opts_init(&po);
		po.nr_eus = nr_eus;
		po.flags = AGILE_EU_POOL_GPU_ONLY;
		po.wait_spin_ns = 1000000000ULL;
		err = agile_eu_pool_create(dev, kernels, &po, &pool);
	}
	if (!err &&
	    (agile_eu_pool_info(pool, &info) || info.kind != AGILE_EU_KIND_GPU))
		err = -ENODEV;
	if (!err)
		err = agile_eu_pool_map(pool, x, page, &dx);
	if (!err)
		err = agile_eu_pool_map(pool, y, ybytes, &dy);
	/* One untimed run, then @reps timed ones. */
	for (int rep = -1; rep < reps && !err; rep++) {
		double t0 = bench_now_ms(), t;
		uint32_t started = 0;

		for (uint32_t i = 0; i < nr_posters; i++) {
			posters[i] = (struct scale_poster){
				pool,
				y,
				dx,
				dy,
				opcode,
				i,
				nr_posters,
				nr_eus,
				tasks / nr_eus ? tasks / nr_eus : 1,
				0
			};
			if (pthread_create(&threads[i], NULL, scale_post,
					   &posters[i])) {
				err = -EAGAIN;
				break;
			}
			started++;
		}
		for (uint32_t i = 0; i < started; i++) {
			pthread_join(threads[i], NULL);
			if (!err)
				err = posters[i].err;
		}
		t = bench_now_ms() - t0;
		if (rep >= 0)
			per_s[rep] = (double)(posters[0].rounds * nr_eus) /
				     (t / 1e3);
	}
	if (!err) {
		qsort(per_s, (size_t)reps, sizeof(per_s[0]), cmp_ms);
		*rate = per_s[reps / 2];
	}
	if (pool)
		agile_eu_pool_destroy(pool);
	if (dev)
		agile_dev_close(dev);
	free(x);
	free(y);
	return err;
}

/* launch + synchronise over the doorbell, single round trips' medians. */
static void ratio_note(const char *doorbell, const char *launch,
		       const char *what)
{
	struct timing td, tl;

	if (!bench_find_timing("gpu", doorbell, &td) &&
	    !bench_find_timing("gpu", launch, &tl) && td.median_ms > 0)
		bench_note("gpu: %s: launch + synchronise / doorbell round "
			   "trip (medians): %.2fx",
			   what, tl.median_ms / td.median_ms);
}

/* 1, 2, 4 ... EUs until the share refuses; the ratio of the last to 1. */
static int scaling(struct agile_kernels *kernels, uint32_t opcode,
		   const struct bench_opts *o)
{
	int64_t tasks = o->trips / 20 > 0 ? o->trips / 20 : 1;
	double one = 0, rate = 0;
	int err = 0;

	for (uint32_t n = 1; n <= MAX_SCALE_EUS; n *= 2) {
		/* At least 100 rounds: thread starts do not count. */
		err = scale_run(kernels, opcode, n,
				tasks > 100 * (int64_t)n ? tasks :
							   100 * (int64_t)n,
				o->reps, &rate);
		if (err == -ENOSPC && n > 1) {
			/* Past the share: done (stderr has the reason). */
			bench_note("gpu: scaling: %u EUs refused: %s", n,
				   agile_strerror(err));
			return 0;
		}
		if (err)
			return err;
		if (n == 1)
			one = rate;
		bench_note("gpu: scaling: %u EUs: %.0f echoes/s, %.1fx one EU "
			   "(median of %d)",
			   n, rate, one > 0 ? rate / one : 0, o->reps);
	}
	return 0;
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
	bool quiet;
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
	quiet = !getenv("AGILE_QUIET");
	if (quiet)
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
	if (!err)
		err = one_by_one(pool, "hot", (int)(run.trips * 10), 0, false);
	if (!err)
		err = one_by_one(pool, "idle", 500, IDLE_GAP_NS, false);
	if (!err)
		err = one_by_one(pool, "launch-1", (int)run.trips, 0, true);
	/* The smallest leaf: one element, one lane - the dispatch alone. */
	if (!err) {
		reg->nr_parts = 1;
		reg->args[3] = 1;
		err = one_by_one(pool, "echo", (int)(run.trips * 10), 0, false);
	}
	if (!err)
		err = one_by_one(pool, "echo-launch", (int)run.trips, 0, true);
	if (!err) {
		ratio_note("hot", "launch-1", "axpy 4096");
		ratio_note("echo", "echo-launch", "one element");
	}
	/* One persistent kernel per device and process: this pool first. */
	if (pool) {
		agile_eu_pool_destroy(pool);
		pool = NULL;
	}
	/* A refusal's reason to stderr: why the scaling ends where it does. */
	if (quiet)
		unsetenv("AGILE_QUIET");
	if (!err)
		err = scaling(kernels, axpy->opcode, o);
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
