/* SPDX-License-Identifier: MIT */
/*
 * retargetbuiltins.h - the inputs and plain C references of
 * retarget/vector.cu and retarget/intrinsics.cu (issue 31), which both
 * ways of running them are checked against (retarget-vector and
 * retarget-intrinsics: agile_launch; rt-retarget: the runtime's EUs).
 * The references follow CUDA's documentation of each intrinsic, written
 * without <agile/retarget.h>'s definitions: loops over the bits, the
 * 24-bit operands sign-extended by hand, the high words of a product
 * from its 32-bit halves.
 */
#ifndef AGILE_RETARGETBUILTINS_H
#define AGILE_RETARGETBUILTINS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- vector.cu ---- */

/* saxpy4's x, y (4 n4 floats each) and a: a x + y is exact either way. */
#define REF_SAXPY_A 1.5f
static inline void ref_saxpy_input(float *x, float *y, int n)
{
	for (int i = 0; i < n; i++) {
		x[i] = (float)(i % 17) - 8.0f;
		y[i] = (float)(i % 5) * 0.5f;
	}
}

/* saxpy4 left @y from @y0; the number of floats wrong. */
static inline int ref_saxpy(const float *x, const float *y0, const float *y,
			    int n)
{
	int bad = 0;

	for (int i = 0; i < n; i++)
		bad += y[i] != REF_SAXPY_A * x[i] + y0[i];
	return bad;
}

/* vec_reverse's inputs: @n float4 (4 n floats), int2, uint4, uchar4. */
static inline void ref_vector_input(float *in, int *a, unsigned int *b,
				    unsigned char *c, unsigned int n)
{
	for (unsigned int i = 0; i < 4 * n; i++) {
		in[i] = (float)(i * 7 % 23) - 11.0f;
		b[i] = i * 2654435761u >> 12;
		c[i] = (unsigned char)(i * 37 + 5);
	}
	for (unsigned int i = 0; i < 2 * n; i++)
		a[i] = (int)(i * 40503u % 100001u) - 50000;
}

/*
 * What vec_reverse left in @out (4 floats a thread) and @sums (2 doubles
 * a thread), blocks of @nt threads; the number of words wrong.
 */
static inline int ref_vector_reverse(const float *in, const int *a,
				     const unsigned int *b,
				     const unsigned char *c, const float *out,
				     const double *sums, unsigned int nr_blocks,
				     unsigned int nt)
{
	int bad = 0;

	for (unsigned int blk = 0; blk < nr_blocks; blk++)
		for (unsigned int t = 0; t < nt; t++) {
			unsigned int g = blk * nt + t;
			const float *o = &in[4 * g]; /* own */
			const float *r = &in[4 * (blk * nt + nt - 1 - t)];
			const int *ai = &a[2 * g];
			const unsigned int *bi = &b[4 * g];
			const unsigned char *ci = &c[4 * g];
			float want[4] = { r[3] + (o[0] + o[1]),
					  r[2] + (o[2] - o[3]), r[1], r[0] };
			double s0 = (double)ai[0] * bi[3] + ci[0] + ci[1];
			double s1 = (double)ai[1] * bi[2] - bi[0] - bi[1] +
				    ci[2] * ci[3];

			for (int k = 0; k < 4; k++)
				bad += out[4 * g + k] != want[k];
			bad += sums[2 * g] != s0;
			bad += sums[2 * g + 1] != s1;
		}
	return bad;
}

/* vec_sizes: CUDA's sizes and alignments, in its order. */
static const int ref_vector_sizes[5][4] = {
	{ 8, 12, 16, 16 }, /* sizeof float2, float3, float4, double2 */
	{ 8, 4, 16, 16 }, /* their alignments */
	{ 8, 12, 16, 4 }, /* sizeof int2, int3, int4, uchar4 */
	{ 8, 4, 16, 4 }, /* their alignments */
	{ 8, 16, 8, 16 }, /* sizeof uint2, uint4; their alignments */
};

/* ---- intrinsics.cu ---- */

#define REF_NR_BITS 14 /* intrinsics.cu's NR_BITS */
#define REF_NR_FMATH 14 /* and NR_FMATH */

/* bits' inputs: the edges first, then a hash. */
static inline void ref_bits_input(unsigned int *in, unsigned long long *in64,
				  unsigned int n)
{
	static const unsigned int edge[] = {
		0,	     1,		  0xffffffffu, 0x80000000u, 0x7fffffffu,
		0x00800000u, 0x00ffffffu, 0xff800000u, 0x00400000u
	};
	static const unsigned long long edge64[] = {
		0,
		1,
		~0ull,
		1ull << 63,
		(1ull << 63) - 1,
		1ull << 32,
		0xffffffffull,
		0x8000000080000000ull,
		3,
	};
	const unsigned int nr_edges = sizeof(edge) / sizeof(edge[0]);

	for (unsigned int i = 0; i < n; i++) {
		uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull;

		h ^= h >> 29;
		in[i] = i < nr_edges ? edge[i] : (unsigned int)(h >> 17);
		in64[i] = i < nr_edges ? edge64[i] : h * 0xbf58476d1ce4e5b9ull;
	}
}

static inline int ref_popc(uint64_t v)
{
	int n = 0;

	for (; v; v >>= 1)
		n += (int)(v & 1);
	return n;
}

/* Leading zeros of the @width-bit @v; @width for 0. */
static inline int ref_clz(uint64_t v, int width)
{
	int n = 0;

	while (n < width && !(v >> (width - 1 - n) & 1))
		n++;
	return n;
}

/* The lowest set bit, counting from 1; 0 for 0. */
static inline int ref_ffs(uint64_t v, int width)
{
	for (int b = 0; b < width; b++)
		if (v >> b & 1)
			return b + 1;
	return 0;
}

static inline uint64_t ref_brev(uint64_t v, int width)
{
	uint64_t r = 0;

	for (int b = 0; b < width; b++)
		if (v >> b & 1)
			r |= 1ull << (width - 1 - b);
	return r;
}

/* The high 64 bits of x y, from the 32-bit halves. */
static inline uint64_t ref_umul64hi(uint64_t x, uint64_t y)
{
	uint64_t xl = x & 0xffffffffu, xh = x >> 32;
	uint64_t yl = y & 0xffffffffu, yh = y >> 32;
	uint64_t ll = xl * yl, lh = xl * yh, hl = xh * yl, hh = xh * yh;
	uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);

	return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

/* Signed: the unsigned product less each negative operand's correction. */
static inline int64_t ref_mul64hi(int64_t x, int64_t y)
{
	uint64_t hi = ref_umul64hi((uint64_t)x, (uint64_t)y);

	if (x < 0)
		hi -= (uint64_t)y;
	if (y < 0)
		hi -= (uint64_t)x;
	return (int64_t)hi;
}

/* The low 24 bits of @v as a signed 24-bit number. */
static inline int64_t ref_s24(unsigned int v)
{
	int64_t s = v & 0xffffff;

	return s & 0x800000 ? s - 0x1000000 : s;
}

/* A 32-bit word as int, the way the kernel's (int) casts leave it. */
static inline int ref_word(uint64_t v)
{
	uint32_t w = (uint32_t)v;
	int i;

	memcpy(&i, &w, sizeof(i));
	return i;
}

/* What bits left for @in, @in64: the number of results wrong. */
static inline int ref_bits(const unsigned int *in,
			   const unsigned long long *in64, const int *out,
			   unsigned int n)
{
	int bad = 0;

	for (unsigned int i = 0; i < n; i++) {
		uint32_t v = in[i];
		uint64_t w = in64[i];
		int64_t p = (int64_t)ref_word(v) * -7;
		int want[REF_NR_BITS] = {
			ref_popc(v),
			ref_popc(w),
			ref_clz(v, 32),
			ref_clz(w, 64),
			ref_ffs(v, 32),
			ref_ffs(w, 64),
			ref_word(ref_brev(v, 32)),
			ref_word(ref_brev(w, 64) >> 20),
			ref_word((uint64_t)v * 2654435761u >> 32),
			/* floor(p / 2^32): the high word, arithmetic */
			(int)((p - (int64_t)((uint64_t)p & 0xffffffffu)) /
			      4294967296ll),
			ref_word(ref_umul64hi(w, 0x9e3779b97f4a7c15ull) >> 16),
			ref_word((uint64_t)ref_mul64hi((int64_t)w, -3)),
			ref_word((uint64_t)(ref_s24(v) * ref_s24(v >> 7))),
			ref_word((uint64_t)(v & 0xffffff) *
				 ((v >> 3) & 0xffffff)),
		};

		for (int k = 0; k < REF_NR_BITS; k++)
			bad += out[i * REF_NR_BITS + k] != want[k];
	}
	return bad;
}

/* fmath's inputs: edges (infinities, NaN, 2^126 and up, a denormal), a hash. */
static inline void ref_fmath_input(float *x, float *y, float *z, unsigned int n)
{
	static const float edge[] = { 0.0f,	 -0.0f,	 1.0f,
				      -1.0f,	 0.5f,	 2.0f,
				      3.75f,	 -2.5f,	 1e-3f,
				      1e30f,	 -1e30f, INFINITY,
				      -INFINITY, NAN,	 0x1.8p126f,
				      -0x1p127f, 1e-40f, -0x1.fffffep127f };
	const unsigned int nr = sizeof(edge) / sizeof(edge[0]);

	for (unsigned int i = 0; i < n; i++) {
		uint32_t h = (i + 1) * 2654435761u;

		h ^= h >> 15;
		x[i] = i < nr * nr ? edge[i % nr] :
				     (float)(int)(h % 20001) / 1000.0f - 10.0f;
		y[i] = i < nr * nr ?
			       edge[i / nr] :
			       (float)(int)((h >> 16) % 4001) / 100.0f - 20.0f;
		z[i] = (float)(i % 9) - 4.0f;
		if (x[i] == 0.0f && y[i] == 0.0f) /* fminf's sign of 0 */
			y[i] = 1.0f;
	}
}

static inline int ref_same_float(float x, float y)
{
	return (isnan(x) && isnan(y)) || !memcmp(&x, &y, sizeof(x));
}

/* fmath's results that a GPU approximates (__fdividef within 2 ulp). */
static inline int ref_fmath_fast(int k)
{
	return k == 4 || k >= 8;
}

/*
 * What fmath left: each result as CUDA documents it, the C library's
 * value for the fast-math ones where @cpu (on a GPU those are its own
 * approximations: not checked, but for __fdividef's edge past 2^126).
 * The number of results wrong.
 */
static inline int ref_fmath(const float *x, const float *y, const float *z,
			    const float *out, unsigned int n, int cpu)
{
	int bad = 0;

	for (unsigned int i = 0; i < n; i++) {
		float a = x[i], b = y[i], c = z[i];
		float want[REF_NR_FMATH] = {
			fmaf(a, b, c),
			isnan(a) ? b :
			isnan(b) ? a :
			a < b	 ? a :
				   b,
			isnan(a) ? b :
			isnan(b) ? a :
			a > b	 ? a :
				   b,
			/* [+0, 1], NaN to +0 */
			isnan(a) || a <= 0.0f ? 0.0f :
			a >= 1.0f	      ? 1.0f :
						a,
			/* 2^126 < |b|: 0 (x times the reciprocal flushed to 0) */
			!(fabsf(b) > 0x1p126f)		       ? a / b :
			isinf(a) || isnan(a)		       ? NAN :
			(signbit(a) != 0) != (signbit(b) != 0) ? -0.0f :
								 0.0f,
			a + b,
			a * b,
			fmaf(a, b, c),
			1.0f / sqrtf(fabsf(a)),
			expf(a),
			logf(fabsf(b)),
			sinf(a),
			cosf(b),
			expf(a) + logf(fabsf(b) + 1.0f) + (sinf(a) - cosf(b)) +
				powf(fabsf(a) + 0.5f, b),
		};

		for (int k = 0; k < REF_NR_FMATH; k++)
			if (cpu || !ref_fmath_fast(k) ||
			    (k == 4 && fabsf(b) > 0x1p126f))
				bad += !ref_same_float(
					out[i * REF_NR_FMATH + k], want[k]);
	}
	return bad;
}

#endif /* AGILE_RETARGETBUILTINS_H */
