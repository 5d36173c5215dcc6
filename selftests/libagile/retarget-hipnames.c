// SPDX-License-Identifier: MIT
/*
 * retarget-hipnames - HIP's older spellings of the built-in variables
 * (hipThreadIdx_x, hipBlockIdx_x, hipBlockDim_x, hipGridDim_x) in the
 * HIP-only kernel retarget/hipnames.hip: translated by agile-retarget and
 * run through agile_launch against plain C, for grids smaller than the
 * data (the grid-stride loop) and larger.
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <stdlib.h>

#include "hipnames-rt.h"
#include "retargetref.h"
#include "tap.h"

static void test(struct agile_launch_pool *pool, int n, uint32_t blocks,
		 uint32_t threads)
{
	float *x = calloc((size_t)n, sizeof(float));
	float *y = calloc((size_t)n, sizeof(float));
	int bad, err;

	for (int i = 0; i < n; i++) {
		x[i] = (float)(i % 17);
		y[i] = (float)(i % 5) - 2.0f;
	}
	err = axpy_then_diff_launch(pool, (struct agile_dim3){ blocks, 1, 1 },
				    (struct agile_dim3){ threads, 1, 1 }, 0,
				    3.0f, x, y, n);
	bad = ref_axpy_then_diff(x, y, n);
	tap_ok(!err && !bad,
	       "n %d, %u blocks of %u threads: y = a x + y, x = y - x (%d wrong)",
	       n, blocks, threads, bad);
	free(x);
	free(y);
}

int main(void)
{
	struct agile_launch_pool *pool;
	int err = agile_launch_pool_create(2, &pool);

	tap_ok_call(err, "a pool of 2 threads");
	if (err)
		return tap_done();
	test(pool, 10000, 4, 128);
	test(pool, 1000, 16, 256);
	test(NULL, 777, 3, 64);
	agile_launch_pool_destroy(pool);
	return tap_done();
}
