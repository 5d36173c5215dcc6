// SPDX-License-Identifier: MIT
/* A segment map of four nodes in this process; forall runs on a pool. */
#include <agile/agile.h>
#include <stdio.h>

int main(void)
{
	struct agile_segmap *sm;
	struct agile_sched *pool;
	int ret;

	if (agile_sched_create(NULL, &pool))
		return 1;
	ret = agile_segmap_threads(4, pool, &sm);
	if (ret) {
		fprintf(stderr, "agile_segmap_threads: %s\n",
			agile_strerror(ret));
		agile_sched_destroy(pool);
		return 1;
	}
	printf("%d nodes\n", agile_segmap_nr_nodes(sm));
	/* agile_field_create, agile_forall ... (examples/segmap-forall.c) */
	agile_segmap_destroy(sm);
	agile_sched_destroy(pool);
	return 0;
}
