// SPDX-License-Identifier: MIT
/*
 * retarget-histogram - atomics on __shared__ and on global memory
 * (retarget/histogram.cu), translated by agile-retarget and run through
 * agile_launch on a pool of 4 threads, against plain C:
 *
 *	shared_histogram  a block-local histogram in __shared__ memory (its
 *	                  atomics plain: one OS thread runs the block), added
 *	                  to the global one with atomics
 *	global_histogram  every element an atomic on one of 8 global
 *	                  counters, and half of them appended to a global
 *	                  list at the slot an atomicAdd on one counter
 *	                  returns, all blocks at once, 64 launches: with
 *	                  plain operations there, updates would be lost
 *	shared_ops        every atomic of CUDA on __shared__ memory and the
 *	                  old value it returns, blocks of 1 to 1024 threads
 *
 * retarget-golden checks which of them the tool made plain.
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <stdlib.h>

#include "histogram-rt.h"
#include "retargetref.h"
#include "tap.h"

#define NR_BINS 64 /* histogram.cu's */
#define NR_GLOBAL_BINS 8
#define MIX_ROUNDS 32
#define GLOBAL_ROUNDS 64

static void test_shared(struct agile_launch_pool *pool, unsigned block,
			unsigned per_block, unsigned n)
{
	unsigned nr_blocks = (n + per_block - 1) / per_block;
	unsigned *in = calloc(n, sizeof(unsigned));
	unsigned hist[NR_BINS] = { 0 };
	int bad, err;

	ref_histogram_input(in, n);
	err = shared_histogram_launch(pool,
				      (struct agile_dim3){ nr_blocks, 1, 1 },
				      (struct agile_dim3){ block, 1, 1 }, 0, in,
				      n, per_block, hist);
	bad = ref_histogram(in, n, hist, NR_BINS, 0);
	tap_ok(!err && !bad,
	       "shared_histogram: %u elements, %u blocks of %u threads (%u elements each): %d of %d bins wrong (%d)",
	       n, nr_blocks, block, per_block, bad, NR_BINS, err);
	free(in);
}

/*
 * Many blocks of many threads, all on the same 8 counters and the one
 * list counter, repeated: the pool's threads run blocks at once, and
 * would lose updates to a plain read-modify-write of *count (its old
 * value used: a load and a store; x86 makes a lone "add" to memory
 * hard to tear).
 */
static void test_global(struct agile_launch_pool *pool, unsigned n)
{
	unsigned *in = calloc(n, sizeof(unsigned));
	unsigned *list = calloc(n, sizeof(unsigned));
	int bad = 0, err = 0;

	ref_histogram_input(in, n);
	for (int round = 0; round < GLOBAL_ROUNDS && !err; round++) {
		unsigned hist[NR_GLOBAL_BINS] = { 0 }, count = 0;

		err = global_histogram_launch(pool,
					      (struct agile_dim3){ 512, 1, 1 },
					      (struct agile_dim3){ 256, 1, 1 },
					      0, in, n, hist, &count, list);
		bad += ref_histogram(in, n, hist, NR_GLOBAL_BINS, MIX_ROUNDS);
		bad += !ref_histogram_list(in, n, list, count, MIX_ROUNDS);
	}
	tap_ok(!err && !bad,
	       "global_histogram: %u elements a round, %d rounds of 512 blocks on %d counters and a list: no update lost (%d bins or lists wrong, %d)",
	       n, GLOBAL_ROUNDS, NR_GLOBAL_BINS, bad, err);
	free(in);
	free(list);
}

static void test_ops(struct agile_launch_pool *pool, unsigned block)
{
	const unsigned nr_blocks = 3;
	int *out =
		calloc(nr_blocks * (block * REF_OPS_PER_THREAD + REF_OPS_FINAL),
		       sizeof(int));
	float fout[3] = { 0 };
	int bad, err;

	err = shared_ops_launch(pool, (struct agile_dim3){ nr_blocks, 1, 1 },
				(struct agile_dim3){ block, 1, 1 }, 0, out,
				fout);
	bad = ref_shared_ops(out, fout, (int)nr_blocks, (int)block);
	tap_ok(!err && !bad,
	       "shared_ops, blocks of %u threads: Add, Sub, Min, Max, And, Or, Xor, Inc, Dec, CAS, Exch (int, unsigned, 64-bit, float) on __shared__: results and old values (%d blocks wrong, %d)",
	       block, bad, err);
	free(out);
}

int main(void)
{
	struct agile_launch_pool *pool;
	int err = agile_launch_pool_create(4, &pool);

	tap_ok_call(err, "a pool of 4 threads");
	if (err)
		return tap_done();
	test_shared(pool, 256, 4096, (1u << 20) + 17);
	test_shared(pool, 1024, 1024, 100000);
	test_shared(pool, 1, 7, 1000);
	test_shared(NULL, 100, 333, 5000);
	test_global(pool, 1u << 17);
	test_ops(pool, 1);
	test_ops(pool, 32);
	test_ops(pool, 100);
	test_ops(pool, 1024);
	agile_launch_pool_destroy(pool);
	return tap_done();
}
