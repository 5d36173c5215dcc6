// SPDX-License-Identifier: MIT
/*
 * mpi.c - MPI helpers below coll and segmap (mpi.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "env.h"
#include "transport/mpi.h"

int mpi_reqs_wait(MPI_Request *r, uint32_t nr)
{
	if (mpi_reqs_null(r, nr))
		return 0;
	return MPI_Waitall((int)nr, r, MPI_STATUSES_IGNORE) ? -EPROTO : 0;
}

int mpi_any_error(MPI_Comm comm, int err)
{
	int worst = err;

	/* The most negative errno wins; all members return the same. */
	if (MPI_Allreduce(&err, &worst, 1, MPI_INT, MPI_MIN, comm))
		return err ? err : -EPROTO;
	return worst;
}

int mpi_all_equal(MPI_Comm comm, const int64_t *v, uint32_t nr)
{
	int64_t m[2 * MPI_EQUAL_MAX];

	if (nr > MPI_EQUAL_MAX)
		return -EINVAL;
	/* One MAX of v and -v: the max and the min of every value. */
	for (uint32_t i = 0; i < nr; i++) {
		m[2 * i] = v[i];
		m[2 * i + 1] = -v[i];
	}
	if (MPI_Allreduce(MPI_IN_PLACE, m, (int)(2 * nr), MPI_INT64_T, MPI_MAX,
			  comm))
		return -EPROTO;
	for (uint32_t i = 0; i < nr; i++)
		if (m[2 * i] != -m[2 * i + 1])
			return -EINVAL;
	return 0;
}

/* The test hook's node number, or -1 when not set (agile/coll_mpi.h). */
static int node_override(void)
{
	const char *id = getenv("AGILE_COLL_NODE_ID");
	char *end;
	long v;

	if (!id || !*id)
		return -1;
	v = strtol(id, &end, 10);
	if (*end || v < 0 || v >= INT_MAX >> 1) {
		agile__env_invalid("AGILE_COLL_NODE_ID", id,
				   "a node number from 0; ignored (nodes "
				   "by host name)");
		return -1;
	}
	return (int)v;
}

int mpi_split_nodes(MPI_Comm comm, int rank, int size, struct mpi_nodes *out)
{
	int id = node_override(), any, lowest, *lowest_of = NULL, err = 0;

	out->node_comm = MPI_COMM_NULL;
	out->node_of = NULL;
	/* The hook in any member's environment splits them all (MPI_Comm_split
	 * and _split_type are different collectives); a member without it is
	 * a node of its own. */
	if (MPI_Allreduce(&id, &any, 1, MPI_INT, MPI_MAX, comm))
		return -EPROTO;
	if (any >= 0) {
		if (id < 0)
			id = (INT_MAX >> 1) + rank;
		if (MPI_Comm_split(comm, id, rank, &out->node_comm))
			return -EPROTO;
	} else if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank,
				       MPI_INFO_NULL, &out->node_comm)) {
		return -EPROTO;
	}
	MPI_Comm_set_errhandler(out->node_comm, MPI_ERRORS_RETURN);
	if (MPI_Comm_rank(out->node_comm, &out->node_rank) ||
	    MPI_Comm_size(out->node_comm, &out->node_size))
		return -EPROTO;
	/* A node's number: how many nodes have a lower lowest rank. */
	lowest = rank;
	lowest_of = malloc((size_t)size * sizeof(*lowest_of));
	out->node_of = malloc((size_t)size * sizeof(*out->node_of));
	if (!lowest_of || !out->node_of) {
		err = -ENOMEM;
		goto out;
	}
	if (MPI_Bcast(&lowest, 1, MPI_INT, 0, out->node_comm) ||
	    MPI_Allgather(&lowest, 1, MPI_INT, lowest_of, 1, MPI_INT, comm)) {
		err = -EPROTO;
		goto out;
	}
	out->nr_nodes = 0;
	for (int r = 0; r < size; r++) {
		int node = 0;

		out->nr_nodes += lowest_of[r] == r;
		for (int k = 0; k < lowest_of[r]; k++)
			node += lowest_of[k] == k;
		out->node_of[r] = node;
	}
	out->node = out->node_of[rank];
out:
	free(lowest_of);
	return err;
}
