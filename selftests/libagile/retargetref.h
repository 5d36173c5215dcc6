/* SPDX-License-Identifier: MIT */
/*
 * retargetref.h - what the retarget test kernels (selftests/libagile/retarget) compute,
 * in plain C: the references both ways of running them are checked
 * against (retarget-*: agile_launch; rt-retarget*: the runtime's EUs).
 */
#ifndef AGILE_RETARGETREF_H
#define AGILE_RETARGETREF_H

#include <math.h>
#include <stddef.h>
#include <string.h>

#define REF_TILE 32 /* transpose.cu's TILE */

/* matlist.cu: A[m] = A[m] x B[m] for @nr matrices of @dim x @dim. */
static inline void ref_matlist(float *a, const float *b, int nr, int dim)
{
	float out[32 * 32];

	for (int m = 0; m < nr; m++) {
		float *am = a + m * dim * dim;
		const float *bm = b + m * dim * dim;

		for (int r = 0; r < dim; r++)
			for (int c = 0; c < dim; c++) {
				float sum = 0.0f;

				for (int i = 0; i < dim; i++)
					sum += am[r * dim + i] *
					       bm[i * dim + c];
				out[r * dim + c] = sum;
			}
		memcpy(am, out, sizeof(float) * dim * dim);
	}
}

/* Relative error 1e-4 at most, element by element. */
static inline int ref_close(const float *x, const float *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fabsf(x[i] - y[i]) > 1e-4f * (1.0f + fabsf(y[i])))
			return 0;
	return 1;
}

/* transpose.cu: what each block does to its tile, @passes rounds. */
static inline void ref_smooth(const float *in, float *smooth, int n, int passes)
{
	enum { T = REF_TILE };

	for (int by = 0; by < n; by += T)
		for (int bx = 0; bx < n; bx += T) {
			float tile[T][T], next[T][T];

			for (int r = 0; r < T; r++)
				for (int c = 0; c < T; c++)
					tile[r][c] = by + r < n && bx + c < n ?
							     in[(by + r) * n +
								bx + c] :
							     0.0f;
			for (int p = 0; p < passes; p++) {
				for (int r = 0; r < T; r++)
					for (int c = 0; c < T; c++) {
						float v = tile[r][c];

						if (r > 0 && r < T - 1 &&
						    c > 0 && c < T - 1)
							v = 0.5f * v +
							    0.125f *
								    (tile[r - 1]
									 [c] +
								     tile[r + 1]
									 [c] +
								     tile[r][c -
									     1] +
								     tile[r][c +
									     1]);
						next[r][c] = v;
					}
				memcpy(tile, next, sizeof(tile));
			}
			for (int r = 0; r < T && by + r < n; r++)
				for (int c = 0; c < T && bx + c < n; c++)
					smooth[(by + r) * n + bx + c] =
						tile[r][c];
		}
}

/*
 * grid3d.cu: block @b of @nt threads writes out[4 b]: the sum (mode 0)
 * or the max (mode 1) of 2 t + b, then the rounds of the halving loop,
 * the mode, nt.
 */
static inline int ref_grid3d(const int *out, int nr_blocks, int nt, int mode)
{
	int rounds = 0, bad = 0;

	for (int w = nt; w > 0; w /= 2)
		rounds++;
	for (int b = 0; b < nr_blocks; b++) {
		int want = mode == 0 ? nt * (nt - 1) + nt * b :
				       2 * (nt - 1) + b;

		bad += out[4 * b] != want || out[4 * b + 1] != rounds ||
		       out[4 * b + 2] != mode || out[4 * b + 3] != nt;
	}
	return bad;
}

/* hipnames.hip after y = 3 x + y, x = y - x from x = i % 17, y = i % 5 - 2. */
static inline int ref_axpy_then_diff(const float *x, const float *y, int n)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		float xi = (float)(i % 17),
		      yi = 3.0f * xi + (float)(i % 5) - 2.0f;

		bad += y[i] != yi || x[i] != yi - xi;
	}
	return bad;
}

#endif /* AGILE_RETARGETREF_H */
