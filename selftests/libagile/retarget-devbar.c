// SPDX-License-Identifier: MIT
/*
 * retarget-devbar - retarget/devbar.cu, whose __device__ functions hold
 * barriers (a tree step with __syncthreads() in a loop, called by a
 * helper returning the block's sum; a rotation called in a loop of the
 * kernel; a warp sum by __shfl_down_sync), inlined by agile-retarget and
 * run through agile_launch against devbarref.h, bit for bit.
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <stdlib.h>

#include "devbar-rt.h"
#include "devbarref.h"
#include "tap.h"

static void test_sum(struct agile_launch_pool *pool, unsigned block, unsigned n)
{
	unsigned nr_blocks = (n + block - 1) / block;
	float *in = calloc(n, sizeof(float));
	float *out = calloc(2 * nr_blocks, sizeof(float));
	int bad = -1, err = -1;

	if (in && out) {
		ref_devbar_input(in, n);
		err = devbar_sum_launch(pool,
					(struct agile_dim3){ nr_blocks, 1, 1 },
					(struct agile_dim3){ block, 1, 1 }, 0,
					in, out, n);
		bad = ref_devbar_sum(in, out, n, block);
	}
	tap_ok(!err && !bad,
	       "devbar_sum: blocks of %u threads, %u elements: the inlined tree's sums and sums of squares (%d wrong, %d)",
	       block, n, bad, err);
	free(in);
	free(out);
}

static void test_rotate(struct agile_launch_pool *pool, unsigned block,
			unsigned nr_blocks, int rounds)
{
	size_t n = (size_t)block * nr_blocks;
	float *in = calloc(n, sizeof(float));
	float *data = calloc(n, sizeof(float));
	int bad = -1, err = -1;

	if (in && data) {
		ref_devbar_input(in, (unsigned)n);
		for (size_t i = 0; i < n; i++)
			data[i] = in[i];
		err = devbar_rotate_launch(
			pool, (struct agile_dim3){ nr_blocks, 1, 1 },
			(struct agile_dim3){ block, 1, 1 }, 0, data, rounds);
		bad = ref_devbar_rotate(in, data, nr_blocks, block, rounds);
	}
	tap_ok(!err && !bad,
	       "devbar_rotate: %u blocks of %u threads, %d rounds of the inlined rotation (%d wrong, %d)",
	       nr_blocks, block, rounds, bad, err);
	free(in);
	free(data);
}

static void test_warp(struct agile_launch_pool *pool, unsigned block,
		      unsigned nr_blocks)
{
	unsigned n = block * nr_blocks;
	int *in = calloc(n, sizeof(int));
	int *out = calloc(n / 32, sizeof(int));
	int bad = -1, err = -1;

	if (in && out) {
		for (unsigned i = 0; i < n; i++)
			in[i] = (int)(i * 2654435761u % 1000) - 300;
		err = devbar_warp_launch(pool,
					 (struct agile_dim3){ nr_blocks, 1, 1 },
					 (struct agile_dim3){ block, 1, 1 }, 0,
					 in, out);
		bad = ref_devbar_warp(in, out, n);
	}
	tap_ok(!err && !bad,
	       "devbar_warp: %u blocks of %u threads: the inlined __shfl_down_sync sums (%d wrong, %d)",
	       nr_blocks, block, bad, err);
	free(in);
	free(out);
}

int main(void)
{
	struct agile_launch_pool *pool;
	int err = agile_launch_pool_create(3, &pool);

	tap_ok_call(err, "a pool of 3 threads");
	if (err)
		return tap_done();
	test_sum(pool, 1, 10);
	test_sum(pool, 64, 1000);
	test_sum(pool, 256, 100000 + 3);
	test_sum(pool, 1024, 3 * 1024 - 5);
	test_rotate(pool, 32, 5, 1);
	test_rotate(pool, 256, 3, 37);
	test_rotate(pool, 100, 2, 0);
	test_warp(pool, 32, 3);
	test_warp(pool, 256, 4);
	test_warp(NULL, 1024, 2);
	agile_launch_pool_destroy(pool);
	return tap_done();
}
