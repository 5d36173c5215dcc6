// SPDX-License-Identifier: MIT
/*
 * mpi.c - coll's machines scope (agile/coll_mpi.h): the plans of
 * plan.h over MPI point-to-point, hierarchical over nodes.  This file
 * holds the hierarchy, the calls and the set-up; mpi_net.c the network
 * transport.
 *
 * Two parts:
 *
 *  - the network transport (net_*, mpi_net.c): executes a member's plan.  Each step's
 *    transfer into the member is an MPI_Irecv from the step's peer (one
 *    per run where it is split, below), its transfer out an MPI_Isend to
 *    the step's send_peer (the plan pairs
 *    them: for every ordered pair of members, A's sends to B and B's
 *    receives from A come in the same order with the same runs).  Steps
 *    are posted ahead of the one being completed, so while segment j of a
 *    halving round is reduced, segment j+1 (and the next round's first
 *    segments) are on the wire; the reduce goes in chunks of 64 KiB with
 *    an MPI_Testsome over the posted transfers between them, so they
 *    really move meanwhile (an MPI library without a progress thread
 *    moves data only inside its calls); the interleaved layout's deferred
 *    tail falls out of the plan's order.  A transfer of several runs
 *    (the interleaved layout) never uses an MPI datatype: large runs go
 *    one message each, straight from and to their places; small ones
 *    one message packed into (unpacked from) a staging area.  A step is
 *    posted only once the steps before it that write what it sends are
 *    complete, and a region is written only once the sends that read it
 *    (a packed send: its copy) are; that is all the ordering MPI needs
 *    (the plan's waits and published values are for the shared-memory
 *    transport and are ignored here).
 *
 *  - the hierarchy: the members of a node (MPI_COMM_TYPE_SHARED, or the
 *    test hook $AGILE_COLL_NODE_ID) form a process-scope communicator
 *    (agile_coll_procs_join: shared memory, zero-copy reads), so an
 *    allreduce is node reduce-scatter, network allreduce of one block per
 *    member among the members with the same node rank, node allgather; a
 *    reduce is a node reduce to the member with the root's node rank,
 *    then a network reduce among those.
 *
 * Data travels as bytes and is reduced here, so user ops and every type
 * take one path.  Every MPI call returns (the handle's communicators have
 * MPI_ERRORS_RETURN) and a failure is -EPROTO.
 */
#define _GNU_SOURCE
#include <agile/coll.h>
#include <agile/coll_mpi.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "coll/mpi_impl.h"
#include "coll/ops.h"
#include "transport/mpi.h"

bool coll_mpi_commutes(const struct coll_mpi *c, enum agile_coll_op op)
{
	return op != AGILE_COLL_USER || c->opts.user_commutative;
}

/* A buffer of at least @bytes in *@buf (kept, grown as needed). */
int coll_mpi_cache_grow(char **buf, size_t *have, size_t bytes)
{
	char *p;

	if (bytes <= *have)
		return 0;
	p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
	if (!p)
		return -ENOMEM;
	free(*buf);
	*buf = p;
	*have = bytes;
	return 0;
}

/* ---- the hierarchy ---- */

/*
 * Is the hierarchical path right for @op?  It needs nodes of one size
 * (each member's block then has one counterpart on every node), and it
 * reduces a node's members first, in their node rank order: only for an op
 * that commutes.
 */
static bool hierarchical(const struct coll_mpi *c, enum agile_coll_op op)
{
	return c->info.hierarchical && coll_mpi_commutes(c, op);
}

/* One node only: the process scope does it all (if the op commutes). */
static bool node_only(const struct coll_mpi *c, enum agile_coll_op op)
{
	return c->info.nr_nodes == 1 && c->local && coll_mpi_commutes(c, op);
}

static int any_error(struct coll_mpi *c, int err)
{
	return mpi_any_error(c->comm, err);
}

/*
 * Elements of @esize bytes in one piece of the hierarchical paths: as many
 * as max_bytes holds, in whole multiples of @multiple, but at least
 * @multiple (a max_bytes below that would make the piece empty and the
 * loop never end).
 */
static size_t piece_elems(const struct coll_mpi *c, size_t esize,
			  size_t multiple)
{
	size_t n = c->max_bytes / esize / multiple * multiple;

	return n ? n : multiple;
}

/*
 * Allreduce, node -> network -> node, in pieces the node's exchange
 * buffers take: node reduce-scatter of the piece (each member's block
 * into c->block), network allreduce of the block among the members with
 * the same node rank, node allgather of the blocks into @recv.  The last
 * count % node_size elements take the network path directly.
 */
static int hier_allreduce(struct coll_mpi *c, const void *send, void *recv,
			  size_t count, enum agile_coll_type type,
			  enum agile_coll_op op)
{
	size_t esize = agile_coll_type_size(type),
	       p = (size_t)c->info.node_size;
	size_t body = count / p * p, done = 0;
	size_t piece_max = piece_elems(c, esize, p);
	int err = 0;

	while (done < body && !err) {
		size_t piece = body - done < piece_max ? body - done :
							 piece_max;
		size_t q = piece / p;

		err = coll_mpi_cache_grow(&c->block, &c->block_bytes,
					  q * esize);
		if (!err)
			err = agile_coll_reduce_scatter(
				c->local, (const char *)send + done * esize,
				c->block, q, type, op);
		if (!err && c->info.nr_nodes > 1)
			err = coll_net_allreduce(c, c->cross_comm, c->block,
						 c->block, q, type, op);
		if (!err)
			err = agile_coll_allgather(c->local, c->block,
						   (char *)recv + done * esize,
						   q, type);
		done += piece;
	}
	if (!err && count > body)
		err = coll_net_allreduce(c, c->comm,
					 (const char *)send + body * esize,
					 (char *)recv + body * esize,
					 count - body, type, op);
	return err;
}

/*
 * Reduce: node reduce to the member with the root's node rank, then a
 * network reduce among those members to the root, in pieces.
 */
static int hier_reduce(struct coll_mpi *c, const void *send, void *recv,
		       size_t count, enum agile_coll_type type,
		       enum agile_coll_op op, int root)
{
	size_t esize = agile_coll_type_size(type), done = 0;
	size_t piece_max = piece_elems(c, esize, 1);
	int node_root = c->local_of[root], err = 0;
	bool carrier = c->local_rank == node_root;

	while (done < count && !err) {
		size_t piece = count - done < piece_max ? count - done :
							  piece_max;
		char *dst = NULL;

		if (c->rank == root) {
			dst = (char *)recv + done * esize;
		} else if (carrier) {
			err = coll_mpi_cache_grow(&c->block, &c->block_bytes,
						  piece * esize);
			dst = c->block;
		}
		if (!err)
			err = agile_coll_reduce(
				c->local, (const char *)send + done * esize,
				dst, piece, type, op, (uint32_t)node_root);
		/* The root's node is its rank in cross_comm (node order). */
		if (!err && carrier && c->info.nr_nodes > 1)
			err = coll_net_reduce(c, c->cross_comm, dst, dst, piece,
					      type, op, c->node_of[root]);
		done += piece;
	}
	return err;
}

/*
 * One node: the process scope's allreduce (@root < 0) or reduce; a vector
 * over max_bytes goes in pieces there (node.c, in_pieces).
 */
static int node_collective(struct coll_mpi *c, const void *send, void *recv,
			   size_t count, enum agile_coll_type type,
			   enum agile_coll_op op, int root)
{
	if (root < 0)
		return agile_coll_allreduce(c->local, send, recv, count, type,
					    op);
	return agile_coll_reduce(c->local, send, recv, count, type, op,
				 (uint32_t)c->local_of[root]);
}

/* ---- the operations agile/coll.h dispatches to ---- */

static struct coll_mpi *to_mpi(struct agile_coll *coll)
{
	return (struct coll_mpi *)coll;
}

static int mpi_allreduce(struct agile_coll *coll, const void *send, void *recv,
			 size_t count, enum agile_coll_type type,
			 enum agile_coll_op op)
{
	struct coll_mpi *c = to_mpi(coll);

	if (node_only(c, op))
		return node_collective(c, send, recv, count, type, op, -1);
	if (hierarchical(c, op))
		return hier_allreduce(c, send, recv, count, type, op);
	return coll_net_allreduce(c, c->comm, send, recv, count, type, op);
}

static int mpi_reduce(struct agile_coll *coll, const void *send, void *recv,
		      size_t count, enum agile_coll_type type,
		      enum agile_coll_op op, uint32_t root)
{
	struct coll_mpi *c = to_mpi(coll);

	if (node_only(c, op))
		return node_collective(c, send, recv, count, type, op,
				       (int)root);
	if (hierarchical(c, op))
		return hier_reduce(c, send, recv, count, type, op, (int)root);
	return coll_net_reduce(c, c->comm, send, recv, count, type, op,
			       (int)root);
}

static int mpi_reduce_scatter(struct agile_coll *coll, const void *send,
			      void *recv, size_t recv_count,
			      enum agile_coll_type type, enum agile_coll_op op)
{
	struct coll_mpi *c = to_mpi(coll);

	return coll_net_reduce_scatter(c, c->comm, send, recv, recv_count, type,
				       op);
}

static int mpi_allgather(struct agile_coll *coll, const void *send, void *recv,
			 size_t count, enum agile_coll_type type)
{
	struct coll_mpi *c = to_mpi(coll);

	return coll_net_allgather(c, c->comm, send, recv, count, type);
}

static int mpi_barrier(struct agile_coll *coll)
{
	return MPI_Barrier(to_mpi(coll)->comm) ? -EPROTO : 0;
}

static void mpi_free(struct coll_mpi *c)
{
	if (c->local)
		agile_coll_destroy(c->local);
	if (c->cross_comm != MPI_COMM_NULL)
		MPI_Comm_free(&c->cross_comm);
	if (c->node_comm != MPI_COMM_NULL)
		MPI_Comm_free(&c->node_comm);
	if (c->comm != MPI_COMM_NULL)
		MPI_Comm_free(&c->comm);
	agile_coll_plan_release(&c->plan);
	free(c->local_of);
	free(c->node_of);
	free(c->tmp);
	free(c->work);
	free(c->block);
	free(c->bounce);
	free(c);
}

/* As the process scope's: a barrier first; freed even if it fails. */
static int mpi_destroy(struct agile_coll *coll)
{
	struct coll_mpi *c = to_mpi(coll);
	int err = MPI_Barrier(c->comm) ? -EPROTO : 0;

	if (c->local) {
		int local_err = agile_coll_destroy(c->local);

		err = err ? err : local_err;
		c->local = NULL;
	}
	mpi_free(c);
	return err;
}

static agile_coll_user_fn mpi_user_fn(const struct agile_coll *coll)
{
	return ((const struct coll_mpi *)coll)->opts.user_fn;
}

/* No alloc/free: the network path has no buffers peers read directly. */
/* The node collective's sticky error (a dead node peer's -EPIPE, ...). */
static int mpi_error(const struct agile_coll *coll)
{
	const struct agile_coll *local = ((const struct coll_mpi *)coll)->local;

	return local && local->ops->error ? local->ops->error(local) : 0;
}

static const struct coll_ops mpi_ops = {
	.allreduce = mpi_allreduce,
	.reduce = mpi_reduce,
	.reduce_scatter = mpi_reduce_scatter,
	.allgather = mpi_allgather,
	.barrier = mpi_barrier,
	.destroy = mpi_destroy,
	.user_fn = mpi_user_fn,
	.error = mpi_error,
};

/* ---- set-up ---- */

/* Split @c->comm into nodes (transport/mpi.h). */
static int split_nodes(struct coll_mpi *c)
{
	struct mpi_nodes nodes;
	int err = mpi_split_nodes(c->comm, c->rank, c->size, &nodes);

	c->node_comm = nodes.node_comm;
	c->node_of = nodes.node_of;
	if (err)
		return err;
	c->info.node_rank = nodes.node_rank;
	c->info.node_size = nodes.node_size;
	c->info.nr_nodes = nodes.nr_nodes;
	c->info.node = nodes.node;
	return 0;
}

/*
 * The node's process-scope communicator: a key from the node's first
 * member; ranked by node rank (the opts' order), not by who joins first,
 * so that a float reduction sums in the same order in every run.
 */
static int join_node(struct coll_mpi *c)
{
	struct agile_coll_opts lopts = c->opts;
	uint64_t key = 0;
	int err = 0;

	if (c->info.node_size == 1)
		return 0;
	if (c->info.node_rank == 0) {
		while (!key)
			if (getrandom(&key, sizeof(key), 0) != sizeof(key))
				key = (uint64_t)getpid() << 32 ^
				      (uint64_t)time(NULL) ^ (uint64_t)c->rank;
	}
	if (MPI_Bcast(&key, 1, MPI_UINT64_T, 0, c->node_comm))
		return -EPROTO;
	lopts.order = (uint32_t)c->info.node_rank;
	err = agile_coll_procs_join(key, (uint32_t)c->info.node_size, &lopts,
				    MPI_JOIN_TIMEOUT_NS, &c->local);
	if (!err)
		c->local_rank = agile_coll_rank(c->local);
	return err;
}

/*
 * Every member must run the same schedule: segments, layout, max_bytes
 * and the user op's commutativity, compared across @c->comm (collective).
 * 0, -EINVAL where any member's differ, -EPROTO when MPI fails.
 */
static int same_schedule(struct coll_mpi *c)
{
	const int64_t v[] = { c->opts.segments, c->opts.interleaved,
			      (int64_t)c->max_bytes, c->opts.user_commutative };

	return mpi_all_equal(c->comm, v, sizeof(v) / sizeof(v[0]));
}

static int check_opts(const struct agile_coll_opts *o)
{
	if (o->segments < 1 || o->segments > AGILE_COLL_SEGMENTS_MAX ||
	    o->interleaved > 1)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(o->reserved) / sizeof(o->reserved[0]);
	     i++)
		if (o->reserved[i])
			return -EINVAL;
	return 0;
}

int agile_coll_mpi_create(MPI_Comm comm, const struct agile_coll_opts *opts,
			  struct agile_coll **out)
{
	struct coll_mpi *c;
	int sizes[2], err, flag = 0;

	if (!out || comm == MPI_COMM_NULL)
		return -EINVAL;
	if (MPI_Initialized(&flag) || !flag)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->comm = c->node_comm = c->cross_comm = MPI_COMM_NULL;
	if (opts)
		c->opts = *opts;
	else
		agile_coll_opts_init(&c->opts);
	c->max_bytes = c->opts.max_bytes ? c->opts.max_bytes : 64ULL << 20;
	err = check_opts(&c->opts);
	if (err) {
		free(c);
		return err;
	}
	if (MPI_Comm_dup(comm, &c->comm)) {
		free(c);
		return -EINVAL;
	}
	MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
	MPI_Comm_rank(c->comm, &c->rank);
	MPI_Comm_size(c->comm, &c->size);
	err = c->size > AGILE_COLL_PLAN_MAX_MEMBERS ? -EINVAL : 0;
	if (!err)
		err = same_schedule(c);
	if (!err)
		err = split_nodes(c);
	err = any_error(c, err);
	if (!err)
		err = any_error(c, join_node(c));
	if (err)
		goto fail;

	/* Hierarchical: several nodes, all of one size above one. */
	sizes[0] = -c->info.node_size;
	sizes[1] = c->info.node_size;
	if (MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MAX, c->comm)) {
		err = -EPROTO;
		goto fail;
	}
	c->info.hierarchical = c->info.nr_nodes > 1 && -sizes[0] == sizes[1] &&
			       sizes[1] > 1;
	c->local_of = malloc((size_t)c->size * sizeof(*c->local_of));
	c->bounce = malloc(COLL_BOUNCE_BYTES);
	if (!c->local_of || !c->bounce)
		err = -ENOMEM;
	else if (MPI_Allgather(&c->local_rank, 1, MPI_INT, c->local_of, 1,
			       MPI_INT, c->comm) ||
		 MPI_Comm_split(c->comm, c->local_rank, c->info.node,
				&c->cross_comm))
		err = -EPROTO;
	if (!err)
		MPI_Comm_set_errhandler(c->cross_comm, MPI_ERRORS_RETURN);
	err = any_error(c, err);
	if (err)
		goto fail;
	coll_init_base(&c->base, &mpi_ops, c->rank, c->size);
	*out = &c->base;
	return 0;
fail:
	mpi_free(c);
	return err;
}

uint64_t agile__coll_mpi_overlapped(const struct agile_coll *coll)
{
	return coll_is(coll, &mpi_ops) ?
		       ((const struct coll_mpi *)coll)->overlapped :
		       0;
}

int agile_coll_mpi_info(const struct agile_coll *coll,
			struct agile_coll_mpi_info *info)
{
	if (!coll || !info || !coll_is(coll, &mpi_ops))
		return -EINVAL;
	*info = ((const struct coll_mpi *)coll)->info;
	return 0;
}
