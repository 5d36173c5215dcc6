/* SPDX-License-Identifier: MIT */
/*
 * coll_impl.h - what every scope of the collectives shares: the handle's
 * head and its operations.  Private.
 *
 * agile/coll.h's calls check their arguments (coll.c) and then dispatch
 * on coll->ops, so a scope implements only the collectives proper: the
 * threads and processes scopes (shm.c) live in libagile, the machines
 * scope (coll/mpi.c) in libagile-mpi, which is why the helpers below are
 * inline.
 */
#ifndef AGILE_COLL_IMPL_H
#define AGILE_COLL_IMPL_H

#include <agile/coll.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A scope's collectives.  Called with checked arguments: a known type and
 * op (AGILE_COLL_USER only with a callback), root < size, non-NULL
 * buffers wherever count > 0 (recv only where the caller gets a result),
 * count > 0, and count x size x (members, for reduce_scatter and
 * allgather) bytes fitting in a size_t.  @destroy NULL: the handle is not
 * destroyed on its own (a team's member); @alloc/@free NULL: plain memory.
 */
struct coll_ops {
	int (*allreduce)(struct agile_coll *coll, const void *send, void *recv,
			 size_t count, enum agile_coll_type type,
			 enum agile_coll_op op);
	int (*reduce)(struct agile_coll *coll, const void *send, void *recv,
		      size_t count, enum agile_coll_type type,
		      enum agile_coll_op op, uint32_t root);
	int (*reduce_scatter)(struct agile_coll *coll, const void *send,
			      void *recv, size_t recv_count,
			      enum agile_coll_type type, enum agile_coll_op op);
	int (*allgather)(struct agile_coll *coll, const void *send, void *recv,
			 size_t count, enum agile_coll_type type);
	int (*barrier)(struct agile_coll *coll);
	int (*destroy)(struct agile_coll *coll);
	void *(*alloc)(struct agile_coll *coll, size_t bytes);
	/* true if @ptr was the scope's own (and is freed now) */
	bool (*free)(struct agile_coll *coll, void *ptr);
	/* the user op, for AGILE_COLL_USER's check: NULL if none */
	agile_coll_user_fn (*user_fn)(const struct agile_coll *coll);
	/*
	 * the error that left this member out of step with the others (a
	 * dead peer's -EPIPE, ...), which every later call returns, count 0
	 * included; 0 if none
	 */
	int (*error)(const struct agile_coll *coll);
};

/* The head of every scope's handle. */
struct agile_coll {
	const struct coll_ops *ops;
	int rank;
	int size;
};

static inline void coll_init_base(struct agile_coll *coll,
				  const struct coll_ops *ops, int rank,
				  int size)
{
	coll->ops = ops;
	coll->rank = rank;
	coll->size = size;
}

static inline bool coll_is(const struct agile_coll *coll,
			   const struct coll_ops *ops)
{
	return coll && coll->ops == ops;
}

/* How long an oversubscribed wait yields before it sleeps (coll.c's spin). */
#define COLL_YIELD_NS 1000000ULL

/*
 * agile__coll_spin_ns - the spin a communicator of @nr_members waits with:
 * @requested itself, or for AGILE_COLL_SPIN_AUTO $AGILE_SPIN_NS where it
 * is set, 0 with more members than @nr_cpus (when that is known: > 0),
 * else the dev layer's default.  *@yield_ns: COLL_YIELD_NS in the second
 * case (look, yield the CPU, look again, before the sleep), else 0.  In
 * coll.c.
 */
uint64_t agile__coll_spin_ns(uint64_t requested, uint32_t nr_members,
			     long nr_cpus, uint64_t *yield_ns);

/*
 * agile__coll_mpi_overlapped - a machines-scope handle's count of network
 * receives that completed while the member was reducing another step's
 * data (the progress calls between reduce chunks, coll/mpi.c); 0 for a
 * handle of another scope.  A white-box hook for the tests, in
 * libagile-mpi (which does not export it).
 */
uint64_t agile__coll_mpi_overlapped(const struct agile_coll *coll);

#endif /* AGILE_COLL_IMPL_H */
