// SPDX-License-Identifier: MIT
/*
 * offload-vector.c - a vector kernel on execution units: y = a * x + y.
 *
 * The whole of seed 002 in one program: a pool of workers splits the
 * array's range in halves down to a grain (agile_sched_run_task), idle
 * workers steal the big halves, and each leaf goes through the worker's
 * doorbell to its own execution unit (EU), which runs the "axpy" kernel
 * across its lanes and rings back.  The kernel is one phase, written per
 * lane as it would be for a GPU.
 *
 * The device is /dev/agile when the module is loaded, else the user
 * backend (memfd + futex); AGILE_BACKEND=kmod|user chooses.
 *
 *	cc -O2 offload-vector.c $(pkg-config --cflags --libs agile) -o offload-vector
 *	./offload-vector [length [grain]]
 *
 * Exits 0 when the result matches a plain loop.
 */
#define _GNU_SOURCE
#include <agile/agile.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LANES 32 /* lanes per EU task */
#define REPS 5 /* benchmark pass: best of REPS */

/* The run's argument, seen by every callback. */
struct axpy_arg {
	double a;
	const double *x;
	double *y;
	int64_t grain;
	uint32_t opcode; /* the registered "axpy" kernel */
};

/* A task: the range [lo, hi) of the array. */
struct range {
	int64_t lo, hi;
};

/*
 * The kernel's only phase, run once per lane.  args: a (the bits of a
 * double), x, y, n.  Lane i of nr_lanes takes its own block of [0, n).
 */
static AGILE_LANE_FN int axpy_phase(uint32_t lane, uint32_t nr_lanes,
				    const __u64 *args, void *state,
				    void *shared)
{
	double a;
	const double *x = (const double *)(uintptr_t)args[1];
	double *y = (double *)(uintptr_t)args[2];
	uint64_t n = args[3];
	uint64_t lo = n * lane / nr_lanes, hi = n * (lane + 1) / nr_lanes;

	(void)state;
	(void)shared;
	memcpy(&a, &args[0], sizeof(a));
	for (uint64_t i = lo; i < hi; i++)
		y[i] = a * x[i] + y[i];
	return 0;
}

static const agile_phase_fn axpy_phases[] = { axpy_phase };

static const struct agile_kernel axpy_kernel = {
	.name = "axpy",
	.nr_phases = 1,
	.phases = axpy_phases,
};

/* Process 500b: a range at most a grain long is a leaf ... */
static bool range_cutoff(const void *task, void *arg)
{
	const struct range *r = task;
	const struct axpy_arg *p = arg;

	return r->hi - r->lo <= p->grain;
}

/* ... anything longer splits in two. */
static int range_split(const void *task, void *children, void *arg)
{
	const struct range *r = task;
	struct range *c = children;
	int64_t mid = r->lo + (r->hi - r->lo) / 2;

	(void)arg;
	c[0] = (struct range){ r->lo, mid };
	c[1] = (struct range){ mid, r->hi };
	return 2;
}

/* A leaf on the CPU: only used by a scheduler without EUs. */
static int range_leaf(void *task, void *arg)
{
	const struct range *r = task;
	struct axpy_arg *p = arg;

	for (int64_t i = r->lo; i < r->hi; i++)
		p->y[i] = p->a * p->x[i] + p->y[i];
	return 0;
}

static const struct agile_task_ops range_ops = {
	.task_size = sizeof(struct range),
	.cutoff = range_cutoff,
	.split = range_split,
	.leaf = range_leaf,
};

/*
 * Part @part of @nr_parts of a leaf, one per EU of the worker: a slice
 * of the leaf's range, written into that EU's task register as an axpy
 * task of LANES lanes.
 */
static int encode_axpy(const void *task, void *arg, uint32_t part,
		       uint32_t nr_parts, struct agile_task_reg *reg,
		       uint32_t nr_args, void *encode_arg)
{
	const struct range *r = task;
	const struct axpy_arg *p = arg;
	int64_t n = r->hi - r->lo;
	int64_t lo = r->lo + n * part / nr_parts;
	int64_t hi = r->lo + n * (part + 1) / nr_parts;

	(void)encode_arg;
	if (nr_args < 4)
		return -EINVAL;
	reg->opcode = p->opcode;
	reg->nr_parts = LANES;
	reg->flags = 0;
	memcpy(&reg->args[0], &p->a, sizeof(p->a));
	reg->args[1] = (uintptr_t)(p->x + lo);
	reg->args[2] = (uintptr_t)(p->y + lo);
	reg->args[3] = (__u64)(hi - lo);
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void plain_axpy(double a, const double *x, double *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = a * x[i] + y[i];
}

static int nr_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return CPU_COUNT(&set);
}

int main(int argc, char **argv)
{
	int64_t n = argc > 1 ? atoll(argv[1]) : 1 << 20;
	int64_t grain = argc > 2 ? atoll(argv[2]) : 1 << 14;
	uint32_t workers = nr_cpus();
	struct agile_kernels *kernels = NULL;
	struct agile_eu_pool *pool = NULL;
	struct agile_offload *off = NULL;
	struct agile_sched *sched = NULL;
	struct agile_dev *dev = NULL;
	struct agile_offload_opts oo;
	struct agile_eu_pool_opts popts;
	struct agile_sched_opts so;
	struct agile_dev_opts dopts;
	struct agile_sched_stats ss;
	struct axpy_arg p = { .a = 2.0, .grain = grain };
	struct range root = { 0, n };
	uint64_t eu_tasks = 0, eu_lanes = 0;
	double *x, *y, *ref, t, t_off = 1e30, t_plain = 1e30;
	int64_t bad = 0;
	int err;

	if (n < 1 || grain < 1) {
		fprintf(stderr, "usage: %s [length [grain]]\n", argv[0]);
		return 2;
	}
	x = malloc(n * sizeof(*x));
	y = malloc(n * sizeof(*y));
	ref = malloc(n * sizeof(*ref));
	if (!x || !y || !ref)
		return 1;
	for (int64_t i = 0; i < n; i++) {
		x[i] = i % 1000; /* small integers: every result is exact */
		y[i] = ref[i] = i % 7;
	}
	p.x = x;
	p.y = y;

	/* The kernel registry, and the axpy kernel in it. */
	err = agile_kernels_create(&kernels);
	if (!err)
		err = agile_kernels_register(kernels, &axpy_kernel, &p.opcode);

	/* One slot (doorbell + task register) per EU, one EU per worker. */
	agile_dev_opts_init(&dopts);
	dopts.nr_slots = workers;
	if (!err)
		err = agile_dev_open(&dopts, &dev);
	/* GPU EUs where a usable GPU is found, else CPU EUs (said once). */
	agile_eu_pool_opts_init(&popts);
	popts.flags = AGILE_EU_POOL_AUTO;
	if (!err)
		err = agile_eu_pool_create(dev, kernels, &popts, &pool);

	/* Map the workers to the EUs; leaves are cut by encode_axpy. */
	agile_offload_opts_init(&oo);
	oo.nr_workers = workers;
	oo.encode = encode_axpy;
	if (!err)
		err = agile_offload_create(pool, &oo, &off);

	/* The scheduler, with the offload as its leaf hook. */
	agile_sched_opts_init(&so);
	so.flags = AGILE_SCHED_QUIET;
	if (!err)
		err = agile_offload_bind(&so, off);
	if (!err)
		err = agile_sched_create(&so, &sched);
	if (err) {
		fprintf(stderr, "setup: %s\n", agile_strerror(err));
		goto out;
	}

	/* One checked run: the task tree against a plain loop. */
	err = agile_sched_run_task(sched, &range_ops, &root, &p);
	if (err) {
		fprintf(stderr, "agile_sched_run_task: %s\n",
			agile_strerror(err));
		goto out;
	}
	plain_axpy(p.a, x, ref, n);
	for (int64_t i = 0; i < n; i++)
		bad += y[i] != ref[i];

	agile_sched_stats(sched, &ss);
	for (int i = 0; i < agile_eu_pool_nr_eus(pool); i++) {
		struct agile_eu_stats es;

		agile_eu_stats(pool, i, &es);
		eu_tasks += es.tasks;
		eu_lanes += es.lanes;
	}
	printf("backend %s, %u workers, %d EUs, n %lld, grain %lld\n",
	       agile_dev_backend_name(agile_dev_backend(dev)), workers,
	       agile_eu_pool_nr_eus(pool), (long long)n, (long long)grain);
	printf("steals %llu, offloads %llu, EU tasks %llu, lanes %llu\n",
	       (unsigned long long)ss.steals, (unsigned long long)ss.offloads,
	       (unsigned long long)eu_tasks, (unsigned long long)eu_lanes);
	printf("result: %s (%lld wrong)\n", bad ? "WRONG" : "ok",
	       (long long)bad);

	/* A short benchmark pass: best of REPS, offloaded and plain. */
	for (int r = 0; r < REPS && !err; r++) {
		t = now();
		err = agile_sched_run_task(sched, &range_ops, &root, &p);
		t = now() - t;
		t_off = t < t_off ? t : t_off;
		t = now();
		plain_axpy(p.a, x, ref, n);
		t = now() - t;
		t_plain = t < t_plain ? t : t_plain;
	}
	if (err)
		fprintf(stderr, "benchmark: %s\n", agile_strerror(err));
	else
		printf("time: offloaded %.3f ms, plain loop %.3f ms, ratio %.2f\n",
		       t_off * 1e3, t_plain * 1e3, t_off / t_plain);

out:
	/* Scheduler, offload, EUs (DISCONNECT), device, registry. */
	if (sched)
		agile_sched_destroy(sched);
	if (off)
		agile_offload_destroy(off);
	if (pool)
		agile_eu_pool_destroy(pool);
	if (dev)
		agile_dev_close(dev);
	if (kernels)
		agile_kernels_destroy(kernels);
	free(x);
	free(y);
	free(ref);
	return err || bad ? 1 : 0;
}
