// SPDX-License-Identifier: MIT
/* Four threads sum their vectors with agile_coll_allreduce. */
#include <agile/agile.h>
#include <pthread.h>
#include <stdio.h>

#define MEMBERS 4
#define COUNT 1024

static struct agile_coll_team *team;

static void *member(void *arg)
{
	uint32_t rank = (uint32_t)(uintptr_t)arg;
	static double data[MEMBERS][COUNT];
	struct agile_coll *coll;
	int ret;

	for (int i = 0; i < COUNT; i++)
		data[rank][i] = rank;
	ret = agile_coll_threads_member(team, rank, &coll);
	if (!ret)
		ret = agile_coll_allreduce(coll, data[rank], data[rank], COUNT,
					   AGILE_COLL_DOUBLE, AGILE_COLL_SUM);
	if (rank == 0)
		printf("sum %g (want 6): %s\n", data[0][0],
		       agile_strerror(ret));
	agile_coll_destroy(coll);
	return NULL;
}

int main(void)
{
	pthread_t threads[MEMBERS];

	if (agile_coll_threads_create(MEMBERS, NULL, &team))
		return 1;
	for (uintptr_t r = 0; r < MEMBERS; r++)
		pthread_create(&threads[r], NULL, member, (void *)r);
	for (int r = 0; r < MEMBERS; r++)
		pthread_join(threads[r], NULL);
	return agile_coll_threads_destroy(team) ? 1 : 0;
}
