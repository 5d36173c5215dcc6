// SPDX-License-Identifier: MIT
/*
 * retarget-warp - warp-level primitives, translated by agile-retarget and
 * run through agile_launch: retarget/warpreduce.cu (a two-level
 * __shfl_down_sync block sum) and retarget/warpvote.cu (__ballot_sync,
 * __any_sync, __all_sync, __activemask, __shfl_xor_sync butterflies,
 * __shfl_sync with and past a width, __shfl_up_sync with a width,
 * __syncwarp; warp_xor: __shfl_xor_sync of every lane mask and width
 * below and at 32), for blocks of 32, 64, 256 and 1024 threads and of 80
 * and 200 (a partial last warp), each checked bit for bit against a
 * simulation of the block's warps in plain C written from CUDA's
 * definitions (retargetref.h; docs/retarget.md, "Warps": a source lane
 * past the block's end gives the caller's own value; a missing lane
 * votes 0).  For whole
 * warps the block sum is also the plain sum of its elements.
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "retargetref.h"
#include "warpreduce-rt.h"
#include "warpvote-rt.h"

static void test_reduce(struct agile_launch_pool *pool, unsigned block,
			unsigned n)
{
	unsigned nr_blocks = (n + block - 1) / block;
	int *in = calloc(n, sizeof(int)), *out = calloc(nr_blocks, sizeof(int));
	int bad = 0, plain_bad = 0, err;

	for (unsigned i = 0; i < n; i++)
		in[i] = (int)(i * 2654435761u % 1000) - 300;
	err = warp_reduce_launch(pool, (struct agile_dim3){ nr_blocks, 1, 1 },
				 (struct agile_dim3){ block, 1, 1 }, 0, in, out,
				 n);
	for (unsigned b = 0; b < nr_blocks; b++) {
		int sum = 0;

		bad += out[b] != ref_warp_reduce_block(in, n, b, block);
		for (unsigned i = b * block; i < n && i < (b + 1) * block; i++)
			sum += in[i];
		plain_bad += out[b] != sum;
	}
	tap_ok(!err && !bad,
	       "warpreduce, blocks of %u, %u elements: every block's sum as the warps make it (%d wrong, %d)",
	       block, n, bad, err);
	if (block % REF_WARP == 0)
		tap_ok(!plain_bad,
		       "warpreduce, blocks of %u: whole warps, so the plain sum (%d wrong)",
		       block, plain_bad);
	free(in);
	free(out);
}

static void test_vote(struct agile_launch_pool *pool, unsigned block,
		      unsigned n)
{
	unsigned nr_blocks = (n + block - 1) / block;
	int *in = calloc(n, sizeof(int));
	unsigned *out = calloc(8 * (size_t)n, sizeof(unsigned));
	unsigned *ref = calloc(8 * (size_t)block, sizeof(unsigned));
	int bad = 0, err;

	ref_warp_vote_input(in, n);
	err = warp_vote_launch(pool, (struct agile_dim3){ nr_blocks, 1, 1 },
			       (struct agile_dim3){ block, 1, 1 }, 0, in, out,
			       n);
	for (unsigned b = 0; b < nr_blocks; b++) {
		ref_warp_vote_block(in, n, b, block, ref);
		for (unsigned t = 0; t < block && b * block + t < n; t++)
			bad += memcmp(out + 8 * (size_t)(b * block + t),
				      ref + 8 * (size_t)t,
				      8 * sizeof(unsigned)) != 0;
	}
	tap_ok(!err && !bad,
	       "warpvote, blocks of %u, %u elements: votes and shuffles of every thread (%d threads wrong, %d)",
	       block, n, bad, err);
	free(in);
	free(out);
	free(ref);
}

static void test_xor(struct agile_launch_pool *pool, unsigned block, unsigned n)
{
	unsigned nr_blocks = (n + block - 1) / block;
	int *in = calloc(n, sizeof(int));
	unsigned *out = calloc(n, sizeof(unsigned));
	unsigned ref[1024];
	int bad = 0, err;

	ref_warp_vote_input(in, n);
	err = warp_xor_launch(pool, (struct agile_dim3){ nr_blocks, 1, 1 },
			      (struct agile_dim3){ block, 1, 1 }, 0, in, out,
			      n);
	for (unsigned b = 0; b < nr_blocks; b++) {
		ref_warp_xor_block(in, n, b, block, ref);
		for (unsigned t = 0; t < block && b * block + t < n; t++)
			bad += out[b * block + t] != ref[t];
	}
	tap_ok(!err && !bad,
	       "warpvote: warp_xor, blocks of %u, %u elements: __shfl_xor_sync of every mask and width, no later segment read (%d threads wrong, %d)",
	       block, n, bad, err);
	free(in);
	free(out);
}

int main(void)
{
	static const unsigned blocks[] = { 32, 64, 256, 1024, 80, 200 };
	struct agile_launch_pool *pool;
	int err = agile_launch_pool_create(3, &pool);

	tap_ok_call(err, "a pool of 3 threads");
	if (err)
		return tap_done();
	for (unsigned i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		test_reduce(pool, blocks[i], 20 * blocks[i] - 7);
		test_vote(pool, blocks[i], 5 * blocks[i] - 3);
		test_xor(pool, blocks[i], 3 * blocks[i] - 5);
	}
	test_reduce(NULL, 128, 1000);
	agile_launch_pool_destroy(pool);
	return tap_done();
}
