// SPDX-License-Identifier: MIT
/*
 * fork-join.c - the smallest libagile program: fib(n) with every call a
 * spawn, on a pool with one worker per core.
 *
 *	cc -O2 fork-join.c $(pkg-config --cflags --libs agile) -o fork-join
 *	./fork-join 32
 */
#include <agile/sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A task: result type, name, the worker parameter, the argument.  The body
 * spawns fib(n - 1), computes fib(n - 2) itself, then syncs: the spawned
 * half runs right here unless an idle worker stole it meanwhile.
 */
AGILE_TASK(long, fib, w, int, n)
{
	long b;

	if (n < 2)
		return n;
	AGILE_SPAWN(w, fib, n - 1);
	b = AGILE_CALL(w, fib, n - 2);
	return AGILE_SYNC(w, fib) + b;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 30;
	struct agile_sched_stats stats;
	struct agile_sched *sched;
	long result;
	int err;

	err = agile_sched_create(NULL, &sched); /* NULL: default options */
	if (err) {
		fprintf(stderr, "agile_sched_create: %s\n", strerror(-err));
		return 1;
	}
	/* Runs fib(n) on a worker; this thread sleeps until it is done. */
	err = AGILE_RUN(sched, fib, n, &result);
	if (err) {
		fprintf(stderr, "fib: %s\n", strerror(-err));
		agile_sched_destroy(sched);
		return 1;
	}
	agile_sched_stats(sched, &stats);
	/* Spawns are not counted unless AGILE_SCHED_COUNT_SPAWNS asks. */
	printf("fib(%d) = %ld: %llu steals, %d workers\n", n, result,
	       (unsigned long long)stats.steals, agile_sched_nr_workers(sched));
	return agile_sched_destroy(sched) ? 1 : 0;
}
