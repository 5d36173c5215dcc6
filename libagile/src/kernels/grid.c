// SPDX-License-Identifier: MIT
/*
 * grid.c - how CPU threads share a grid of groups (SPEC §3, layer 3): the
 * groups handed out in guided ranges, and a group's (x, y, z).  The
 * runtime's CPU runners (runtime/queue.c) and agile_launch's threads
 * (launch.c) both take their groups this way, so a group costs a loop
 * turn, not a claim.
 */
#include "kernels/kernels_impl.h"

uint64_t agile__range_size(uint64_t left, uint32_t takers)
{
	uint64_t n =
		left / ((uint64_t)AGILE__RANGE_SHARE * (takers ? takers : 1));

	return n ? n : left ? 1 : 0;
}

void agile__ranges_init(struct agile__ranges *r, uint64_t total,
			uint32_t takers)
{
	atomic_init(&r->next, 0);
	r->total = total;
	r->takers = takers;
}

uint64_t agile__ranges_take(struct agile__ranges *r, uint64_t *first)
{
	uint64_t cur = atomic_load_explicit(&r->next, memory_order_relaxed);
	uint64_t n;

	do {
		if (cur >= r->total)
			return 0;
		n = agile__range_size(r->total - cur, r->takers);
	} while (!atomic_compare_exchange_weak_explicit(&r->next, &cur, cur + n,
							memory_order_relaxed,
							memory_order_relaxed));
	*first = cur;
	return n;
}

void agile__group_id(const uint32_t grid[3], uint64_t g, uint32_t id[3])
{
	id[0] = (uint32_t)(g % grid[0]);
	g /= grid[0];
	id[1] = (uint32_t)(g % grid[1]);
	id[2] = (uint32_t)(g / grid[1]);
}
