/* SPDX-License-Identifier: MIT */
/*
 * corpuscases.h - the corpus kernels' cases (retarget/corpus/<f>.cu,
 * docs/retarget.md "Corpus"), each run and compared bit for bit with
 * corpusref.h; what retarget-corpus (agile_launch) and rt-corpus (the
 * runtime, "-x cuda") share.  The including test defines, before it:
 *
 *	struct crun                     where the kernels run; its member
 *	                                @where names it in the messages
 *	void *cr_alloc(r, bytes)        zeroed memory the kernels may use
 *	void cr_free_all(r)             all of it released
 *	CR_LAUNCH(r, k, grid, block, ...)  k<<<grid, block>>>(...): 0 or
 *	                                   an error
 *	CR_P(p), CR_I(v), CR_F(f)       a pointer (from cr_alloc), an
 *	                                integer, a float argument
 *
 * Include tap.h first.
 */
#ifndef AGILE_CORPUSCASES_H
#define AGILE_CORPUSCASES_H

#include <agile/launch.h>
#include <agile/retarget_types.h>

#include "corpusref.h"

#define CR_DIM(x, y, z) ((struct agile_dim3){ (x), (y), (z) })
#define CR_BLOCKS(n, b) (((n) + (b)-1) / (b))
#define CR_NEW(r, type, n) ((type *)cr_alloc((r), (size_t)(n) * sizeof(type)))
/* The corpus's constants (reduce.cu, grid.cu) */
#define CR_TILE 16
#define CR_TILE_DIM 32
#define CR_BLOCK_ROWS 8
#define CR_SOFTENING 0.01f

/* One result: @ok, the case's words, the error. */
#define CR_OK(r, ok, err, fmt, ...)                                         \
	tap_ok((ok) && !(err), "%s: " fmt " (%d)", (r)->where, __VA_ARGS__, \
	       (err))

static void cr_reduce_warp(struct crun *r, unsigned block, unsigned n)
{
	unsigned nb = CR_BLOCKS(n, block);
	float *in = CR_NEW(r, float, n), *out = CR_NEW(r, float, nb);
	float *want = calloc(nb, sizeof(float));
	uint32_t x = n;
	int err = -ENOMEM, bad = -1;

	if (in && out && want) {
		for (unsigned i = 0; i < n; i++)
			in[i] = cref_float(&x);
		err = CR_LAUNCH(r, reduce_warp, CR_DIM(nb, 1, 1),
				CR_DIM(block, 1, 1), CR_P(in), CR_P(out),
				CR_I(n));
		cref_reduce_warp(in, n, block, nb, want);
		bad = cref_diff(out, want, nb, sizeof(float));
	}
	CR_OK(r, !bad, err,
	      "reduce_warp: %u floats, blocks of %u: %d block sums differ", n,
	      block, bad);
	free(want);
	cr_free_all(r);
}

static void cr_dot(struct crun *r, int block, int grid, int n)
{
	float *a = CR_NEW(r, float, n), *b = CR_NEW(r, float, n);
	float *c = CR_NEW(r, float, grid), *want = calloc(grid, sizeof(float));
	uint32_t x = 7u * n;
	int err = -ENOMEM, bad = -1;

	if (a && b && c && want) {
		for (int i = 0; i < n; i++) {
			a[i] = cref_float(&x);
			b[i] = cref_float(&x);
		}
		err = CR_LAUNCH(r, dot_product, CR_DIM(grid, 1, 1),
				CR_DIM(block, 1, 1), CR_P(a), CR_P(b), CR_P(c),
				CR_I(n));
		cref_dot(a, b, n, block, grid, want);
		bad = cref_diff(c, want, grid, sizeof(float));
	}
	CR_OK(r, !bad, err,
	      "dot_product: %d floats, %d blocks of %d: %d partial sums differ",
	      n, grid, block, bad);
	free(want);
	cr_free_all(r);
}

static void cr_max_xor(struct crun *r, int block, int n)
{
	int *in = CR_NEW(r, int, n), *result = CR_NEW(r, int, 1);
	uint32_t x = 3u * n;
	int err = -ENOMEM, want = 0;

	if (in && result) {
		for (int i = 0; i < n; i++)
			in[i] = (int)(cref_next(&x) % 2000001u) - 1500000;
		/*
		 * The maximum once, in lane 31 of a warp: it reaches lane 0
		 * only through every step of the butterfly (16 + 8 + 4 + 2 +
		 * 1).
		 */
		in[CR_BLOCKS(n, block) / 2 * block + 31] = 777777;
		*result = INT32_MIN;
		err = CR_LAUNCH(r, max_xor, CR_DIM(CR_BLOCKS(n, block), 1, 1),
				CR_DIM(block, 1, 1), CR_P(in), CR_P(result),
				CR_I(n));
		want = cref_max(in, n);
	}
	CR_OK(r, result && *result == want, err,
	      "max_xor: %d ints, blocks of %d: maximum %d (%d)", n, block,
	      result ? *result : 0, want);
	cr_free_all(r);
}

static void cr_histogram(struct crun *r, int block, int grid, int n)
{
	unsigned char *data = CR_NEW(r, unsigned char, n);
	unsigned *hist = CR_NEW(r, unsigned, 256), want[256];
	uint32_t x = 5u * n;
	int err = -ENOMEM, bad = -1;

	if (data && hist) {
		for (int i = 0; i < n; i++)
			/* skewed: some bins crowded, some empty */
			data[i] =
				(unsigned char)(cref_next(&x) % 200u *
						(cref_next(&x) % 2u + 1u) / 2u);
		err = CR_LAUNCH(r, histogram256, CR_DIM(grid, 1, 1),
				CR_DIM(block, 1, 1), CR_P(data), CR_P(hist),
				CR_I(n));
		cref_histogram(data, n, want);
		bad = cref_diff(hist, want, 256, sizeof(unsigned));
	}
	CR_OK(r, !bad, err,
	      "histogram256: %d bytes, %d blocks of %d: %d bins differ", n,
	      grid, block, bad);
	cr_free_all(r);
}

static void cr_scan(struct crun *r, int block, int n)
{
	int nb = CR_BLOCKS(n, 2 * block);
	unsigned *in = CR_NEW(r, unsigned, n), *out = CR_NEW(r, unsigned, n);
	unsigned *sums = CR_NEW(r, unsigned, nb);
	unsigned *want = calloc(n, sizeof(unsigned)),
		 *wsums = calloc(nb, sizeof(unsigned));
	uint32_t x = 11u * n;
	int err = -ENOMEM, bad = -1;

	if (in && out && sums && want && wsums) {
		for (int i = 0; i < n; i++)
			in[i] = cref_next(&x) % 1000u;
		err = CR_LAUNCH(r, scan_blelloch, CR_DIM(nb, 1, 1),
				CR_DIM(block, 1, 1), CR_P(in), CR_P(out),
				CR_P(sums), CR_I(n));
		cref_scan(in, n, block, want, wsums);
		bad = cref_diff(out, want, n, sizeof(unsigned)) +
		      cref_diff(sums, wsums, nb, sizeof(unsigned));
	}
	CR_OK(r, !bad, err,
	      "scan_blelloch: %d values, blocks of %d (%d a block): %d prefixes or totals differ",
	      n, block, 2 * block, bad);
	free(want);
	free(wsums);
	cr_free_all(r);
}

static void cr_compact(struct crun *r, int block, int n, int div)
{
	int nb = CR_BLOCKS(n, block);
	int *in = CR_NEW(r, int, n), *out = CR_NEW(r, int, nb *block);
	int *counts = CR_NEW(r, int, nb);
	int *want = calloc(nb * block, sizeof(int)),
	    *wcounts = calloc(nb, sizeof(int));
	uint32_t x = 13u * n;
	int err = -ENOMEM, bad = -1;

	if (in && out && counts && want && wcounts) {
		for (int i = 0; i < n; i++)
			in[i] = (int)(cref_next(&x) % 100000u) - 50000;
		err = CR_LAUNCH(r, compact_block, CR_DIM(nb, 1, 1),
				CR_DIM(block, 1, 1), CR_P(in), CR_P(out),
				CR_P(counts), CR_I(n), CR_I(div));
		cref_compact(in, n, block, div, want, wcounts);
		bad = cref_diff(out, want, nb * block, sizeof(int)) +
		      cref_diff(counts, wcounts, nb, sizeof(int));
	}
	CR_OK(r, !bad, err,
	      "compact_block: %d ints, blocks of %d, multiples of %d kept: %d values or counts differ",
	      n, block, div, bad);
	free(want);
	free(wcounts);
	cr_free_all(r);
}

static void cr_bitonic(struct crun *r, int block, int nb, unsigned dir)
{
	int n = 2 * block * nb;
	unsigned *key = CR_NEW(r, unsigned, n), *val = CR_NEW(r, unsigned, n);
	unsigned *dkey = CR_NEW(r, unsigned, n), *dval = CR_NEW(r, unsigned, n);
	unsigned *wkey = calloc(n, sizeof(unsigned)),
		 *wval = calloc(n, sizeof(unsigned));
	int err = -ENOMEM, bad = -1;

	if (key && val && dkey && dval && wkey && wval) {
		for (int i = 0; i < n; i++) {
			key[i] = (unsigned)i * 2654435761u; /* distinct */
			val[i] = (unsigned)i;
		}
		err = CR_LAUNCH(r, bitonic_sort, CR_DIM(nb, 1, 1),
				CR_DIM(block, 1, 1), CR_P(dkey), CR_P(dval),
				CR_P(key), CR_P(val), CR_I(dir));
		memcpy(wkey, key, n * sizeof(unsigned));
		memcpy(wval, val, n * sizeof(unsigned));
		for (int b = 0; b < nb; b++)
			cref_sort_pairs(wkey + 2 * block * b,
					wval + 2 * block * b, 2 * block,
					(int)dir);
		bad = cref_diff(dkey, wkey, n, sizeof(unsigned)) +
		      cref_diff(dval, wval, n, sizeof(unsigned));
	}
	CR_OK(r, !bad, err,
	      "bitonic_sort: %d blocks of %d threads, %d pairs each, %s: %d keys or values differ",
	      nb, block, 2 * block, dir ? "ascending" : "descending", bad);
	free(wkey);
	free(wval);
	cr_free_all(r);
}

static void cr_odd_even(struct crun *r, int block, int n)
{
	int *a = CR_NEW(r, int, n), *want = calloc(n, sizeof(int));
	uint32_t x = 17u * n;
	int err = -ENOMEM, bad = -1;

	if (a && want) {
		for (int i = 0; i < n; i++)
			a[i] = (int)(cref_next(&x) % 500u) - 250;
		memcpy(want, a, n * sizeof(int));
		for (int b = 0; b * block < n; b++)
			cref_sort_ints(want + b * block, n - b * block < block ?
								 n - b * block :
								 block);
		err = CR_LAUNCH(r, odd_even_sort,
				CR_DIM(CR_BLOCKS(n, block), 1, 1),
				CR_DIM(block, 1, 1), CR_P(a), CR_I(n));
		bad = cref_diff(a, want, n, sizeof(int));
	}
	CR_OK(r, !bad, err, "odd_even_sort: %d ints, blocks of %d: %d differ",
	      n, block, bad);
	free(want);
	cr_free_all(r);
}

/* A CSR matrix of @rows x @rows, 0 to 80 entries a row; x and y. */
static void cr_spmv(struct crun *r, int rows, int block, int vector)
{
	int *ptr = CR_NEW(r, int, rows + 1), *idx = NULL, nnz = 0;
	float *data = NULL, *xv = CR_NEW(r, float, rows),
	      *y = CR_NEW(r, float, rows), *want = calloc(rows, sizeof(float));
	uint32_t x = 19u * rows;
	int err = -ENOMEM, bad = -1;

	if (ptr && xv && y && want) {
		for (int i = 0; i < rows; i++) {
			ptr[i] = nnz;
			nnz += (int)(cref_next(&x) % 81u);
			xv[i] = cref_float(&x);
		}
		ptr[rows] = nnz;
		idx = CR_NEW(r, int, nnz);
		data = CR_NEW(r, float, nnz);
	}
	if (idx && data) {
		for (int j = 0; j < nnz; j++) {
			idx[j] = (int)(cref_next(&x) % (unsigned)rows);
			data[j] = cref_float(&x);
		}
		if (vector) {
			err = CR_LAUNCH(
				r, spmv_csr_vector,
				CR_DIM(CR_BLOCKS(rows * 32, block), 1, 1),
				CR_DIM(block, 1, 1), CR_I(rows), CR_P(ptr),
				CR_P(idx), CR_P(data), CR_P(xv), CR_P(y));
			cref_spmv_vector(rows, ptr, idx, data, xv, want);
		} else {
			err = CR_LAUNCH(r, spmv_csr_scalar,
					CR_DIM(CR_BLOCKS(rows, block), 1, 1),
					CR_DIM(block, 1, 1), CR_I(rows),
					CR_P(ptr), CR_P(idx), CR_P(data),
					CR_P(xv), CR_P(y));
			cref_spmv_scalar(rows, ptr, idx, data, xv, want);
		}
		bad = cref_diff(y, want, rows, sizeof(float));
	}
	CR_OK(r, !bad, err,
	      "spmv_csr_%s: %d rows, %d entries, blocks of %d: %d rows differ",
	      vector ? "vector" : "scalar", rows, nnz, block, bad);
	free(want);
	cr_free_all(r);
}

static void cr_stencil2d(struct crun *r, int nx, int ny, int bx, int by)
{
	int n = nx * ny;
	float *in = CR_NEW(r, float, n), *out = CR_NEW(r, float, n);
	float *want = calloc(n, sizeof(float));
	float c0 = 0.6f, c1 = 0.1f;
	uint32_t x = 23u * n;
	int err = -ENOMEM, bad = -1;

	if (in && out && want) {
		for (int i = 0; i < n; i++)
			in[i] = cref_float(&x);
		err = CR_LAUNCH(r, stencil2d,
				CR_DIM(CR_BLOCKS(nx, bx), CR_BLOCKS(ny, by), 1),
				CR_DIM(bx, by, 1), CR_P(in), CR_P(out),
				CR_I(nx), CR_I(ny), CR_F(c0), CR_F(c1));
		cref_stencil2d(in, want, nx, ny, c0, c1);
		bad = cref_diff(out, want, n, sizeof(float));
	}
	CR_OK(r, !bad, err,
	      "stencil2d: %d x %d, blocks of %d x %d: %d cells differ", nx, ny,
	      bx, by, bad);
	free(want);
	cr_free_all(r);
}

static void cr_stencil3d(struct crun *r, int nx, int ny, int nz, int bx, int by,
			 int bz)
{
	int n = nx * ny * nz;
	float *in = CR_NEW(r, float, n), *out = CR_NEW(r, float, n);
	float *want = calloc(n, sizeof(float));
	float cc = 0.4f, cn = 0.1f;
	uint32_t x = 29u * n;
	int err = -ENOMEM, bad = -1;

	if (in && out && want) {
		for (int i = 0; i < n; i++)
			in[i] = cref_float(&x);
		err = CR_LAUNCH(r, stencil3d,
				CR_DIM(CR_BLOCKS(nx, bx), CR_BLOCKS(ny, by),
				       CR_BLOCKS(nz, bz)),
				CR_DIM(bx, by, bz), CR_P(in), CR_P(out),
				CR_I(nx), CR_I(ny), CR_I(nz), CR_F(cc),
				CR_F(cn));
		cref_stencil3d(in, want, nx, ny, nz, cc, cn);
		bad = cref_diff(out, want, n, sizeof(float));
	}
	CR_OK(r, !bad, err,
	      "stencil3d: %d x %d x %d, blocks of %d x %d x %d: %d cells differ",
	      nx, ny, nz, bx, by, bz, bad);
	free(want);
	cr_free_all(r);
}

static void cr_matmul(struct crun *r, int M, int N, int K)
{
	float *A = CR_NEW(r, float, M *K), *B = CR_NEW(r, float, K *N);
	float *C = CR_NEW(r, float, M *N), *want = calloc(M * N, sizeof(float));
	uint32_t x = 31u * M + N;
	int err = -ENOMEM, bad = -1;

	if (A && B && C && want) {
		for (int i = 0; i < M * K; i++)
			A[i] = cref_float(&x);
		for (int i = 0; i < K * N; i++)
			B[i] = cref_float(&x);
		err = CR_LAUNCH(r, matmul_tiled,
				CR_DIM(CR_BLOCKS(N, CR_TILE),
				       CR_BLOCKS(M, CR_TILE), 1),
				CR_DIM(CR_TILE, CR_TILE, 1), CR_P(A), CR_P(B),
				CR_P(C), CR_I(M), CR_I(N), CR_I(K));
		cref_matmul(A, B, want, M, N, K, CR_TILE);
		bad = cref_diff(C, want, M * N, sizeof(float));
	}
	CR_OK(r, !bad, err,
	      "matmul_tiled: %d x %d times %d x %d, tiles of %d: %d differ", M,
	      K, K, N, CR_TILE, bad);
	free(want);
	cr_free_all(r);
}

static void cr_transpose(struct crun *r, int w, int h)
{
	float *in = CR_NEW(r, float, w *h), *out = CR_NEW(r, float, w *h);
	float *want = calloc(w * h, sizeof(float));
	uint32_t x = 37u * w + h;
	int err = -ENOMEM, bad = -1;

	if (in && out && want) {
		for (int i = 0; i < w * h; i++)
			in[i] = cref_float(&x);
		for (int y = 0; y < h; y++)
			for (int c = 0; c < w; c++)
				want[c * h + y] = in[y * w + c];
		err = CR_LAUNCH(r, transpose,
				CR_DIM(CR_BLOCKS(w, CR_TILE_DIM),
				       CR_BLOCKS(h, CR_TILE_DIM), 1),
				CR_DIM(CR_TILE_DIM, CR_BLOCK_ROWS, 1),
				CR_P(out), CR_P(in), CR_I(w), CR_I(h));
		bad = cref_diff(out, want, w * h, sizeof(float));
	}
	CR_OK(r, !bad, err,
	      "transpose: %d x %d through a padded %d x %d tile, blocks of %d x %d: %d differ",
	      w, h, CR_TILE_DIM, CR_TILE_DIM + 1, CR_TILE_DIM, CR_BLOCK_ROWS,
	      bad);
	free(want);
	cr_free_all(r);
}

static void cr_nbody(struct crun *r, int n, int block)
{
	float4 *pos = CR_NEW(r, float4, n), *acc = CR_NEW(r, float4, n);
	float *want = calloc(4 * n, sizeof(float));
	uint32_t x = 41u * n;
	int err = -ENOMEM, bad = -1;

	if (pos && acc && want) {
		for (int i = 0; i < n; i++) {
			pos[i].x = 10.0f * cref_float(&x);
			pos[i].y = 10.0f * cref_float(&x);
			pos[i].z = 10.0f * cref_float(&x);
			pos[i].w = cref_float(&x) + 1.5f;
		}
		err = CR_LAUNCH(r, nbody_tiles, CR_DIM(n / block, 1, 1),
				CR_DIM(block, 1, 1), CR_P(pos), CR_P(acc),
				CR_I(n));
		cref_nbody((const float *)pos, want, n, CR_SOFTENING);
		bad = cref_diff(acc, want, 4 * n, sizeof(float));
	}
	CR_OK(r, !bad, err,
	      "nbody_tiles: %d float4 bodies, tiles of %d in __shared__: %d components differ",
	      n, block, bad);
	free(want);
	cr_free_all(r);
}

/* The kernels of corpus/reduce.cu, sort.cu and grid.cu, a few shapes. */
static void cr_run_reduce(struct crun *r)
{
	cr_reduce_warp(r, 256, 5000);
	cr_reduce_warp(r, 1024, 3000);
	cr_reduce_warp(r, 32, 100);
	cr_dot(r, 128, 8, 4000);
	cr_dot(r, 1024, 2, 3000);
	cr_dot(r, 64, 3, 50);
	cr_max_xor(r, 100, 3001);
	cr_max_xor(r, 256, 777);
	cr_histogram(r, 100, 7, 5000);
	cr_histogram(r, 256, 4, 4099);
	cr_scan(r, 128, 3000);
	cr_scan(r, 512, 1024);
	cr_scan(r, 32, 100);
	cr_compact(r, 100, 3000, 3);
	cr_compact(r, 1024, 2500, 7);
	cr_compact(r, 37, 500, 2);
}

static void cr_run_sort(struct crun *r)
{
	cr_bitonic(r, 256, 4, 1);
	cr_bitonic(r, 32, 3, 0);
	cr_bitonic(r, 512, 1, 1);
	cr_odd_even(r, 100, 950);
	cr_odd_even(r, 256, 1024);
	cr_spmv(r, 1000, 128, 0);
	cr_spmv(r, 77, 50, 0);
	cr_spmv(r, 300, 128, 1);
	cr_spmv(r, 77, 64, 1);
}

static void cr_run_grid(struct crun *r)
{
	cr_stencil2d(r, 70, 45, 16, 16);
	cr_stencil2d(r, 33, 40, 32, 8);
	cr_stencil2d(r, 20, 13, 7, 5);
	cr_stencil3d(r, 20, 18, 9, 8, 4, 4);
	cr_stencil3d(r, 11, 7, 5, 5, 3, 2);
	cr_matmul(r, 40, 33, 50);
	cr_matmul(r, 64, 64, 64);
	cr_transpose(r, 70, 45);
	cr_transpose(r, 64, 96);
	cr_nbody(r, 1024, 256);
	cr_nbody(r, 300, 100);
}

#endif /* AGILE_CORPUSCASES_H */
