// SPDX-License-Identifier: MIT
/*
 * ops.c - reduce kernels for the collectives: sum, min, max and prod
 * over int32, int64, float, double, float16 and bfloat16, and the user
 * callback.
 *
 * Each kernel is a loop over restrict pointers with no call in it, which
 * the compiler vectorises (the loops are built at -O3's cost model below,
 * since -O2's "very cheap" model refuses loops of unknown length).  Two
 * forms: in place (inout op= in: the later halving rounds) and three
 * operands (out = a op b: round 0 and the fold read SEND and write WORK,
 * in one pass instead of a copy plus a reduce).
 *
 * Semantics, the same in every scope and for every member count:
 *  - integer sum and prod wrap around (two's complement), as unsigned
 *    arithmetic does: no undefined behaviour on overflow;
 *  - float min and max: a NaN in either operand gives a NaN (IEEE 754-2019
 *    minimum/maximum, numpy.minimum), so the result does not depend on
 *    the reduction order; +0 and -0 compare equal and either may come out;
 *  - float sum and prod are per-element commutative (a + b == b + a
 *    exactly), so the built-ins never need the operands' order; the order
 *    of association follows the schedule (plan.h), the same on every
 *    member, and every member gets bit-identical results;
 *  - float16 and bfloat16 (uint16_t bit patterns) are widened to float,
 *    reduced there and rounded back to nearest even.  float's 24-bit
 *    significand is at least 2p + 2 for both (p = 11 and 8), so the double
 *    rounding is innocuous: sum and prod are correctly rounded.  min and
 *    max return one operand's value, a NaN first, as for float.  Both run
 *    on AVX2 and F16C where the CPU has them (the same results; a NaN
 *    keeps its payload there, where portable float16 returns the default
 *    NaN).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define COLL_X86_16 1
#endif

#include "coll/ops.h"

/*
 * Runs of at least this many bytes are written with non-temporal stores
 * (x86): a result that large leaves the caches anyway, and a plain store
 * first reads the line it overwrites (read for ownership), a third more
 * memory traffic in the reduce of a large allreduce.  glibc's memcpy does
 * the same above a cache-sized threshold, which is what the allreduce
 * benchmark's memcpy bound measures.
 */
#define COLL_STREAM_MIN_BYTES (1U << 20)
/* The cache-resident block the kernel fills before it is streamed out. */
#define COLL_STREAM_BLOCK_BYTES 4096

#if defined(__GNUC__) && !defined(__clang__) && defined(__OPTIMIZE__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#define SUM_INT(T, U, a, b) ((T)((U)(a) + (U)(b)))
#define PROD_INT(T, U, a, b) ((T)((U)(a) * (U)(b)))
#define SUM_FP(T, U, a, b) ((a) + (b))
#define PROD_FP(T, U, a, b) ((a) * (b))
#define MIN_INT(T, U, a, b) ((a) < (b) ? (a) : (b))
#define MAX_INT(T, U, a, b) ((a) > (b) ? (a) : (b))
/* a NaN on either side comes out: a != a only for a NaN */
#define MIN_FP(T, U, a, b) ((a) < (b) || (a) != (a) ? (a) : (b))
#define MAX_FP(T, U, a, b) ((a) > (b) || (a) != (a) ? (a) : (b))

/* ---- float16 and bfloat16 <-> float, round to nearest even ---- */

static inline float float_of_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static inline uint32_t bits_of_float(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline float f16_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = h >> 10 & 0x1f, man = h & 0x3ff;

	if (exp == 0x1f) /* inf, NaN (payload kept: float is wider) */
		return float_of_bits(sign | 0x7f800000 | man << 13);
	if (exp) /* normal: rebias 15 -> 127 */
		return float_of_bits(sign | (exp + 112) << 23 | man << 13);
	/* zero, subnormal: man x 2^-24, exact in float */
	return float_of_bits(sign | bits_of_float((float)man * 0x1p-24f));
}

static inline uint16_t f16_from_float(float f)
{
	uint32_t x = bits_of_float(f), sign = x >> 16 & 0x8000;

	x &= 0x7fffffff;
	if (x > 0x7f800000) /* NaN: quiet */
		return (uint16_t)(sign | 0x7e00);
	if (x >= 0x47800000) /* >= 2^16 (inf too): inf */
		return (uint16_t)(sign | 0x7c00);
	if (x < 0x38800000) {
		/*
		 * Below 2^-14: a subnormal or zero.  Adding 0.5 puts the
		 * value's units of 2^-24 in the low bits of 0.5's
		 * significand, rounded to nearest even by the FPU.
		 */
		uint32_t r = bits_of_float(float_of_bits(x) + 0.5f);

		return (uint16_t)(sign | (r - 0x3f000000));
	}
	/* normal: rebias, round the 13 dropped bits to nearest even (a
	 * carry may reach the exponent, up to inf at 65520 and above) */
	x += 0xc8000fff + (x >> 13 & 1);
	return (uint16_t)(sign | x >> 13);
}

static inline float bf16_to_float(uint16_t h)
{
	return float_of_bits((uint32_t)h << 16);
}

static inline uint16_t bf16_from_float(float f)
{
	uint32_t x = bits_of_float(f);

	if ((x & 0x7fffffff) > 0x7f800000) /* NaN: quiet, sign kept */
		return (uint16_t)(x >> 16 | 0x40);
	x += 0x7fff + (x >> 16 & 1);
	return (uint16_t)(x >> 16);
}

#define SUM_HALF(T, U, a, b) U##_from_float(U##_to_float(a) + U##_to_float(b))
#define PROD_HALF(T, U, a, b) U##_from_float(U##_to_float(a) * U##_to_float(b))
#define MIN_HALF(T, U, a, b)                                  \
	(U##_to_float(a) < U##_to_float(b) ||                 \
			 U##_to_float(a) != U##_to_float(a) ? \
		 (a) :                                        \
		 (b))
#define MAX_HALF(T, U, a, b)                                  \
	(U##_to_float(a) > U##_to_float(b) ||                 \
			 U##_to_float(a) != U##_to_float(a) ? \
		 (a) :                                        \
		 (b))

#define KERNELS(NAME, T, U, OP)                                             \
	static void NAME##_2(void *restrict inout, const void *restrict in, \
			     size_t count)                                  \
	{                                                                   \
		T *restrict d = inout;                                      \
		const T *restrict s = in;                                   \
                                                                            \
		for (size_t i = 0; i < count; i++)                          \
			d[i] = OP(T, U, d[i], s[i]);                        \
	}                                                                   \
	static void NAME##_3(void *restrict out, const void *restrict a,    \
			     const void *restrict b, size_t count)          \
	{                                                                   \
		T *restrict d = out;                                        \
		const T *restrict x = a, *restrict y = b;                   \
                                                                            \
		for (size_t i = 0; i < count; i++)                          \
			d[i] = OP(T, U, x[i], y[i]);                        \
	}

#define TYPE_KERNELS(TN, T, U, SUM, PROD, MIN, MAX) \
	KERNELS(sum_##TN, T, U, SUM)                \
	KERNELS(prod_##TN, T, U, PROD)              \
	KERNELS(min_##TN, T, U, MIN)                \
	KERNELS(max_##TN, T, U, MAX)

TYPE_KERNELS(i32, int32_t, uint32_t, SUM_INT, PROD_INT, MIN_INT, MAX_INT)
TYPE_KERNELS(i64, int64_t, uint64_t, SUM_INT, PROD_INT, MIN_INT, MAX_INT)
TYPE_KERNELS(f32, float, float, SUM_FP, PROD_FP, MIN_FP, MAX_FP)
TYPE_KERNELS(f64, double, double, SUM_FP, PROD_FP, MIN_FP, MAX_FP)
TYPE_KERNELS(f16, uint16_t, f16, SUM_HALF, PROD_HALF, MIN_HALF, MAX_HALF)
TYPE_KERNELS(bf16, uint16_t, bf16, SUM_HALF, PROD_HALF, MIN_HALF, MAX_HALF)

#define ROW(TN)                                         \
	{                                               \
		{ sum_##TN##_2, sum_##TN##_3 },         \
			{ min_##TN##_2, min_##TN##_3 }, \
			{ max_##TN##_2, max_##TN##_3 }, \
		{                                       \
			prod_##TN##_2, prod_##TN##_3    \
		}                                       \
	}

#ifdef COLL_X86_16
/*
 * The 16-bit floats on AVX2 and F16C (x86 since 2013; chosen at run
 * time): eight lanes widened, reduced and rounded back to nearest even
 * a few instructions each, where the portable conversions cost a branchy
 * call per float16 element.  The same results but for NaN payloads
 * (kept here, quieted).  Each block is loaded before it is stored, so
 * the two-operand form may pass out as a.
 */
#define X86_16_TARGET __attribute__((target("avx2,f16c")))
#define X86_16_INLINE static inline __attribute__((always_inline)) X86_16_TARGET

X86_16_INLINE __m256 x86_16_widen(bool bf16, const uint16_t *p)
{
	__m128i h = _mm_loadu_si128((const void *)p);

	if (!bf16)
		return _mm256_cvtph_ps(h);
	return _mm256_castsi256_ps(
		_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* bf16_from_float's rounding, eight lanes at a time */
X86_16_INLINE __m128i x86_16_bf16(__m256 r)
{
	__m256i x = _mm256_castps_si256(r);
	__m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16),
				       _mm256_set1_epi32(1));
	__m256i rounded = _mm256_add_epi32(
		x, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff)));
	__m256i quiet = _mm256_or_si256(x, _mm256_set1_epi32(0x400000));
	__m256i nan = _mm256_castps_si256(_mm256_cmp_ps(r, r, _CMP_UNORD_Q));
	__m256i w =
		_mm256_srli_epi32(_mm256_blendv_epi8(rounded, quiet, nan), 16);

	/* 32 -> 16 bits in each 128-bit half, then the halves together */
	w = _mm256_packus_epi32(w, w);
	return _mm256_castsi256_si128(_mm256_permute4x64_epi64(w, 0x08));
}

X86_16_INLINE void x86_16_narrow(bool bf16, uint16_t *p, __m256 r)
{
	__m128i h = bf16 ? x86_16_bf16(r) :
			   _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT);

	_mm_storeu_si128((void *)p, h);
}

/* a (op) b with the NaN rules of MIN_FP and MAX_FP */
X86_16_INLINE __m256 x86_16_op(enum agile_coll_op op, __m256 a, __m256 b)
{
	__m256 take_a;

	switch (op) {
	case AGILE_COLL_SUM:
		return _mm256_add_ps(a, b);
	case AGILE_COLL_PROD:
		return _mm256_mul_ps(a, b);
	case AGILE_COLL_MIN:
		take_a = _mm256_cmp_ps(a, b, _CMP_LT_OQ);
		break;
	default:
		take_a = _mm256_cmp_ps(a, b, _CMP_GT_OQ);
		break;
	}
	take_a = _mm256_or_ps(take_a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
	return _mm256_blendv_ps(b, a, take_a);
}

/* The tail goes through a block of eight too: one NaN rule per call. */
X86_16_INLINE void x86_16_run(bool bf16, enum agile_coll_op op, void *out,
			      const void *a, const void *b, size_t count)
{
	uint16_t *d = out, tx[8] = { 0 }, ty[8] = { 0 }, td[8];
	const uint16_t *x = a, *y = b;
	size_t i = 0;

	for (; i + 8 <= count; i += 8)
		x86_16_narrow(bf16, d + i,
			      x86_16_op(op, x86_16_widen(bf16, x + i),
					x86_16_widen(bf16, y + i)));
	if (i == count)
		return;
	memcpy(tx, x + i, (count - i) * sizeof(*x));
	memcpy(ty, y + i, (count - i) * sizeof(*y));
	x86_16_narrow(bf16, td,
		      x86_16_op(op, x86_16_widen(bf16, tx),
				x86_16_widen(bf16, ty)));
	memcpy(d + i, td, (count - i) * sizeof(*d));
}

#define X86_16_KERNELS(NAME, BF16, OP)                                       \
	static X86_16_TARGET void NAME##_x86_3(void *restrict out,           \
					       const void *restrict a,       \
					       const void *restrict b,       \
					       size_t count)                 \
	{                                                                    \
		x86_16_run(BF16, OP, out, a, b, count);                      \
	}                                                                    \
	static X86_16_TARGET void NAME##_x86_2(                              \
		void *restrict inout, const void *restrict in, size_t count) \
	{                                                                    \
		x86_16_run(BF16, OP, inout, inout, in, count);               \
	}

X86_16_KERNELS(sum_f16, false, AGILE_COLL_SUM)
X86_16_KERNELS(prod_f16, false, AGILE_COLL_PROD)
X86_16_KERNELS(min_f16, false, AGILE_COLL_MIN)
X86_16_KERNELS(max_f16, false, AGILE_COLL_MAX)
X86_16_KERNELS(sum_bf16, true, AGILE_COLL_SUM)
X86_16_KERNELS(prod_bf16, true, AGILE_COLL_PROD)
X86_16_KERNELS(min_bf16, true, AGILE_COLL_MIN)
X86_16_KERNELS(max_bf16, true, AGILE_COLL_MAX)

static const struct {
	coll_kernel2 k2;
	coll_kernel3 k3;
} x86_16_kernels[2][AGILE_COLL_USER] = { ROW(f16_x86), ROW(bf16_x86) };

/* -1: not asked yet; agile__coll_ops_use_simd() may turn it off (the tests). */
static int x86_16_state = -1;

static bool x86_16(void)
{
	int state = __atomic_load_n(&x86_16_state, __ATOMIC_RELAXED);

	if (state < 0) {
		__builtin_cpu_init();
		state = __builtin_cpu_supports("avx2") &&
			__builtin_cpu_supports("f16c");
		__atomic_store_n(&x86_16_state, state, __ATOMIC_RELAXED);
	}
	return state;
}

bool agile__coll_ops_use_simd(bool on)
{
	__atomic_store_n(&x86_16_state, -1, __ATOMIC_RELAXED);
	if (on)
		return x86_16();
	__atomic_store_n(&x86_16_state, 0, __ATOMIC_RELAXED);
	return false;
}
#else
bool agile__coll_ops_use_simd(bool on)
{
	(void)on;
	return false;
}
#endif

/* [type][op]: constant, so no state. */
static const struct {
	coll_kernel2 k2;
	coll_kernel3 k3;
} kernels[AGILE_COLL_NR_TYPES][AGILE_COLL_USER] = {
	/* clang-format off */
	[AGILE_COLL_INT32] = ROW(i32),
	[AGILE_COLL_INT64] = ROW(i64),
	[AGILE_COLL_FLOAT] = ROW(f32),
	[AGILE_COLL_DOUBLE] = ROW(f64),
	[AGILE_COLL_FLOAT16] = ROW(f16),
	[AGILE_COLL_BFLOAT16] = ROW(bf16),
	/* clang-format on */
};

_Static_assert(AGILE_COLL_SUM == 0 && AGILE_COLL_MIN == 1 &&
		       AGILE_COLL_MAX == 2 && AGILE_COLL_PROD == 3 &&
		       AGILE_COLL_USER == 4,
	       "the kernel table's columns");

size_t agile_coll_type_size(enum agile_coll_type type)
{
	switch (type) {
	case AGILE_COLL_FLOAT16:
	case AGILE_COLL_BFLOAT16:
		return 2;
	case AGILE_COLL_INT32:
	case AGILE_COLL_FLOAT:
		return 4;
	case AGILE_COLL_INT64:
	case AGILE_COLL_DOUBLE:
		return 8;
	default:
		return 0;
	}
}

int agile__coll_reducer_init(struct coll_reducer *rd, enum agile_coll_type type,
			     enum agile_coll_op op, agile_coll_user_fn user_fn,
			     void *user_arg, bool commutative)
{
	size_t size = agile_coll_type_size(type);

	if (!rd || !size || (unsigned int)op >= AGILE_COLL_NR_OPS ||
	    (op == AGILE_COLL_USER && !user_fn))
		return -EINVAL;
	rd->type = type;
	rd->size = size;
	if (op == AGILE_COLL_USER) {
		rd->k2 = NULL;
		rd->k3 = NULL;
		rd->user_fn = user_fn;
		rd->user_arg = user_arg;
		rd->commutative = commutative;
	} else {
		rd->k2 = kernels[type][op].k2;
		rd->k3 = kernels[type][op].k3;
#ifdef COLL_X86_16
		if ((type == AGILE_COLL_FLOAT16 ||
		     type == AGILE_COLL_BFLOAT16) &&
		    x86_16()) {
			bool bf16 = type == AGILE_COLL_BFLOAT16;

			rd->k2 = x86_16_kernels[bf16][op].k2;
			rd->k3 = x86_16_kernels[bf16][op].k3;
		}
#endif
		rd->user_fn = NULL;
		rd->user_arg = NULL;
		rd->commutative = true;
	}
	return 0;
}

#ifdef __SSE2__
/*
 * dst = left op right through a block in the cache and non-temporal
 * stores: the built-ins only.  Each block of dst is written after the
 * same block of left and right was read, so dst may be left or right.
 * The closing sfence orders the streamed stores before whatever the
 * caller stores next: the release store that publishes the result
 * (shm.c) would not order them on its own.
 */
static void reduce_streaming(const struct coll_reducer *rd, char *dst,
			     const char *left, const char *right, size_t count)
{
	_Alignas(64) char block[COLL_STREAM_BLOCK_BYTES];
	size_t size = rd->size, per_block = sizeof(block) / size;
	size_t head = ((16 - ((uintptr_t)dst & 15)) & 15) / size;

	/* dst is element aligned: 2, 4 or 8 bytes, so 16 is reached */
	if (head) {
		rd->k3(dst, left, right, head);
		dst += head * size;
		left += head * size;
		right += head * size;
		count -= head;
	}
	while (count) {
		size_t n = count < per_block ? count : per_block;
		size_t bytes = n * size, vec = bytes & ~(size_t)15;

		rd->k3(block, left, right, n);
		for (size_t at = 0; at < vec; at += 16) {
			__m128i v = _mm_load_si128((void *)(block + at));

			_mm_stream_si128((void *)(dst + at), v);
		}
		memcpy(dst + vec, block + vec, bytes - vec);
		dst += bytes;
		left += bytes;
		right += bytes;
		count -= n;
	}
	_mm_sfence();
}
#endif

void agile__coll_copy_streaming(void *dst, const void *src, size_t bytes)
{
#ifdef __SSE2__
	char *d = dst;
	const char *s = src;
	size_t head = (16 - ((uintptr_t)d & 15)) & 15, vec;

	if (head > bytes)
		head = bytes;
	memcpy(d, s, head);
	d += head;
	s += head;
	bytes -= head;
	vec = bytes & ~(size_t)63;
	for (size_t at = 0; at < vec; at += 64) {
		__m128i a = _mm_loadu_si128((const void *)(s + at));
		__m128i b = _mm_loadu_si128((const void *)(s + at + 16));
		__m128i e = _mm_loadu_si128((const void *)(s + at + 32));
		__m128i f = _mm_loadu_si128((const void *)(s + at + 48));

		_mm_stream_si128((void *)(d + at), a);
		_mm_stream_si128((void *)(d + at + 16), b);
		_mm_stream_si128((void *)(d + at + 32), e);
		_mm_stream_si128((void *)(d + at + 48), f);
	}
	memcpy(d + vec, s + vec, bytes - vec);
#else
	memcpy(dst, src, bytes);
#endif
}

void agile__coll_stream_fence(void)
{
#ifdef __SSE2__
	_mm_sfence();
#endif
}

void agile__coll_reduce(const struct coll_reducer *rd, void *dst,
			const void *left, const void *right, size_t count)
{
	size_t chunk;

	if (!count)
		return;
#ifdef __SSE2__
	if (rd->k3 && count * rd->size >= COLL_STREAM_MIN_BYTES &&
	    !((uintptr_t)dst % rd->size)) {
		reduce_streaming(rd, dst, left, right, count);
		return;
	}
#endif
	if (rd->k2) {
		/* the built-ins commute: a result in right's place is fine */
		if (dst == left)
			rd->k2(dst, right, count);
		else if (dst == right)
			rd->k2(dst, left, count);
		else
			rd->k3(dst, left, right, count);
		return;
	}
	if (dst == left) {
		rd->user_fn(dst, right, count, rd->type, rd->user_arg);
		return;
	}
	if (dst != right) {
		memcpy(dst, left, count * rd->size);
		rd->user_fn(dst, right, count, rd->type, rd->user_arg);
		return;
	}
	if (rd->commutative) {
		rd->user_fn(dst, left, count, rd->type, rd->user_arg);
		return;
	}
	/*
	 * dst = left op dst, and the callback only writes its left operand:
	 * left's chunk goes through the bounce buffer, cache-sized.
	 */
	chunk = COLL_BOUNCE_BYTES / rd->size;
	for (size_t at = 0; at < count; at += chunk) {
		size_t n = count - at < chunk ? count - at : chunk;
		char *d = (char *)dst + at * rd->size;

		memcpy(rd->bounce, (const char *)left + at * rd->size,
		       n * rd->size);
		rd->user_fn(rd->bounce, d, n, rd->type, rd->user_arg);
		memcpy(d, rd->bounce, n * rd->size);
	}
}
