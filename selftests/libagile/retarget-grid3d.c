// SPDX-License-Identifier: MIT
/*
 * retarget-grid3d - what retarget/grid3d.cu uses and the other kernels do
 * not: 3-D blocks up to 1024 threads, dynamic shared memory (extern
 * __shared__, the launch's shared_bytes), __device__ helpers calling
 * helpers that read threadIdx.x/y/z, a uniform if/else with a barrier in
 * each branch, a do/while holding a barrier whose condition reads a
 * promoted local, atomicMax on shared memory, a once-per-block region,
 * a local carried across barriers by v = v ...; translated by
 * agile-retarget and run through agile_launch.
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <stdlib.h>

#include "grid3d-rt.h"
#include "retargetref.h"
#include "tap.h"

static void test(struct agile_launch_pool *pool, struct agile_dim3 block,
		 int mode)
{
	const uint32_t nr_blocks = 5;
	int nt = (int)(block.x * block.y * block.z), bad, err;
	int *out = calloc(4 * nr_blocks, sizeof(int));

	err = grid3d_launch(pool, (struct agile_dim3){ nr_blocks, 1, 1 }, block,
			    (size_t)nt * sizeof(int), out, mode);
	bad = ref_grid3d(out, (int)nr_blocks, nt, mode);
	tap_ok(!err && !bad,
	       "blocks of %ux%ux%u, %s: every block's result, rounds, mode and size (%d)",
	       block.x, block.y, block.z, mode ? "atomicMax" : "sum", err);
	free(out);
}

static void test_carry(struct agile_launch_pool *pool)
{
	const struct agile_dim3 block = { 8, 4, 1 };
	int *out = calloc(3 * 32, sizeof(int));
	int bad = 0, err;

	err = carry_launch(pool, (struct agile_dim3){ 3, 1, 1 }, block, 0, out);
	for (int i = 0; i < 3 * 32; i++)
		bad += out[i] != 4 * (i % 32) + 1;
	tap_ok(!err && !bad,
	       "v = v * 3 + 1 and v = v + t across barriers: one v per thread (%d wrong)",
	       bad);
	free(out);
}

int main(void)
{
	static const struct agile_dim3 blocks[] = {
		{ 1, 1, 1 },  { 4, 2, 3 }, { 8, 8, 4 },
		{ 16, 8, 8 }, { 3, 5, 7 },
	};
	struct agile_launch_pool *pool;
	int err = agile_launch_pool_create(3, &pool);

	tap_ok_call(err, "a pool of 3 threads");
	if (err)
		return tap_done();
	for (unsigned i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++)
		for (int mode = 0; mode < 2; mode++)
			test(pool, blocks[i], mode);
	test_carry(pool);
	agile_launch_pool_destroy(pool);
	return tap_done();
}
