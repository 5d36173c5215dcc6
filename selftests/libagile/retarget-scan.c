// SPDX-License-Identifier: MIT
/*
 * retarget-scan - the unmodified CUDA block scan retarget/scan.cu
 * (Hillis and Steele: a barrier loop of two barriers a round, a local
 * carried from the reads to the writes), translated by agile-retarget and
 * run through agile_launch for blocks of 1 to 1024 threads and a short
 * last block, against each block's running sums in plain C.
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <stdlib.h>

#include "retargetref.h"
#include "scan-rt.h"
#include "tap.h"

static void test(struct agile_launch_pool *pool, unsigned block, unsigned n)
{
	unsigned nr_blocks = (n + block - 1) / block;
	float *in = calloc(n, sizeof(float));
	float *out = calloc(n, sizeof(float));
	int bad, err;

	for (unsigned i = 0; i < n; i++)
		in[i] = (float)(i * 2654435761u % 8);
	err = block_scan_launch(pool, (struct agile_dim3){ nr_blocks, 1, 1 },
				(struct agile_dim3){ block, 1, 1 }, 0, in, out,
				n);
	bad = ref_block_scan(in, out, n, block);
	tap_ok(!err && !bad,
	       "blocks of %u threads, %u elements: each block's running sums (%d wrong, %d)",
	       block, n, bad, err);
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
	test(pool, 1, 10);
	test(pool, 32, 1000);
	test(pool, 256, 100000 + 3);
	test(pool, 1024, 3 * 1024 - 5);
	test(NULL, 128, 777);
	agile_launch_pool_destroy(pool);
	return tap_done();
}
