/* SPDX-License-Identifier: MIT */
/*
 * stencil.h - the 5-point Jacobi stencil of `agile-bench segmap`, shared
 * by its contenders in segmap.c and by the Open MPI baseline
 * (segmap_mpi.c, agile-bench-stencil-mpi), so that every one of them
 * starts from the same field and computes each point with the same
 * operations in the same order: their results compare bit for bit.
 *
 * The field is N x N doubles, row y at y * N (x, axis 0, fastest).  The
 * outer rows and columns are a fixed boundary: no contender writes them,
 * both fields of a pair hold them from the start.  Every value is between
 * 1 and 2 and stays there (a mean of such values), so no iteration count
 * reaches denormals.
 */
#ifndef AGILE_BENCH_STENCIL_H
#define AGILE_BENCH_STENCIL_H

#include <stdint.h>

/* The starting value of point (x, y). */
static inline double stencil_start(int64_t x, int64_t y)
{
	return 1.0 + (double)((x * 7 + y * 13) % 101) / 101.0;
}

/*
 * One interior row: out[x] for x in 1 .. n - 2 from the rows above
 * (@up), at (@mid) and below (@down) it.
 */
static inline void stencil_row(double *restrict out, const double *up,
			       const double *mid, const double *down, int64_t n)
{
	for (int64_t x = 1; x < n - 1; x++)
		out[x] = 0.25 * ((up[x] + down[x]) + (mid[x - 1] + mid[x + 1]));
}

#endif /* AGILE_BENCH_STENCIL_H */
