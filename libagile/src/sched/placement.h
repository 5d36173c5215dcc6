/* SPDX-License-Identifier: MIT */
/*
 * placement.h - where a scheduler's workers run (placement.c).  Used by
 * pool.c at start-up only, from the creating thread.
 */
#ifndef AGILE_SCHED_PLACEMENT_H
#define AGILE_SCHED_PLACEMENT_H

#include <sched.h>
#include <stdint.h>

#ifdef AGILE_NO_HWLOC
struct placement {
	void *pus;
	int nr_pus;
};
#else
#include <hwloc.h>

/* Processing units in placement order (cores before SMT siblings). */
struct placement {
	hwloc_topology_t topo;
	hwloc_obj_t *pus;
	int nr_pus;
};
#endif

/* Load the topology: 0, -ENOSYS (none, or no hwloc) or -ENOMEM. */
int sched_placement_load(struct placement *p);
void sched_placement_free(struct placement *p);
/* The cpu set of unit @i (modulo the units); 0 or a positive errno. */
int sched_placement_cpus(struct placement *p, uint32_t i, cpu_set_t *cpus);

#endif /* AGILE_SCHED_PLACEMENT_H */
