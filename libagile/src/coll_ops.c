// SPDX-License-Identifier: MIT
/*
 * coll_ops.c - reduce kernels for the collectives: sum, min, max and prod
 * over int32, int64, float and double, and the user callback.
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
 *    of association follows the schedule (coll_plan.h), the same on every
 *    member, and every member gets bit-identical results.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "coll_ops.h"

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

#define ROW(TN)                                         \
	{                                               \
		{ sum_##TN##_2, sum_##TN##_3 },         \
			{ min_##TN##_2, min_##TN##_3 }, \
			{ max_##TN##_2, max_##TN##_3 }, \
		{                                       \
			prod_##TN##_2, prod_##TN##_3    \
		}                                       \
	}

/* [type][op]: constant, so no state. */
static const struct {
	coll_kernel2 k2;
	coll_kernel3 k3;
} kernels[AGILE_COLL_NR_TYPES][AGILE_COLL_USER] = {
	[AGILE_COLL_INT32] = ROW(i32),
	[AGILE_COLL_INT64] = ROW(i64),
	[AGILE_COLL_FLOAT] = ROW(f32),
	[AGILE_COLL_DOUBLE] = ROW(f64),
};

_Static_assert(AGILE_COLL_SUM == 0 && AGILE_COLL_MIN == 1 &&
		       AGILE_COLL_MAX == 2 && AGILE_COLL_PROD == 3 &&
		       AGILE_COLL_USER == 4,
	       "the kernel table's columns");

size_t agile_coll_type_size(enum agile_coll_type type)
{
	switch (type) {
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

int coll_reducer_init(struct coll_reducer *rd, enum agile_coll_type type,
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
 * (coll_shm.c) would not order them on its own.
 */
static void reduce_streaming(const struct coll_reducer *rd, char *dst,
			     const char *left, const char *right, size_t count)
{
	_Alignas(64) char block[COLL_STREAM_BLOCK_BYTES];
	size_t size = rd->size, per_block = sizeof(block) / size;
	size_t head = ((16 - ((uintptr_t)dst & 15)) & 15) / size;

	/* dst is element aligned: 4 or 8 bytes, so 16 is reached */
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

void coll_reduce(const struct coll_reducer *rd, void *dst, const void *left,
		 const void *right, size_t count)
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
