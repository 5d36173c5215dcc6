// SPDX-License-Identifier: MIT
/*
 * coll.c - collective reduce (SPEC §3, layer 6; agile/coll.h): the options
 * and the public calls with their argument checks.  The two shared-memory
 * scopes are set up in threads.c and procs.c and share node.c's
 * collectives and heap; the schedule is plan.c's, its execution over
 * doorbells shm.c's, the kernels ops.c's; the machines scope is
 * libagile-mpi's (mpi.c), reached through the same calls.
 *
 * Threads scope (agile_coll_threads_create): one dev context of 2 x N
 * slots (two banks of sequence words, shm.c); each member's SEND is
 * the caller's send buffer and its WORK the caller's recv where it holds
 * the whole vector (allreduce, allgather, the reduce root), else a
 * scratch buffer the member keeps.  Peers read those buffers directly.
 *
 * Processes scope (agile_coll_procs_join): a dev group of the same shape,
 * and per member one segment: max_bytes of EXCHANGE area, then
 * 2 x max_bytes of HEAP for agile_coll_alloc.  Each member creates its
 * own, puts its id and size in the user words of its doorbell line (and
 * its affinity mask in its exchange area) and publishes 1; once every
 * member has (the rendezvous), each maps the others' and counts the CPUs
 * of all the masks (AGILE_COLL_SPIN_AUTO), then publishes 2 and waits for
 * all again.  In a collective, WORK is the caller's recv when it lies in
 * the segment, else the exchange area; a send buffer outside the segment
 * is read by its owner where it is, and only what peers read of it (the
 * plan's outgoing SEND runs: half the vector in halving round 0, a folded
 * member's whole vector) is copied into the exchange area.  The plans use
 * flat_gather: every member takes each block of the result straight from
 * its holder into its recv, so nothing is copied out afterwards (but for
 * allgather, which collects in WORK).  Buffers from agile_coll_alloc save
 * the copy in.
 *
 * Limits (documented in agile/coll.h): at most AGILE_COLL_MAX_MEMBERS
 * threads, AGILE_GROUP_MAX_MEMBERS processes; a process-scope collective
 * of more than max_bytes (allgather and reduce_scatter: the whole N x
 * count vector) runs in pieces of max_bytes (in_pieces); a count whose
 * bytes overflow a size_t is -EOVERFLOW.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll/shm.h"
#include "sys.h"

#define MAX_BYTES_DEFAULT (64ULL << 20)
#define ALLOC_ALIGN 64

/* ---- options ---- */

int agile_coll_opts_init(struct agile_coll_opts *opts)
{
	if (!opts)
		return -EINVAL;
	memset(opts, 0, sizeof(*opts));
	opts->segments = AGILE_COLL_SEGMENTS_DEFAULT;
	opts->backend = AGILE_BACKEND_AUTO;
	opts->mode = 0600;
	opts->spin_ns = AGILE_COLL_SPIN_AUTO;
	opts->max_bytes = MAX_BYTES_DEFAULT;
	return 0;
}

uint64_t agile__coll_spin_ns(uint64_t requested, uint32_t nr_members,
			     long nr_cpus, uint64_t *yield_ns)
{
	const char *env = getenv("AGILE_SPIN_NS");
	struct agile_dev_opts dev;

	*yield_ns = 0;
	if (requested != AGILE_COLL_SPIN_AUTO)
		return requested;
	if ((!env || !*env) && nr_cpus > 0 && nr_members > (uint64_t)nr_cpus) {
		*yield_ns = COLL_YIELD_NS;
		return 0;
	}
	agile_dev_opts_init(&dev); /* $AGILE_SPIN_NS or the default */
	return dev.spin_ns;
}

/* The CPUs this process's threads may run on; 0: unknown. */
long coll_affinity_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	return CPU_COUNT(&set);
}

static int check_opts(const struct agile_coll_opts *o)
{
	for (size_t i = 0; i < sizeof(o->reserved) / sizeof(o->reserved[0]);
	     i++)
		if (o->reserved[i])
			return -EINVAL;
	if (!o->segments || o->segments > AGILE_COLL_SEGMENTS_MAX ||
	    o->interleaved > 1 || o->backend > AGILE_BACKEND_USER ||
	    (o->mode & ~(uint32_t)AGILE_GROUP_MODE_MASK) ||
	    o->user_commutative > 1)
		return -EINVAL;
	return 0;
}

int coll_take_opts(const struct agile_coll_opts *opts,
		   struct agile_coll_opts *out)
{
	if (opts)
		*out = *opts;
	else
		agile_coll_opts_init(out);
	if (!out->max_bytes)
		out->max_bytes = MAX_BYTES_DEFAULT;
	return check_opts(out);
}

/* ---- the public calls ---- */

int agile_coll_destroy(struct agile_coll *coll)
{
	if (!coll || !coll->ops || !coll->ops->destroy)
		return -EINVAL;
	return coll->ops->destroy(coll);
}

int agile_coll_rank(const struct agile_coll *coll)
{
	return coll ? coll->rank : -EINVAL;
}

int agile_coll_size(const struct agile_coll *coll)
{
	return coll ? coll->size : -EINVAL;
}

void *agile_coll_alloc(struct agile_coll *coll, size_t bytes)
{
	size_t size = (bytes + ALLOC_ALIGN - 1) & ~(size_t)(ALLOC_ALIGN - 1);

	if (!coll || !bytes || size < bytes)
		return NULL;
	if (coll->ops && coll->ops->alloc)
		return coll->ops->alloc(coll, bytes);
	return aligned_alloc(ALLOC_ALIGN, size);
}

void agile_coll_free(struct agile_coll *coll, void *ptr)
{
	if (!ptr)
		return;
	if (coll && coll->ops && coll->ops->free && coll->ops->free(coll, ptr))
		return;
	free(ptr);
}

/* Type, op and the user op's callback. */
static int check_type_op(const struct agile_coll *coll,
			 enum agile_coll_type type, enum agile_coll_op op)
{
	if (!agile_coll_type_size(type) ||
	    (unsigned int)op >= AGILE_COLL_NR_OPS)
		return -EINVAL;
	if (op == AGILE_COLL_USER && coll->ops->user_fn &&
	    !coll->ops->user_fn(coll))
		return -EINVAL;
	return 0;
}

/* Bytes of @count x @members elements of @type; -EOVERFLOW. */
static int vector_bytes(enum agile_coll_type type, size_t count, size_t members,
			size_t *bytes)
{
	size_t n;

	if (__builtin_mul_overflow(count, members, &n) ||
	    __builtin_mul_overflow(n, agile_coll_type_size(type), bytes))
		return -EOVERFLOW;
	return 0;
}

static bool overlap(const void *a, size_t na, const void *b, size_t nb)
{
	const char *x = a, *y = b;

	return x < y + nb && y < x + na;
}

static bool valid(const struct agile_coll *coll)
{
	return coll && coll->ops;
}

/*
 * A call with nothing to move still reports a communicator that is out of
 * step: coll.h promises every call after an error returns that error.
 */
static int nothing_to_do(const struct agile_coll *coll)
{
	return coll->ops->error ? coll->ops->error(coll) : 0;
}

/*
 * What every collective checks first: the handle, the type and op, and
 * that @count x @members elements fit a size_t (their bytes in *@bytes).
 */
static int check_call(const struct agile_coll *coll, enum agile_coll_type type,
		      enum agile_coll_op op, size_t count, size_t members,
		      size_t *bytes)
{
	int err;

	if (!valid(coll))
		return -EINVAL;
	err = check_type_op(coll, type, op);
	if (err)
		return err;
	return vector_bytes(type, count, members, bytes);
}

int agile_coll_allreduce(struct agile_coll *coll, const void *send, void *recv,
			 size_t count, enum agile_coll_type type,
			 enum agile_coll_op op)
{
	size_t bytes;
	int err = check_call(coll, type, op, count, 1, &bytes);

	if (err)
		return err;
	if (!count)
		return nothing_to_do(coll);
	if (!send || !recv ||
	    (send != recv && overlap(send, bytes, recv, bytes)))
		return -EINVAL;
	return coll->ops->allreduce(coll, send, recv, count, type, op);
}

int agile_coll_reduce(struct agile_coll *coll, const void *send, void *recv,
		      size_t count, enum agile_coll_type type,
		      enum agile_coll_op op, uint32_t root)
{
	size_t bytes;
	int err = check_call(coll, type, op, count, 1, &bytes);

	if (!err && root >= (uint32_t)coll->size)
		err = -EINVAL;
	if (err)
		return err;
	if (!count)
		return nothing_to_do(coll);
	if (!send || (root == (uint32_t)coll->rank && !recv))
		return -EINVAL;
	if (recv && send != recv && overlap(send, bytes, recv, bytes))
		return -EINVAL;
	return coll->ops->reduce(coll, send, recv, count, type, op, root);
}

int agile_coll_reduce_scatter(struct agile_coll *coll, const void *send,
			      void *recv, size_t recv_count,
			      enum agile_coll_type type, enum agile_coll_op op)
{
	size_t bytes;
	int err = check_call(coll, type, op, recv_count,
			     valid(coll) ? (size_t)coll->size : 0, &bytes);

	if (err)
		return err;
	if (!recv_count)
		return nothing_to_do(coll);
	if (!send || !recv ||
	    overlap(send, bytes, recv, recv_count * agile_coll_type_size(type)))
		return -EINVAL;
	return coll->ops->reduce_scatter(coll, send, recv, recv_count, type,
					 op);
}

int agile_coll_allgather(struct agile_coll *coll, const void *send, void *recv,
			 size_t count, enum agile_coll_type type)
{
	size_t bytes, one;
	int err = check_call(coll, type, AGILE_COLL_SUM, count,
			     valid(coll) ? (size_t)coll->size : 0, &bytes);

	if (err)
		return err;
	if (!count)
		return nothing_to_do(coll);
	one = count * agile_coll_type_size(type);
	/* In place: @send is the member's own block of @recv. */
	if (!send || !recv ||
	    (send != (char *)recv + (size_t)coll->rank * one &&
	     overlap(send, one, recv, bytes)))
		return -EINVAL;
	return coll->ops->allgather(coll, send, recv, count, type);
}

int agile_coll_barrier(struct agile_coll *coll)
{
	if (!valid(coll))
		return -EINVAL;
	return coll->ops->barrier(coll);
}
