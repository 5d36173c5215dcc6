// SPDX-License-Identifier: MIT
/* Sum 0 .. n-1 on a pool of work-stealing workers. */
#include <agile/agile.h>
#include <stdatomic.h>
#include <stdio.h>

static _Atomic int64_t total;

static int body(int64_t lo, int64_t hi, void *arg)
{
	int64_t sum = 0;

	(void)arg;
	for (int64_t i = lo; i < hi; i++)
		sum += i;
	atomic_fetch_add(&total, sum);
	return 0;
}

int main(void)
{
	struct agile_sched_opts opts;
	struct agile_sched *pool;
	int ret;

	agile_sched_opts_init(&opts); /* one worker per core */
	ret = agile_sched_create(&opts, &pool);
	if (ret) {
		fprintf(stderr, "agile_sched_create: %s\n",
			agile_strerror(ret));
		return 1;
	}
	ret = agile_sched_parallel_for(pool, 0, 1000000, 4096, body, NULL);
	printf("%d workers: %lld (%s)\n", agile_sched_nr_workers(pool),
	       (long long)total, agile_strerror(ret));
	agile_sched_destroy(pool);
	return ret ? 1 : 0;
}
