// SPDX-License-Identifier: MIT
/*
 * interference_omp.c - the OpenMP side of the interference benchmark:
 * nqueens and uts (trees.h) with a task per child and taskwait (fib is
 * omp.c's).
 */
#include <omp.h>

#include "bench.h"
#include "trees.h"

static int64_t nqueens(const struct nq_board *b)
{
	int64_t counts[NQ_MAX] = { 0 }, sum = 0;

	if (!nq_spawns(b))
		return nq_serial(b);
	for (int col = 0; col < b->n; col++) {
		if (nq_safe(b, col)) {
			struct nq_board c = nq_place(b, col);

#pragma omp task shared(counts) firstprivate(c, col)
			counts[col] = nqueens(&c);
		}
	}
#pragma omp taskwait
	for (int col = 0; col < b->n; col++)
		sum += counts[col];
	return sum;
}

static int64_t uts(const struct uts_span *s)
{
	struct uts_span left = *s, right = *s;
	int64_t a, b;

	if (s->hi - s->lo == 1) {
		struct uts_span d = uts_down(s);

		return 1 + (d.hi ? uts(&d) : 0);
	}
	left.hi = right.lo = s->lo + (s->hi - s->lo) / 2;
#pragma omp task shared(a) firstprivate(left)
	a = uts(&left);
	b = uts(&right);
#pragma omp taskwait
	return a + b;
}

int64_t omp_nqueens(int n, int threads)
{
	int64_t r = 0;

#pragma omp parallel num_threads(threads)
#pragma omp single
	{
		struct nq_board b = nq_root(n);

		r = nqueens(&b);
	}
	return r;
}

int64_t omp_uts(int threads)
{
	int64_t r = 0;

#pragma omp parallel num_threads(threads)
#pragma omp single
	{
		struct uts_span s = uts_root();

		r = uts(&s);
	}
	return r;
}
