/* SPDX-License-Identifier: MIT */
/*
 * procs.h - moving words and meeting points between the processes of a
 * dev group on one machine: what coll's processes scope is built on, and
 * what segmap's will be.  Below coll and segmap, above dev (it uses only
 * agile/dev.h).
 *
 * A member talks to the others through its own doorbell line: the
 * doorbell value is its rendezvous count (release-stored by
 * agile_dev_signal, acquired by the waiters), and the line's user words
 * carry what it publishes before a count (relaxed: the count orders them).
 * Nothing here locks; each call is made by one thread of a member at a
 * time, as the group's protocol is.
 */
#ifndef AGILE_TRANSPORT_PROCS_H
#define AGILE_TRANSPORT_PROCS_H

#include <agile/dev.h>

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

/* The 64-bit value in user words @word and @word + 1 of @db (relaxed). */
static inline uint64_t procs_word_pair(const struct agile_doorbell *db,
				       int word)
{
	return (uint64_t)__atomic_load_n(&db->user[word], __ATOMIC_RELAXED) |
	       (uint64_t)__atomic_load_n(&db->user[word + 1], __ATOMIC_RELAXED)
		       << 32;
}

static inline void procs_set_word_pair(struct agile_doorbell *db, int word,
				       uint64_t v)
{
	__atomic_store_n(&db->user[word], (uint32_t)v, __ATOMIC_RELAXED);
	__atomic_store_n(&db->user[word + 1], (uint32_t)(v >> 32),
			 __ATOMIC_RELAXED);
}

/* Round @bytes up to whole pages into *@out; false on overflow. */
bool procs_page_round(uint64_t bytes, uint64_t *out);

/*
 * procs_rendezvous - member @self of @nr publishes count @value on its
 * doorbell (slot @self) and waits until every other member's slot is at
 * least @value, spinning @spin_ns before it sleeps, until @deadline
 * (CLOCK_MONOTONIC ns; 0: none).  0, or agile_dev_wait_spin's error
 * (-ETIMEDOUT, -EPIPE when the group ended or a member died).
 */
int procs_rendezvous(struct agile_dev *dev, uint32_t self, uint32_t nr,
		     uint32_t value, uint64_t spin_ns, uint64_t deadline);

/*
 * procs_rank_by_order - the rank of member @self among @nr whose orders
 * are @order[]: by order, ties by index, so that every member computes
 * the same ranks; @to_rank[q] gets member q's rank.
 */
uint32_t procs_rank_by_order(const uint32_t *order, uint32_t nr, uint32_t self,
			     uint32_t *to_rank);

/*
 * The CPUs the members may run on: each leaves its affinity mask in an
 * area the others can read (procs_publish_cpus, before a rendezvous that
 * orders it), and after it counts the union of all of them.  Neither the
 * online CPUs (a container's cpuset is smaller) nor one member's mask
 * (mpirun binds each rank to its cores) would tell whether the members
 * have a CPU each.
 */
void procs_publish_cpus(void *area);
long procs_count_cpus(void *const *areas, uint32_t nr);

#endif /* AGILE_TRANSPORT_PROCS_H */
