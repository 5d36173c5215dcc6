// SPDX-License-Identifier: MIT
/*
 * procs.c - rendezvous, rank order and CPU masks among the processes of
 * a dev group (procs.h).
 */
#define _GNU_SOURCE
#include <agile/dev.h>

#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "sys.h"
#include "transport/procs.h"

bool procs_page_round(uint64_t bytes, uint64_t *out)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	if (bytes > UINT64_MAX - page)
		return false;
	*out = (bytes + page - 1) / page * page;
	return true;
}

int procs_rendezvous(struct agile_dev *dev, uint32_t self, uint32_t nr,
		     uint32_t value, uint64_t spin_ns, uint64_t deadline)
{
	int err = agile_dev_signal(dev, self, value);

	for (uint32_t q = 0; !err && q < nr; q++) {
		uint64_t left = AGILE_TIMEOUT_INFINITE, now;

		if (q == self)
			continue;
		if (deadline) {
			now = agile_mono_ns();
			left = now < deadline ? deadline - now : 0;
		}
		err = agile_dev_wait_spin(dev, q, AGILE_CMP_GE, value, spin_ns,
					  left, NULL);
	}
	return err;
}

uint32_t procs_rank_by_order(const uint32_t *order, uint32_t nr, uint32_t self,
			     uint32_t *to_rank)
{
	for (uint32_t q = 0; q < nr; q++) {
		uint32_t r = 0;

		for (uint32_t m = 0; m < nr; m++)
			if (order[m] < order[q] ||
			    (order[m] == order[q] && m < q))
				r++;
		to_rank[q] = r;
	}
	return to_rank[self];
}

void procs_publish_cpus(void *area)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		memset(&set, 0xff, sizeof(set)); /* unknown: any */
	memcpy(area, &set, sizeof(set));
}

long procs_count_cpus(void *const *areas, uint32_t nr)
{
	cpu_set_t all, one;

	CPU_ZERO(&all);
	for (uint32_t q = 0; q < nr; q++) {
		memcpy(&one, areas[q], sizeof(one));
		CPU_OR(&all, &all, &one);
	}
	return CPU_COUNT(&all);
}
