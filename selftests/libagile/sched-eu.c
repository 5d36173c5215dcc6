// SPDX-License-Identifier: MIT
/*
 * sched-eu - the scheduler's leaves on CPU execution units (seed 002 end
 * to end): an array sum whose leaves run as a two-phase kernel (per-lane
 * partial sums, a barrier, a tree reduction in shared memory) on the
 * worker's own EUs; whole leaves as ops->leaf calls on EUs; a failed lane's
 * error coming back from agile_sched_run_task; the mapping of process 500a
 * with as many EUs as workers, more (a leaf split across a worker's EUs),
 * an uneven number (one worker gets fewer) and fewer (a worker without an
 * EU runs its leaves on its CPU); shutdown with no thread or page left.
 */
#define _GNU_SOURCE
#include <agile/agile.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "offloadtest.h"
#include "tap.h"
#include "testutil.h"

#define N 200003
#define LONG_NS (10ULL * 1000 * 1000 * 1000)

static int64_t *data;
static int64_t expect_sum;

struct range {
	int64_t lo, hi;
};

struct sum_arg {
	int64_t cutoff;
	int64_t fail_at; /* the leaf holding it fails; -1: none */
	_Atomic int64_t total;
	uint32_t sum_opcode;
	_Atomic uint64_t eu_leaves; /* whole leaves that ran on an EU */
	_Atomic uint64_t cpu_leaves;
};

/* ---- the kernel: args: data, lo, hi, total, fail_at ---- */

struct sum_shared {
	uint32_t stride;
	uint32_t pad;
	int64_t partial[AGILE_MAX_LANES];
};

/* Phase 0: lane i sums its block of [lo, hi). */
static AGILE_LANE_FN int sum_blocks(uint32_t lane, uint32_t nr_lanes,
				    const __u64 *args, void *state,
				    void *shared)
{
	const int64_t *a = (const int64_t *)(uintptr_t)args[0];
	int64_t lo = (int64_t)args[1], hi = (int64_t)args[2];
	int64_t n = hi - lo, first = lo + n * lane / nr_lanes;
	int64_t last = lo + n * (lane + 1) / nr_lanes,
		fail_at = (int64_t)args[4];
	struct sum_shared *sh = shared;
	int64_t sum = 0;

	(void)state;
	if (first <= fail_at && fail_at < last)
		return -EIO;
	for (int64_t i = first; i < last; i++)
		sum += a[i];
	sh->partial[lane] = sum;
	return 0;
}

/* Phase 1, looped by sum_next: partial[i] += partial[i + stride]. */
static AGILE_LANE_FN int sum_fold(uint32_t lane, uint32_t nr_lanes,
				  const __u64 *args, void *state, void *shared)
{
	struct sum_shared *sh = shared;

	(void)args;
	(void)state;
	if (lane < sh->stride && lane + sh->stride < nr_lanes)
		sh->partial[lane] += sh->partial[lane + sh->stride];
	return 0;
}

/* Phase 2: lane 0 adds the block's sum to the total. */
static AGILE_LANE_FN int sum_publish(uint32_t lane, uint32_t nr_lanes,
				     const __u64 *args, void *state,
				     void *shared)
{
	struct sum_shared *sh = shared;

	(void)nr_lanes;
	(void)state;
	if (!lane)
		__atomic_fetch_add((int64_t *)(uintptr_t)args[3],
				   sh->partial[0], __ATOMIC_RELAXED);
	return 0;
}

static AGILE_LANE_FN uint32_t sum_next(uint32_t done, uint32_t nr_lanes,
				       const __u64 *args, void *shared)
{
	struct sum_shared *sh = shared;
	uint32_t half = 1;

	(void)args;
	if (done == 0) {
		while (half < nr_lanes)
			half *= 2;
		sh->stride = half / 2;
	} else if (done == 1) {
		sh->stride /= 2;
	} else {
		return AGILE_KERNEL_DONE;
	}
	return sh->stride ? 1 : 2;
}

static const agile_phase_fn sum_phases[] = { sum_blocks, sum_fold,
					     sum_publish };

/* ---- the task type ---- */

static bool range_cutoff(const void *task, void *arg)
{
	const struct range *r = task;
	const struct sum_arg *a = arg;

	return r->hi - r->lo <= a->cutoff;
}

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

/* The whole-leaf path: runs on an EU thread through "agile.leaf". */
static int range_leaf(void *task, void *arg)
{
	const struct range *r = task;
	struct sum_arg *a = arg;
	int64_t sum = 0;

	if (r->lo <= a->fail_at && a->fail_at < r->hi)
		return -ERANGE;
	for (int64_t i = r->lo; i < r->hi; i++)
		sum += data[i];
	atomic_fetch_add_explicit(&a->total, sum, memory_order_relaxed);
	atomic_fetch_add_explicit(&a->eu_leaves, 1, memory_order_relaxed);
	return 0;
}

static const struct agile_task_ops range_ops = {
	.task_size = sizeof(struct range),
	.cutoff = range_cutoff,
	.split = range_split,
	.leaf = range_leaf,
};

/* Part @part of @nr_parts of a leaf: a sub-range, 32 lanes of sum_*. */
static int encode_sum(const void *task, void *arg, uint32_t part,
		      uint32_t nr_parts, struct agile_task_reg *reg,
		      uint32_t nr_args, void *encode_arg)
{
	const struct range *r = task;
	struct sum_arg *a = arg;
	int64_t n = r->hi - r->lo;

	(void)encode_arg;
	if (nr_args < 5)
		return -EINVAL;
	reg->opcode = a->sum_opcode;
	reg->nr_parts = 32;
	reg->flags = 0;
	reg->args[0] = (uintptr_t)data;
	reg->args[1] = (__u64)(r->lo + n * part / nr_parts);
	reg->args[2] = (__u64)(r->lo + n * (part + 1) / nr_parts);
	reg->args[3] = (uintptr_t)&a->total;
	reg->args[4] = (__u64)a->fail_at;
	return 0;
}

/* Mappings of agile pages: the memfd ("agile-user") or /dev/agile. */
static int nr_agile_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "agile-user") || strstr(line, "/dev/agile");
	fclose(f);
	return n;
}

static int run_sum(struct offload_stack *s, struct sum_arg *a, int64_t fail_at)
{
	const struct agile_kernel sum = {
		.name = "sum",
		.nr_phases = 3,
		.phases = sum_phases,
		.next = sum_next,
		.shared_size = sizeof(struct sum_shared),
	};
	struct range root = { 0, N };
	const struct agile_kernel *k;

	if (agile_kernels_find(s->reg, "sum", &k))
		agile_kernels_register(s->reg, &sum, NULL);
	agile_kernels_find(s->reg, "sum", &k);
	a->sum_opcode = k->opcode;
	a->fail_at = fail_at;
	atomic_store(&a->total, 0);
	return agile_sched_run_task(s->sched, &range_ops, &root, a);
}

/*
 * Each leaf is split across all of its worker's EUs: a worker's EUs ran
 * the same number of tasks, and these add up to the leaves offloaded.
 * Returns how many EUs ran nothing (a worker that stole no work), or -1.
 */
static int check_split(struct offload_stack *s, uint32_t workers,
		       uint64_t offloads)
{
	uint64_t leaves = 0;
	int idle = 0;

	for (uint32_t w = 0; w < workers; w++) {
		struct agile_eu_stats st, st0;
		uint32_t first, count;

		agile_offload_eus(s->off, w, &first, &count);
		agile_eu_stats(s->pool, first, &st0);
		for (uint32_t i = first; i < first + count; i++) {
			agile_eu_stats(s->pool, i, &st);
			if (st.tasks != st0.tasks)
				return -1;
			idle += !st.tasks;
		}
		leaves += st0.tasks;
	}
	return leaves == offloads ? idle : -1;
}

static void test_config(uint32_t workers, uint32_t eus)
{
	struct sum_arg a = { .cutoff = 5000 };
	struct agile_offload_stats os;
	struct agile_sched_stats ss;
	struct offload_stack s;
	int err;

	err = offload_stack_setup(&s, workers, eus, 128, encode_sum, LONG_NS);
	if (!tap_ok(!err, "%u workers, %u EUs: set up (%s)", workers, eus,
		    agile_strerror(err))) {
		offload_stack_teardown(&s);
		return;
	}
	err = run_sum(&s, &a, -1);
	agile_sched_stats(s.sched, &ss);
	agile_offload_stats(s.off, &os);
	tap_ok(!err && atomic_load(&a.total) == expect_sum,
	       "%u workers, %u EUs: the array sum, %llu leaves offloaded (%s)",
	       workers, eus, (unsigned long long)ss.offloads,
	       agile_strerror(err));
	tap_ok(os.eu_leaves + os.cpu_leaves == ss.offloads &&
		       !os.fallback_leaves && !os.rerouted_leaves &&
		       (eus >= workers ? !os.cpu_leaves : 1),
	       "%u workers, %u EUs: offload stats: %llu on EUs, %llu on CPUs "
	       "without one",
	       workers, eus, (unsigned long long)os.eu_leaves,
	       (unsigned long long)os.cpu_leaves);
	if (eus >= workers) {
		int idle = check_split(&s, workers, ss.offloads);

		tap_ok(idle >= 0,
		       "%u workers, %u EUs: each leaf ran on all of its worker's EUs",
		       workers, eus);
		if (idle > 0)
			tap_diag("%d EUs idle: their worker stole no leaf",
				 idle);
	}
	err = run_sum(&s, &a, 123457);
	tap_ok(err == -EIO,
	       "%u workers, %u EUs: a failed lane's -EIO reaches the caller (%s)",
	       workers, eus, agile_strerror(err));
	err = run_sum(&s, &a, -1);
	tap_ok(!err && atomic_load(&a.total) == expect_sum,
	       "%u workers, %u EUs: the next run is clean", workers, eus);
	tap_ok(offload_stack_teardown(&s) == 0, "%u workers, %u EUs: shut down",
	       workers, eus);
}

static void test_mapping(void)
{
	struct agile_offload_opts oo;
	struct agile_kernels *reg;
	struct agile_eu_pool *pool;
	struct agile_offload *off;
	struct agile_dev_opts o;
	struct agile_dev *dev;
	uint32_t first, count;
	char got[64] = "";
	int err;

	agile_kernels_create(&reg);
	agile_dev_opts_init(&o);
	o.nr_slots = 7;
	err = agile_dev_open(&o, &dev);
	if (!err)
		err = agile_eu_pool_create(dev, reg, NULL, &pool);
	if (!tap_ok(!err, "7 EUs for the mapping: %s", agile_strerror(err)))
		return;
	agile_offload_opts_init(&oo);
	oo.nr_workers = 3;
	err = agile_offload_create(pool, &oo, &off);
	for (uint32_t w = 0; w < 3 && !err; w++) {
		agile_offload_eus(off, w, &first, &count);
		snprintf(got + strlen(got), sizeof(got) - strlen(got),
			 "%s%u+%u", w ? " " : "", first, count);
	}
	tap_ok(!err && !strcmp(got, "0+3 3+2 5+2"),
	       "7 EUs over 3 workers: %s (first+count)", got);
	tap_ok(agile_offload_eus(off, 3, &first, &count) == -EINVAL,
	       "worker out of range: -EINVAL");
	agile_offload_destroy(off);
	oo.nr_workers = 9;
	err = agile_offload_create(pool, &oo, &off);
	got[0] = 0;
	for (uint32_t w = 0; w < 9 && !err; w++) {
		agile_offload_eus(off, w, &first, &count);
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%u",
			 count);
	}
	tap_ok(!err && !strcmp(got, "111111100"),
	       "7 EUs over 9 workers: counts %s", got);
	agile_offload_destroy(off);
	oo.nr_workers = 0;
	tap_ok(agile_offload_create(pool, &oo, &off) == -EINVAL,
	       "0 workers: -EINVAL");
	tap_ok(agile_offload_bind(NULL, off) == -EINVAL,
	       "use_eus(NULL): -EINVAL");
	agile_eu_pool_destroy(pool);
	agile_dev_close(dev);
	agile_kernels_destroy(reg);
}

/* No encoder: whole leaves go to EUs as ops->leaf calls. */
static void test_whole_leaves(void)
{
	struct sum_arg a = { .cutoff = 3000 };
	struct agile_sched_stats ss;
	struct range root = { 0, N };
	uint64_t eu_tasks = 0;
	struct offload_stack s;
	int err;

	err = offload_stack_setup(&s, 2, 2, 128, NULL, LONG_NS);
	if (!tap_ok(!err, "whole leaves: set up (%s)", agile_strerror(err))) {
		offload_stack_teardown(&s);
		return;
	}
	a.fail_at = -1;
	err = agile_sched_run_task(s.sched, &range_ops, &root, &a);
	agile_sched_stats(s.sched, &ss);
	for (uint32_t i = 0; i < 2; i++) {
		struct agile_eu_stats st;

		agile_eu_stats(s.pool, i, &st);
		eu_tasks += st.tasks;
	}
	tap_ok(!err && atomic_load(&a.total) == expect_sum &&
		       eu_tasks == ss.offloads &&
		       atomic_load(&a.eu_leaves) == ss.offloads,
	       "whole leaves on EUs: sum right, %llu leaves = %llu EU tasks",
	       (unsigned long long)ss.offloads, (unsigned long long)eu_tasks);
	a.fail_at = 77777;
	err = agile_sched_run_task(s.sched, &range_ops, &root, &a);
	tap_ok(err == -ERANGE, "a leaf's -ERANGE on an EU reaches the caller");
	tap_ok(offload_stack_teardown(&s) == 0, "whole leaves: shut down");
}

int main(void)
{
	int threads0 = settled_threads();

	data = malloc(N * sizeof(*data));
	if (!data)
		return 1;
	for (int64_t i = 0; i < N; i++) {
		data[i] = (i * 7919) % 1000 - 500;
		expect_sum += data[i];
	}
	test_mapping();
	test_config(2, 2); /* one EU per worker */
	test_config(2, 6); /* three per worker: leaves split across them */
	test_config(2, 5); /* uneven: 3 and 2 */
	test_config(3, 2); /* fewer EUs: worker 2 runs leaves on its CPU */
	test_config(1, 1);
	test_whole_leaves();
	tap_ok(threads_settle(threads0) == threads0 && nr_agile_mappings() == 0,
	       "no thread and no agile mapping left (%d threads, %d mappings)",
	       nr_threads(), nr_agile_mappings());
	free(data);
	return tap_done();
}
