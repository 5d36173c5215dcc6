/* SPDX-License-Identifier: MIT */
/*
 * mpi.h - MPI point-to-point and agreement helpers that know nothing of
 * collectives: request lists, errors every rank agrees on, values every
 * rank must share, and the split of a communicator into nodes.  Used by
 * coll's machines scope (coll/mpi.c) and meant for segmap's; built into
 * libagile-mpi only (mpicc), never into libagile.  Each call is made by
 * one thread per rank, as MPI's collectives are.
 */
#ifndef AGILE_TRANSPORT_MPI_H
#define AGILE_TRANSPORT_MPI_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

/* Are all @nr requests at @r complete (MPI_REQUEST_NULL)? */
static inline bool mpi_reqs_null(const MPI_Request *r, uint32_t nr)
{
	for (uint32_t i = 0; i < nr; i++)
		if (r[i] != MPI_REQUEST_NULL)
			return false;
	return true;
}

/* Complete @nr requests at @r; -EPROTO if MPI fails. */
int mpi_reqs_wait(MPI_Request *r, uint32_t nr);

/*
 * mpi_any_error - the most negative of every rank's @err (collective on
 * @comm): all ranks return the same; @err (or -EPROTO) if MPI fails.
 */
int mpi_any_error(MPI_Comm comm, int err);

/*
 * mpi_all_equal - whether every rank of @comm has the same @nr values @v
 * (collective): 0, -EINVAL where any rank's differ, -EPROTO when MPI
 * fails.  @nr is at most MPI_EQUAL_MAX.
 */
#define MPI_EQUAL_MAX 16
int mpi_all_equal(MPI_Comm comm, const int64_t *v, uint32_t nr);

/**
 * struct mpi_nodes - @comm cut into nodes (mpi_split_nodes)
 * @node_comm: the ranks on this rank's node, in @comm's order
 * @node_rank: this rank's rank in @node_comm
 * @node_size: ranks on this node
 * @nr_nodes:  nodes in all
 * @node:      this rank's node number
 * @node_of:   every rank's node number (malloc'ed, @comm's size entries)
 *
 * Nodes are numbered by their lowest rank, so every rank numbers them
 * alike.
 */
struct mpi_nodes {
	MPI_Comm node_comm;
	int node_rank, node_size, nr_nodes, node;
	int *node_of;
};

/*
 * mpi_split_nodes - cut @comm (this rank @rank of @size) into the nodes
 * that share memory (MPI_COMM_TYPE_SHARED), or, when any rank has
 * AGILE_COLL_NODE_ID set (a test hook: agile/coll_mpi.h), into the nodes
 * those ids name, a rank without one a node of its own.  Collective.  0,
 * -ENOMEM or -EPROTO; on error @out may hold a communicator and an array
 * the caller frees as on success (MPI_Comm_free, free).
 */
int mpi_split_nodes(MPI_Comm comm, int rank, int size, struct mpi_nodes *out);

#endif /* AGILE_TRANSPORT_MPI_H */
