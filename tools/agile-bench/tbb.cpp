// SPDX-License-Identifier: MIT
/*
 * tbb.cpp - oneTBB baselines: fib with task_group (every call a spawn, the
 * idiomatic way) and parallel_for over a blocked_range with the default
 * auto_partitioner, both inside a task_arena of the requested concurrency.
 */
#include <cstdint>
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

extern "C" {
#include "bench.h"
}

struct tbb_arena {
	oneapi::tbb::task_arena arena;
	explicit tbb_arena(int threads)
		: arena(threads)
	{
	}
};

static int64_t fib(int n)
{
	if (n < 2)
		return n;
	int64_t a, b;
	oneapi::tbb::task_group g;
	g.run([&] { a = fib(n - 1); });
	b = fib(n - 2);
	g.wait();
	return a + b;
}

extern "C" struct tbb_arena *tbb_arena_new(int threads)
{
	return new tbb_arena(threads);
}

extern "C" void tbb_arena_free(struct tbb_arena *a)
{
	delete a;
}

extern "C" int64_t tbb_fib(struct tbb_arena *a, int n)
{
	int64_t r = 0;

	a->arena.execute([&] { r = fib(n); });
	return r;
}

extern "C" void tbb_pfor(struct tbb_arena *a, int64_t n, int64_t grain,
			 void (*body)(int64_t lo, int64_t hi, void *arg),
			 void *arg)
{
	a->arena.execute([&] {
		oneapi::tbb::parallel_for(
			oneapi::tbb::blocked_range<int64_t>(0, n,
							    (size_t)grain),
			[&](const oneapi::tbb::blocked_range<int64_t> &r) {
				body(r.begin(), r.end(), arg);
			});
	});
}
