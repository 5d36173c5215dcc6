// SPDX-License-Identifier: MIT
/*
 * eu-gpu-bringup - the first contact of GPU EUs with a GPU, one step at a
 * time (make check-gpu runs each step under its own timeout through
 * eu-gpu-bringup.sh, so that a hang names its step):
 *
 *   versions   what the probe saw: runtime, driver, device, architecture,
 *              the code object it would load, the settings (AGILE_GPU_*)
 *   launch     load the code object and launch one EU, DISCONNECT it,
 *              destroy the pool; the times of each
 *   opcode     a round trip with an opcode the GPU lacks: -AGILE_E_OPCODE,
 *              no lane run, and the EU still serves the next task
 *   echo N     N sequence-number echoes on one EU: the number goes out in
 *              the task's arguments (axpy's a, with x = 1, y = 0) and must
 *              come back in memory the GPU wrote before it stored IDLE;
 *              latency p50/p99/max
 *   echo-all N N echoes over every EU the device's share allows, posted
 *              by several threads at once, each EU its own cache line
 *   map        while the kernel runs: map a buffer, use it, unmap it, map
 *              another, map the first again (the same address back), and a
 *              one-shot launch of the same code beside the persistent
 *              kernel; the doorbell still serves after each
 *   badptr     a task whose pointer is not mapped: the wait reports the
 *              device's error (-AGILE_E_GPU) in bounded time instead of
 *              hanging, and destroy is bounded; last, since the device's
 *              context is dead for this process afterwards
 *
 * Each step prints TAP and exits 0 when it passed.  With no step: where
 * a GPU is usable, every step in the order above (echo 100000); where
 * none is, every step against the stand-in runtime (gpu-mock.c), as HIP
 * and as CUDA, in child processes (small N), which checks the sequence
 * and its checks, not the GPU.  "versions" exits 77 when no GPU is usable.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/gpu.h>
#include <agile/kernels.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eu/gpu_impl.h"
#include "tap.h"

#define WAIT_NS (10ULL * 1000 * 1000 * 1000)
/* Each EU's result in a cache line of its own. */
#define LINE_DOUBLES 8
#define MAX_SLOTS 1024
#define MAX_POSTERS 8
/* An opcode nothing registers (the registry hands out small numbers). */
#define UNKNOWN_OPCODE 0xfffeu

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static uint64_t double_bits(double d)
{
	uint64_t bits;

	memcpy(&bits, &d, sizeof(bits));
	return bits;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of @n sorted samples. */
static double pct(const double *sorted, size_t n, double p)
{
	size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);

	return sorted[k ? (k > n ? n : k) - 1 : 0];
}

/* One context, the built-in kernels, a pool of GPU EUs (or none). */
struct rig {
	struct agile_kernels *reg;
	struct agile_dev *dev;
	struct agile_eu_pool *pool;
	const struct agile_kernel *axpy;
	uint32_t nr_eus;
	double *x, *y; /* x[0] = 1; y: one line per EU */
	size_t bytes;
	uint64_t dx, dy;
};

static int rig_pool(struct rig *r, uint32_t nr_slots, uint32_t nr_eus)
{
	struct agile_eu_pool_opts po;
	struct agile_eu_pool_info info;
	struct agile_dev_opts o;
	int err;

	agile_dev_opts_init(&o);
	o.nr_slots = nr_slots;
	err = agile_dev_open(&o, &r->dev);
	if (err)
		return err;
	agile_eu_pool_opts_init(&po);
	po.nr_eus = nr_eus;
	po.flags = AGILE_EU_POOL_GPU_ONLY;
	po.wait_spin_ns = 1000000000ULL;
	err = agile_eu_pool_create(r->dev, r->reg, &po, &r->pool);
	if (err) {
		agile_dev_close(r->dev);
		r->dev = NULL;
		return err;
	}
	if (agile_eu_pool_info(r->pool, &info) ||
	    info.kind != AGILE_EU_KIND_GPU)
		return -ENODEV;
	r->nr_eus = nr_eus;
	return 0;
}

/* A pool of the most EUs the device's share allows (and the slots). */
static int rig_pool_max(struct rig *r)
{
	int err = -ENOSPC;

	for (uint32_t n = MAX_SLOTS; n >= 1 && err == -ENOSPC; n /= 2)
		err = rig_pool(r, n, n);
	return err;
}

static int rig_buffers(struct rig *r)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int err;

	r->bytes =
		((size_t)r->nr_eus * LINE_DOUBLES * sizeof(double) + page - 1) /
		page * page;
	r->x = aligned_alloc(page, page);
	r->y = aligned_alloc(page, r->bytes);
	if (!r->x || !r->y)
		return -ENOMEM;
	memset(r->x, 0, page);
	memset(r->y, 0, r->bytes);
	r->x[0] = 1;
	err = agile_eu_pool_map(r->pool, r->x, page, &r->dx);
	if (!err)
		err = agile_eu_pool_map(r->pool, r->y, r->bytes, &r->dy);
	if (!err)
		err = agile_kernels_find(r->reg, AGILE_KERNEL_AXPY, &r->axpy);
	return err;
}

static void rig_free(struct rig *r)
{
	if (r->pool)
		tap_ok_call(agile_eu_pool_destroy(r->pool), "destroy the pool");
	if (r->dev)
		agile_dev_close(r->dev);
	free(r->x);
	free(r->y);
	r->pool = NULL;
	r->dev = NULL;
	r->x = r->y = NULL;
}

/* EU @eu's task: y[eu line] = seq * 1 + 0. */
static int echo_post(struct rig *r, uint32_t eu, uint64_t seq)
{
	struct agile_task_reg *tr;
	int err = agile_eu_task_reg(r->pool, eu, &tr, NULL);

	if (err)
		return err;
	r->y[(size_t)eu * LINE_DOUBLES] = 0;
	tr->opcode = r->axpy->opcode;
	tr->nr_parts = 1;
	tr->flags = 0;
	tr->args[0] = double_bits((double)seq);
	tr->args[1] = r->dx;
	tr->args[2] = r->dy + (uint64_t)eu * LINE_DOUBLES * sizeof(double);
	tr->args[3] = 1;
	return agile_eu_submit(r->pool, eu);
}

/* Waits for EU @eu's echo of @seq; -EPROTO when another value came. */
static int echo_wait(struct rig *r, uint32_t eu, uint64_t seq)
{
	int err = agile_eu_wait(r->pool, eu, WAIT_NS, NULL);

	if (!err && r->y[(size_t)eu * LINE_DOUBLES] != (double)seq)
		err = -EPROTO;
	return err;
}

static int echo_one(struct rig *r, uint32_t eu, uint64_t seq)
{
	int err = echo_post(r, eu, seq);

	return err ? err : echo_wait(r, eu, seq);
}

/* ---- the steps ---- */

static int step_versions(void)
{
	static const char *const knobs[] = {
		"AGILE_GPU_SHARE",
		"AGILE_GPU_WATCHDOG",
		"AGILE_GPU_STOP_TIMEOUT_MS",
		"AGILE_GPU_CODE_DIR",
		"AGILE_EU_POOL",
		"CUDA_VISIBLE_DEVICES",
		"HIP_VISIBLE_DEVICES",
		"CUDA_DEVICE_MAX_CONNECTIONS",
		"GPU_MAX_HW_QUEUES",
	};
	struct agile_gpu_info gpus[8];
	char why[1024], path[1024], where[1024];
	unsigned int nr = 0;
	int usable = agile__gpu_status(why, sizeof(why));

	tap_diag("probe: %s", why);
	if (!agile_gpu_probe(gpus, 8, &nr))
		for (unsigned int i = 0; i < nr && i < 8; i++)
			tap_diag("GPU %u: %s, %s, bus %s", gpus[i].index,
				 gpus[i].vendor == AGILE_GPU_VENDOR_AMD ?
					 "AMD" :
					 "NVIDIA",
				 gpus[i].name, gpus[i].pci_bus_id);
	for (int v = 0; v < 2; v++) {
		const char *file = v ? AGILE_GPU_CODE_CUDA : AGILE_GPU_CODE_HIP;

		if (!agile__gpu_code_find(file, path, sizeof(path), where,
					  sizeof(where)))
			tap_diag("code object: %s", path);
		else
			tap_diag("code object %s: %s", file, where);
	}
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		tap_diag("%s=%s", knobs[i],
			 getenv(knobs[i]) ? getenv(knobs[i]) : "(unset)");
	if (!usable) {
		tap_skip("GPU bring-up", "no usable GPU");
		tap_done();
		return 77;
	}
	tap_ok(1, "a usable GPU");
	return tap_done();
}

static void step_launch(struct rig *r)
{
	struct agile_eu_stats st;
	double t0 = now_ms(), t1, t2;
	int err = rig_pool(r, 1, 1);

	t1 = now_ms();
	if (!tap_ok(!err, "load the code object, launch one EU: %s (%.1f ms)",
		    agile_strerror(err), t1 - t0))
		return;
	tap_ok(!agile_eu_stats(r->pool, 0, &st) && st.connected == 1,
	       "the EU is connected");
	err = agile_eu_disconnect(r->pool, 0, WAIT_NS);
	t2 = now_ms();
	tap_ok(!err, "DISCONNECT it: %s (%.3f ms)", agile_strerror(err),
	       t2 - t1);
	tap_ok(!agile_eu_stats(r->pool, 0, &st) && st.connected == 0,
	       "the EU is no longer connected");
	tap_ok(agile_eu_submit(r->pool, 0) == -ENOTCONN,
	       "a task for it is refused: -ENOTCONN");
	t1 = now_ms();
	rig_free(r);
	tap_diag("destroy: %.1f ms", now_ms() - t1);
}

static void step_opcode(struct rig *r)
{
	struct agile_task_reg *tr;
	uint32_t lane = 0;
	int err = rig_pool(r, 1, 1);

	if (!tap_ok(!err, "one GPU EU: %s", agile_strerror(err)))
		return;
	if (!tap_ok_call(rig_buffers(r), "map the buffers"))
		goto out;
	agile_eu_task_reg(r->pool, 0, &tr, NULL);
	tr->opcode = UNKNOWN_OPCODE;
	tr->nr_parts = 1;
	tr->flags = 0;
	err = agile_eu_call(r->pool, 0, WAIT_NS, &lane);
	tap_ok(err == -AGILE_E_OPCODE && lane == AGILE_EU_NO_LANE &&
		       tr->status == 0,
	       "unknown opcode: %s, lane %u, status %#llx (want the opcode "
	       "error, no lane, nothing run)",
	       agile_strerror(err), lane, (unsigned long long)tr->status);
	err = echo_one(r, 0, 12345);
	tap_ok(!err, "the EU serves the next task: %s", agile_strerror(err));
out:
	rig_free(r);
}

static void report_latency(const char *what, double *ms, size_t n)
{
	if (!n)
		return;
	qsort(ms, n, sizeof(*ms), cmp_double);
	tap_diag("%s: %zu round trips, p50 %.2f us, p99 %.2f us, max %.2f us",
		 what, n, pct(ms, n, 50) * 1e3, pct(ms, n, 99) * 1e3,
		 ms[n - 1] * 1e3);
}

static void step_echo(struct rig *r, uint64_t n)
{
	double *ms = calloc(n ? n : 1, sizeof(*ms)), t0, t;
	uint64_t i = 0;
	int err = ms ? rig_pool(r, 1, 1) : -ENOMEM;

	if (!tap_ok(!err, "one GPU EU: %s", agile_strerror(err)))
		goto out;
	if (!tap_ok_call(rig_buffers(r), "map the buffers"))
		goto out;
	t0 = now_ms();
	for (i = 0; i < n && !err; i++) {
		t = now_ms();
		err = echo_one(r, 0, i + 1);
		ms[i] = now_ms() - t;
	}
	tap_ok(!err, "%llu echoes on one EU: %s%s (%.1f ms)",
	       (unsigned long long)i, agile_strerror(err),
	       err == -EPROTO ? ": a wrong number came back" : "",
	       now_ms() - t0);
	report_latency("one EU", ms, i);
out:
	rig_free(r);
	free(ms);
}

struct poster {
	struct rig *r;
	uint32_t first, stride;
	uint64_t rounds;
	int err;
	uint64_t done;
};

/* One thread's EUs: post to each, then wait for each, round after round. */
static void *poster_run(void *arg)
{
	struct poster *p = arg;
	struct rig *r = p->r;

	for (uint64_t round = 1; round <= p->rounds && !p->err; round++) {
		for (uint32_t eu = p->first; eu < r->nr_eus && !p->err;
		     eu += p->stride)
			p->err = echo_post(r, eu, round * 1000 + eu);
		for (uint32_t eu = p->first; eu < r->nr_eus && !p->err;
		     eu += p->stride) {
			p->err = echo_wait(r, eu, round * 1000 + eu);
			p->done += !p->err;
		}
	}
	return NULL;
}

static void step_echo_all(struct rig *r, uint64_t n)
{
	struct poster posters[MAX_POSTERS];
	pthread_t threads[MAX_POSTERS];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t nr_posters;
	uint64_t done = 0;
	double t0, t;
	int err = rig_pool_max(r), bad = 0;

	if (!tap_ok(!err, "the most GPU EUs the share allows: %u (%s)",
		    r->nr_eus, agile_strerror(err)))
		goto out;
	if (!tap_ok_call(rig_buffers(r), "map the buffers"))
		goto out;
	nr_posters = r->nr_eus < MAX_POSTERS ? r->nr_eus : MAX_POSTERS;
	if (cpus > 1 && nr_posters > (uint32_t)cpus - 1)
		nr_posters = (uint32_t)cpus - 1;
	if (!nr_posters)
		nr_posters = 1;
	t0 = now_ms();
	for (uint32_t i = 0; i < nr_posters; i++) {
		posters[i] = (struct poster){ r, i, nr_posters, 0, 0, 0 };
		posters[i].rounds = n / r->nr_eus ? n / r->nr_eus : 1;
		if (pthread_create(&threads[i], NULL, poster_run,
				   &posters[i])) {
			nr_posters = i;
			bad = 1;
			break;
		}
	}
	for (uint32_t i = 0; i < nr_posters; i++) {
		pthread_join(threads[i], NULL);
		done += posters[i].done;
		if (posters[i].err && !err)
			err = posters[i].err;
	}
	t = now_ms() - t0;
	tap_ok(!bad && !err, "%llu echoes over %u EUs from %u threads: %s%s",
	       (unsigned long long)done, r->nr_eus, nr_posters,
	       agile_strerror(err),
	       err == -EPROTO ? ": a wrong number came back" : "");
	tap_diag("all EUs: %.1f ms, %.0f echoes/s", t,
		 t > 0 ? (double)done / t * 1e3 : 0);
out:
	rig_free(r);
}

static void step_map(struct rig *r)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = 4 * page;
	double *a = aligned_alloc(page, bytes), *b = aligned_alloc(page, bytes);
	uint64_t da = 0, db = 0, da2 = 0;
	struct agile_task_reg *tr;
	uint32_t lane = 0;
	int err = a && b ? rig_pool(r, 2, 2) : -ENOMEM;

	if (!tap_ok(!err, "two GPU EUs: %s", agile_strerror(err)))
		goto out;
	if (!tap_ok_call(rig_buffers(r), "map the buffers"))
		goto out;
	memset(a, 0, bytes);
	memset(b, 0, bytes);
	/* Echo into a buffer mapped while the kernel runs. */
	err = agile_eu_pool_map(r->pool, a, bytes, &da);
	if (!err)
		err = agile_eu_task_reg(r->pool, 0, &tr, NULL);
	if (!err) {
		tr->opcode = r->axpy->opcode;
		tr->nr_parts = 1;
		tr->flags = 0;
		tr->args[0] = double_bits(7);
		tr->args[1] = r->dx;
		tr->args[2] = da;
		tr->args[3] = 1;
		err = agile_eu_call(r->pool, 0, WAIT_NS, NULL);
	}
	tap_ok(!err && a[0] == 7, "map while the kernel runs, use it: %s, %g",
	       agile_strerror(err), a[0]);
	tap_ok_call(agile_eu_pool_unmap(r->pool, a),
		    "unmap it while the kernel runs");
	err = agile_eu_pool_map(r->pool, b, bytes, &db);
	if (!err) {
		agile_eu_task_reg(r->pool, 0, &tr, NULL);
		tr->args[0] = double_bits(9);
		tr->args[2] = db;
		err = agile_eu_call(r->pool, 0, WAIT_NS, NULL);
	}
	tap_ok(!err && b[0] == 9, "map another, use it: %s, %g",
	       agile_strerror(err), b[0]);
	err = agile_eu_pool_map(r->pool, a, bytes, &da2);
	tap_ok(!err && da2 == da, "map the first again: %s, the same address",
	       agile_strerror(err));
	/* A plain launch of the same code beside the persistent kernel. */
	err = agile_eu_task_reg(r->pool, 1, &tr, NULL);
	if (!err) {
		tr->opcode = r->axpy->opcode;
		tr->nr_parts = 1;
		tr->flags = 0;
		tr->args[0] = double_bits(11);
		tr->args[1] = r->dx;
		tr->args[2] = da2;
		tr->args[3] = 1;
		err = agile_eu_run_launch(r->pool, 1, &lane);
	}
	tap_ok(!err && a[0] == 18,
	       "a one-shot launch while the kernel runs: %s, %g (want 18)",
	       agile_strerror(err), a[0]);
	err = echo_one(r, 0, 424242);
	if (!err)
		err = echo_one(r, 1, 434343);
	tap_ok(!err, "the doorbells still serve: %s", agile_strerror(err));
out:
	rig_free(r);
	free(a);
	free(b);
}

static void step_badptr(struct rig *r)
{
	struct agile_eu_pool_info info;
	struct agile_task_reg *tr;
	double t0, t;
	int err = rig_pool(r, 1, 1);

	if (!tap_ok(!err, "one GPU EU: %s", agile_strerror(err)))
		return;
	if (!tap_ok_call(rig_buffers(r), "map the buffers"))
		goto out;
	agile_eu_task_reg(r->pool, 0, &tr, NULL);
	tr->opcode = r->axpy->opcode;
	tr->nr_parts = 1;
	tr->flags = 0;
	tr->args[0] = double_bits(1);
	tr->args[1] = r->dx;
	/* Nothing maps this: far above any mapping, and not canonical. */
	tr->args[2] = 0xdead00000000ULL;
	tr->args[3] = 1;
	t0 = now_ms();
	err = agile_eu_call(r->pool, 0, WAIT_NS, NULL);
	t = now_ms() - t0;
	agile_eu_pool_info(r->pool, &info);
	tap_ok(err == -AGILE_E_GPU && info.reason[0],
	       "a task with a bad pointer: %s after %.1f ms (want the device's "
	       "error): %s",
	       agile_strerror(err), t, info.reason);
	tap_ok(agile_eu_submit(r->pool, 0) == -AGILE_E_GPU,
	       "the next task is refused with the same error");
out:
	t0 = now_ms();
	if (r->pool) {
		err = agile_eu_pool_destroy(r->pool);
		tap_ok(!err || err == -ETIMEDOUT,
		       "destroy is bounded: %s after %.1f ms",
		       agile_strerror(err), now_ms() - t0);
		r->pool = NULL;
	}
	rig_free(r);
}

static int run_step(const char *step, uint64_t n)
{
	struct rig r = { 0 };

	if (!strcmp(step, "versions"))
		return step_versions();
	agile_kernels_create(&r.reg);
	agile_kernels_register_builtins(r.reg);
	if (!strcmp(step, "launch"))
		step_launch(&r);
	else if (!strcmp(step, "opcode"))
		step_opcode(&r);
	else if (!strcmp(step, "echo"))
		step_echo(&r, n);
	else if (!strcmp(step, "echo-all"))
		step_echo_all(&r, n);
	else if (!strcmp(step, "map"))
		step_map(&r);
	else if (!strcmp(step, "badptr"))
		step_badptr(&r);
	else {
		fprintf(stderr, "eu-gpu-bringup: unknown step %s\n", step);
		return 2;
	}
	agile_kernels_destroy(r.reg);
	return tap_done();
}

/* Every step but versions, in order, in this process. */
static void run_all(uint64_t n)
{
	static const char *const steps[] = { "launch",	 "opcode", "echo",
					     "echo-all", "map",	   "badptr" };
	struct rig r = { 0 };

	agile_kernels_create(&r.reg);
	agile_kernels_register_builtins(r.reg);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		tap_diag("step %s", steps[i]);
		if (!strcmp(steps[i], "launch"))
			step_launch(&r);
		else if (!strcmp(steps[i], "opcode"))
			step_opcode(&r);
		else if (!strcmp(steps[i], "echo"))
			step_echo(&r, n);
		else if (!strcmp(steps[i], "echo-all"))
			step_echo_all(&r, n);
		else if (!strcmp(steps[i], "map"))
			step_map(&r);
		else
			step_badptr(&r);
	}
	agile_kernels_destroy(r.reg);
}

#ifndef AGILE_NO_DLOPEN
#include "gpumock.h"

static int mock_child(const char *lib)
{
	run_all(2000);
	/* The stand-in blocks (boundedly) where ROCm 6 would hang. */
	tap_ok(mock_call(lib, "mock_hangs", 0) == 0,
	       "no unregister while a kernel ran (it would hang on ROCm 6)");
	tap_ok(mock_call(lib, "mock_registered", 0) == 0,
	       "nothing left registered with the runtime");
	return tap_done();
}
#endif

int main(int argc, char **argv)
{
	char why[1024];

	if (argc > 1 && strcmp(argv[1], "--mock"))
		return run_step(argv[1],
				argc > 2 ? strtoull(argv[2], NULL, 0) : 100000);
	if (agile__gpu_status(why, sizeof(why)) &&
	    !(argc > 1 && !strcmp(argv[1], "--mock"))) {
		tap_diag("GPU: %s", why);
		run_all(100000);
		return tap_done();
	}
#ifndef AGILE_NO_DLOPEN
	return mock_main(argc, argv, mock_child, 35);
#else
	tap_skip("GPU bring-up", "no usable GPU, and a static build loads no "
				 "stand-in");
	return tap_done();
#endif
}
