// SPDX-License-Identifier: MIT
/*
 * retarget-coop - retarget/coop.cu, cooperative groups (a block sum by
 * tiles of 32 through a helper taking the tile; every rank, size, shuffle
 * and vote of a block and of tiles of 32 and 8), translated by
 * agile-retarget and run through agile_launch against devbarref.h, bit
 * for bit.
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <stdlib.h>

#include "coop-rt.h"
#include "devbarref.h"
#include "tap.h"

static void test_reduce(struct agile_launch_pool *pool, unsigned block,
			unsigned n)
{
	unsigned nr_blocks = (n + block - 1) / block;
	int *in = calloc(n, sizeof(int));
	int *out = calloc(nr_blocks, sizeof(int));
	int bad = -1, err = -1;

	if (in && out) {
		for (unsigned i = 0; i < n; i++)
			in[i] = (int)(i * 2654435761u % 1000) - 300;
		err = coop_reduce_launch(pool,
					 (struct agile_dim3){ nr_blocks, 1, 1 },
					 (struct agile_dim3){ block, 1, 1 }, 0,
					 in, out, n);
		bad = ref_coop_reduce(in, out, n, block);
	}
	tap_ok(!err && !bad,
	       "coop_reduce: blocks of %u threads, %u elements: sums by tiles of 32 (%d wrong, %d)",
	       block, n, bad, err);
	free(in);
	free(out);
}

static void test_ranks(struct agile_launch_pool *pool, unsigned block,
		       unsigned nr_blocks)
{
	unsigned n = block * nr_blocks;
	int *in = calloc(n, sizeof(int));
	unsigned *out = calloc(8 * (size_t)n, sizeof(unsigned));
	int bad = -1, err = -1;

	if (in && out) {
		for (unsigned i = 0; i < n; i++)
			in[i] = (int)(i * 2654435761u % 1000) - 300 +
				(i % 97 == 0 ? 1 : 0);
		/* one warp all odd, for all() */
		for (unsigned i = 0; i < 32 && i < n; i++)
			in[i] |= 1;
		err = coop_ranks_launch(pool,
					(struct agile_dim3){ nr_blocks, 1, 1 },
					(struct agile_dim3){ block, 1, 1 }, 0,
					in, out);
		bad = ref_coop_ranks(in, out, nr_blocks, block);
	}
	tap_ok(!err && !bad,
	       "coop_ranks: %u blocks of %u threads: ranks, sizes, shuffles and votes of a block and its tiles of 32 and 8 (%d wrong, %d)",
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
	test_reduce(pool, 32, 1000);
	test_reduce(pool, 256, 100000 + 3);
	test_reduce(pool, 1024, 3 * 1024 - 5);
	test_ranks(pool, 32, 3);
	test_ranks(pool, 64, 2);
	test_ranks(pool, 256, 3);
	test_ranks(NULL, 1024, 2);
	agile_launch_pool_destroy(pool);
	return tap_done();
}
