// SPDX-License-Identifier: MIT
/*
 * retarget-reduce - the unmodified CUDA tree reduction retarget/reduce.cu
 * (a barrier inside a uniform loop: deep fission; a __device__ helper; an
 * atomicAdd across blocks; an early return after the last barrier),
 * translated by agile-retarget, run through agile_launch on a pool for
 * block sizes 1 to 1024 with a short last block, against plain C sums;
 * and block_sum_first, whose extra blocks return before the first barrier
 * (a uniform return): they must write nothing.
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <stdlib.h>

#include "reduce-rt.h"
#include "tap.h"

static void test_block(struct agile_launch_pool *pool, unsigned block_size,
		       unsigned n)
{
	unsigned nr_blocks = (n + block_size - 1) / block_size;
	float *in = calloc(n, sizeof(float));
	float *out = calloc(nr_blocks, sizeof(float));
	unsigned long long total = 0, want_total = 0;
	int bad = 0, err;

	for (unsigned i = 0; i < n; i++)
		in[i] = (float)(i * 2654435761u % 8);
	err = block_sum_launch(pool, (struct agile_dim3){ nr_blocks, 1, 1 },
			       (struct agile_dim3){ block_size, 1, 1 }, 0, in,
			       out, n, &total);
	for (unsigned b = 0; b < nr_blocks; b++) {
		float want = 0.0f;

		for (unsigned i = b * block_size;
		     i < n && i < (b + 1) * block_size; i++)
			want += in[i];
		want_total += (unsigned long long)want;
		bad += out[b] != want;
	}
	tap_ok(!err && !bad && total == want_total,
	       "blocks of %u threads, %u elements: every block's sum and the atomic total (%llu) are right (%d)",
	       block_size, n, total, err);
	free(in);
	free(out);
}

static void test_first(struct agile_launch_pool *pool, unsigned block_size,
		       unsigned nr_used, unsigned nr_blocks)
{
	unsigned n = nr_used * block_size;
	float *in = calloc(n, sizeof(float));
	float *out = calloc(nr_blocks, sizeof(float));
	int bad = 0, err;

	for (unsigned i = 0; i < n; i++)
		in[i] = (float)(i % 5);
	for (unsigned b = 0; b < nr_blocks; b++)
		out[b] = -1.0f;
	err = block_sum_first_launch(pool,
				     (struct agile_dim3){ nr_blocks, 1, 1 },
				     (struct agile_dim3){ block_size, 1, 1 }, 0,
				     in, out, nr_used);
	for (unsigned b = 0; b < nr_blocks; b++) {
		float want = b < nr_used ? 0.0f : -1.0f;

		for (unsigned i = 0; b < nr_used && i < block_size; i++)
			want += in[b * block_size + i];
		bad += out[b] != want;
	}
	tap_ok(!err && !bad,
	       "%u of %u blocks of %u threads sum, the others returned first and wrote nothing (%d)",
	       nr_used, nr_blocks, block_size, err);
	free(in);
	free(out);
}

int main(void)
{
	struct agile_launch_pool *pool;
	int err = agile_launch_pool_create(4, &pool);

	tap_ok_call(err, "a pool of 4 threads");
	if (err)
		return tap_done();
	test_block(pool, 1, 100);
	test_block(pool, 64, 1000);
	test_block(pool, 256, 100000);
	test_block(pool, 1024, 65536 + 17);
	test_block(NULL, 512, 5000);
	test_first(pool, 128, 5, 12);
	test_first(NULL, 1024, 1, 3);
	agile_launch_pool_destroy(pool);
	return tap_done();
}
