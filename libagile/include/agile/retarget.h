/* SPDX-License-Identifier: MIT */
/*
 * agile/retarget.h - the CUDA/HIP device built-ins in C, for the code
 * tools/agile-retarget emits (docs/retarget.md)
 *
 * A translated kernel keeps the source's spelling of atomics, fences,
 * vector types (float4, make_float4) and the math and bit intrinsics
 * (__expf, __popc, ...); this header gives them C meanings on CPU
 * threads.  Atomics are relaxed read-modify-writes (CUDA's atomicAdd is
 * relaxed, device scope): blocks of one launch run on different OS
 * threads, so they must be real atomics; within a block the thread loops
 * are sequential.  So an atomic on __shared__ memory, which only its
 * block's OS thread touches, needs no lock: agile-retarget spells it
 * agile_shared_atomicAdd (and so on), a plain read-modify-write here
 * that returns the old value as CUDA's does.  Fences are full fences.
 *
 * Only generated code should include this: it defines macros named as
 * CUDA's functions (atomicAdd, min, max, ...).
 */
#ifndef AGILE_RETARGET_H
#define AGILE_RETARGET_H

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * The runtime's CPU prelude (docs/runtime.md, dialect 2) embeds this
 * header for the built-ins alone: no launch there.
 */
#ifndef AGILE_RETARGET_BUILTINS_ONLY
#include <agile/launch.h>
#include <agile/retarget_types.h>

/* The first argument of a translated __device__ function, in a kernel. */
#define AGILE_THREAD(blk, idx) ((struct agile_thread_ctx){ (blk), (idx) })
#endif

#define AGILE_RT_UNUSED __attribute__((unused))

/*
 * CUDA's "#pragma unroll" (and "#pragma unroll N") comes with the loop it
 * stands before, copied as it is: cc does not know it and would warn
 * (-Wall, -Werror in a build).  Unrolling is a hint; C loses nothing.
 */
#pragma GCC diagnostic ignored "-Wunknown-pragmas"

/*
 * The integer intrinsics, exactly as CUDA documents them: __clz(0) is
 * 32, __ffs counts from 1 (0 for 0), __mul24 multiplies the low 24 bits
 * of each operand (sign-extended; __umul24 zero-extended) and keeps the
 * low 32 bits of the product.
 */
static inline AGILE_RT_UNUSED int agile_rt_clz(int x)
{
	return x ? __builtin_clz((unsigned int)x) : 32;
}

static inline AGILE_RT_UNUSED int agile_rt_clzll(long long x)
{
	return x ? __builtin_clzll((unsigned long long)x) : 64;
}

static inline AGILE_RT_UNUSED unsigned int agile_rt_brev(unsigned int x)
{
	x = (x >> 1 & 0x55555555u) | (x & 0x55555555u) << 1;
	x = (x >> 2 & 0x33333333u) | (x & 0x33333333u) << 2;
	x = (x >> 4 & 0x0f0f0f0fu) | (x & 0x0f0f0f0fu) << 4;
	return __builtin_bswap32(x);
}

static inline AGILE_RT_UNUSED unsigned long long
agile_rt_brevll(unsigned long long x)
{
	return (unsigned long long)agile_rt_brev((unsigned int)x) << 32 |
	       agile_rt_brev((unsigned int)(x >> 32));
}

static inline AGILE_RT_UNUSED int agile_rt_mul24(int x, int y)
{
	int32_t a = (int32_t)((uint32_t)x << 8) >> 8;
	int32_t b = (int32_t)((uint32_t)y << 8) >> 8;

	return (int)(uint32_t)((int64_t)a * b);
}

#define __popc(x) __builtin_popcount((unsigned int)(x))
#define __popcll(x) __builtin_popcountll((unsigned long long)(x))
#define __clz(x) agile_rt_clz((int)(x))
#define __clzll(x) agile_rt_clzll((long long)(x))
#define __ffs(x) __builtin_ffs((int)(x))
#define __ffsll(x) __builtin_ffsll((long long)(x))
#define __brev(x) agile_rt_brev((unsigned int)(x))
#define __brevll(x) agile_rt_brevll((unsigned long long)(x))
#define __umulhi(x, y) \
	((unsigned int)((uint64_t)(unsigned int)(x) * (unsigned int)(y) >> 32))
#define __mulhi(x, y) ((int)((int64_t)(int)(x) * (int)(y) >> 32))
#define __umul64hi(x, y)                                                   \
	((unsigned long long)((unsigned __int128)(unsigned long long)(x) * \
				      (unsigned long long)(y) >>           \
			      64))
#define __mul64hi(x, y) \
	((long long)((__int128)(long long)(x) * (long long)(y) >> 64))
#define __mul24(x, y) agile_rt_mul24((int)(x), (int)(y))
#define __umul24(x, y) \
	(((unsigned int)(x)&0xffffffu) * ((unsigned int)(y)&0xffffffu))

/*
 * The float intrinsics.  The fast-math ones (__expf, __logf, __sinf,
 * __cosf, __powf, __tanf, __log2f, __log10f, rsqrtf) give the C
 * library's value here (glibc's expf and friends: within an ulp), not
 * the GPU's hardware approximation: results may differ from a GPU's in
 * the last bits, more for __sinf/__cosf far from 0.  __fdividef is a
 * correctly rounded x / y but for CUDA's documented edge: for |y| >
 * 2^126 it gives x * 0 (0, or NaN for an infinite x).  __saturatef
 * clamps to [+0, 1] and makes NaN +0; the _rn forms and fmaf, fminf,
 * fmaxf are exact in both places.
 */
static inline AGILE_RT_UNUSED float agile_rt_fdividef(float x, float y)
{
	return fabsf(y) > 0x1p126f ? x * copysignf(0.0f, y) : x / y;
}

static inline AGILE_RT_UNUSED float agile_rt_saturatef(float x)
{
	return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f;
}

static inline AGILE_RT_UNUSED void agile_rt_sincosf(float x, float *s, float *c)
{
	*s = sinf(x);
	*c = cosf(x);
}

#define rsqrtf(x) (1.0f / sqrtf(x))
#define __fdividef(x, y) agile_rt_fdividef((x), (y))
#define __saturatef(x) agile_rt_saturatef(x)
#define __expf(x) expf(x)
#define __logf(x) logf(x)
#define __sinf(x) sinf(x)
#define __cosf(x) cosf(x)
#define __tanf(x) tanf(x)
#define __powf(x, y) powf((x), (y))
#define __log2f(x) log2f(x)
#define __log10f(x) log10f(x)
#define __sincosf(x, s, c) agile_rt_sincosf((x), (s), (c))
#define __fadd_rn(x, y) ((float)(x) + (float)(y))
#define __fmul_rn(x, y) ((float)(x) * (float)(y))
#define __fmaf_rn(x, y, z) fmaf((x), (y), (z))
/* A load through the read-only cache: a load. */
#define __ldg(p) (*(p))

/* One function per operation and integer type, over the __atomic builtins. */
#define AGILE_RT_ATOMIC_INT(sfx, type)                                         \
	static inline AGILE_RT_UNUSED type agile_rt_add_##sfx(type *p, type v) \
	{                                                                      \
		return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);             \
	}                                                                      \
	static inline AGILE_RT_UNUSED type agile_rt_sub_##sfx(type *p, type v) \
	{                                                                      \
		return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED);             \
	}                                                                      \
	static inline AGILE_RT_UNUSED type agile_rt_and_##sfx(type *p, type v) \
	{                                                                      \
		return __atomic_fetch_and(p, v, __ATOMIC_RELAXED);             \
	}                                                                      \
	static inline AGILE_RT_UNUSED type agile_rt_or_##sfx(type *p, type v)  \
	{                                                                      \
		return __atomic_fetch_or(p, v, __ATOMIC_RELAXED);              \
	}                                                                      \
	static inline AGILE_RT_UNUSED type agile_rt_xor_##sfx(type *p, type v) \
	{                                                                      \
		return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED);             \
	}                                                                      \
	static inline AGILE_RT_UNUSED type agile_rt_exch_##sfx(type *p,        \
							       type v)         \
	{                                                                      \
		return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);            \
	}                                                                      \
	static inline AGILE_RT_UNUSED type agile_rt_min_##sfx(type *p, type v) \
	{                                                                      \
		type old = __atomic_load_n(p, __ATOMIC_RELAXED);               \
		while (v < old && !__atomic_compare_exchange_n(                \
					  p, &old, v, true, __ATOMIC_RELAXED,  \
					  __ATOMIC_RELAXED))                   \
			;                                                      \
		return old;                                                    \
	}                                                                      \
	static inline AGILE_RT_UNUSED type agile_rt_max_##sfx(type *p, type v) \
	{                                                                      \
		type old = __atomic_load_n(p, __ATOMIC_RELAXED);               \
		while (v > old && !__atomic_compare_exchange_n(                \
					  p, &old, v, true, __ATOMIC_RELAXED,  \
					  __ATOMIC_RELAXED))                   \
			;                                                      \
		return old;                                                    \
	}                                                                      \
	static inline AGILE_RT_UNUSED type agile_rt_cas_##sfx(type *p, type c, \
							      type v)          \
	{                                                                      \
		__atomic_compare_exchange_n(p, &c, v, false, __ATOMIC_RELAXED, \
					    __ATOMIC_RELAXED);                 \
		return c;                                                      \
	}

AGILE_RT_ATOMIC_INT(i, int)
AGILE_RT_ATOMIC_INT(u, unsigned int)
AGILE_RT_ATOMIC_INT(ll, long long)
AGILE_RT_ATOMIC_INT(ull, unsigned long long)

/* CUDA's wrapping counters, unsigned int only: old >= v ? 0 : old + 1 ... */
static inline AGILE_RT_UNUSED unsigned int agile_rt_inc_u(unsigned int *p,
							  unsigned int v)
{
	unsigned int old = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (!__atomic_compare_exchange_n(p, &old, old >= v ? 0 : old + 1,
					    true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
	return old;
}

/* ... and old == 0 || old > v ? v : old - 1. */
static inline AGILE_RT_UNUSED unsigned int agile_rt_dec_u(unsigned int *p,
							  unsigned int v)
{
	unsigned int old = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (!__atomic_compare_exchange_n(
		p, &old, old == 0 || old > v ? v : old - 1, true,
		__ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return old;
}

/*
 * The same operations on __shared__ memory: one OS thread runs the
 * block, so a plain load and store, the old value returned.
 */
#define AGILE_RT_SH_OP(op, sfx, type, next)                                  \
	static inline AGILE_RT_UNUSED type agile_rt_sh_##op##_##sfx(type *p, \
								    type v)  \
	{                                                                    \
		type old = *p;                                               \
		*p = (next);                                                 \
		return old;                                                  \
	}
#define AGILE_RT_SHARED_INT(sfx, type)                            \
	AGILE_RT_SH_OP(add, sfx, type, old + v)                   \
	AGILE_RT_SH_OP(sub, sfx, type, old - v)                   \
	AGILE_RT_SH_OP(and, sfx, type, (old & v))                 \
	AGILE_RT_SH_OP(or, sfx, type, old | v)                    \
	AGILE_RT_SH_OP(xor, sfx, type, old ^ v)                   \
	AGILE_RT_SH_OP(exch, sfx, type, v)                        \
	AGILE_RT_SH_OP(min, sfx, type, v < old ? v : old)         \
	AGILE_RT_SH_OP(max, sfx, type, v > old ? v : old)         \
	static inline AGILE_RT_UNUSED type agile_rt_sh_cas_##sfx( \
		type *p, type c, type v)                          \
	{                                                         \
		type old = *p;                                    \
		if (old == c)                                     \
			*p = v;                                   \
		return old;                                       \
	}

AGILE_RT_SHARED_INT(i, int)
AGILE_RT_SHARED_INT(u, unsigned int)
AGILE_RT_SHARED_INT(ll, long long)
AGILE_RT_SHARED_INT(ull, unsigned long long)

AGILE_RT_SH_OP(inc, u, unsigned int, old >= v ? 0 : old + 1)
AGILE_RT_SH_OP(dec, u, unsigned int, old == 0 || old > v ? v : old - 1)

/* Floating-point add and exchange: a compare-and-swap loop on the bits. */
#define AGILE_RT_ATOMIC_FP(sfx, type)                                          \
	static inline AGILE_RT_UNUSED type agile_rt_add_##sfx(type *p, type v) \
	{                                                                      \
		type old, sum;                                                 \
		__atomic_load(p, &old, __ATOMIC_RELAXED);                      \
		do {                                                           \
			sum = old + v;                                         \
		} while (!__atomic_compare_exchange(p, &old, &sum, true,       \
						    __ATOMIC_RELAXED,          \
						    __ATOMIC_RELAXED));        \
		return old;                                                    \
	}                                                                      \
	static inline AGILE_RT_UNUSED type agile_rt_exch_##sfx(type *p,        \
							       type v)         \
	{                                                                      \
		type old;                                                      \
		__atomic_exchange(p, &v, &old, __ATOMIC_RELAXED);              \
		return old;                                                    \
	}

AGILE_RT_ATOMIC_FP(f, float)
AGILE_RT_ATOMIC_FP(d, double)

#define AGILE_RT_SHARED_FP(sfx, type)           \
	AGILE_RT_SH_OP(add, sfx, type, old + v) \
	AGILE_RT_SH_OP(exch, sfx, type, v)

AGILE_RT_SHARED_FP(f, float)
AGILE_RT_SHARED_FP(d, double)

/* CUDA's overloads by the pointee's type. */
#define AGILE_RT_INT_OP(op, p, v)                                             \
	_Generic(*(p), int                                                    \
		 : agile_rt_##op##_i((int *)(p), (int)(v)), unsigned int      \
		 : agile_rt_##op##_u((unsigned int *)(p), (unsigned int)(v)), \
		   long long                                                  \
		 : agile_rt_##op##_ll((long long *)(p), (long long)(v)),      \
		   unsigned long long                                         \
		 : agile_rt_##op##_ull((unsigned long long *)(p),             \
				       (unsigned long long)(v)))
/* One level: C rejects a nested _Generic that matches nothing, even unused. */
#define AGILE_RT_ANY_OP(op, p, v)                                             \
	_Generic(*(p), int                                                    \
		 : agile_rt_##op##_i((int *)(p), (int)(v)), unsigned int      \
		 : agile_rt_##op##_u((unsigned int *)(p), (unsigned int)(v)), \
		   long long                                                  \
		 : agile_rt_##op##_ll((long long *)(p), (long long)(v)),      \
		   unsigned long long                                         \
		 : agile_rt_##op##_ull((unsigned long long *)(p),             \
				       (unsigned long long)(v)),              \
		   float                                                      \
		 : agile_rt_##op##_f((float *)(p), (float)(v)), double        \
		 : agile_rt_##op##_d((double *)(p), (double)(v)))

#define AGILE_RT_CAS(op, p, c, v)                                            \
	_Generic(*(p), int                                                   \
		 : agile_rt_##op##_i((int *)(p), (int)(c), (int)(v)),        \
		   unsigned int                                              \
		 : agile_rt_##op##_u((unsigned int *)(p), (unsigned int)(c), \
				     (unsigned int)(v)),                     \
		   long long                                                 \
		 : agile_rt_##op##_ll((long long *)(p), (long long)(c),      \
				      (long long)(v)),                       \
		   unsigned long long                                        \
		 : agile_rt_##op##_ull((unsigned long long *)(p),            \
				       (unsigned long long)(c),              \
				       (unsigned long long)(v)))

#define atomicAdd(p, v) AGILE_RT_ANY_OP(add, p, v)
#define atomicExch(p, v) AGILE_RT_ANY_OP(exch, p, v)
#define atomicSub(p, v) AGILE_RT_INT_OP(sub, p, v)
#define atomicAnd(p, v) AGILE_RT_INT_OP(and, p, v)
#define atomicOr(p, v) AGILE_RT_INT_OP(or, p, v)
#define atomicXor(p, v) AGILE_RT_INT_OP(xor, p, v)
#define atomicMin(p, v) AGILE_RT_INT_OP(min, p, v)
#define atomicMax(p, v) AGILE_RT_INT_OP(max, p, v)
#define atomicInc(p, v) agile_rt_inc_u((p), (unsigned int)(v))
#define atomicDec(p, v) agile_rt_dec_u((p), (unsigned int)(v))
#define atomicCAS(p, c, v) AGILE_RT_CAS(cas, p, c, v)

/* On __shared__ memory (agile-retarget's spelling): plain operations. */
#define agile_shared_atomicAdd(p, v) AGILE_RT_ANY_OP(sh_add, p, v)
#define agile_shared_atomicExch(p, v) AGILE_RT_ANY_OP(sh_exch, p, v)
#define agile_shared_atomicSub(p, v) AGILE_RT_INT_OP(sh_sub, p, v)
#define agile_shared_atomicAnd(p, v) AGILE_RT_INT_OP(sh_and, p, v)
#define agile_shared_atomicOr(p, v) AGILE_RT_INT_OP(sh_or, p, v)
#define agile_shared_atomicXor(p, v) AGILE_RT_INT_OP(sh_xor, p, v)
#define agile_shared_atomicMin(p, v) AGILE_RT_INT_OP(sh_min, p, v)
#define agile_shared_atomicMax(p, v) AGILE_RT_INT_OP(sh_max, p, v)
#define agile_shared_atomicInc(p, v) agile_rt_sh_inc_u((p), (unsigned int)(v))
#define agile_shared_atomicDec(p, v) agile_rt_sh_dec_u((p), (unsigned int)(v))
#define agile_shared_atomicCAS(p, c, v) AGILE_RT_CAS(sh_cas, p, c, v)

#define __threadfence() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define __threadfence_block() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define __threadfence_system() __atomic_thread_fence(__ATOMIC_SEQ_CST)

#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))
#define __restrict__ restrict
/* C++ and C23 have the keyword, which a macro must not hide. */
#if !defined(__cplusplus) && \
	(!defined(__STDC_VERSION__) || __STDC_VERSION__ < 202311L)
#define nullptr NULL
#endif
#define warpSize AGILE_WARP_SIZE

/*
 * The warp primitives' helpers, shared with the runtime's dialect, whose
 * CPU prelude embeds that header before this one.
 */
#ifndef AGILE_RETARGET_WARP_H
#include <agile/retarget_warp.h>
#endif

#endif /* AGILE_RETARGET_H */
