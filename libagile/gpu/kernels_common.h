/* SPDX-License-Identifier: MIT */
/*
 * kernels_common.h - phase functions shared by CPU and GPU execution units
 *
 * Kernels written once (agile/kernels.h: barrier-separated phases) and
 * compiled twice: into the C library, where the seed-004 lane loops of
 * agile_kernels_run drive them on CPU EUs, and into the persistent GPU
 * kernel (persistent.cu), where each lane is a GPU thread and the barrier
 * between phases is the work-group barrier.  Everything here is static
 * inline and AGILE_LANE_FN (__device__ under hipcc/nvcc), calls no library
 * function and keeps no static storage.
 *
 * AGILE_COMMON_* numbers the kernels in this file: the GPU's opcode switch
 * is over these, and the host tells the GPU which registry opcode each one
 * was given (struct agile_gpu_params.opcodes).
 */
#ifndef AGILE_GPU_KERNELS_COMMON_H
#define AGILE_GPU_KERNELS_COMMON_H

#include <agile/kernels.h>

#include <errno.h>
#include <stdint.h>

enum {
	AGILE_COMMON_AXPY,	  /* y = a x + y */
	AGILE_COMMON_MATLIST_MUL, /* C[i] = A[i] x B, overwriting A[i] */
	AGILE_COMMON_NR
};

/* ---- axpy: y = a x + y, lanes cut [0, n) into nr_lanes blocks ---- */

/* args: a (double bits), x, y, n.  One phase; any number of lanes. */
#define AGILE_AXPY_NR_PHASES 1

static inline AGILE_LANE_FN int agile_axpy_phase(uint32_t lane,
						 uint32_t nr_lanes,
						 const __u64 *args,
						 void *state, void *shared)
{
	union {
		__u64 bits;
		double d;
	} a;
	const double *x = (const double *)(uintptr_t)args[1];
	double *y = (double *)(uintptr_t)args[2];
	uint64_t n = args[3];
	uint64_t lo = n * lane / nr_lanes, hi = n * (lane + 1) / nr_lanes;

	(void)state;
	(void)shared;
	a.bits = args[0];
	for (uint64_t i = lo; i < hi; i++)
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

static inline AGILE_LANE_FN int agile_matlist_multiply(uint32_t lane,
						       uint32_t nr_lanes,
						       const __u64 *args,
						       void *state,
						       void *shared)
{
	uint64_t dim = args[3];
	const double *a = (const double *)(uintptr_t)args[0] +
			  args[2] * dim * dim;
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

#endif /* AGILE_GPU_KERNELS_COMMON_H */
