/* SPDX-License-Identifier: MIT */
/*
 * kerneltest.h - what the kernels-* selftests share: the seed-004 example,
 * a small-matrix-list multiply (one task per matrix, one lane per output
 * element, the accumulator promoted to a per-lane array across the
 * barrier that guards the overwrite of the input) with its plain
 * reference; axpy with lanes cutting a range into blocks; and running a
 * kernel on the CPU lane loops with the scratch it needs.
 */
#ifndef AGILE_KERNELTEST_H
#define AGILE_KERNELTEST_H

#include <agile/kernels.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the seed-004 example: C[i] = A[i] x B, overwriting A[i] ---- */

#define DIM 8 /* DIM x DIM matrices: 64 lanes, one per element */
#define NR_MATRICES 40

/* args: A (NR_MATRICES matrices, row major), B, the matrix index */
struct mm_state {
	double acc; /* live across the barrier: promoted per lane */
};

static inline AGILE_LANE_FN int mm_multiply(uint32_t lane, uint32_t nr_lanes,
					    const __u64 *args, void *state,
					    void *shared)
{
	const double *a =
		(const double *)(uintptr_t)args[0] + args[2] * DIM * DIM;
	const double *b = (const double *)(uintptr_t)args[1];
	struct mm_state *st = state;
	uint32_t row = lane / DIM, col = lane % DIM;
	double acc = 0;

	(void)nr_lanes;
	(void)shared;
	for (uint32_t k = 0; k < DIM; k++)
		acc += a[row * DIM + k] * b[k * DIM + col];
	st->acc = acc;
	return 0;
}

/* After the barrier: every lane has read A, so A may be overwritten. */
static inline AGILE_LANE_FN int mm_store(uint32_t lane, uint32_t nr_lanes,
					 const __u64 *args, void *state,
					 void *shared)
{
	double *a = (double *)(uintptr_t)args[0] + args[2] * DIM * DIM;
	const struct mm_state *st = state;

	(void)nr_lanes;
	(void)shared;
	a[lane] = st->acc;
	return 0;
}

static const agile_phase_fn mm_phases[] = { mm_multiply, mm_store };

static const struct agile_kernel mm_kernel = {
	.name = "matlist-mul",
	.nr_phases = 2,
	.phases = mm_phases,
	.state_size = sizeof(struct mm_state),
	.max_lanes = DIM * DIM,
};

/* ---- axpy: y = a x + y, lanes cut [0, n) into nr_lanes blocks ---- */

/* args: a (double bits), x, y, n */
static inline AGILE_LANE_FN int axpy(uint32_t lane, uint32_t nr_lanes,
				     const __u64 *args, void *state,
				     void *shared)
{
	union {
		__u64 bits;
		double d;
	} a = { .bits = args[0] };
	const double *x = (const double *)(uintptr_t)args[1];
	double *y = (double *)(uintptr_t)args[2];
	uint64_t n = args[3];
	uint64_t lo = n * lane / nr_lanes, hi = n * (lane + 1) / nr_lanes;

	(void)state;
	(void)shared;
	for (uint64_t i = lo; i < hi; i++)
		y[i] = a.d * x[i] + y[i];
	return 0;
}

static const agile_phase_fn axpy_phases[] = { axpy };

/* ---- helpers ---- */

static inline void *scratch_for(const struct agile_kernel *k, uint32_t lanes)
{
	size_t size = agile_kernels_scratch_size(k, lanes);

	return size ? aligned_alloc(64, (size + 63) / 64 * 64) : NULL;
}

static inline int run(const struct agile_kernel *k, uint32_t lanes,
		      const __u64 *args, struct agile_lane_result *res)
{
	void *scratch = scratch_for(k, lanes);
	int err = agile_kernels_run(k, lanes, args, scratch, res);

	free(scratch);
	return err;
}

static inline void reference_mm(double *a, const double *b)
{
	double c[DIM * DIM];

	for (int i = 0; i < DIM; i++)
		for (int j = 0; j < DIM; j++) {
			double acc = 0;

			for (int k = 0; k < DIM; k++)
				acc += a[i * DIM + k] * b[k * DIM + j];
			c[i * DIM + j] = acc;
		}
	memcpy(a, c, sizeof(c));
}

static inline void fill(double *m, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		m[i] = (double)((seed * 2654435761u + i * 40503u) % 17) - 8;
}

#endif /* AGILE_KERNELTEST_H */
