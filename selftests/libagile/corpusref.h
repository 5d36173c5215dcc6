/* SPDX-License-Identifier: MIT */
/*
 * corpusref.h - plain C for the corpus kernels (retarget/corpus/<f>.cu,
 * docs/retarget.md "Corpus"), written from what each kernel computes,
 * not from its translation: sequential loops, and where floats are
 * added, the same operations in the same order as the kernel's threads
 * (a tree, a warp's shuffles, a tile's loop), so results compare bit
 * for bit.  Warps are simulated as CUDA defines __shfl_down_sync over 32
 * lanes: a source past the warp gives the caller's own value.
 */
#ifndef AGILE_CORPUSREF_H
#define AGILE_CORPUSREF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A full-mantissa float in [-1, 1) from a 32-bit state. */
static inline float cref_float(uint32_t *x)
{
	*x = *x * 1664525u + 1013904223u;
	return (float)(*x >> 8) / (float)(1u << 23) - 1.0f;
}

static inline uint32_t cref_next(uint32_t *x)
{
	*x = *x * 1664525u + 1013904223u;
	return *x >> 7;
}

/* Lane 0's value after v += __shfl_down_sync(~0, v, 16 .. 1). */
static inline float cref_warp_sum(const float *lanes)
{
	float v[32], w[32];

	memcpy(v, lanes, sizeof(v));
	for (int off = 16; off > 0; off >>= 1) {
		for (int l = 0; l < 32; l++)
			w[l] = v[l] + (l + off < 32 ? v[l + off] : v[l]);
		memcpy(v, w, sizeof(v));
	}
	return v[0];
}

/* reduce_warp: out[b] for every block of @block (a multiple of 32) */
static inline void cref_reduce_warp(const float *in, unsigned n, unsigned block,
				    unsigned nr_blocks, float *out)
{
	for (unsigned b = 0; b < nr_blocks; b++) {
		float warps[32] = { 0 }, lanes[32];

		for (unsigned w = 0; w < block / 32; w++) {
			for (unsigned l = 0; l < 32; l++) {
				unsigned i = b * block + w * 32 + l;

				lanes[l] = i < n ? in[i] : 0.0f;
			}
			warps[w] = cref_warp_sum(lanes);
		}
		out[b] = cref_warp_sum(warps);
	}
}

/* dot_product: c[b], a grid-stride sum a thread, a halving tree */
static inline void cref_dot(const float *a, const float *b, int n, int block,
			    int grid, float *c)
{
	float *cache = calloc((size_t)block, sizeof(float));

	if (!cache)
		abort();
	for (int g = 0; g < grid; g++) {
		for (int t = 0; t < block; t++) {
			float temp = 0;

			for (int i = g * block + t; i < n; i += block * grid)
				temp += a[i] * b[i];
			cache[t] = temp;
		}
		for (int i = block / 2; i != 0; i /= 2)
			for (int t = 0; t < i; t++)
				cache[t] += cache[t + i];
		c[g] = cache[0];
	}
	free(cache);
}

static inline int cref_max(const int *in, int n)
{
	int m = in[0];

	for (int i = 1; i < n; i++)
		if (in[i] > m)
			m = in[i];
	return m;
}

static inline void cref_histogram(const unsigned char *data, int n,
				  unsigned *hist)
{
	memset(hist, 0, 256 * sizeof(*hist));
	for (int i = 0; i < n; i++)
		hist[data[i]]++;
}

/* scan_blelloch: exclusive scans of 2 @block element segments, totals */
static inline void cref_scan(const unsigned *in, int n, int block,
			     unsigned *out, unsigned *sums)
{
	int m = 2 * block;

	for (int b = 0; b * m < n; b++) {
		unsigned run = 0;

		for (int i = b * m; i < (b + 1) * m; i++) {
			if (i < n) {
				out[i] = run;
				run += in[i];
			}
		}
		sums[b] = run;
	}
}

/* compact_block: block b's multiples of @div at out[b block ..], in order */
static inline void cref_compact(const int *in, int n, int block, int div,
				int *out, int *counts)
{
	for (int b = 0; b * block < n; b++) {
		int k = 0;

		for (int i = b * block; i < (b + 1) * block && i < n; i++)
			if (in[i] % div == 0)
				out[b * block + k++] = in[i];
		counts[b] = k;
	}
}

/* Sort @n (key, value) pairs by key (distinct keys), @up or down. */
static inline void cref_sort_pairs(unsigned *key, unsigned *val, int n, int up)
{
	for (int i = 1; i < n; i++) {
		unsigned k = key[i], v = val[i];
		int j = i - 1;

		while (j >= 0 && (up ? key[j] > k : key[j] < k)) {
			key[j + 1] = key[j];
			val[j + 1] = val[j];
			j--;
		}
		key[j + 1] = k;
		val[j + 1] = v;
	}
}

static inline void cref_sort_ints(int *a, int n)
{
	for (int i = 1; i < n; i++) {
		int k = a[i], j = i - 1;

		while (j >= 0 && a[j] > k) {
			a[j + 1] = a[j];
			j--;
		}
		a[j + 1] = k;
	}
}

/* spmv_csr_scalar: one row at a time, its entries in order */
static inline void cref_spmv_scalar(int rows, const int *ptr, const int *idx,
				    const float *data, const float *x, float *y)
{
	for (int r = 0; r < rows; r++) {
		float dot = 0;

		for (int j = ptr[r]; j < ptr[r + 1]; j++)
			dot += data[j] * x[idx[j]];
		y[r] = dot;
	}
}

/* spmv_csr_vector: lane l sums entries l, l + 32, ...; then the warp */
static inline void cref_spmv_vector(int rows, const int *ptr, const int *idx,
				    const float *data, const float *x, float *y)
{
	for (int r = 0; r < rows; r++) {
		float lanes[32];

		for (int l = 0; l < 32; l++) {
			float sum = 0;

			for (int j = ptr[r] + l; j < ptr[r + 1]; j += 32)
				sum += data[j] * x[idx[j]];
			lanes[l] = sum;
		}
		y[r] = cref_warp_sum(lanes);
	}
}

/* stencil2d: the border copied, inside c0 centre + c1 (N + S + W + E) */
static inline void cref_stencil2d(const float *in, float *out, int nx, int ny,
				  float c0, float c1)
{
	for (int y = 0; y < ny; y++)
		for (int x = 0; x < nx; x++) {
			const float *p = in + y * nx + x;

			if (!x || !y || x == nx - 1 || y == ny - 1)
				out[y * nx + x] = *p;
			else
				out[y * nx + x] =
					c0 * *p +
					c1 * (p[-nx] + p[nx] + p[-1] + p[1]);
		}
}

/* stencil3d: a missing neighbour is the cell itself */
static inline void cref_stencil3d(const float *in, float *out, int nx, int ny,
				  int nz, float cc, float cn)
{
	int plane = nx * ny;

	for (int z = 0; z < nz; z++)
		for (int y = 0; y < ny; y++)
			for (int x = 0; x < nx; x++) {
				int c = z * plane + y * nx + x;
				float w = x ? in[c - 1] : in[c];
				float e = x < nx - 1 ? in[c + 1] : in[c];
				float n = y ? in[c - nx] : in[c];
				float s = y < ny - 1 ? in[c + nx] : in[c];
				float b = z ? in[c - plane] : in[c];
				float t = z < nz - 1 ? in[c + plane] : in[c];

				out[c] = cc * in[c] +
					 cn * (w + e + n + s + b + t);
			}
}

/* matmul_tiled: k in order, padded with zeros to a multiple of @tile */
static inline void cref_matmul(const float *A, const float *B, float *C, int M,
			       int N, int K, int tile)
{
	int kk = (K + tile - 1) / tile * tile;

	for (int r = 0; r < M; r++)
		for (int c = 0; c < N; c++) {
			float sum = 0.0f;

			for (int k = 0; k < kk; k++) {
				float a = k < K ? A[r * K + k] : 0.0f;
				float b = k < K ? B[k * N + c] : 0.0f;

				sum += a * b;
			}
			C[r * N + c] = sum;
		}
}

/* nbody: body i's acceleration, bodies j in order (x, y, z, mass) */
static inline void cref_nbody(const float *pos, float *acc, int n,
			      float softening)
{
	for (int i = 0; i < n; i++) {
		const float *bi = pos + 4 * i;
		float ax = 0.0f, ay = 0.0f, az = 0.0f;

		for (int j = 0; j < n; j++) {
			const float *bj = pos + 4 * j;
			float rx = bj[0] - bi[0], ry = bj[1] - bi[1],
			      rz = bj[2] - bi[2];
			float d2 = rx * rx + ry * ry + rz * rz + softening;
			float inv = 1.0f / sqrtf(d2);
			float inv3 = inv * inv * inv;
			float s = bj[3] * inv3;

			ax += rx * s;
			ay += ry * s;
			az += rz * s;
		}
		acc[4 * i] = ax;
		acc[4 * i + 1] = ay;
		acc[4 * i + 2] = az;
		acc[4 * i + 3] = 0.0f;
	}
}

/* convolution_rows: dst[y][x] = sum over j of k[R - j] src[y][x + j] */
static inline void cref_conv_rows(const float *src, float *dst, int w, int h,
				  const float *k, int radius)
{
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			float sum = 0;

			for (int j = -radius; j <= radius; j++) {
				int xx = x + j;
				float v = xx >= 0 && xx < w ? src[y * w + xx] :
							      0.0f;

				sum += k[radius - j] * v;
			}
			dst[y * w + x] = sum;
		}
}

/* The number of elements of @a and @b whose bits differ. */
static inline int cref_diff(const void *a, const void *b, size_t n, size_t size)
{
	int bad = 0;

	for (size_t i = 0; i < n; i++)
		bad += memcmp((const char *)a + i * size,
			      (const char *)b + i * size, size) != 0;
	return bad;
}

#endif /* AGILE_CORPUSREF_H */
