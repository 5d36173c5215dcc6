// SPDX-License-Identifier: MIT
/*
 * kernels-launch - agile_launch, the grid launch retargeted kernels run
 * through (agile/launch.h): every block of a 3-D grid runs exactly once
 * with its blockIdx, gridDim and blockDim, on the pool's threads; dynamic
 * shared memory is there; a failing block fails the launch with the
 * first error; the blocks are spread over the pool's threads (a thread's
 * first range leaves the others some: the first block waits until a
 * second thread runs one); bad launches are refused; AGILE_GRID_THREADS
 * sizes a pool.
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"

#define GX 7
#define GY 5
#define GZ 3

struct count_args {
	atomic_int seen[GZ][GY][GX];
	atomic_int bad;
	int fail_block; /* flat block index that fails, or -1 */
};

static int count_block(const struct agile_block_ctx *blk, const void *args)
{
	struct count_args *a = (struct count_args *)args;
	const struct agile_dim3 b = blk->block_idx;
	unsigned char *shared = blk->dyn_shared;

	if (blk->grid_dim.x != GX || blk->grid_dim.y != GY ||
	    blk->grid_dim.z != GZ || blk->block_dim.x != 32 ||
	    blk->block_dim.y != 4 || blk->block_dim.z != 2 || b.x >= GX ||
	    b.y >= GY || b.z >= GZ)
		atomic_fetch_add(&a->bad, 1);
	/* the dynamic shared memory is this block's to write */
	if (!shared || blk->dyn_shared_bytes != 4096 || (uintptr_t)shared % 64)
		atomic_fetch_add(&a->bad, 1);
	else
		memset(shared, (int)b.x, blk->dyn_shared_bytes);
	atomic_fetch_add(&a->seen[b.z][b.y][b.x], 1);
	if ((int)((b.z * GY + b.y) * GX + b.x) == a->fail_block)
		return -ENOSPC;
	return 0;
}

static const struct agile_launch_kernel count_kernel = {
	.name = "count",
	.run_block = count_block,
};

static int all_once(struct count_args *a)
{
	for (int z = 0; z < GZ; z++)
		for (int y = 0; y < GY; y++)
			for (int x = 0; x < GX; x++)
				if (atomic_load(&a->seen[z][y][x]) != 1)
					return 0;
	return !atomic_load(&a->bad);
}

static void test_grid(struct agile_launch_pool *pool, const char *what)
{
	const struct agile_dim3 grid = { GX, GY, GZ }, block = { 32, 4, 2 };
	struct count_args *a = calloc(1, sizeof(*a));
	int err;

	a->fail_block = -1;
	err = agile_launch(pool, &count_kernel, grid, block, 4096, a);
	tap_ok(!err && all_once(a),
	       "%s: every block of a %dx%dx%d grid ran once with its blockIdx (%d)",
	       what, GX, GY, GZ, err);

	memset(a, 0, sizeof(*a));
	a->fail_block = 0;
	err = agile_launch(pool, &count_kernel, grid, block, 4096, a);
	tap_ok(err == -ENOSPC, "%s: a failing block fails the launch (%d)",
	       what, err);
	free(a);
}

/* How many threads ran a block of this launch of spread_block. */
struct spread_args {
	atomic_int nr;
};

static int spread_block(const struct agile_block_ctx *blk, const void *args)
{
	static _Thread_local const void *counted; /* the launch it was in */
	struct spread_args *a = (struct spread_args *)args;
	struct timespec t0, t;

	if (counted != a) {
		counted = a;
		atomic_fetch_add(&a->nr, 1);
	}
	if (blk->block_idx.x)
		return 0;
	/* Block 0 waits (10 s at most) for a second thread to run one. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (atomic_load(&a->nr) >= 2)
			return 0;
	} while (t.tv_sec - t0.tv_sec < 10);
	return -ETIMEDOUT;
}

static void test_spread(void)
{
	static const struct agile_launch_kernel k = {
		.name = "spread",
		.run_block = spread_block,
	};
	struct agile_launch_pool *pool;
	struct spread_args *a = calloc(1, sizeof(*a));
	int err = agile_launch_pool_create(2, &pool);

	if (!err) {
		err = agile_launch(pool, &k, (struct agile_dim3){ 64, 1, 1 },
				   (struct agile_dim3){ 1, 1, 1 }, 0, a);
		agile_launch_pool_destroy(pool);
	}
	tap_ok(!err && atomic_load(&a->nr) >= 2,
	       "2 threads, 64 blocks: both threads ran blocks while block 0 "
	       "waited (%d): %s",
	       atomic_load(&a->nr), strerror(-err));
	free(a);
}

static void test_refused(void)
{
	const struct agile_dim3 one = { 1, 1, 1 }, zero = { 0, 1, 1 };
	struct agile_launch_kernel k = count_kernel;
	struct count_args *a = calloc(1, sizeof(*a));
	int bad = 0;

	bad += agile_launch(NULL, NULL, one, one, 0, a) != -EINVAL;
	bad += agile_launch(NULL, &k, zero, one, 0, a) != -EINVAL;
	bad += agile_launch(NULL, &k, one, zero, 0, a) != -EINVAL;
	bad += agile_launch(NULL, &k, one, (struct agile_dim3){ 1025, 1, 1 }, 0,
			    a) != -EINVAL;
	bad += agile_launch(NULL, &k, one, (struct agile_dim3){ 32, 32, 2 }, 0,
			    a) != -EINVAL;
	bad += agile_launch(NULL, &k, one, one, AGILE_LAUNCH_MAX_SHARED + 1,
			    a) != -EINVAL;
	k.max_threads = 64;
	bad += agile_launch(NULL, &k, one, (struct agile_dim3){ 65, 1, 1 }, 0,
			    a) != -EINVAL;
	k.max_threads = 0;
	k.reserved = 1;
	bad += agile_launch(NULL, &k, one, one, 0, a) != -EINVAL;
	tap_ok(!bad && !atomic_load(&a->seen[0][0][0]),
	       "bad launches are refused with -EINVAL and run nothing");
	free(a);
}

static void test_threads_env(void)
{
	struct agile_launch_pool *pool = NULL;
	int err;

	setenv("AGILE_GRID_THREADS", "3", 1);
	err = agile_launch_pool_create(0, &pool);
	tap_ok(!err && agile_launch_pool_threads(pool) == 3,
	       "AGILE_GRID_THREADS=3 gives a pool of 3 threads");
	if (!err)
		agile_launch_pool_destroy(pool);
	setenv("AGILE_GRID_THREADS", "none", 1);
	tap_ok(agile_launch_pool_create(0, &pool) == -EINVAL,
	       "AGILE_GRID_THREADS that is not a number is refused");
	unsetenv("AGILE_GRID_THREADS");
	tap_ok(agile_launch_pool_create(AGILE_LAUNCH_MAX_POOL + 1, &pool) ==
		       -EINVAL,
	       "too many threads are refused");
}

int main(void)
{
	struct agile_launch_pool *pool;
	int err;

	test_grid(NULL, "no pool (the caller alone)");
	err = agile_launch_pool_create(4, &pool);
	tap_ok_call(err, "a pool of 4 threads");
	if (!err) {
		for (int i = 0; i < 3; i++)
			test_grid(pool, "4 threads");
		tap_ok_call(agile_launch_pool_destroy(pool), "pool destroyed");
	}
	test_spread();
	test_refused();
	test_threads_env();
	return tap_done();
}
