// SPDX-License-Identifier: MIT
/*
 * retarget-matlist - seed 004's example end to end: the unmodified CUDA
 * kernel retarget/matlist.cu, translated at build time by agile-retarget,
 * multiplies a list of small matrices in place (one block per matrix, one
 * thread per element, a barrier before the input is overwritten) through
 * agile_launch, on the caller alone and on a pool of threads, against a
 * plain C reference; blocks of 2x2 up to 32x32 (1024) threads.
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "matlist-rt.h"
#include "retargetref.h"
#include "tap.h"

#define NR_MATRICES 37

static void test_dim(struct agile_launch_pool *pool, int dim, const char *who)
{
	size_t n = (size_t)NR_MATRICES * dim * dim;
	float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
	float *ref = calloc(n, sizeof(float));
	const struct agile_dim3 grid = { NR_MATRICES, 1, 1 };
	const struct agile_dim3 block = { (uint32_t)dim, (uint32_t)dim, 1 };
	int err;

	for (size_t i = 0; i < n; i++) {
		a[i] = (float)((i * 7) % 11) - 5.0f;
		b[i] = (float)((i * 5) % 13) * 0.25f - 1.0f;
	}
	memcpy(ref, a, n * sizeof(float));
	ref_matlist(ref, b, NR_MATRICES, dim);
	err = small_mm_list_launch(pool, grid, block, 0, a, b, dim);
	tap_ok(!err && ref_close(a, ref, n),
	       "%s: %d matrices %dx%d (%d threads a block) equal the reference (%d)",
	       who, NR_MATRICES, dim, dim, dim * dim, err);
	free(a);
	free(b);
	free(ref);
}

int main(void)
{
	static const int dims[] = { 2, 5, 8, 16, 32 };
	struct agile_launch_pool *pool;
	int err;

	for (unsigned i = 0; i < sizeof(dims) / sizeof(dims[0]); i++)
		test_dim(NULL, dims[i], "the caller alone");
	err = agile_launch_pool_create(3, &pool);
	tap_ok_call(err, "a pool of 3 threads");
	if (err)
		return tap_done();
	for (unsigned i = 0; i < sizeof(dims) / sizeof(dims[0]); i++)
		test_dim(pool, dims[i], "3 threads");
	agile_launch_pool_destroy(pool);
	return tap_done();
}
