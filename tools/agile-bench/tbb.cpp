// SPDX-License-Identifier: MIT
/*
 * tbb.cpp - oneTBB baselines: fib with task_group (every call a spawn, the
 * idiomatic way) and parallel_for over a blocked_range with the default
 * auto_partitioner, both inside a task_arena of the requested concurrency;
 * and the interference benchmark's nqueens and uts (trees.h) with a
 * task_group per node.
 */
#include <cstdint>
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

extern "C" {
#include "bench.h"
#include "trees.h"
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

static int64_t nqueens(const struct nq_board &b)
{
	if (!nq_spawns(&b))
		return nq_serial(&b);
	int64_t counts[NQ_MAX] = { 0 };
	oneapi::tbb::task_group g;
	for (int col = 0; col < b.n; col++) {
		if (nq_safe(&b, col)) {
			struct nq_board c = nq_place(&b, col);
			g.run([c, col, &counts] { counts[col] = nqueens(c); });
		}
	}
	g.wait();
	int64_t sum = 0;
	for (int col = 0; col < b.n; col++)
		sum += counts[col];
	return sum;
}

static int64_t uts(const struct uts_span &s)
{
	if (s.hi - s.lo == 1) {
		struct uts_span d = uts_down(&s);
		return 1 + (d.hi ? uts(d) : 0);
	}
	struct uts_span left = s, right = s;
	left.hi = right.lo = s.lo + (s.hi - s.lo) / 2;
	int64_t a = 0, b;
	oneapi::tbb::task_group g;
	g.run([left, &a] { a = uts(left); });
	b = uts(right);
	g.wait();
	return a + b;
}

extern "C" int64_t tbb_nqueens(struct tbb_arena *a, int n)
{
	int64_t r = 0;

	a->arena.execute([&] { r = nqueens(nq_root(n)); });
	return r;
}

extern "C" int64_t tbb_uts(struct tbb_arena *a)
{
	int64_t r = 0;

	a->arena.execute([&] { r = uts(uts_root()); });
	return r;
}
