/* SPDX-License-Identifier: MIT */
/*
 * agile/coll_mpi.h - collectives among machines through MPI (SPEC §3,
 * layer 6, the machines scope; seed 001 with the network as transport).
 *
 * In its own library, libagile-mpi (link -lagile-mpi -lagile, or
 * `pkg-config agile-mpi`), so that libagile never links libmpi.  The
 * handle it creates is a struct agile_coll that the calls of agile/coll.h
 * take: agile_coll_allreduce, _reduce, _reduce_scatter, _allgather,
 * _barrier, _rank, _size and _destroy.
 *
 * Hierarchical, as MPI libraries' own collectives are: the members of
 * @comm that share a node (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED)
 * form a process-scope communicator (agile_coll_procs_join, with a key
 * the node's first member draws and broadcasts).  An allreduce is then a
 * reduce-scatter inside each node, an allreduce of each member's block
 * among the members with the same rank on the other nodes (MPI
 * point-to-point: seed 001's segmented recursive halving, one segment in
 * flight while the previous one is reduced), and an allgather inside the
 * node; a reduce is a reduce inside each node to the member with the
 * root's node rank, then a reduce among those.  On one node both are the
 * process scope's alone; with one process per node, the network's alone.
 * Where the nodes hold different numbers of members, or a user op is not
 * commutative (the node grouping would reorder the members), and for
 * reduce-scatter and allgather, the same algorithm runs over all of @comm
 * directly.
 *
 * Test hook: $AGILE_COLL_NODE_ID (a number, 0 to 2^30 - 1), read by
 * agile_coll_mpi_create, puts the calling process on the "node" of that
 * number instead of the one MPI_COMM_TYPE_SHARED finds, so a test can fake
 * several nodes on one machine; once any member has it, a member without
 * it is a node of its own.  Members with the same number must really share
 * a machine (their node communicator uses shared memory).
 *
 * Thread safety: as agile/coll.h; MPI must be initialised (any thread
 * level: the handle makes MPI calls only from the calling thread).
 */
#ifndef AGILE_COLL_MPI_H
#define AGILE_COLL_MPI_H

#include <mpi.h>

#include <agile/coll.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * agile_coll_mpi_create - a communicator over the processes of @comm
 * @comm: every member of it calls this, collectively; duplicated, so the
 *        caller may free @comm before the handle
 * @opts: NULL for the defaults; @segments and @interleaved shape the
 *        inter-node exchanges, the rest goes to each node's process-scope
 *        communicator (@max_bytes: larger vectors pass through it in
 *        pieces of that size, or of one element per node member where
 *        @max_bytes is smaller than that; @order is not used: the node's
 *        ranks follow @comm's, so results do not depend on join order)
 * @out:  receives the handle; agile_coll_destroy (collective) frees it
 *
 * Ranks are @comm's.  Every member passes the same @opts.  Destroy the
 * handle before MPI_Finalize.  As with MPI's own collectives, a member
 * that fails in a collective (out of memory) returns its error while the
 * others may wait for it: treat such an error as fatal to the
 * communicator.
 *
 * Thread safety: collective over @comm; on each process, MPI calls come
 * from the calling thread only, as agile/coll.h's handles.
 *
 * Return: 0, -EINVAL (bad @opts or @comm, members whose @segments, @interleaved,
 * @max_bytes or @user_commutative differ, MPI not initialised, more than 1024
 * members), -ENOMEM, -EPROTO (an MPI call failed), or an error of
 * agile_coll_procs_join; once the members have communicators, they agree
 * on the result (the most negative error).
 */
int agile_coll_mpi_create(MPI_Comm comm, const struct agile_coll_opts *opts,
			  struct agile_coll **out);

/**
 * struct agile_coll_mpi_info - how a machines-scope communicator is laid out
 * @nr_nodes:     nodes (groups of members that share memory)
 * @node:         the calling member's node, 0 .. @nr_nodes - 1, numbered
 *                by their lowest rank
 * @node_rank:    the caller's rank inside its node
 * @node_size:    members on the caller's node
 * @hierarchical: 1 if there are several nodes, all with the same number
 *                of members, more than one: allreduce and reduce go node,
 *                network, node (for an op that commutes)
 * @reserved:     zero
 */
struct agile_coll_mpi_info {
	int nr_nodes;
	int node;
	int node_rank;
	int node_size;
	int hierarchical;
	int reserved[3];
};

/**
 * agile_coll_mpi_info - the layout of an agile_coll_mpi_create handle
 * @coll: the handle
 * @info: receives the layout
 *
 * Thread safety: thread safe (reads what the handle was made with).
 *
 * Return: 0, or -EINVAL (NULL pointers, or a handle of another scope).
 */
int agile_coll_mpi_info(const struct agile_coll *coll,
			struct agile_coll_mpi_info *info);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_COLL_MPI_H */
