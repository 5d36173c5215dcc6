/* SPDX-License-Identifier: MIT */
/*
 * agile/launch.h - grid launches of retargeted CUDA/HIP kernels on CPU
 * threads (seed 004, SPEC §3 layer 3 "kernels")
 *
 * tools/agile-retarget translates an unmodified __global__ kernel into a C
 * function that runs ONE thread block: its body split into regions at the
 * barriers, each region wrapped in loops over the block's threads
 * (docs/retarget.md).  This header is what that C code is written against,
 * and how a program launches it: a grid of blocks divided among the OS
 * threads of a launch pool, as a CUDA launch divides them among the SMs.
 *
 *	struct agile_launch_pool *pool;
 *	agile_launch_pool_create(0, &pool);      one thread per CPU
 *	matmul_launch(pool, grid, block, 0, a, b, n);   generated wrapper
 *	agile_launch_pool_destroy(pool);
 *
 * The generated wrapper packs the kernel's parameters into its argument
 * struct and calls agile_launch with the kernel's descriptor.  Blocks run
 * in no particular order, each wholly on one thread (a block's threads are
 * the loops inside its function, so a block of up to
 * AGILE_LAUNCH_MAX_THREADS threads needs no OS thread of its own).
 *
 * Thread safety: a pool takes one launch at a time (concurrent launches
 * on one pool are serialised); different pools are independent.
 */
#ifndef AGILE_LAUNCH_H
#define AGILE_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most threads of one block, as on CUDA and HIP devices. */
#define AGILE_LAUNCH_MAX_THREADS 1024
/* The most dynamic shared memory (extern __shared__) of one block. */
#define AGILE_LAUNCH_MAX_SHARED (1024 * 1024)
/* Most threads of a pool (AGILE_GRID_THREADS included). */
#define AGILE_LAUNCH_MAX_POOL 1024

/* dim3: blockIdx, blockDim, gridDim and threadIdx alike. */
struct agile_dim3 {
	uint32_t x, y, z;
};

/**
 * struct agile_block_ctx - what a block's function knows of its launch
 * @grid_dim:   gridDim
 * @block_dim:  blockDim
 * @block_idx:  blockIdx
 * @dyn_shared: the block's dynamic shared memory (extern __shared__),
 *              64-byte aligned, not initialised; NULL when none was asked
 * @dyn_shared_bytes: its size
 */
struct agile_block_ctx {
	struct agile_dim3 grid_dim;
	struct agile_dim3 block_dim;
	struct agile_dim3 block_idx;
	void *dyn_shared;
	size_t dyn_shared_bytes;
};

/**
 * struct agile_thread_ctx - one thread of a block, for __device__ helpers
 * @blk: the block
 * @idx: threadIdx
 *
 * agile-retarget passes it by value as the first argument of every
 * translated __device__ function.
 */
struct agile_thread_ctx {
	const struct agile_block_ctx *blk;
	struct agile_dim3 idx;
};

/*
 * A block's function: runs every thread of block @blk->block_idx.
 * Returns 0, or a negative errno that fails the launch (a __trap()).
 */
typedef int (*agile_block_fn)(const struct agile_block_ctx *blk,
			      const void *args);

/**
 * struct agile_launch_kernel - a translated kernel (agile-retarget makes it)
 * @name:        the kernel's name
 * @run_block:   its block function
 * @max_threads: most threads per block, 1 .. AGILE_LAUNCH_MAX_THREADS;
 *               0 means AGILE_LAUNCH_MAX_THREADS
 * @reserved:    must be zero
 */
struct agile_launch_kernel {
	const char *name;
	agile_block_fn run_block;
	uint32_t max_threads;
	uint32_t reserved;
};

struct agile_launch_pool;

/**
 * agile_launch_pool_create - start the OS threads that run blocks
 * @nr_threads: threads, the caller of agile_launch included; 0: the
 *              number in $AGILE_GRID_THREADS if set, else one per online
 *              CPU
 * @out:        receives the pool
 *
 * nr_threads - 1 threads are started; they sleep between launches.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL (@out NULL, @nr_threads or AGILE_GRID_THREADS above
 * AGILE_LAUNCH_MAX_POOL, AGILE_GRID_THREADS not a number from 1), -ENOMEM
 * or -EAGAIN (no thread).
 */
int agile_launch_pool_create(uint32_t nr_threads,
			     struct agile_launch_pool **out);

/**
 * agile_launch_pool_destroy - stop and join the pool's threads, free it
 * @pool: the pool
 *
 * Thread safety: not thread safe against a launch on @pool.
 *
 * Return: 0 or -EINVAL (@pool NULL).
 */
int agile_launch_pool_destroy(struct agile_launch_pool *pool);

/**
 * agile_launch_pool_threads - how many threads run @pool's blocks
 * @pool: the pool
 *
 * Thread safety: thread safe.
 *
 * Return: the count, the caller included, or -EINVAL (@pool NULL).
 */
int agile_launch_pool_threads(const struct agile_launch_pool *pool);

/**
 * agile_launch - run @kernel over a grid of blocks and wait for all
 * @pool:         the threads; NULL runs every block on the calling thread
 * @kernel:       the translated kernel
 * @grid:         gridDim, each component 1 or more
 * @block:        blockDim, each 1 or more, x * y * z at most the kernel's
 *                max_threads
 * @shared_bytes: dynamic shared memory per block (0 ..
 *                AGILE_LAUNCH_MAX_SHARED)
 * @args:         the kernel's argument struct, passed to every block
 *
 * The pool's threads (the caller among them) take blocks in guided
 * ranges (blockIdx.x fastest; a range is what is left over twice the
 * pool's threads, at least one block: the runtime's CPU runners share
 * the same hand-out) until none are left; the call returns when every
 * block taken has finished.  A block that fails stops the hand-out:
 * blocks not yet started are not run, and the first error is returned.
 *
 * Thread safety: thread safe; launches on one pool are serialised.
 *
 * Return: 0, -EINVAL (bad arguments: nothing ran), -ENOMEM (no shared
 * memory for a thread), or the first failed block's error.
 */
int agile_launch(struct agile_launch_pool *pool,
		 const struct agile_launch_kernel *kernel,
		 struct agile_dim3 grid, struct agile_dim3 block,
		 size_t shared_bytes, const void *args);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_LAUNCH_H */
