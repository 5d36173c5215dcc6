// SPDX-License-Identifier: MIT
/*
 * retarget-intrinsics - retarget/intrinsics.cu (issue 31): the integer
 * intrinsics (__popc, __clz, __ffs, __brev, __umulhi, __mul24, ... and
 * their 64-bit forms, loaded through __ldg) on their edges (0, all ones,
 * the sign bit, bit 23) and hashed words, and the float ones (fmaf,
 * fminf/fmaxf with NaN, __saturatef, __fdividef past 2^126, the _rn
 * forms, rsqrtf, the fast-math __expf, __logf, __sinf, __cosf, __powf
 * giving the C library's values) on infinities, NaN, denormals and
 * hashed values; through agile_launch on a pool of 3 threads, bit for
 * bit against retargetbuiltins.h (NaN as any NaN).
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <stdlib.h>

#include "intrinsics-rt.h"
#include "retargetbuiltins.h"
#include "tap.h"

static void test_bits(struct agile_launch_pool *pool, unsigned n,
		      unsigned block)
{
	unsigned int *in = calloc(n, sizeof(*in));
	unsigned long long *in64 = calloc(n, sizeof(*in64));
	int *out = calloc((size_t)n * REF_NR_BITS, sizeof(int));
	int err, bad;

	if (!tap_ok(in && in64 && out, "bits: memory for %u words", n)) {
		free(in);
		free(in64);
		free(out);
		return;
	}
	ref_bits_input(in, in64, n);
	err = bits_launch(pool,
			  (struct agile_dim3){ (n + block - 1) / block, 1, 1 },
			  (struct agile_dim3){ block, 1, 1 }, 0, in, in64, out,
			  n);
	bad = ref_bits(in, in64, out, n);
	tap_ok(!err && !bad,
	       "bits: %u words in blocks of %u threads, 14 intrinsics each (%d results wrong, %d)",
	       n, block, bad, err);
	free(in);
	free(in64);
	free(out);
}

static void test_fmath(struct agile_launch_pool *pool, unsigned n,
		       unsigned block)
{
	float *x = calloc(n, sizeof(float)), *y = calloc(n, sizeof(float));
	float *z = calloc(n, sizeof(float));
	float *out = calloc((size_t)n * REF_NR_FMATH, sizeof(float));
	int err, bad;

	if (!tap_ok(x && y && z && out, "fmath: memory for %u inputs", n)) {
		free(x);
		free(y);
		free(z);
		free(out);
		return;
	}
	ref_fmath_input(x, y, z, n);
	err = fmath_launch(pool,
			   (struct agile_dim3){ (n + block - 1) / block, 1, 1 },
			   (struct agile_dim3){ block, 1, 1 }, 0, x, y, z, out,
			   n);
	bad = ref_fmath(x, y, z, out, n, 1);
	tap_ok(!err && !bad,
	       "fmath: %u inputs in blocks of %u threads, 14 results each (%d wrong, %d)",
	       n, block, bad, err);
	free(x);
	free(y);
	free(z);
	free(out);
}

int main(void)
{
	struct agile_launch_pool *pool;
	int err = agile_launch_pool_create(3, &pool);

	tap_ok_call(err, "a pool of 3 threads");
	if (err)
		return tap_done();
	test_bits(pool, 10000, 256);
	test_bits(NULL, 100, 7);
	test_fmath(pool, 5000, 128);
	test_fmath(NULL, 400, 33);
	agile_launch_pool_destroy(pool);
	return tap_done();
}
