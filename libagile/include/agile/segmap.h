/* SPDX-License-Identifier: MIT */
/*
 * agile/segmap.h - PLACEHOLDER until the segmap core lands: only what the
 * cross-process scopes (libagile/src/segmap/scope.h, scope_procs.c,
 * scope_mpi.c) need.  The core's header, with the fields, accessors and
 * forall, replaces this file whole at the merge.
 */
#ifndef AGILE_SEGMAP_H
#define AGILE_SEGMAP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct agile_segmap;
struct agile_sched;

/* Most compute nodes of a segment map (a dev group's most members). */
#define AGILE_SEGMAP_MAX_NODES 256

/**
 * enum agile_node_kind - what a segment map's compute nodes are
 * @AGILE_NODE_CPU:  a share of a sched pool's workers in this process
 * @AGILE_NODE_GPU:  a GPU EU group
 * @AGILE_NODE_PROC: a process of a dev group on this machine
 * @AGILE_NODE_RANK: an MPI rank
 */
enum agile_node_kind {
	AGILE_NODE_CPU = 0,
	AGILE_NODE_GPU = 1,
	AGILE_NODE_PROC = 2,
	AGILE_NODE_RANK = 3,
};

/**
 * agile_segmap_procs_join - a segment map over @nr_nodes processes
 * @key:        names the map's dev group; its allreduces go through a
 *              coll communicator of key ^ 0x73676d6170636f6c ("sgmapcol"),
 *              so that key is taken too
 * @nr_nodes:   how many processes join, 1 .. AGILE_SEGMAP_MAX_NODES
 * @timeout_ns: the longest the join, and each later collective, waits
 * @pool:       runs this process's kernels (NULL: the calling thread)
 * @out:        receives the map
 *
 * Node q is member q of the group, in join order.  See scope_procs.c.
 *
 * Thread safety: thread safe (each call makes its own map).
 *
 * Return: 0 or a negative errno (as segmap_scope_procs_join).
 */
int agile_segmap_procs_join(uint64_t key, uint32_t nr_nodes,
			    uint64_t timeout_ns, struct agile_sched *pool,
			    struct agile_segmap **out);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_SEGMAP_H */
