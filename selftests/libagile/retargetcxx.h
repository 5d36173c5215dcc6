/* SPDX-License-Identifier: MIT */
/*
 * retargetcxx.h - plain C references for retarget/cxx.cu's kernels (the
 * C++ subset: docs/retarget.md, "C++"), shared by retarget-cxx
 * (--emit=launch) and rt-retarget (--emit=runtime); each returns how
 * many outputs differ, bit for bit.
 */
#ifndef AGILE_RETARGETCXX_H
#define AGILE_RETARGETCXX_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The inputs: small integers, so every sum of squares is exact. */
static inline float cxx_in_f(unsigned i)
{
	return (float)(i * 2654435761u % 15) - 7.0f;
}

static inline int cxx_in_i(unsigned i)
{
	return (int)(i * 2654435761u % 201) - 100;
}

static inline double cxx_in_d(unsigned i)
{
	return (double)(i % 13) * 0.5 - 3.0;
}

/* block_reduce<T, BS>: each block's sum of squares. */
#define CXX_REF_REDUCE(name, T)                                               \
	static inline int name(const T *in, const T *out, unsigned nr_blocks, \
			       unsigned bs)                                   \
	{                                                                     \
		int bad = 0;                                                  \
		for (unsigned b = 0; b < nr_blocks; b++) {                    \
			T want = 0;                                           \
			for (unsigned i = 0; i < bs; i++)                     \
				want += in[b * bs + i] * in[b * bs + i];      \
			bad += memcmp(&want, &out[b], sizeof(T)) != 0;        \
		}                                                             \
		return bad;                                                   \
	}
CXX_REF_REDUCE(ref_cxx_reduce_f, float)
CXX_REF_REDUCE(ref_cxx_reduce_i, int)
CXX_REF_REDUCE(ref_cxx_reduce_d, double)

static inline int cxx_cmp_i(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static inline int cxx_cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

/* bitonic<T>: each block's 64 keys in order; @in the keys before. */
static inline int ref_cxx_sorted(const void *in, const void *out,
				 unsigned nr_blocks, size_t size, int is_int)
{
	char *want = malloc((size_t)nr_blocks * 64 * size);
	int bad = 0;

	if (!want)
		return -1;
	memcpy(want, in, (size_t)nr_blocks * 64 * size);
	for (unsigned b = 0; b < nr_blocks; b++)
		qsort(want + (size_t)b * 64 * size, 64, size,
		      is_int ? cxx_cmp_i : cxx_cmp_f);
	for (size_t i = 0; i < (size_t)nr_blocks * 64; i++)
		bad += memcmp(want + i * size, (const char *)out + i * size,
			      size) != 0;
	free(want);
	return bad;
}

/* ops::smooth<R>: the window's mean, scaled by 0.25; 0 at the edges. */
static inline int ref_cxx_smooth(const float *in, const float *out, int n,
				 int r)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		float want = 0.0f;

		if (i >= r && i < n - r) {
			float acc = 0.0f;

			for (int d = -r; d <= r; d++)
				acc += in[i + d];
			want = acc / (2 * r + 1) * 0.25f;
		}
		bad += memcmp(&want, &out[i], sizeof(float)) != 0;
	}
	return bad;
}

/* tile_transpose: out[y][x] = in[x][y] / 4 + the tiles a row. */
static inline int ref_cxx_transpose(const float *in, const float *out,
				    int width)
{
	float nb = (float)((width + 15) / 16);
	int bad = 0;

	for (int y = 0; y < width; y++)
		for (int x = 0; x < width; x++) {
			float want = in[x * width + y] * 0.25f + nb;

			bad += memcmp(&want, &out[y * width + x],
				      sizeof(float)) != 0;
		}
	return bad;
}

/* vec_dots over @n Vec3s (3 floats each): a, b from cxx_in_f. */
static inline int ref_cxx_vec_dots(const float *a, const float *b,
				   const float *out, int n)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		const float *p = a + 3 * i, *q = b + 3 * i;
		float vx = p[0] * 2.0f, vy = p[1] * 2.0f, vz = p[2] * 2.0f;
		float want = (vx * q[0] + vy * q[1] + vz * q[2]) +
			     (vx * vx + vy * vy + vz * vz) + p[0] * 0.5f;

		bad += memcmp(&want, &out[i], sizeof(float)) != 0;
	}
	return bad;
}

#endif /* AGILE_RETARGETCXX_H */
