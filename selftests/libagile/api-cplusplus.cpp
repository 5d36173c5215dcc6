// SPDX-License-Identifier: MIT
/*
 * api-cplusplus - libagile's headers from C++17: every header compiles
 * (agile/agile.h includes them all), the C task macros work, and the
 * lambda forms of agile/sched.hpp give checked results: a recursive
 * spawn/sync (fib), a parallel-for that visits every index exactly once,
 * a body's error ending the loop (each also with spawns that spill past
 * a small frame stack), and the version macros agreeing with
 * the library.
 */
#include <agile/agile.h>
#include <agile/sched.hpp>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <vector>

#include "tap.h"

static int64_t fib_plain(int n)
{
	return n < 2 ? n : fib_plain(n - 1) + fib_plain(n - 2);
}

/* The C task macros, compiled as C++. */
AGILE_TASK(int64_t, fib_c, w, int, n)
{
	if (n < 2)
		return n;
	AGILE_SPAWN(w, fib_c, n - 1);
	int64_t b = AGILE_CALL(w, fib_c, n - 2);
	return AGILE_SYNC(w, fib_c) + b;
}

/* The lambda form: a spawn of a lambda, then its sync. */
static int64_t fib_cxx(struct agile_worker *w, int n)
{
	if (n < 2)
		return n;
	auto a = agile::spawn(w, [n](struct agile_worker *w2) {
		return fib_cxx(w2, n - 1);
	});
	int64_t b = fib_cxx(w, n - 2);
	return a.sync() + b;
}

/* Void tasks synced by their destructors, in reverse order of spawn. */
static void count_leaves(struct agile_worker *w, int depth,
			 std::atomic<int64_t> &leaves)
{
	if (!depth) {
		leaves.fetch_add(1, std::memory_order_relaxed);
		return;
	}
	auto left = agile::spawn(w, [depth, &leaves](struct agile_worker *w2) {
		count_leaves(w2, depth - 1, leaves);
	});
	auto right = agile::spawn(w, [depth, &leaves](struct agile_worker *w2) {
		count_leaves(w2, depth - 1, leaves);
	});
}

static void check_version(void)
{
	tap_ok(agile_version_major() == AGILE_VERSION_MAJOR &&
		       agile_version_minor() == AGILE_VERSION_MINOR,
	       "library %d.%d, headers %d.%d", agile_version_major(),
	       agile_version_minor(), AGILE_VERSION_MAJOR, AGILE_VERSION_MINOR);
	static_assert(!AGILE_CHECK_VERSION(AGILE_VERSION_MAJOR,
					   AGILE_VERSION_MINOR),
		      "the headers are not older than themselves");
	static_assert(AGILE_CHECK_VERSION(AGILE_VERSION_MAJOR,
					  AGILE_VERSION_MINOR + 1),
		      "the headers are older than the next minor version");
	tap_ok(!agile_version_check(AGILE_VERSION_MAJOR, AGILE_VERSION_MINOR) &&
		       !agile_version_check(0, 1) &&
		       agile_version_check(AGILE_VERSION_MAJOR,
					   AGILE_VERSION_MINOR + 1) &&
		       agile_version_check(AGILE_VERSION_MAJOR + 1, 0),
	       "agile_version_check: older than asked for, or not");
}

/* @max_frames small: deep spawns spill, and syncs take the slow path. */
static void check_pool(unsigned int nr_workers, unsigned int max_frames)
{
	struct agile_sched_opts opts;
	struct agile_sched *s;
	int64_t r = -1;
	int err;

	agile_sched_opts_init(&opts);
	opts.nr_workers = nr_workers;
	opts.flags = AGILE_SCHED_QUIET;
	opts.max_frames = max_frames;
	err = agile_sched_create(&opts, &s);
	if (!tap_ok_call(err, "create"))
		return;
	tap_diag("%d workers, max_frames %u", agile_sched_nr_workers(s),
		 max_frames);

	err = AGILE_RUN(s, fib_c, 25, &r);
	tap_ok(err == 0 && r == fib_plain(25), "AGILE_TASK fib(25) = %lld",
	       (long long)r);

	r = -1;
	err = agile::run(s, [&](struct agile_worker *w) {
		r = fib_cxx(w, 25);
		return 0;
	});
	tap_ok(err == 0 && r == fib_plain(25), "agile::spawn fib(25) = %lld",
	       (long long)r);

	std::atomic<int64_t> leaves{ 0 };

	err = agile::run(s, [&](struct agile_worker *w) {
		count_leaves(w, 12, leaves);
	});
	tap_ok(err == 0 && leaves.load() == 1 << 12,
	       "void tasks synced by their destructors: %lld leaves",
	       (long long)leaves.load());

	const int64_t n = 100003;
	std::vector<std::atomic<uint32_t> > marks(n);
	std::atomic<int64_t> sum{ 0 };

	for (int64_t grain : { int64_t(0), int64_t(1), int64_t(64) }) {
		for (auto &m : marks)
			m.store(0, std::memory_order_relaxed);
		sum.store(0);
		err = agile::parallel_for(s, 0, n, grain, [&](int64_t i) {
			marks[i].fetch_add(1, std::memory_order_relaxed);
			sum.fetch_add(i, std::memory_order_relaxed);
		});
		bool once = true;

		for (auto &m : marks)
			once = once && m.load(std::memory_order_relaxed) == 1;
		tap_ok(err == 0 && once && sum.load() == n * (n - 1) / 2,
		       "parallel_for grain %lld: every index exactly once",
		       (long long)grain);
	}

	err = agile::parallel_for(s, 0, n, 16, [](int64_t i) {
		return i == 4242 ? -EIO : 0;
	});
	tap_ok(err == -EIO, "parallel_for: a body's error is the result (%s)",
	       agile_strerror(err));

	/* parallel_reduce: a struct accumulator, from the pool and a task. */
	struct minmax {
		int64_t lo, hi, count;
	};
	const minmax none{ INT64_MAX, INT64_MIN, 0 };
	auto fold = [](int64_t i, minmax &acc) {
		int64_t v = (i * 7919) % 10007;

		acc.lo = v < acc.lo ? v : acc.lo;
		acc.hi = v > acc.hi ? v : acc.hi;
		acc.count++;
	};
	auto join = [](minmax &acc, const minmax &other) {
		acc.lo = other.lo < acc.lo ? other.lo : acc.lo;
		acc.hi = other.hi > acc.hi ? other.hi : acc.hi;
		acc.count += other.count;
	};
	minmax mm{};

	err = agile::parallel_reduce(s, 0, n, 0, none, fold, join, mm);
	tap_ok(err == 0 && mm.lo == 0 && mm.hi == 10006 && mm.count == n,
	       "parallel_reduce on the pool: min, max and count of %lld",
	       (long long)n);
	mm = minmax{};
	int inner = -1, inner_for = -1;
	std::atomic<int64_t> inner_sum{ 0 };

	err = agile::run(s, [&](agile_worker *w) {
		inner = agile::parallel_reduce(w, 0, n, 64, none, fold, join,
					       mm);
		inner_for = agile::parallel_for(w, 0, n, 0, [&](int64_t i) {
			inner_sum.fetch_add(i, std::memory_order_relaxed);
		});
	});
	tap_ok(err == 0 && inner == 0 && inner_for == 0 && mm.count == n &&
		       mm.hi == 10006 && inner_sum.load() == n * (n - 1) / 2,
	       "parallel_reduce and parallel_for with the worker, in a task");

	tap_ok_call(agile_sched_destroy(s), "destroy");
}

int main(void)
{
	check_version();
	check_pool(1, 0);
	check_pool(0, 0);
	check_pool(3, 0);
	check_pool(2, 4);
	return tap_done();
}
