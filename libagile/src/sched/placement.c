// SPDX-License-Identifier: MIT
/*
 * placement.c - where workers run: processing units in placement order
 * (hwloc), or none without hwloc.
 */
#define _GNU_SOURCE
#include <agile/sched.h>

#include <assert.h>
#include <errno.h>
#ifndef AGILE_NO_HWLOC
#include <hwloc.h>
#include <hwloc/glibc-sched.h>
#endif
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sched/placement.h"
#include "sched/sched_impl.h"
#include "sys.h"

#ifdef AGILE_NO_HWLOC
/*
 * Built without hwloc (the static build for the test guests: Debian ships
 * no static libudev, which a static libhwloc needs): no topology, so the
 * workers run unpinned and agile_sched_stats reports -ENOSYS, as when
 * hwloc finds no topology at run time.
 */
int sched_placement_load(struct placement *p)
{
	memset(p, 0, sizeof(*p));
	return -ENOSYS;
}

void sched_placement_free(struct placement *p)
{
	(void)p;
}

int sched_placement_cpus(struct placement *p, uint32_t i, cpu_set_t *cpus)
{
	(void)p;
	(void)i;
	(void)cpus;
	return EINVAL;
}
#else
/*
 * Processing units in placement order: the first unit of every core, then
 * the second of every core, and so on (cores before SMT siblings).
 */
int sched_placement_load(struct placement *p)
{
	int nr_cores, k = 0;

	memset(p, 0, sizeof(*p));
	if (hwloc_topology_init(&p->topo) < 0)
		return -ENOSYS;
	if (hwloc_topology_load(p->topo) < 0)
		goto err_topo;
	p->nr_pus = hwloc_get_nbobjs_by_type(p->topo, HWLOC_OBJ_PU);
	if (p->nr_pus <= 0)
		goto err_topo;
	p->pus = calloc((size_t)p->nr_pus, sizeof(*p->pus));
	if (!p->pus) {
		hwloc_topology_destroy(p->topo);
		return -ENOMEM;
	}
	nr_cores = hwloc_get_nbobjs_by_type(p->topo, HWLOC_OBJ_CORE);
	for (int rank = 0; nr_cores > 0 && k < p->nr_pus; rank++) {
		int placed = 0;

		for (int c = 0; c < nr_cores; c++) {
			hwloc_obj_t core = hwloc_get_obj_by_type(
				p->topo, HWLOC_OBJ_CORE, c);
			hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(
				p->topo, core->cpuset, HWLOC_OBJ_PU,
				(unsigned int)rank);

			if (pu && k < p->nr_pus) {
				p->pus[k++] = pu;
				placed++;
			}
		}
		if (!placed)
			break;
	}
	if (k != p->nr_pus) /* units outside any core: plain order */
		for (k = 0; k < p->nr_pus; k++)
			p->pus[k] = hwloc_get_obj_by_type(p->topo, HWLOC_OBJ_PU,
							  (unsigned int)k);
	return 0;

err_topo:
	hwloc_topology_destroy(p->topo);
	return -ENOSYS;
}

void sched_placement_free(struct placement *p)
{
	if (p->pus) {
		free(p->pus);
		hwloc_topology_destroy(p->topo);
	}
}

int sched_placement_cpus(struct placement *p, uint32_t i, cpu_set_t *cpus)
{
	hwloc_obj_t pu = p->pus[i % (uint32_t)p->nr_pus];

	CPU_ZERO(cpus);
	return hwloc_cpuset_to_glibc_sched_affinity(p->topo, pu->cpuset, cpus,
						    sizeof(*cpus)) ?
		       EINVAL :
		       0;
}
#endif /* AGILE_NO_HWLOC */
