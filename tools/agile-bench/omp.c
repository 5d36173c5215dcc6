// SPDX-License-Identifier: MIT
/*
 * omp.c - OpenMP baselines (libgomp): fib with a task per call and
 * taskwait, and a parallel for with schedule(dynamic, chunk).
 */
#include <omp.h>

#include "bench.h"

static int64_t fib(int n)
{
	int64_t a, b;

	if (n < 2)
		return n;
#pragma omp task shared(a) firstprivate(n)
	a = fib(n - 1);
	b = fib(n - 2);
#pragma omp taskwait
	return a + b;
}

int64_t omp_fib(int n, int threads)
{
	int64_t r = 0;

#pragma omp parallel num_threads(threads)
#pragma omp single
	r = fib(n);
	return r;
}

void omp_pfor(int64_t n, int64_t chunk, int threads,
	      void (*body)(int64_t lo, int64_t hi, void *arg), void *arg)
{
/* One loop iteration per chunk, handed out one at a time: dynamic, chunk. */
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
	for (int64_t lo = 0; lo < n; lo += chunk)
		body(lo, lo + chunk < n ? lo + chunk : n, arg);
}
