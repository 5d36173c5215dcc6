// SPDX-License-Identifier: MIT
/*
 * sched-deque-stress - the Chase-Lev deque under thieves: 10^7 operations (every
 * item pushed once and removed once, by its owner or by a thief), starting
 * from a 4-slot array so it grows many times.  Each item has a counter;
 * at the end every counter must be exactly 1: nothing lost, nothing taken
 * twice.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "sched/deque.h"
#include "tap.h"

#define NR_ITEMS 5000000 /* pushes; plus as many takes and steals: 10^7 */
#define NR_THIEVES 3

static struct agile_deque dq;
static _Atomic uint8_t *seen;
static _Atomic bool owner_done;
static _Atomic uint64_t stolen, aborted;

static void *item_of(uint64_t id)
{
	return (void *)(uintptr_t)((id + 1) << 1); /* never NULL nor ABORT */
}

static void consume(void *x)
{
	uint64_t id = ((uintptr_t)x >> 1) - 1;

	if (id < NR_ITEMS)
		atomic_fetch_add_explicit(&seen[id], 1, memory_order_relaxed);
}

static void *thief(void *arg)
{
	uint64_t lost = 0;

	(void)arg;
	for (;;) {
		void *x = agile_deque_steal(&dq);

		if (x == AGILE_DEQUE_ABORT) {
			lost++;
		} else if (x) {
			consume(x);
			atomic_fetch_add_explicit(&stolen, 1,
						  memory_order_relaxed);
		} else if (atomic_load(&owner_done)) {
			break;
		}
	}
	atomic_fetch_add(&aborted, lost);
	return NULL;
}

int main(void)
{
	pthread_t thieves[NR_THIEVES];
	uint64_t next = 0, taken = 0, rng = 88172645463325252ULL;
	uint64_t once = 0, bad = 0, ops;
	int err;

	seen = calloc(NR_ITEMS, sizeof(*seen));
	if (!seen)
		return 1;
	err = agile_deque_init(&dq, 2);
	tap_ok_call(err, "deque with 4 slots");
	for (int i = 0; i < NR_THIEVES; i++)
		pthread_create(&thieves[i], NULL, thief, NULL);

	/* A head start the thieves must dig into (a wait, not a timing). */
	for (; next < 4096; next++)
		if (agile_deque_push(&dq, item_of(next)))
			bad++;
	while (!atomic_load(&stolen))
		sched_yield();

	/* Bursts of pushes, then takes, often down to empty: last-item races. */
	while (next < NR_ITEMS) {
		uint64_t burst, drain;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		burst = 1 + rng % ((rng >> 20) % 8 ? 8 : 512);
		drain = (rng >> 40) % (burst + 2);
		for (uint64_t i = 0; i < burst && next < NR_ITEMS; i++)
			if (agile_deque_push(&dq, item_of(next++)))
				bad++;
		for (uint64_t i = 0; i < drain; i++) {
			void *x = agile_deque_take(&dq);

			if (!x)
				break;
			consume(x);
			taken++;
		}
	}
	for (void *x; (x = agile_deque_take(&dq));) {
		consume(x);
		taken++;
	}
	atomic_store(&owner_done, true);
	for (int i = 0; i < NR_THIEVES; i++)
		pthread_join(thieves[i], NULL);

	tap_ok(bad == 0, "every push succeeded");
	for (uint64_t id = 0; id < NR_ITEMS; id++)
		once += atomic_load(&seen[id]) == 1;
	ops = NR_ITEMS + taken + atomic_load(&stolen);
	tap_ok(once == NR_ITEMS, "every item removed exactly once (%llu of %d)",
	       (unsigned long long)once, NR_ITEMS);
	tap_ok(ops >= 10000000,
	       "%llu operations: %d pushes, %llu takes, %llu steals",
	       (unsigned long long)ops, NR_ITEMS, (unsigned long long)taken,
	       (unsigned long long)atomic_load(&stolen));
	tap_ok(atomic_load(&stolen) > 0, "thieves stole (%llu races lost)",
	       (unsigned long long)atomic_load(&aborted));
	tap_ok(dq.retired != NULL, "the array grew, old arrays retired");
	tap_ok(agile_deque_take(&dq) == NULL && agile_deque_steal(&dq) == NULL,
	       "empty at the end");
	agile_deque_destroy(&dq);
	free(seen);
	return tap_done();
}
