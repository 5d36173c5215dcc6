/* SPDX-License-Identifier: MIT */
/*
 * gputest.h - what the eu-gpu* selftests share: a context and a pool of
 * NR_EUS execution units; the built-in kernels (axpy, the matrix-list
 * multiply) run on whatever EUs a pool has; AGILE_EU_POOL and
 * AGILE_EU_POOL_GPU_ONLY (GPU EUs or an error, never a silent fallback);
 * and, where a GPU pool starts, tasks through the doorbells to the
 * persistent kernel, a plain launch, an opcode the GPU lacks, DISCONNECT.
 * Include tap.h first.
 */
#ifndef AGILE_GPUTEST_H
#define AGILE_GPUTEST_H

#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/gpu.h>
#include <agile/kernels.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NR_EUS 2
#define N 4096
#define DIM 4
#define NR_MATS 3
#define WAIT_NS (10ULL * 1000 * 1000 * 1000)

static inline uint64_t double_bits(double d)
{
	uint64_t bits;

	memcpy(&bits, &d, sizeof(bits));
	return bits;
}

static inline int open_dev(struct agile_dev **dev)
{
	struct agile_dev_opts o;

	agile_dev_opts_init(&o);
	o.nr_slots = NR_EUS;
	o.task_reg_size = 128;
	return agile_dev_open(&o, dev);
}

static inline int make_pool(struct agile_dev *dev, struct agile_kernels *reg,
			    uint32_t flags, struct agile_eu_pool **pool)
{
	struct agile_eu_pool_opts o;

	agile_eu_pool_opts_init(&o);
	o.nr_eus = NR_EUS;
	o.flags = flags;
	return agile_eu_pool_create(dev, reg, &o, pool);
}

/* ---- the built-in kernels, on whatever EUs @pool has ---- */

static inline void run_builtins(struct agile_eu_pool *pool,
				struct agile_kernels *reg, bool gpu)
{
	const char *on = gpu ? "GPU EUs" : "CPU EUs";
	const struct agile_kernel *axpy, *mat;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t vec_bytes = (N * sizeof(double) + page - 1) / page * page;
	size_t mat_bytes =
		((NR_MATS + 1) * DIM * DIM * sizeof(double) + page - 1) / page *
		page;
	double *x = aligned_alloc(page, vec_bytes);
	double *y = aligned_alloc(page, vec_bytes);
	double *a = aligned_alloc(page, mat_bytes), *b, ref[DIM * DIM];
	uint64_t dx = 0, dy = 0, da = 0, db;
	struct agile_task_reg *tr;
	uint32_t lane = 0;
	int err, bad = 0;

	if (!x || !y || !a) {
		tap_ok(0, "%s: buffers", on);
		goto out;
	}
	b = a + NR_MATS * DIM * DIM;
	for (int i = 0; i < N; i++) {
		x[i] = i;
		y[i] = 1;
	}
	for (int i = 0; i < NR_MATS * DIM * DIM; i++)
		a[i] = i % 7;
	for (int i = 0; i < DIM * DIM; i++)
		b[i] = (i % DIM == i / DIM) ? 2 : (i % 3 == 0);
	/* What matrix 1 becomes. */
	for (int r = 0; r < DIM; r++)
		for (int c = 0; c < DIM; c++) {
			double acc = 0;

			for (int k = 0; k < DIM; k++)
				acc += a[DIM * DIM + r * DIM + k] *
				       b[k * DIM + c];
			ref[r * DIM + c] = acc;
		}

	err = agile_eu_pool_map(pool, x, vec_bytes, &dx);
	if (!err)
		err = agile_eu_pool_map(pool, y, vec_bytes, &dy);
	if (!err)
		err = agile_eu_pool_map(pool, a, mat_bytes, &da);
	if (!tap_ok_call(err, "map the buffers"))
		goto out;
	/* CPU EUs keep no mappings: the address is the one to use. */
	tap_ok(agile_eu_pool_map(pool, x, vec_bytes, &db) ==
			       (gpu ? -EEXIST : 0) &&
		       (gpu || dx == (uintptr_t)x),
	       "%s: mapping a buffer twice: %s", on,
	       gpu ? "-EEXIST" : "the same address");
	db = da + NR_MATS * DIM * DIM * sizeof(double);
	agile_kernels_find(reg, AGILE_KERNEL_AXPY, &axpy);
	agile_kernels_find(reg, AGILE_KERNEL_MATLIST_MUL, &mat);

	/* axpy, 3 y + ... twice on EU 0, 64 lanes and 7 lanes. */
	agile_eu_task_reg(pool, 0, &tr, NULL);
	for (int round = 0; round < 2; round++) {
		tr->opcode = axpy->opcode;
		tr->nr_parts = round ? 7 : AGILE_MAX_LANES;
		tr->flags = 0;
		tr->args[0] = double_bits(3.0);
		tr->args[1] = dx;
		tr->args[2] = dy;
		tr->args[3] = N;
		err = agile_eu_call(pool, 0, WAIT_NS, &lane);
		if (err)
			break;
	}
	for (int i = 0; i < N && !err; i++)
		bad += y[i] != 1 + 6.0 * i;
	tap_ok(!err && !bad, "%s: axpy on 4096 doubles, twice: %s, %d wrong",
	       on, agile_strerror(err), bad);

	/* matrix 1 of the list times B, one lane per element, on EU 1. */
	agile_eu_task_reg(pool, 1, &tr, NULL);
	tr->opcode = mat->opcode;
	tr->nr_parts = DIM * DIM;
	tr->flags = 0;
	tr->args[0] = da;
	tr->args[1] = db;
	tr->args[2] = 1;
	tr->args[3] = DIM;
	err = agile_eu_call(pool, 1, WAIT_NS, &lane);
	bad = 0;
	for (int i = 0; i < DIM * DIM && !err; i++)
		bad += a[DIM * DIM + i] != ref[i];
	tap_ok(!err && !bad && a[0] == 0 && a[1] == 1,
	       "%s: matrix-list multiply, A[1] = A[1] B only: %s, %d wrong", on,
	       agile_strerror(err), bad);

	/* The wrong lane count for the matrix: refused, no lane to blame. */
	tr->nr_parts = DIM * DIM - 1;
	lane = 0;
	err = agile_eu_call(pool, 1, WAIT_NS, &lane);
	tap_ok(err == -EINVAL && lane < DIM * DIM - 1,
	       "%s: matrix with dim * dim - 1 lanes: its lanes fail: %s", on,
	       agile_strerror(err));

	/* An opcode nobody has. */
	tr->opcode = AGILE_OP_USER_BASE + AGILE_KERNELS_MAX - 1;
	tr->nr_parts = 1;
	lane = 0;
	err = agile_eu_call(pool, 1, WAIT_NS, &lane);
	tap_ok(err == -AGILE_E_OPCODE && lane == AGILE_EU_NO_LANE,
	       "%s: an unregistered opcode: %s, no lane", on,
	       agile_strerror(err));

	tap_ok(agile_eu_pool_unmap(pool, x) == 0 &&
		       agile_eu_pool_unmap(pool, y) == 0 &&
		       agile_eu_pool_unmap(pool, a) == 0 &&
		       agile_eu_pool_unmap(pool, a) == (gpu ? -ENOENT : 0),
	       "%s: unmap", on);
out:
	free(x);
	free(y);
	free(a);
}

static inline void test_modes(struct agile_dev *dev, struct agile_kernels *reg,
			      int usable)
{
	struct agile_eu_pool_info info;
	struct agile_eu_pool *pool;
	int err;

	setenv("AGILE_QUIET", "1", 1);
	err = make_pool(dev, reg, AGILE_EU_POOL_GPU | AGILE_EU_POOL_GPU_ONLY,
			&pool);
	tap_ok(err == -EINVAL, "GPU and GPU_ONLY together: -EINVAL");
	setenv("AGILE_EU_POOL", "bogus", 1);
	err = make_pool(dev, reg, 0, &pool);
	tap_ok(err == -EINVAL, "AGILE_EU_POOL=bogus: -EINVAL");

	setenv("AGILE_EU_POOL", "cpu", 1);
	err = make_pool(dev, reg, AGILE_EU_POOL_AUTO, &pool);
	tap_ok(!err && !agile_eu_pool_info(pool, &info) &&
		       info.kind == AGILE_EU_KIND_CPU && info.fallback &&
		       !strcmp(info.reason, "AGILE_EU_POOL=cpu"),
	       "AGILE_EU_POOL=cpu, AUTO: CPU EUs, the reason says why");
	if (!err) {
		tap_ok(agile_eu_run_launch(pool, 0, NULL) == -EOPNOTSUPP,
		       "a plain launch on CPU EUs: -EOPNOTSUPP");
		agile_eu_pool_destroy(pool);
	}

	setenv("AGILE_EU_POOL", "gpu", 1);
	err = make_pool(dev, reg, 0, &pool);
	tap_ok(!err && !agile_eu_pool_info(pool, &info) &&
		       info.kind == AGILE_EU_KIND_CPU && !info.fallback,
	       "AGILE_EU_POOL=gpu leaves a CPU pool (flags 0) alone");
	if (!err)
		agile_eu_pool_destroy(pool);
	if (usable) {
		tap_skip("required GPU EUs without a GPU fail",
			 "a usable GPU is here");
		unsetenv("AGILE_EU_POOL");
	} else {
		err = make_pool(dev, reg, AGILE_EU_POOL_AUTO, &pool);
		tap_ok(err == -ENODEV,
		       "AGILE_EU_POOL=gpu, AUTO, no usable GPU: -ENODEV, no "
		       "fallback: %s",
		       agile_strerror(err));
		unsetenv("AGILE_EU_POOL");
		err = make_pool(dev, reg, AGILE_EU_POOL_GPU_ONLY, &pool);
		tap_ok(err == -ENODEV,
		       "AGILE_EU_POOL_GPU_ONLY, no usable GPU: -ENODEV: %s",
		       agile_strerror(err));
	}
	/* A slot left IDLE by the failures: a plain pool still starts. */
	err = make_pool(dev, reg, AGILE_EU_POOL_GPU, &pool);
	if (!err)
		err = agile_eu_pool_info(pool, &info);
	tap_ok(!err && (usable || info.kind == AGILE_EU_KIND_CPU),
	       "GPU asked for: a pool starts (%s EUs)",
	       !err && info.kind == AGILE_EU_KIND_GPU ? "GPU" : "CPU");
	if (!err)
		agile_eu_pool_destroy(pool);

	if (usable) {
		/* The code object missing: the fallback names it. */
		setenv("AGILE_GPU_CODE_DIR", "/nonexistent/agile-gpu", 1);
		err = make_pool(dev, reg, AGILE_EU_POOL_AUTO, &pool);
		tap_ok(!err && !agile_eu_pool_info(pool, &info) &&
			       info.fallback &&
			       strstr(info.reason, "AGILE_GPU_CODE_DIR"),
		       "a GPU, no code object: CPU EUs, the reason names "
		       "AGILE_GPU_CODE_DIR");
		tap_diag("reason: %s", info.reason);
		if (!err)
			agile_eu_pool_destroy(pool);
		unsetenv("AGILE_GPU_CODE_DIR");
	} else {
		tap_skip("a GPU, no code object: CPU EUs naming it",
			 "no usable GPU");
	}
	unsetenv("AGILE_QUIET");
}

static inline void test_gpu(struct agile_dev *dev, struct agile_kernels *reg,
			    int required)
{
	struct agile_eu_pool_info info;
	struct agile_eu_pool *pool;
	struct agile_eu_stats st;
	struct agile_task_reg *tr;
	const struct agile_kernel *axpy;
	uint32_t lane = 0;
	int err;

	setenv("AGILE_QUIET", "1", 1);
	err = make_pool(dev, reg,
			required ? AGILE_EU_POOL_GPU_ONLY : AGILE_EU_POOL_AUTO,
			&pool);
	unsetenv("AGILE_QUIET");
	if (!tap_ok(!err, "a GPU-asking pool: %s", agile_strerror(err)))
		return;
	agile_eu_pool_info(pool, &info);
	if (info.kind != AGILE_EU_KIND_GPU) {
		tap_skip("GPU EUs run tasks", "no GPU EUs here: %s",
			 info.reason);
		agile_eu_pool_destroy(pool);
		return;
	}
	tap_ok(!info.fallback && !info.reason[0],
	       "GPU EUs started; pool info says so");
	run_builtins(pool, reg, true);

	/* The same axpy by a plain launch, then through the doorbell again. */
	agile_kernels_find(reg, AGILE_KERNEL_AXPY, &axpy);
	agile_eu_task_reg(pool, 0, &tr, NULL);
	tr->opcode = AGILE_OP_USER_BASE + AGILE_KERNELS_MAX - 1;
	tr->nr_parts = 1;
	err = agile_eu_run_launch(pool, 0, &lane);
	tap_ok(err == -AGILE_E_OPCODE,
	       "a plain launch of an opcode the GPU lacks: %s",
	       agile_strerror(err));
	err = agile_eu_stats(pool, 1, &st);
	tap_ok(!err && st.tasks == 3 && st.failed == 2 && st.connected,
	       "EU 1's counters: %llu tasks, %llu failed",
	       (unsigned long long)st.tasks, (unsigned long long)st.failed);
	err = agile_eu_disconnect(pool, 1, WAIT_NS);
	tap_ok(!err && !agile_eu_stats(pool, 1, &st) && !st.connected &&
		       agile_eu_submit(pool, 1) == -ENOTCONN,
	       "DISCONNECT EU 1: its work-group leaves: %s",
	       agile_strerror(err));
	tap_ok_call(agile_eu_pool_destroy(pool),
		    "destroy: the kernel ends, pages unregistered");
}

#endif /* AGILE_GPUTEST_H */
