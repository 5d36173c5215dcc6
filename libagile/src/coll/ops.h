/* SPDX-License-Identifier: MIT */
/*
 * ops.h - the collectives' reduce kernels (ops.c).  Private.
 *
 * One call reduces a run: dst[i] = left[i] (op) right[i].  The built-in
 * ops are tight loops over restrict pointers that the compiler vectorises;
 * a user op is called once per run (never per element).
 */
#ifndef AGILE_COLL_OPS_H
#define AGILE_COLL_OPS_H

#include <agile/coll.h>

#include <stdbool.h>
#include <stddef.h>

/* inout[i] = inout[i] (op) in[i] */
typedef void (*coll_kernel2)(void *restrict inout, const void *restrict in,
			     size_t count);
/* out[i] = a[i] (op) b[i] */
typedef void (*coll_kernel3)(void *restrict out, const void *restrict a,
			     const void *restrict b, size_t count);

/* Bytes of the bounce buffer a non-commutative user op needs. */
#define COLL_BOUNCE_BYTES (64 * 1024)

/**
 * struct coll_reducer - how one member reduces (agile__coll_reducer_init)
 * @bounce: COLL_BOUNCE_BYTES of scratch, for a non-commutative user op
 *          whose left operand is not in the destination; owned by the
 *          caller (NULL otherwise)
 */
struct coll_reducer {
	coll_kernel2 k2;
	coll_kernel3 k3;
	agile_coll_user_fn user_fn;
	void *user_arg;
	enum agile_coll_type type;
	size_t size;
	bool commutative;
	void *bounce;
};

/*
 * agile__coll_reducer_init - set @rd up for @type and @op (@user_fn/@user_arg/
 * @commutative for AGILE_COLL_USER).  Returns 0 or -EINVAL (unknown type
 * or op, AGILE_COLL_USER without a callback).  Leaves @rd->bounce alone.
 */
int agile__coll_reducer_init(struct coll_reducer *rd, enum agile_coll_type type,
			     enum agile_coll_op op, agile_coll_user_fn user_fn,
			     void *user_arg, bool commutative);

/*
 * agile__coll_reduce - dst[i] = left[i] (op) right[i] for @count elements.
 * @dst may be @left or @right (the same address), or overlap neither.
 */
void agile__coll_reduce(const struct coll_reducer *rd, void *dst,
			const void *left, const void *right, size_t count);

/*
 * agile__coll_copy_streaming - memcpy(@dst, @src, @bytes) with non-temporal
 * stores where the CPU has them (x86): for a destination that leaves the
 * caches anyway, without reading each line first (read for ownership).
 * A release store does not order such stores: call agile__coll_stream_fence
 * after the last copy, before whatever publishes them.
 */
void agile__coll_copy_streaming(void *dst, const void *src, size_t bytes);
void agile__coll_stream_fence(void);

/*
 * agile__coll_ops_use_simd - let reducers set up from now on use the x86 AVX2
 * and F16C kernels of the 16-bit floats where the CPU has them (@on, the
 * default) or the portable ones (!@on: the tests compare both); true if
 * the x86 kernels are in use.
 */
bool agile__coll_ops_use_simd(bool on);

#endif /* AGILE_COLL_OPS_H */
