// SPDX-License-Identifier: MIT
/*
 * launch.c - grid launches of retargeted kernels on CPU threads (seed 004,
 * step 405-415: one OS thread per core, AGILE_GRID_THREADS overrides, the
 * blocks divided among them, the launch done when all have finished).
 *
 * A pool's helper threads sleep on a condition variable between launches.
 * A launch is published under the pool's mutex (generation number bumped),
 * every thread - the caller included - takes blocks in guided ranges
 * (grid.c: a CAS a range) until none are left, and the last one to finish
 * wakes the caller.  The
 * mutex orders everything a launch shares (the kernel, its args, the
 * results) between the caller and the helpers; the counter and the first
 * error are the only state touched outside it.
 */
#define _GNU_SOURCE
#include <agile/launch.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "env.h"
#include "kernels/kernels_impl.h"

/* Helper threads get this much stack: blocks keep per-thread arrays on it. */
#define LAUNCH_STACK_BYTES (16u << 20)
#define SHARED_ALIGN 64

struct launch {
	const struct agile_launch_kernel *kernel;
	struct agile_dim3 grid, block;
	size_t shared_bytes;
	const void *args;
	uint64_t nr_blocks;
	struct agile__ranges ranges; /* grid.c's: blocks in guided ranges */
	atomic_int error; /* 0, or the first failed block's error */
};

struct agile_launch_pool {
	pthread_mutex_t lock; /* launch_lock taken first; guards the rest */
	pthread_cond_t start; /* helpers wait here for a new generation */
	pthread_cond_t done; /* the caller waits here for nr_running == 0 */
	pthread_mutex_t launch_lock; /* one launch at a time */
	struct launch cur;
	uint64_t generation;
	uint32_t nr_running;
	bool stop;
	uint32_t nr_threads;
	pthread_t threads[];
};

static void first_error(struct launch *l, int err)
{
	int zero = 0;

	atomic_compare_exchange_strong(&l->error, &zero, err);
}

/* Take and run blocks until none are left or one failed. */
static void run_blocks(struct launch *l)
{
	struct agile_block_ctx blk = { .grid_dim = l->grid,
				       .block_dim = l->block };
	void *shared = NULL;

	if (l->shared_bytes) {
		size_t bytes = (l->shared_bytes + SHARED_ALIGN - 1) /
			       SHARED_ALIGN * SHARED_ALIGN;

		shared = aligned_alloc(SHARED_ALIGN, bytes);
		if (!shared) {
			first_error(l, -ENOMEM);
			return;
		}
		blk.dyn_shared = shared;
		blk.dyn_shared_bytes = l->shared_bytes;
	}
	const uint32_t grid[3] = { l->grid.x, l->grid.y, l->grid.z };
	uint64_t b, n;

	while ((n = agile__ranges_take(&l->ranges, &b))) {
		for (uint64_t end = b + n; b < end; b++) {
			uint32_t id[3];
			int err;

			if (atomic_load_explicit(&l->error,
						 memory_order_relaxed))
				goto out;
			agile__group_id(grid, b, id);
			blk.block_idx =
				(struct agile_dim3){ id[0], id[1], id[2] };
			err = l->kernel->run_block(&blk, l->args);
			if (err)
				first_error(l, err < 0 ? err : -EPROTO);
		}
	}
out:
	free(shared);
}

static void *helper_main(void *arg)
{
	struct agile_launch_pool *pool = arg;
	uint64_t seen = 0;

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		while (!pool->stop && pool->generation == seen)
			pthread_cond_wait(&pool->start, &pool->lock);
		if (pool->stop)
			break;
		seen = pool->generation;
		pthread_mutex_unlock(&pool->lock);
		run_blocks(&pool->cur);
		pthread_mutex_lock(&pool->lock);
		if (--pool->nr_running == 0)
			pthread_cond_signal(&pool->done);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

static int threads_from_env(uint32_t *nr)
{
	const char *s = getenv("AGILE_GRID_THREADS");
	char *end;
	unsigned long v;
	long cpus;

	if (s && *s) {
		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno || *end || !v || v > AGILE_LAUNCH_MAX_POOL) {
			char expected[96];

			snprintf(expected, sizeof(expected),
				 "a number of threads from 1 to %u; "
				 "agile_launch_pool_create fails with EINVAL",
				 AGILE_LAUNCH_MAX_POOL);
			agile__env_invalid("AGILE_GRID_THREADS", s, expected);
			return -EINVAL;
		}
		*nr = (uint32_t)v;
		return 0;
	}
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	*nr = cpus < 1			   ? 1 :
	      cpus > AGILE_LAUNCH_MAX_POOL ? AGILE_LAUNCH_MAX_POOL :
					     (uint32_t)cpus;
	return 0;
}

static void stop_helpers(struct agile_launch_pool *pool, uint32_t started)
{
	pthread_mutex_lock(&pool->lock);
	pool->stop = true;
	pthread_cond_broadcast(&pool->start);
	pthread_mutex_unlock(&pool->lock);
	for (uint32_t i = 0; i < started; i++)
		pthread_join(pool->threads[i], NULL);
}

int agile_launch_pool_create(uint32_t nr_threads,
			     struct agile_launch_pool **out)
{
	struct agile_launch_pool *pool;
	pthread_attr_t attr;
	uint32_t i;
	int err;

	if (!out || nr_threads > AGILE_LAUNCH_MAX_POOL)
		return -EINVAL;
	if (!nr_threads) {
		err = threads_from_env(&nr_threads);
		if (err)
			return err;
	}
	pool = calloc(1, sizeof(*pool) + nr_threads * sizeof(pthread_t));
	if (!pool)
		return -ENOMEM;
	pool->nr_threads = nr_threads;
	pthread_mutex_init(&pool->lock, NULL);
	pthread_mutex_init(&pool->launch_lock, NULL);
	pthread_cond_init(&pool->start, NULL);
	pthread_cond_init(&pool->done, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, LAUNCH_STACK_BYTES);
	for (i = 0; i + 1 < nr_threads; i++) {
		err = -pthread_create(&pool->threads[i], &attr, helper_main,
				      pool);
		if (err)
			break;
	}
	pthread_attr_destroy(&attr);
	if (i + 1 < nr_threads) {
		stop_helpers(pool, i);
		pthread_cond_destroy(&pool->done);
		pthread_cond_destroy(&pool->start);
		pthread_mutex_destroy(&pool->launch_lock);
		pthread_mutex_destroy(&pool->lock);
		free(pool);
		return err == -ENOMEM ? -ENOMEM : -EAGAIN;
	}
	*out = pool;
	return 0;
}

int agile_launch_pool_destroy(struct agile_launch_pool *pool)
{
	if (!pool)
		return -EINVAL;
	stop_helpers(pool, pool->nr_threads - 1);
	pthread_cond_destroy(&pool->done);
	pthread_cond_destroy(&pool->start);
	pthread_mutex_destroy(&pool->launch_lock);
	pthread_mutex_destroy(&pool->lock);
	free(pool);
	return 0;
}

int agile_launch_pool_threads(const struct agile_launch_pool *pool)
{
	return pool ? (int)pool->nr_threads : -EINVAL;
}

static bool dim_ok(struct agile_dim3 d)
{
	return d.x && d.y && d.z;
}

static void launch_init(struct launch *l,
			const struct agile_launch_kernel *kernel,
			struct agile_dim3 grid, struct agile_dim3 block,
			size_t shared_bytes, const void *args, uint32_t takers)
{
	l->kernel = kernel;
	l->grid = grid;
	l->block = block;
	l->shared_bytes = shared_bytes;
	l->args = args;
	l->nr_blocks = (uint64_t)grid.x * grid.y * grid.z;
	agile__ranges_init(&l->ranges, l->nr_blocks, takers);
	atomic_init(&l->error, 0);
}

int agile_launch(struct agile_launch_pool *pool,
		 const struct agile_launch_kernel *kernel,
		 struct agile_dim3 grid, struct agile_dim3 block,
		 size_t shared_bytes, const void *args)
{
	uint32_t max_threads;
	uint64_t threads;
	int err;

	if (!kernel || !kernel->run_block || kernel->reserved ||
	    kernel->max_threads > AGILE_LAUNCH_MAX_THREADS || !dim_ok(grid) ||
	    !dim_ok(block) || shared_bytes > AGILE_LAUNCH_MAX_SHARED)
		return -EINVAL;
	max_threads = kernel->max_threads ? kernel->max_threads :
					    AGILE_LAUNCH_MAX_THREADS;
	threads = (uint64_t)block.x * block.y * block.z;
	if (threads > max_threads)
		return -EINVAL;

	if (!pool) {
		struct launch l;

		launch_init(&l, kernel, grid, block, shared_bytes, args, 1);
		run_blocks(&l);
		return atomic_load(&l.error);
	}

	pthread_mutex_lock(&pool->launch_lock);
	pthread_mutex_lock(&pool->lock);
	launch_init(&pool->cur, kernel, grid, block, shared_bytes, args,
		    pool->nr_threads);
	pool->nr_running = pool->nr_threads - 1;
	pool->generation++;
	pthread_cond_broadcast(&pool->start);
	pthread_mutex_unlock(&pool->lock);

	run_blocks(&pool->cur);

	pthread_mutex_lock(&pool->lock);
	while (pool->nr_running)
		pthread_cond_wait(&pool->done, &pool->lock);
	err = atomic_load(&pool->cur.error);
	pthread_mutex_unlock(&pool->lock);
	pthread_mutex_unlock(&pool->launch_lock);
	return err;
}
