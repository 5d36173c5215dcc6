// SPDX-License-Identifier: MIT
/*
 * retarget-vector - retarget/vector.cu (issue 31): CUDA's vector types
 * in translated kernels, through agile_launch on a pool of 3 threads:
 * the float4 saxpy over several grids, a float4 and double2 __shared__
 * tile with a float2 carried across the barrier (blocks of 1 to 256
 * threads), and the types' sizes and alignments, which must be CUDA's
 * (the host's <agile/retarget_types.h> agrees: float4 buffers are laid
 * out as on a GPU).  Word for word against retargetbuiltins.h.
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <stdlib.h>

#include "retargetbuiltins.h"
#include "tap.h"
#include "vector-rt.h"

static void test_saxpy4(struct agile_launch_pool *pool, int n4, unsigned block)
{
	float4 *x = aligned_alloc(16, (size_t)n4 * sizeof(float4));
	float4 *y = aligned_alloc(16, (size_t)n4 * sizeof(float4));
	float *y0 = malloc((size_t)n4 * sizeof(float4));
	int err, bad;

	ref_saxpy_input((float *)x, y0, 4 * n4);
	memcpy(y, y0, (size_t)n4 * sizeof(float4));
	err = saxpy4_launch(
		pool, (struct agile_dim3){ (n4 + block - 1) / block, 1, 1 },
		(struct agile_dim3){ block, 1, 1 }, 0, n4, REF_SAXPY_A, x, y);
	bad = ref_saxpy((const float *)x, y0, (const float *)y, 4 * n4);
	tap_ok(!err && !bad,
	       "saxpy4: %d float4 in blocks of %u threads (%d floats wrong, %d)",
	       n4, block, bad, err);
	free(x);
	free(y);
	free(y0);
}

static void test_reverse(struct agile_launch_pool *pool, unsigned nr_blocks,
			 unsigned block)
{
	unsigned n = nr_blocks * block;
	float4 *in = aligned_alloc(16, n * sizeof(float4));
	float4 *out = aligned_alloc(16, n * sizeof(float4));
	int2 *a = malloc(n * sizeof(int2));
	uint4 *b = aligned_alloc(16, n * sizeof(uint4));
	uchar4 *c = malloc(n * sizeof(uchar4));
	double2 *sums = aligned_alloc(16, n * sizeof(double2));
	int err, bad;

	ref_vector_input((float *)in, (int *)a, (unsigned int *)b,
			 (unsigned char *)c, n);
	err = vec_reverse_launch(pool, (struct agile_dim3){ nr_blocks, 1, 1 },
				 (struct agile_dim3){ block, 1, 1 }, 0, in, out,
				 a, b, c, sums);
	bad = ref_vector_reverse((const float *)in, (const int *)a,
				 (const unsigned int *)b,
				 (const unsigned char *)c, (const float *)out,
				 (const double *)sums, nr_blocks, block);
	tap_ok(!err && !bad,
	       "vec_reverse: %u blocks of %u threads, float4 and double2 in __shared__, a float2 across the barrier (%d words wrong, %d)",
	       nr_blocks, block, bad, err);
	free(in);
	free(out);
	free(a);
	free(b);
	free(c);
	free(sums);
}

static void test_sizes(struct agile_launch_pool *pool)
{
	int4 sizes[5];
	int err, bad = 0;

	memset(sizes, 0, sizeof(sizes));
	err = vec_sizes_launch(pool, (struct agile_dim3){ 2, 1, 1 },
			       (struct agile_dim3){ 32, 1, 1 }, 0, sizes);
	for (int r = 0; r < 5; r++) {
		const int got[4] = { sizes[r].x, sizes[r].y, sizes[r].z,
				     sizes[r].w };

		for (int k = 0; k < 4; k++)
			bad += got[k] != ref_vector_sizes[r][k];
	}
	tap_ok(!err && !bad,
	       "vec_sizes: sizeof and __alignof__ of the vector types in a kernel are CUDA's (%d of 20 wrong, %d)",
	       bad, err);
	tap_ok(sizeof(float4) == 16 && _Alignof(float4) == 16 &&
		       sizeof(float3) == 12 && _Alignof(float3) == 4 &&
		       sizeof(double2) == 16 && _Alignof(double2) == 16 &&
		       _Alignof(int2) == 8 && sizeof(uchar4) == 4,
	       "the host's <agile/retarget_types.h> lays them out alike");
}

int main(void)
{
	struct agile_launch_pool *pool;
	int err = agile_launch_pool_create(3, &pool);

	tap_ok_call(err, "a pool of 3 threads");
	if (err)
		return tap_done();
	test_saxpy4(pool, 1000, 128);
	test_saxpy4(pool, 4097, 256);
	test_saxpy4(NULL, 33, 1);
	test_reverse(pool, 7, 1);
	test_reverse(pool, 5, 64);
	test_reverse(pool, 9, 256);
	test_reverse(NULL, 2, 100);
	test_sizes(pool);
	agile_launch_pool_destroy(pool);
	return tap_done();
}
