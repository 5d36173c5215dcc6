/* SPDX-License-Identifier: MIT */
/*
 * mpi_impl.h - what coll's machines scope shares between mpi.c (the
 * hierarchy, the calls, the set-up) and mpi_net.c (plans over MPI
 * point-to-point).  libagile-mpi only.  Private.
 */
#ifndef AGILE_COLL_MPI_IMPL_H
#define AGILE_COLL_MPI_IMPL_H

#include <agile/coll.h>
#include <agile/coll_mpi.h>
#include <stdbool.h>
#include <stddef.h>

#include "coll/coll_impl.h"
#include "coll/plan.h"

/* How long a member waits for its node's other members to join. */
#define MPI_JOIN_TIMEOUT_NS (60ULL * 1000000000ULL)

/**
 * struct coll_mpi - a machines-scope handle
 * @base:       what agile/coll.h's calls dispatch on (coll_impl.h)
 * @comm:       a duplicate of the caller's communicator: our messages never
 *              meet the caller's
 * @node_comm:  the members on this member's node, in @comm's order
 * @cross_comm: the members with this member's node rank (its rank in
 *              @local), one per node, in node order
 * @local:      the node's process-scope communicator; NULL when alone
 * @local_rank: this member's rank in @local: its rank in @node_comm (the
 *              join's order), so a node reduces its members in MPI rank
 *              order, the same in every run; 0 when alone
 * @local_of:   the @local rank of every member of @comm
 * @node_of:    the node of every member of @comm
 * @opts:       the caller's options (segments, layout, user op)
 * @info:       the layout (agile_coll_mpi_info)
 * @max_bytes:  the hierarchical paths' piece (the opts' max_bytes): what
 *              one node collective and one network block take at once;
 *              never less than one element per node member (piece_elems)
 * @plan:       the last plan built (its arrays are reused)
 * @tmp, @work: staging (what a step receives to reduce, and a transfer
 *              of several runs packed into one message) and a WORK
 *              buffer, kept between calls
 * @overlapped: network receives that completed while the member was
 *              reducing another step's data (agile__coll_mpi_overlapped)
 * @block:      a hierarchical piece's result on its way through the network
 * @bounce:     the reducer's scratch (ops.h)
 */
struct coll_mpi {
	struct agile_coll base;
	MPI_Comm comm, node_comm, cross_comm;
	struct agile_coll *local;
	int rank, size, local_rank;
	int *local_of, *node_of;
	struct agile_coll_opts opts;
	struct agile_coll_mpi_info info;
	size_t max_bytes;
	struct agile_coll_plan plan;
	char *tmp, *work, *block;
	size_t tmp_bytes, work_bytes, block_bytes;
	void *bounce;
	uint64_t overlapped;
};

bool coll_mpi_commutes(const struct coll_mpi *c, enum agile_coll_op op);
/* A buffer of at least @bytes in *@buf (kept, grown as needed). */
int coll_mpi_cache_grow(char **buf, size_t *have, size_t bytes);

/* mpi_net.c: one network collective of @c's plan over @comm. */
int coll_net_allreduce(struct coll_mpi *c, MPI_Comm comm, const void *send,
		       void *recv, size_t count, enum agile_coll_type type,
		       enum agile_coll_op op);
int coll_net_reduce(struct coll_mpi *c, MPI_Comm comm, const void *send,
		    void *recv, size_t count, enum agile_coll_type type,
		    enum agile_coll_op op, int root);
int coll_net_reduce_scatter(struct coll_mpi *c, MPI_Comm comm, const void *send,
			    void *recv, size_t recv_count,
			    enum agile_coll_type type, enum agile_coll_op op);
int coll_net_allgather(struct coll_mpi *c, MPI_Comm comm, const void *send,
		       void *recv, size_t count, enum agile_coll_type type);

#endif /* AGILE_COLL_MPI_IMPL_H */
