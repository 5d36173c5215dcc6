// SPDX-License-Identifier: MIT
/*
 * retarget_omp.c - agile-bench retarget's hand-written baselines: what a
 * CPU programmer would write for the kernels, in OpenMP (one matrix,
 * block or tile per iteration of a parallel for) or, for histogram and
 * scan, a plain serial loop.
 */
#include <string.h>

#include "retarget.h"

void rt_omp_matlist(struct rt_work *w, int threads)
{
	const int dim = w->mm_dim;

#pragma omp parallel for num_threads(threads) schedule(static)
	for (int m = 0; m < w->mm_count; m++) {
		float *a = w->mm_a + (size_t)m * dim * dim;
		const float *b = w->mm_b + (size_t)m * dim * dim;
		float out[64 * 64];

		for (int r = 0; r < dim; r++)
			for (int c = 0; c < dim; c++) {
				float sum = 0.0f;

				for (int i = 0; i < dim; i++)
					sum += a[r * dim + i] * b[i * dim + c];
				out[r * dim + c] = sum;
			}
		memcpy(a, out, sizeof(float) * dim * dim);
	}
}

void rt_omp_reduce(struct rt_work *w, int threads)
{
	const unsigned block = w->red_block;
	const unsigned nr_blocks = (w->red_n + block - 1) / block;
	unsigned long long total = 0;

#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
	for (unsigned b = 0; b < nr_blocks; b++) {
		float sum = 0.0f;

		for (unsigned i = b * block;
		     i < w->red_n && i < (b + 1) * block; i++)
			sum += w->red_in[i];
		w->red_out[b] = sum;
		total += (unsigned long long)sum;
	}
	w->red_total = total;
}

void rt_omp_transpose(struct rt_work *w, int threads)
{
	const int n = w->tr_n, tiles = (n + RT_TILE - 1) / RT_TILE;

#pragma omp parallel for num_threads(threads) schedule(static) collapse(2)
	for (int ty = 0; ty < tiles; ty++)
		for (int tx = 0; tx < tiles; tx++) {
			float tile[RT_TILE][RT_TILE], next[RT_TILE][RT_TILE];
			int by = ty * RT_TILE, bx = tx * RT_TILE;

			for (int r = 0; r < RT_TILE; r++)
				for (int c = 0; c < RT_TILE; c++)
					tile[r][c] =
						by + r < n && bx + c < n ?
							w->tr_in[(by + r) * n +
								 bx + c] :
							0.0f;
			for (int r = 0; r < RT_TILE && by + r < n; r++)
				for (int c = 0; c < RT_TILE && bx + c < n; c++)
					w->tr_out[(bx + c) * n + by + r] =
						tile[r][c];
			for (int p = 0; p < w->tr_passes; p++) {
				for (int r = 0; r < RT_TILE; r++)
					for (int c = 0; c < RT_TILE; c++) {
						float v = tile[r][c];

						if (r > 0 && r < RT_TILE - 1 &&
						    c > 0 && c < RT_TILE - 1)
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
			for (int r = 0; r < RT_TILE && by + r < n; r++)
				for (int c = 0; c < RT_TILE && bx + c < n; c++)
					w->tr_smooth[(by + r) * n + bx + c] =
						tile[r][c];
		}
}

void rt_serial_histogram(struct rt_work *w)
{
	memset(w->hist_out, 0, sizeof(w->hist_out));
	for (unsigned i = 0; i < w->hist_n; i++)
		w->hist_out[w->hist_in[i] % RT_HIST_BINS]++;
}

void rt_serial_scan(struct rt_work *w)
{
	for (unsigned b = 0; b < w->scan_n; b += w->scan_block) {
		float sum = 0.0f;

		for (unsigned i = b; i < w->scan_n && i < b + w->scan_block;
		     i++) {
			sum += w->scan_in[i];
			w->scan_out[i] = sum;
		}
	}
}
