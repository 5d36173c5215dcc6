// SPDX-License-Identifier: MIT
/*
 * fib_unchecked - fib.c's task compiled without the inline sync's misuse
 * checks (AGILE_SCHED_UNCHECKED), so that agile-bench fib measures what
 * they cost beside the checked task.  Nothing else uses this build of it.
 */
#define AGILE_SCHED_UNCHECKED
#include <agile/sched.h>

#include "bench.h"

AGILE_TASK(int64_t, fib_unchecked, w, int, n)
{
	int64_t b;

	if (n < 2)
		return n;
	AGILE_SPAWN(w, fib_unchecked, n - 1);
	b = AGILE_CALL(w, fib_unchecked, n - 2);
	return AGILE_SYNC(w, fib_unchecked) + b;
}

int bench_fib_unchecked(struct agile_sched *s, int n, int64_t *result)
{
	return AGILE_RUN(s, fib_unchecked, n, result);
}
