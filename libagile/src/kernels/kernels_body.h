/* SPDX-License-Identifier: MIT */
/*
 * kernels_body.h - the built-in kernels' bodies, for CPU and GPU alike
 *
 * Kernels written once (agile/kernels.h: barrier-separated phases) and
 * compiled twice: into the C library, where the seed-004 lane loops of
 * agile_kernels_run drive them on CPU EUs, and into the persistent GPU
 * kernel (libagile/gpu/persistent.cu) and its CPU stand-in
 * (selftests/libagile/gpu-mock.c), where each lane is a GPU thread and the barrier
 * between phases is the work-group barrier.  Everything here is static
 * inline and AGILE_LANE_FN (__device__ under hipcc/nvcc), calls no library
 * function and keeps no static storage.
 *
 * AGILE_COMMON_* numbers the kernels in this file: the GPU's opcode switch
 * is over these, and the host tells the GPU which registry opcode each one
 * was given (struct agile_gpu_params.opcodes); agile_task_decide is the
 * one place a GPU EU (or its stand-in) turns a task register into a
 * kernel and a number of lanes.
 */
#ifndef AGILE_KERNELS_BODY_H
#define AGILE_KERNELS_BODY_H

#include <agile/error.h>
#include <agile/kernels.h>
#include <linux/agile.h>

#include <errno.h>
#include <stdint.h>

enum {
	AGILE_COMMON_AXPY, /* y = a x + y */
	AGILE_COMMON_MATLIST_MUL, /* C[i] = A[i] x B, overwriting A[i] */
	AGILE_COMMON_NR
};

/*
 * User kernels: a persistent kernel compiled at run time
 * (src/runtime/compile_rtc.c, docs/runtime.md) carries up to
 * AGILE_USER_NR_MAX of them, numbered AGILE_COMMON_NR + i after the
 * common ones; the opcode table a GPU EU decides with covers both.
 * AGILE_USER_MAX_LANES(i) is user kernel i's max_lanes: 0 (no task
 * accepted) unless the code that includes this header defines it.
 */
#define AGILE_USER_NR_MAX 16
#define AGILE_TASK_NR_KERNELS (AGILE_COMMON_NR + AGILE_USER_NR_MAX)
#ifndef AGILE_USER_MAX_LANES
#define AGILE_USER_MAX_LANES(i) ((void)(i), 0u)
#endif

/*
 * Arguments any kernel here reads (args[0 .. AGILE_COMMON_NR_ARGS - 1]):
 * what fits the smallest task register, and what the GPU EU's lane 0
 * copies into shared memory for its lanes (persistent.cu).
 */
#define AGILE_COMMON_NR_ARGS 4

/* ---- axpy: y = a x + y, lanes cut [0, n) into nr_lanes blocks ---- */

/* args: a (double bits), x, y, n.  One phase; any number of lanes. */
#define AGILE_AXPY_NR_PHASES 1
/* Elements a GPU lane loads before it stores (see agile_axpy_phase). */
#define AGILE_AXPY_GPU_CHUNK 16

static inline AGILE_LANE_FN int agile_axpy_phase(uint32_t lane,
						 uint32_t nr_lanes,
						 const __u64 *args, void *state,
						 void *shared)
{
	union {
		__u64 bits;
		double d;
	} a;
	const double *x = (const double *)(uintptr_t)args[1];
	double *y = (double *)(uintptr_t)args[2];
	uint64_t n = args[3];
	uint64_t lo = n * lane / nr_lanes, hi = n * (lane + 1) / nr_lanes;
	uint64_t i = lo;

	(void)state;
	(void)shared;
	a.bits = args[0];
	/*
	 * A block of elements per lane, no cache line shared between two.
	 * On a GPU, x and y are usually host memory across the bus, where a
	 * lane's loads wait a bus round trip: the GPU build loads sixteen
	 * elements of each (two lines) before it stores any, so that more
	 * lines are in flight at once.  Measured on an H200 (docs/gpu.md):
	 * 4096 elements on 64 lanes took 39 us element by element, 31 us
	 * this way; interleaving the lanes element by element (coalesced)
	 * took 50 us, and 32 at a time 28 us but 96 registers, which halves
	 * the EUs that fit the device.
	 */
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
	for (; i + AGILE_AXPY_GPU_CHUNK <= hi; i += AGILE_AXPY_GPU_CHUNK) {
		double xv[AGILE_AXPY_GPU_CHUNK], yv[AGILE_AXPY_GPU_CHUNK];

#pragma unroll
		for (int k = 0; k < AGILE_AXPY_GPU_CHUNK; k++) {
			xv[k] = x[i + k];
			yv[k] = y[i + k];
		}
#pragma unroll
		for (int k = 0; k < AGILE_AXPY_GPU_CHUNK; k++)
			y[i + k] = a.d * xv[k] + yv[k];
	}
#endif
	for (; i < hi; i++)
		y[i] = a.d * x[i] + y[i];
	return 0;
}

/* ---- the seed-004 small-matrix-list multiply ---- */

/*
 * args: A (matrices of dim x dim doubles, row major, one after the
 * other), B (dim x dim), the matrix index i, dim.  One lane per element
 * of C[i] (nr_lanes = dim * dim, at most AGILE_MAX_LANES): phase 0 computes
 * the lane's element into its state, the barrier guards the overwrite of
 * A[i] that phase 1 does.
 */
#define AGILE_MATLIST_NR_PHASES 2

struct agile_matlist_state {
	double acc; /* live across the barrier: promoted per lane on a CPU */
};

static inline AGILE_LANE_FN int
agile_matlist_multiply(uint32_t lane, uint32_t nr_lanes, const __u64 *args,
		       void *state, void *shared)
{
	uint64_t dim = args[3];
	const double *a =
		(const double *)(uintptr_t)args[0] + args[2] * dim * dim;
	const double *b = (const double *)(uintptr_t)args[1];
	struct agile_matlist_state *st = (struct agile_matlist_state *)state;
	uint64_t row, col;
	double acc = 0;

	(void)shared;
	if (!dim || dim * dim != nr_lanes)
		return -EINVAL;
	row = lane / dim;
	col = lane % dim;
	for (uint64_t k = 0; k < dim; k++)
		acc += a[row * dim + k] * b[k * dim + col];
	st->acc = acc;
	return 0;
}

/* After the barrier: every lane has read A[i], so it may be overwritten. */
static inline AGILE_LANE_FN int agile_matlist_store(uint32_t lane,
						    uint32_t nr_lanes,
						    const __u64 *args,
						    void *state, void *shared)
{
	uint64_t dim = args[3];
	double *a = (double *)(uintptr_t)args[0] + args[2] * dim * dim;
	const struct agile_matlist_state *st =
		(const struct agile_matlist_state *)state;

	(void)nr_lanes;
	(void)shared;
	a[lane] = st->acc;
	return 0;
}

/* Per-lane state big enough for every kernel in this file. */
union agile_common_state {
	struct agile_matlist_state matlist;
};

/* Phases of common kernel @id, 0 for an unknown one. */
static inline AGILE_LANE_FN uint32_t agile_common_nr_phases(uint32_t id)
{
	switch (id) {
	case AGILE_COMMON_AXPY:
		return AGILE_AXPY_NR_PHASES;
	case AGILE_COMMON_MATLIST_MUL:
		return AGILE_MATLIST_NR_PHASES;
	default:
		return 0;
	}
}

/* Most lanes common kernel @id takes (its agile_kernel.max_lanes). */
static inline AGILE_LANE_FN uint32_t agile_common_max_lanes(uint32_t id)
{
	(void)id;
	return AGILE_MAX_LANES;
}

/* Most lanes kernel @id (common, or user kernel id - AGILE_COMMON_NR) takes. */
static inline AGILE_LANE_FN uint32_t agile_task_max_lanes(uint32_t id)
{
	if (id < AGILE_COMMON_NR)
		return agile_common_max_lanes(id);
	return AGILE_USER_MAX_LANES(id - AGILE_COMMON_NR);
}

/* The opcode switch: phase @phase of common kernel @id on one lane. */
static inline AGILE_LANE_FN int agile_common_phase(uint32_t id, uint32_t phase,
						   uint32_t lane,
						   uint32_t nr_lanes,
						   const __u64 *args,
						   void *state, void *shared)
{
	switch (id) {
	case AGILE_COMMON_AXPY:
		return agile_axpy_phase(lane, nr_lanes, args, state, shared);
	case AGILE_COMMON_MATLIST_MUL:
		return phase == 0 ? agile_matlist_multiply(lane, nr_lanes, args,
							   state, shared) :
				    agile_matlist_store(lane, nr_lanes, args,
							state, shared);
	default:
		return -EINVAL;
	}
}

/* agile_task_decision.error_lane when no lane is to blame (AGILE_EU_NO_LANE). */
#define AGILE_TASK_NO_LANE UINT32_MAX
/* agile_task_decision.kernel: nothing to run. */
#define AGILE_TASK_NO_KERNEL UINT32_MAX

/**
 * struct agile_task_decision - what a GPU EU runs for one task register
 * @quit:       the task is AGILE_OP_DISCONNECT: leave the persistent loop
 * @kernel:     the AGILE_COMMON_* kernel, AGILE_COMMON_NR + i for user
 *              kernel i, or AGILE_TASK_NO_KERNEL
 * @parts:      lanes that run it (0 with no kernel)
 * @error:      -AGILE_E_OPCODE (no kernel in the table has the opcode),
 *              -EINVAL (0 parts, or more than the EU or the kernel has
 *              lanes for), else 0
 * @error_lane: AGILE_TASK_NO_LANE when @error is set here, else 0
 */
struct agile_task_decision {
	uint32_t quit, kernel, parts, error_lane;
	int error;
};

/*
 * Seed 004, steps 614-618: read the task, choose the kernel and the lanes.
 * @opcodes: the registry opcode of each AGILE_COMMON_* kernel, then of
 * each user kernel (0: absent); @nr_lanes: lanes the EU has; @op, @parts:
 * the register's opcode and nr_parts.
 */
static inline AGILE_LANE_FN void
agile_task_decide_op(const uint32_t opcodes[AGILE_TASK_NR_KERNELS],
		     uint32_t nr_lanes, uint32_t op, uint32_t parts,
		     struct agile_task_decision *d)
{
	uint32_t kernel = AGILE_TASK_NO_KERNEL;

	d->error = 0;
	d->error_lane = 0;
	d->quit = op == AGILE_OP_DISCONNECT;
	if (!d->quit) {
		for (uint32_t i = 0; i < AGILE_TASK_NR_KERNELS; i++)
			if (opcodes[i] && opcodes[i] == op)
				kernel = i;
		if (kernel == AGILE_TASK_NO_KERNEL) {
			d->error = -AGILE_E_OPCODE;
		} else if (!parts || parts > nr_lanes ||
			   parts > agile_task_max_lanes(kernel)) {
			d->error = -EINVAL;
			kernel = AGILE_TASK_NO_KERNEL;
		}
		if (d->error)
			d->error_lane = AGILE_TASK_NO_LANE;
	}
	d->kernel = kernel;
	d->parts = kernel == AGILE_TASK_NO_KERNEL ? 0 : parts;
}

/* The same from a task register (the GPU reads its words itself). */
static inline AGILE_LANE_FN void
agile_task_decide(const uint32_t opcodes[AGILE_TASK_NR_KERNELS],
		  uint32_t nr_lanes, const struct agile_task_reg *reg,
		  struct agile_task_decision *d)
{
	agile_task_decide_op(opcodes, nr_lanes, reg->opcode, reg->nr_parts, d);
}

#endif /* AGILE_KERNELS_BODY_H */
