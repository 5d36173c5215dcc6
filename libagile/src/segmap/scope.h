/* SPDX-License-Identifier: MIT */
/*
 * scope.h - what a segmap scope provides: the compute nodes of a segment
 * map and how bytes move between their memories.  The segmap core
 * (resource maps, fields, accessors, owner-copy, forall) is written once
 * against these calls; a scope is one of
 *
 *   threads  every node lives in this process (a logical node: a share of
 *            a sched pool's workers); home memory is malloc'ed, a get is a
 *            memcpy (scope_threads.c);
 *   procs    node q is member q of a dev group (kmod group, or the user
 *            backend's shared memory) on this machine; a node's home
 *            memory is a group segment every member maps, so a get is one
 *            copy out of the peer's segment (scope_procs.c);
 *   mpi      node q is rank q of an MPI communicator; home memory is an
 *            MPI window, a get is an MPI_Get under a shared passive lock
 *            (scope_mpi.c, libagile-mpi only).
 *
 * Owner-copy (seed 000): a node that reads a memory block it does not hold
 * gets a private copy of the block from the block's home (the node whose
 * segment contains it) into its own memory, once; its later reads of that
 * block move nothing.  A node writes only the blocks of its own segments
 * (the owner computes), into its home memory.  A forall that writes a
 * field drops every node's copies of that field's blocks when it ends, so
 * the next forall reads the new values.  The core keeps the copies and
 * the per-block location table; a scope only moves bytes.
 *
 * Every call that involves other nodes returns -EPIPE when one died (a
 * procs member, an MPI rank that failed: MPI errors are -EPROTO) and never
 * waits forever.
 */
#ifndef AGILE_SEGMAP_SCOPE_H
#define AGILE_SEGMAP_SCOPE_H

#include <agile/coll.h>
#include <agile/segmap.h>
#include <stddef.h>
#include <stdint.h>

struct segmap_home; /* one field's home memory on every node; scope private */
struct segmap_scope;

/**
 * struct segmap_scope_ops - a scope's calls
 *
 * Collective calls are made by every process of the scope (one thread
 * each) in the same order; in the threads scope by the one caller.
 *
 * @home_alloc: collective: node q allocates @bytes[q] bytes of home
 *		memory, zeroed (every process passes the same array, computed
 *		from the map); *@out gets the handle.  0, -ENOMEM, -ENOSPC (a
 *		device segment limit), -EPIPE, -EPROTO.
 * @home_free:  collective: frees @h (after a barrier, so no peer still
 *		reads it).  Never fails where the handle is good.
 * @home_addr:  the address of node @node's home memory in this process,
 *		or NULL where this process cannot address it (another
 *		machine: mpi, except the calling rank itself).
 * @home_get:   copy @bytes at byte @off of node @node's home memory into
 *		@dst (this process's memory): the single copy of owner-copy.
 *		Thread safe (several workers of one process get at once).
 *		0, -EPIPE, -EPROTO.
 * @home_put:   copy @bytes from @src to byte @off of node @node's home
 *		memory (load balancing: a node that stole a block's task
 *		writes the owner's result there).  Thread safe.  0, -EPIPE,
 *		-EPROTO.
 * @barrier:    collective: returns once every process has called it; 0,
 *		-EPIPE, -ETIMEDOUT, -EPROTO.  Orders every home write before
 *		it against every home read after it, on every node.
 * @agree:      collective: every process returns the most negative of
 *		all processes' @err (0 when all are 0).
 * @allreduce:  collective: through the coll layer (a communicator of the
 *		scope's processes; the threads scope has one process and
 *		copies).  As agile_coll_allreduce.
 * @destroy:    collective: frees the scope (and its communicator).
 */
struct segmap_scope_ops {
	const char *name;
	int (*home_alloc)(struct segmap_scope *sc, const uint64_t *bytes,
			  struct segmap_home **out);
	void (*home_free)(struct segmap_scope *sc, struct segmap_home *h);
	void *(*home_addr)(struct segmap_home *h, uint32_t node);
	int (*home_get)(struct segmap_home *h, uint32_t node, uint64_t off,
			void *dst, size_t bytes);
	int (*home_put)(struct segmap_home *h, uint32_t node, uint64_t off,
			const void *src, size_t bytes);
	int (*barrier)(struct segmap_scope *sc);
	int (*agree)(struct segmap_scope *sc, int err);
	int (*allreduce)(struct segmap_scope *sc, const void *send, void *recv,
			 size_t count, enum agile_coll_type type,
			 enum agile_coll_op op);
	void (*destroy)(struct segmap_scope *sc);
};

/**
 * struct segmap_scope - the nodes a segment map runs on
 * @ops:      the scope's calls
 * @kind:     the node kind (enum agile_node_kind of agile/segmap.h)
 * @nr_nodes: Q, the compute nodes, 1 .. AGILE_SEGMAP_MAX_NODES
 * @self:     this process's node (procs, mpi); UINT32_MAX in the threads
 *            scope, where every node is in this process
 * @priv:     the scope's own state
 */
struct segmap_scope {
	const struct segmap_scope_ops *ops;
	int kind;
	uint32_t nr_nodes;
	uint32_t self;
	void *priv;
};

/* Is node @node's work done by this process? */
static inline int segmap_scope_local(const struct segmap_scope *sc,
				     uint32_t node)
{
	return sc->self == UINT32_MAX || sc->self == node;
}

/* The scopes (each fills *@out; freed by ops->destroy). */
int segmap_scope_threads(uint32_t nr_nodes, struct segmap_scope **out);
int agile__segmap_scope_procs_join(uint64_t key, uint32_t nr_nodes,
				   uint64_t timeout_ns,
				   struct segmap_scope **out);

/*
 * agile__segmap_create - the core's segment map over @scope (taken over: freed
 * with the map, or here on error), running kernels on @pool (NULL: on the
 * calling thread).  The public agile_segmap_* constructors call it.
 */
int agile__segmap_create(struct segmap_scope *scope, struct agile_sched *pool,
			 struct agile_segmap **out);

#endif /* AGILE_SEGMAP_SCOPE_H */
