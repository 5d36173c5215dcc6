/* SPDX-License-Identifier: MIT */
/*
 * agile/segmap.h - segmented fields over compute nodes (SPEC §3, layer 5;
 * seed 000, the agile communication operator)
 *
 * A field (an N-dimensional array, N = 1..4, index[0] varying fastest) is
 * cut into SEGMENTS by a resource map; each segment belongs to one of the
 * Q compute nodes of a segment map (threads of this process, processes of
 * a device group, MPI ranks), and lives in that node's home memory.
 * agile_forall runs a kernel once per segment on the node that owns it.
 *
 * Three decomposition levels cover the field: algorithmic tiles (M1, what
 * an algorithm works on), memory blocks (M2, the unit data moves in) and
 * segments (what a node owns); M1 divides M2 and M2 divides every
 * segment, per axis.  Without M2 each segment is one memory block.
 *
 * Full global view: a kernel reads any element through a struct
 * agile_acc.  A read of a block another node holds makes a private copy
 * of the whole memory block on the reading node, once (owner-copy: the
 * owner of the result computes, the data comes to it); later reads of
 * that block move nothing.  A kernel writes only its own node's blocks
 * (-EACCES otherwise).  A forall that writes a field drops every copy of
 * it when it ends.  Local global view: the same data by algorithmic
 * tiles, with explicit moves (agile_tile_move) and unchecked access by
 * pointer and strides inside a tile.
 *
 * Node numbers are 0-based; segment numbers too (the seed's 20(s) is our
 * segment s - 1).
 *
 * Errors: every call returns 0 (or a documented count or flag) or a
 * negative errno, and never aborts.  Where a call returns -EINVAL for a
 * bad map, level, index or argument, agile_segmap_why() gives the calling
 * thread a sentence that says what was wrong.
 */
#ifndef AGILE_SEGMAP_H
#define AGILE_SEGMAP_H

#include <agile/coll.h>
#include <agile/sched.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Most dimensions of a field. */
#define AGILE_SEGMAP_MAX_RANK 4
/* Most compute nodes of a segment map. */
#define AGILE_SEGMAP_MAX_NODES 1024
/* agile_segmap_self in the threads scope: every node is in this process. */
#define AGILE_SEGMAP_ALL_NODES UINT32_MAX

/**
 * struct agile_extent - the size of a grid, per axis
 * @rank:     dimensions, 1 .. AGILE_SEGMAP_MAX_RANK
 * @reserved: zero
 * @n:        elements along each axis (@n[0] varies fastest); unused
 *            axes zero
 */
struct agile_extent {
	uint32_t rank;
	uint32_t reserved;
	uint64_t n[AGILE_SEGMAP_MAX_RANK];
};

/**
 * struct agile_index - a point of a grid
 * @rank:     dimensions, as the grid's
 * @reserved: zero
 * @i:        the coordinates (signed: an index may lie before a grid)
 */
struct agile_index {
	uint32_t rank;
	uint32_t reserved;
	int64_t i[AGILE_SEGMAP_MAX_RANK];
};

/**
 * struct agile_grid - a box of indices: @offset .. @offset + @extent - 1
 * @extent: its size
 * @offset: its first index (same rank)
 */
struct agile_grid {
	struct agile_extent extent;
	struct agile_index offset;
};

/**
 * agile_segmap_why - why the calling thread's last segmap call failed
 *
 * Thread safety: thread safe (one sentence per thread).
 *
 * Return: the sentence of the calling thread's last failed segmap call
 * that gave one (bad maps, levels, indices, arguments), or "" if none.
 * Valid until the thread's next segmap call.
 */
const char *agile_segmap_why(void);

/**
 * agile_extent_total - how many elements @e has
 * @e:   the extent
 * @out: receives the product of @e->n[0 .. rank-1]
 *
 * Thread safety: thread safe.
 *
 * Return: 0; -EINVAL (NULL, a rank outside 1..4, a zero extent) or
 * -EOVERFLOW (the product passes 2^63).
 */
int agile_extent_total(const struct agile_extent *e, uint64_t *out);

/**
 * agile_grid_flatten - @idx's position in @g, index[0] fastest
 * @g:   the grid
 * @idx: an index of @g
 * @out: receives sum (idx[i] - offset[i]) * multiplier[i], multiplier[0]
 *       = 1, multiplier[i] = extent[i-1] * multiplier[i-1]
 *
 * Thread safety: thread safe.
 *
 * Return: 0; -EINVAL (bad grid, ranks that differ) or -ERANGE (@idx is
 * not in @g).
 */
int agile_grid_flatten(const struct agile_grid *g,
		       const struct agile_index *idx, uint64_t *out);

/**
 * agile_grid_contains - whether @idx lies in @g
 * @g:   the grid
 * @idx: the index
 *
 * Per axis offset <= idx < offset + extent.
 *
 * Thread safety: thread safe.
 *
 * Return: 1 if it does, 0 if not, -EINVAL (bad grid, ranks that differ).
 */
int agile_grid_contains(const struct agile_grid *g,
			const struct agile_index *idx);

/* ---- segment maps: the compute nodes ---- */

/**
 * enum agile_node_kind - what a compute node is
 * @AGILE_NODE_CPU:  a share of a pool's CPU workers in this process
 * @AGILE_NODE_GPU:  a GPU EU group
 * @AGILE_NODE_PROC: a process of a device group on this machine
 * @AGILE_NODE_RANK: an MPI rank
 */
enum agile_node_kind {
	AGILE_NODE_CPU = 0,
	AGILE_NODE_GPU = 1,
	AGILE_NODE_PROC = 2,
	AGILE_NODE_RANK = 3,
};

struct agile_segmap; /* the Q compute nodes and the pool kernels run on */

/**
 * agile_segmap_threads - a segment map of @nr_nodes nodes in this process
 * @nr_nodes: Q, 1 .. AGILE_SEGMAP_MAX_NODES
 * @pool:     the pool forall runs kernels on, or NULL for the calling
 *            thread (in order); not owned
 * @out:      receives the map
 *
 * Home memory is this process's heap; an owner-copy is a memcpy.
 *
 * Thread safety: thread safe (each call makes its own map).
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
int agile_segmap_threads(uint32_t nr_nodes, struct agile_sched *pool,
			 struct agile_segmap **out);

/**
 * agile_segmap_procs_join - node k of @nr_nodes processes of this machine
 * @key:        names the device group the processes join
 * @nr_nodes:   Q, the processes, 1 .. AGILE_SEGMAP_MAX_NODES
 * @timeout_ns: how long to wait for the others
 * @pool:       this process's pool for its node's kernels, or NULL
 * @out:        receives the map
 *
 * Collective among the @nr_nodes processes.  A node's home memory is a
 * group segment every member maps.
 *
 * Thread safety: thread safe (each call joins its own group).
 *
 * Return: 0, -EINVAL, -ENOMEM, -ETIMEDOUT, -EPIPE, or an error of the
 * device group.
 */
int agile_segmap_procs_join(uint64_t key, uint32_t nr_nodes,
			    uint64_t timeout_ns, struct agile_sched *pool,
			    struct agile_segmap **out);

/**
 * agile_segmap_destroy - free @sm
 * @sm: the map; no field may remain on it
 *
 * Collective in the procs and MPI scopes.
 *
 * Thread safety: not thread safe against other uses of @sm.
 *
 * Return: 0, -EINVAL (@sm NULL) or -EBUSY (fields remain: nothing freed).
 */
int agile_segmap_destroy(struct agile_segmap *sm);

/**
 * agile_segmap_nr_nodes - Q
 * @sm: the map
 *
 * Thread safety: thread safe.
 *
 * Return: the node count, or -EINVAL.
 */
int agile_segmap_nr_nodes(const struct agile_segmap *sm);

/**
 * agile_segmap_self - which node this process is
 * @sm:   the map
 * @node: receives the node, or AGILE_SEGMAP_ALL_NODES in the threads
 *        scope (every node is in this process)
 *
 * Thread safety: thread safe.
 *
 * Return: 0 or -EINVAL.
 */
int agile_segmap_self(const struct agile_segmap *sm, uint32_t *node);

/**
 * agile_segmap_kind - the node kind of @sm (enum agile_node_kind)
 * @sm: the map
 *
 * Thread safety: thread safe.
 *
 * Return: the kind, or -EINVAL.
 */
int agile_segmap_kind(const struct agile_segmap *sm);

/* ---- resource maps: segments of a grid and their nodes ---- */

/**
 * enum agile_proto_kind - how segments are given to nodes
 * @AGILE_PROTO_BLOCK:        contiguous runs of segments in flatten order,
 *                            as equal as they can be, or in proportion to
 *                            the nodes' weights
 * @AGILE_PROTO_CYCLIC:       segment s to node s mod Q
 * @AGILE_PROTO_BLOCK_CYCLIC: runs of @run segments dealt cyclically:
 *                            segment s to node (s / run) mod Q
 * @AGILE_PROTO_BLOCK_BLOCK:  the nodes as a grid (struct agile_proto
 *                            .node_grid); each node a box of segments
 * @AGILE_PROTO_ROW_BLOCK:    bands of whole rows (the slowest axis) of
 *                            segments, equal or weighted
 * @AGILE_PROTO_COLUMN_BLOCK: bands of whole columns (axis 0), equal or
 *                            weighted
 *
 * The seed's 6x6 examples in these terms (docs/segmap.md): its row block
 * with Q = 4 (elements 0-8, 9-17, ...) is BLOCK over 1x1 tiles; its row
 * block-cyclic is CYCLIC over the 2x2 segments; its row block-block with
 * Q = 3 is ROW_BLOCK over them.
 */
enum agile_proto_kind {
	AGILE_PROTO_BLOCK = 0,
	AGILE_PROTO_CYCLIC = 1,
	AGILE_PROTO_BLOCK_CYCLIC = 2,
	AGILE_PROTO_BLOCK_BLOCK = 3,
	AGILE_PROTO_ROW_BLOCK = 4,
	AGILE_PROTO_COLUMN_BLOCK = 5,
	AGILE_PROTO_NR
};

/**
 * struct agile_proto - a protocol and its parameters
 * @proto:     enum agile_proto_kind
 * @nr_nodes:  Q, 1 .. AGILE_SEGMAP_MAX_NODES
 * @run:       BLOCK_CYCLIC's run length, >= 1 (0 means 1)
 * @reserved:  zero
 * @node_grid: BLOCK_BLOCK: nodes per axis, rank as the map's, product
 *             Q; rank 0 picks P x R over axes 0 and 1 (P the smallest
 *             divisor of Q not below its square root)
 * @weights:   BLOCK, ROW_BLOCK, COLUMN_BLOCK: Q positive node speeds, or
 *             NULL for equal nodes; a node's share of runs or bands is
 *             in proportion to its weight (copied)
 */
struct agile_proto {
	uint32_t proto;
	uint32_t nr_nodes;
	uint32_t run;
	uint32_t reserved;
	struct agile_extent node_grid;
	const double *weights;
};

struct agile_rmap; /* immutable once made; host memory only */

/**
 * agile_rmap_list - a map from an explicit list of segments
 * @parent:      the grid the segments cover
 * @nr_segments: how many
 * @segments:    their grids; segment s is @segments[s]
 * @nodes:       the node of each
 * @nr_nodes:    Q
 * @out:         receives the map
 *
 * The segments must lie in @parent, not overlap and leave no gap;
 * lookups are per-axis binary searches over the segments' boundaries.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL (with agile_segmap_why: which segment, which index),
 * -E2BIG (the segments' boundaries make more than 2^24 cells), -ENOMEM.
 */
int agile_rmap_list(const struct agile_grid *parent, uint32_t nr_segments,
		    const struct agile_grid *segments, const uint32_t *nodes,
		    uint32_t nr_nodes, struct agile_rmap **out);

/**
 * struct agile_split - split points per axis
 * @nr:    points on each axis (N(i)); 0 leaves the axis whole
 * @at:    each axis's points, global coordinates, strictly increasing,
 *         strictly inside the parent
 */
struct agile_split {
	uint32_t nr[AGILE_SEGMAP_MAX_RANK];
	const int64_t *at[AGILE_SEGMAP_MAX_RANK];
};

/**
 * agile_rmap_split - a map from split points: prod (N(i) + 1) segments
 * @parent: the grid
 * @split:  the points
 * @proto:  how the segments (numbered in flatten order) go to nodes
 * @out:    receives the map
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL (with agile_segmap_why), -ENOMEM.
 */
int agile_rmap_split(const struct agile_grid *parent,
		     const struct agile_split *split,
		     const struct agile_proto *proto, struct agile_rmap **out);

/**
 * agile_rmap_tiles - a map of equal tiles (the last along an axis may be
 *                    shorter), numbered in flatten order
 * @parent: the grid
 * @tile:   the tiles' extent
 * @proto:  how tiles go to nodes
 * @out:    receives the map
 *
 * A regular map: the segment of an index is a division per axis.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL (with agile_segmap_why), -ENOMEM.
 */
int agile_rmap_tiles(const struct agile_grid *parent,
		     const struct agile_extent *tile,
		     const struct agile_proto *proto, struct agile_rmap **out);

/**
 * agile_rmap_destroy - drop the caller's reference to @rm
 * @rm: the map (fields made over it keep their own reference)
 *
 * Thread safety: thread safe against fields that use @rm.
 *
 * Return: 0 or -EINVAL.
 */
int agile_rmap_destroy(struct agile_rmap *rm);

/**
 * agile_rmap_nr_segments - how many segments @rm has
 * @rm: the map
 *
 * Thread safety: thread safe.
 *
 * Return: the count, or -EINVAL.
 */
int agile_rmap_nr_segments(const struct agile_rmap *rm);

/**
 * agile_rmap_segment - segment @seg's grid and node
 * @rm:   the map
 * @seg:  0 .. nr_segments - 1
 * @grid: receives its grid (may be NULL)
 * @node: receives its node (may be NULL)
 *
 * Thread safety: thread safe.
 *
 * Return: 0 or -EINVAL.
 */
int agile_rmap_segment(const struct agile_rmap *rm, uint32_t seg,
		       struct agile_grid *grid, uint32_t *node);

/**
 * agile_rmap_find - the segment holding @idx
 * @rm:  the map
 * @idx: an index of the parent grid
 * @seg: receives the segment
 *
 * A division per axis for tile maps, a binary search per axis otherwise.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL, or -ERANGE (@idx is not in the parent grid; see
 * agile_segmap_why).
 */
int agile_rmap_find(const struct agile_rmap *rm, const struct agile_index *idx,
		    uint32_t *seg);

/* ---- the three levels ---- */

/**
 * struct agile_levels - the algorithmic tile and memory block extents
 * @tile:  M1, what an algorithm works on (rank 0: the memory block)
 * @block: M2, the unit of data movement (rank 0: each segment one
 *         memory block)
 *
 * M1 divides M2, and M2 divides every segment's extent and its offset
 * from the parent's, axis by axis (the last tile along an axis may be
 * shorter where the parent's extent is not a multiple of M1).
 */
struct agile_levels {
	struct agile_extent tile;
	struct agile_extent block;
};

/**
 * agile_levels_check - whether @lv fits @rm
 * @rm: the map
 * @lv: the levels
 *
 * Thread safety: thread safe.
 *
 * Return: 0, or -EINVAL with agile_segmap_why naming the axis and the
 * extents that do not divide.
 */
int agile_levels_check(const struct agile_rmap *rm,
		       const struct agile_levels *lv);

/**
 * agile_levels_block_of - the memory block of an index
 * @rm:    the map
 * @lv:    its levels (NULL: none)
 * @idx:   an index of the parent grid
 * @block: receives the memory block's number: flatten order over the
 *         block grid (segment number where there is no block level)
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL or -ERANGE.
 */
int agile_levels_block_of(const struct agile_rmap *rm,
			  const struct agile_levels *lv,
			  const struct agile_index *idx, uint64_t *block);

/**
 * agile_levels_tile_block - the memory block holding an algorithmic tile
 * @rm:    the map
 * @lv:    its levels (NULL: none)
 * @tile:  the tile's number, flatten order over the tile grid
 * @block: receives the memory block's number
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL or -ERANGE (no such tile).
 */
int agile_levels_tile_block(const struct agile_rmap *rm,
			    const struct agile_levels *lv, uint64_t tile,
			    uint64_t *block);

/* ---- fields ---- */

struct agile_field;

/**
 * agile_field_trace_fn - called at each owner-copy
 * @f:     the field (the one the accessor was made on)
 * @block: the memory block moved
 * @from:  its home node
 * @to:    the node that got the copy
 * @arg:   agile_field_set_trace's @arg
 *
 * Called on the copying thread, concurrently from several.
 */
typedef void (*agile_field_trace_fn)(struct agile_field *f, uint64_t block,
				     uint32_t from, uint32_t to, void *arg);

/**
 * agile_field_create - a field over @rm on @sm's nodes
 * @sm:        the segment map (Q must be @rm's)
 * @rm:        the segments (a reference is taken)
 * @lv:        the levels, or NULL for none
 * @elem_size: bytes per element, 1 .. 4096
 * @out:       receives the field, zeroed
 *
 * Collective in the procs and MPI scopes.  Node q's home memory holds the
 * memory blocks of q's segments, segment by segment, each block
 * contiguous (flatten order inside it).
 *
 * Thread safety: not thread safe against other calls on @sm.
 *
 * Return: 0, -EINVAL (with agile_segmap_why), -ENOMEM, or a scope's
 * error (-ENOSPC, -EPIPE, -EPROTO).
 */
int agile_field_create(struct agile_segmap *sm, struct agile_rmap *rm,
		       const struct agile_levels *lv, size_t elem_size,
		       struct agile_field **out);

/**
 * agile_field_destroy - free @f (a view: only the view)
 * @f: the field or view; the storage goes with the last of them
 *
 * Collective where it frees storage in the procs and MPI scopes.
 *
 * Thread safety: not thread safe against other uses of @f.
 *
 * Return: 0 or -EINVAL.
 */
int agile_field_destroy(struct agile_field *f);

/**
 * agile_field_sub - the part @g of @f, same storage, global coordinates
 * @f:   the field
 * @g:   a grid inside @f's
 * @out: receives the sub-field (free with agile_field_destroy)
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL (@g not inside), -ENOMEM.
 */
int agile_field_sub(struct agile_field *f, const struct agile_grid *g,
		    struct agile_field **out);

/**
 * agile_field_section - the part @g of @f, indexed from zero
 * @f:   the field
 * @g:   a grid inside @f's; index i of the section is @g->offset + i of @f
 * @out: receives the view
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL, -ENOMEM.
 */
int agile_field_section(struct agile_field *f, const struct agile_grid *g,
			struct agile_field **out);

/**
 * agile_field_transpose - @f with axes @a and @b swapped
 * @f:   the field
 * @a:   an axis
 * @b:   another axis
 * @out: receives the view: its index (.., i_a, .., i_b, ..) is @f's
 *       (.., i_b, .., i_a, ..)
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL, -ENOMEM.
 */
int agile_field_transpose(struct agile_field *f, uint32_t a, uint32_t b,
			  struct agile_field **out);

/**
 * agile_field_slice - @f with axis @axis fixed at @coord: one rank lower
 * @f:     the field or view, of rank 2 or more
 * @axis:  the axis to fix, < @f's rank
 * @coord: where, in @f's coordinates along @axis (global for a field
 *         or sub-field)
 * @out:   receives the view (free with agile_field_destroy): its index
 *         (i_0, .., i_{axis-1}, i_{axis+1}, ..) is @f's (i_0, ..,
 *         i_{axis-1}, @coord, i_{axis+1}, ..); its other axes keep
 *         @f's offsets and extents
 *
 * Same storage: accessors, spans, get/put, gather, reduce and forall
 * work in the view's rank and coordinates, and reading a slice of
 * another node's memory block moves that whole block once.  Tiles:
 * coordinates along the view's axes; the fixed axis's tile is the one
 * holding @coord.  The tile cursor (and so agile_forall_eu's iterated
 * field) refuses a slice.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL (a NULL argument, a rank 1 field, @axis out of
 * range, @coord outside @f's grid; with agile_segmap_why), -ENOMEM.
 */
int agile_field_slice(struct agile_field *f, uint32_t axis, int64_t coord,
		      struct agile_field **out);

/**
 * agile_field_stride - every @step-th element of @f along @axis
 * @f:    the field or view
 * @axis: the axis, < @f's rank
 * @step: 1 or more; a step past the extent gives one element
 * @out:  receives the view (free with agile_field_destroy): along @axis
 *        its index o + j is @f's o + j @step, o being @f's offset along
 *        @axis, and its extent ceil(n / @step); the other axes are @f's
 *
 * Same storage and coverage as agile_field_slice: accessors (spans
 * along a strided axis 0 give the step times the row's stride),
 * get/put, gather, reduce, forall; a tile is the part of the store's
 * tile the view sees (-ERANGE from agile_tile_get where it sees none),
 * and the tile cursor refuses a strided view.  Strides compose: a
 * stride of a stride multiplies the steps.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL (a NULL argument, @axis out of range, @step 0;
 * with agile_segmap_why), -ENOMEM.
 */
int agile_field_stride(struct agile_field *f, uint32_t axis, uint64_t step,
		       struct agile_field **out);

/**
 * agile_field_grid - the index domain of @f
 * @f:   the field or view
 * @out: receives it
 *
 * Thread safety: thread safe.
 *
 * Return: 0 or -EINVAL.
 */
int agile_field_grid(const struct agile_field *f, struct agile_grid *out);

/**
 * agile_field_get - read one element straight from its home
 * @f:    the field or view
 * @idx:  its index
 * @elem: receives elem_size bytes
 *
 * For set-up and checks, outside foralls; moves nothing that counts.
 *
 * Thread safety: thread safe against other gets.
 *
 * Return: 0, -EINVAL, -ERANGE (@idx outside @f), or a scope's error.
 */
int agile_field_get(struct agile_field *f, const struct agile_index *idx,
		    void *elem);

/**
 * agile_field_put - write one element into its home
 * @f:    the field or view
 * @idx:  its index
 * @elem: elem_size bytes
 *
 * For set-up, outside foralls; drops this process's copies of the
 * element's block.  In the procs and MPI scopes other processes see it
 * after their next forall (or another barrier of the scope).
 *
 * Thread safety: thread safe against puts to other blocks.
 *
 * Return: 0, -EINVAL, -ERANGE, or a scope's error.
 */
int agile_field_put(struct agile_field *f, const struct agile_index *idx,
		    const void *elem);

/**
 * agile_field_gather - the whole of @f into a plain array
 * @f:     the field or view
 * @dst:   total x elem_size bytes, flatten order of @f's grid
 * @bytes: the size of @dst
 *
 * Reads each memory block once from its home.
 *
 * Thread safety: thread safe against other reads.
 *
 * Return: 0, -EINVAL, -ENOSPC (@bytes too small), -ENOMEM, or a scope's
 * error.
 */
int agile_field_gather(struct agile_field *f, void *dst, size_t bytes);

/**
 * agile_field_reduce - reduce every element of @f into @result
 * @f:      the field or view (its elements of @type)
 * @type:   AGILE_COLL_INT32, _INT64, _FLOAT or _DOUBLE (elem_size must
 *          match it)
 * @op:     AGILE_COLL_SUM, _MIN, _MAX or _PROD
 * @result: receives one element, on every process
 *
 * Each process reduces its own nodes' blocks, then the scope's allreduce
 * combines them.  Collective in the procs and MPI scopes.
 *
 * Thread safety: not thread safe against writes to @f.
 *
 * Return: 0, -EINVAL, -ENOMEM, or the allreduce's error.
 */
int agile_field_reduce(struct agile_field *f, enum agile_coll_type type,
		       enum agile_coll_op op, void *result);

/**
 * struct agile_field_stats - owner-copy counters of a field's storage
 * @moves: memory blocks copied to a node that did not hold them
 * @bytes: their bytes
 *
 * Views share their field's counters.
 */
struct agile_field_stats {
	uint64_t moves;
	uint64_t bytes;
};

/**
 * agile_field_stats - owner-copy counters, all nodes or one node
 * @f:     the field
 * @node:  a node (the copies it received), or AGILE_SEGMAP_ALL_NODES
 * @stats: receives the counters (this process's copies only)
 *
 * Thread safety: thread safe (a snapshot while a forall runs).
 *
 * Return: 0 or -EINVAL.
 */
int agile_field_stats(const struct agile_field *f, uint32_t node,
		      struct agile_field_stats *stats);

/**
 * agile_field_stats_reset - zero the counters of @f's storage
 * @f: the field
 *
 * Thread safety: not thread safe against a forall on @f.
 *
 * Return: 0 or -EINVAL.
 */
int agile_field_stats_reset(struct agile_field *f);

/**
 * agile_field_set_trace - call @fn at every owner-copy of @f's storage
 * @f:   the field
 * @fn:  the callback, or NULL for none
 * @arg: its last argument
 *
 * Thread safety: not thread safe against a forall on @f.
 *
 * Return: 0 or -EINVAL.
 */
int agile_field_set_trace(struct agile_field *f, agile_field_trace_fn fn,
			  void *arg);

/**
 * agile_field_block_where - where memory block @block of @f is now
 * @f:         the field
 * @block:     its number (agile_levels_block_of)
 * @home:      receives the node whose segment holds it
 * @nr_copies: receives how many other nodes hold a copy (this process's
 *             view; may be NULL)
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL or -ERANGE.
 */
int agile_field_block_where(const struct agile_field *f, uint64_t block,
			    uint32_t *home, uint32_t *nr_copies);

/**
 * agile_field_block_held - whether @node holds memory block @block now
 * @f:     the field
 * @block: the block
 * @node:  the node
 *
 * Thread safety: thread safe.
 *
 * Return: 1 (its home, or a copy), 0, -EINVAL or -ERANGE.
 */
int agile_field_block_held(const struct agile_field *f, uint64_t block,
			   uint32_t node);

/**
 * agile_field_drop_copies - drop this process's copies of @f's blocks
 * @f: the field
 *
 * Thread safety: not thread safe against a forall on @f.
 *
 * Return: 0 or -EINVAL.
 */
int agile_field_drop_copies(struct agile_field *f);

/* ---- the full global view: checked accessors ---- */

/* struct agile_acc.mode */
#define AGILE_ACC_READ 1u
#define AGILE_ACC_WRITE 2u
#define AGILE_ACC_RW (AGILE_ACC_READ | AGILE_ACC_WRITE)

/**
 * struct agile_acc - a node's cursor into a field (full global view)
 * @field:     the field or view
 * @node:      the node it reads and writes for
 * @mode:      AGILE_ACC_READ, _WRITE or _RW
 * @rank:      the field's rank
 * @elem_size: bytes per element
 * @err:       the first error of a miss (0 if none): forall returns it
 * @thief:     set by forall's balance mode: writes may go to another
 *             node's home (shared-memory scopes)
 * @lo:        the cached block's first index, in @field's coordinates
 * @ext:       its extent
 * @stride:    elements between neighbours along each axis, in the block
 * @base:      the address of element @lo
 * @block:     the cached block's number, UINT64_MAX for none
 *
 * @lo .. @block are the cache the inline fast path reads (an extent of
 * zero: no block cached, every access misses); the rest is set up by
 * agile_acc_init (or by forall).
 */
struct agile_acc {
	struct agile_field *field;
	uint32_t node;
	uint32_t mode;
	uint32_t rank;
	uint32_t elem_size;
	int err;
	uint32_t thief;
	int64_t lo[AGILE_SEGMAP_MAX_RANK];
	uint64_t ext[AGILE_SEGMAP_MAX_RANK];
	int64_t stride[AGILE_SEGMAP_MAX_RANK];
	unsigned char *base;
	uint64_t block;
};

/**
 * agile_acc_init - an accessor of @f for @node
 * @acc:  the accessor
 * @f:    the field or view
 * @node: the node (in the procs and MPI scopes: this process's)
 * @mode: AGILE_ACC_READ, _WRITE or _RW
 *
 * forall makes its kernels' accessors itself; this is for code that
 * reads a field outside one (the host, a test).
 *
 * Thread safety: an accessor is used by one thread at a time.
 *
 * Return: 0 or -EINVAL.
 */
int agile_acc_init(struct agile_acc *acc, struct agile_field *f, uint32_t node,
		   uint32_t mode);

/**
 * agile_acc_miss - the slow path of agile_acc_ptr
 * @acc: the accessor
 * @idx: the index (@acc->rank coordinates)
 * @out: receives the element's address
 *
 * Finds the block (a division per axis, or per-axis binary searches for
 * irregular maps), makes this node's copy if it has none (owner-copy,
 * counted) and caches the block.
 *
 * Thread safety: as the accessor.
 *
 * Return: 0, -ERANGE (outside the field), -EACCES (a WRITE or RW
 * accessor reaching another node's block, see struct
 * agile_forall_field), -ENOMEM or a scope's error; recorded in
 * @acc->err.
 */
int agile_acc_miss(struct agile_acc *acc, const int64_t *idx, void **out);

/**
 * agile_acc_ptr - the address of element @idx through @acc
 * @acc: the accessor
 * @idx: the index, @acc->rank coordinates
 * @out: receives the address; valid until the forall ends
 *
 * The fast path: one subtraction and one unsigned compare per axis
 * against the cached block (a negative offset wraps to a huge unsigned
 * one, so both bounds are one compare).
 *
 * Thread safety: as the accessor.
 *
 * Return: 0, or as agile_acc_miss.
 */
static inline int agile_acc_ptr(struct agile_acc *acc, const int64_t *idx,
				void **out)
{
	uint64_t off = 0;

	for (uint32_t d = 0; d < acc->rank; d++) {
		/* unsigned: no signed overflow, and below lo wraps high */
		uint64_t local = (uint64_t)idx[d] - (uint64_t)acc->lo[d];

		if (__builtin_expect(local >= acc->ext[d], 0))
			return agile_acc_miss(acc, idx, out);
		off += local * (uint64_t)acc->stride[d];
	}
	*out = acc->base + off * acc->elem_size;
	return 0;
}

/**
 * agile_acc_read - copy element @idx into @elem
 * @acc:  the accessor
 * @idx:  the index
 * @elem: receives elem_size bytes
 *
 * Thread safety: as the accessor.
 *
 * Return: as agile_acc_ptr.
 */
static inline int agile_acc_read(struct agile_acc *acc, const int64_t *idx,
				 void *elem)
{
	void *p;
	int err = agile_acc_ptr(acc, idx, &p);

	if (!err)
		__builtin_memcpy(elem, p, acc->elem_size);
	return err;
}

/**
 * agile_acc_write - store @elem at element @idx
 * @acc:  the accessor (AGILE_ACC_WRITE)
 * @idx:  the index
 * @elem: elem_size bytes
 *
 * Thread safety: as the accessor.
 *
 * Return: as agile_acc_ptr.
 */
static inline int agile_acc_write(struct agile_acc *acc, const int64_t *idx,
				  const void *elem)
{
	void *p;
	int err = agile_acc_ptr(acc, idx, &p);

	if (!err)
		__builtin_memcpy(p, elem, acc->elem_size);
	return err;
}

/**
 * agile_acc_span - element @idx and the run of elements after it
 * @acc:    the accessor
 * @idx:    the index, @acc->rank coordinates
 * @out:    receives the address of element @idx
 * @count:  receives how many elements, @idx's included, follow along
 *          axis 0 inside the cached block (and the field's view):
 *          elements @idx + k e0 for 0 <= k < *@count
 * @stride: receives the elements between neighbours along axis 0 (1 in
 *          a field's own axes; a transposed view's row length)
 *
 * One checked access for a whole row of a block: element k of the run
 * is ((T *)*@out)[k * *@stride], so a kernel's inner loop is a plain,
 * vectorisable loop over k < *@count; it then asks again at @idx + count
 * along axis 0, which may be another block.  The addresses are valid as
 * agile_acc_ptr's.
 *
 * Thread safety: as the accessor.
 *
 * Return: 0, or as agile_acc_miss.
 */
static inline int agile_acc_span(struct agile_acc *acc, const int64_t *idx,
				 void **out, uint64_t *count, int64_t *stride)
{
	int err = agile_acc_ptr(acc, idx, out);

	if (__builtin_expect(err, 0))
		return err;
	/* a hit, or a miss that cached @idx's block: @idx is inside */
	*count = acc->ext[0] - ((uint64_t)idx[0] - (uint64_t)acc->lo[0]);
	*stride = acc->stride[0];
	return 0;
}

/* ---- the local global view: tiles ---- */

/**
 * struct agile_tile - one algorithmic tile, ready for unchecked access
 * @grid:   its indices, in the field's coordinates
 * @base:   the address of element @grid.offset
 * @stride: elements between neighbours along each axis: element i of
 *          the tile is base + sum (i[d] - offset[d]) * stride[d] elements
 * @block:  the memory block holding it
 */
struct agile_tile {
	struct agile_grid grid;
	unsigned char *base;
	int64_t stride[AGILE_SEGMAP_MAX_RANK];
	uint64_t block;
};

/**
 * agile_tile_get - tile @tile_idx of @acc's field on @acc's node
 * @acc:      the accessor (its node and mode)
 * @tile_idx: tile coordinates along the field's axes: global, counted
 *            in tiles of M1 from the parent grid's origin (a transposed
 *            view swaps them with its axes)
 * @out:      receives the tile
 *
 * Moves the tile's memory block here if it is not (owner-copy); after an
 * agile_tile_move it moves nothing.
 *
 * Thread safety: as the accessor.
 *
 * Return: 0, -ERANGE, -EACCES (a write accessor, another node's tile),
 * -ENOMEM or a scope's error.
 */
int agile_tile_get(struct agile_acc *acc, const int64_t *tile_idx,
		   struct agile_tile *out);

/**
 * agile_tile_move - the seed's move_memory(owner, source)
 * @owner:    the field whose tile @tile_idx decides the node (its owner)
 * @source:   the field whose tile @tile_idx moves there
 * @tile_idx: tile coordinates, as agile_tile_get's, in both fields
 *
 * Copies @source's memory block holding the tile to the node owning
 * @owner's tile, unless that node holds it already; counted as a move.
 * In the procs and MPI scopes only where that node is this process's.
 *
 * Thread safety: thread safe against accessors of the same fields.
 *
 * Return: 0, 1 when nothing had to move, -EINVAL, -ERANGE, -ENOMEM or a
 * scope's error.
 */
int agile_tile_move(struct agile_field *owner, struct agile_field *source,
		    const int64_t *tile_idx);

/**
 * struct agile_tile_cursor - a node's segments, one at a time
 * @field:   the field
 * @node:    the node
 * @segment: the current segment
 * @first:   its first tile's coordinates (as agile_tile_get's)
 * @count:   its tiles along each axis
 * @next:    private: where the search for the next segment goes on
 */
struct agile_tile_cursor {
	struct agile_field *field;
	uint32_t node;
	uint32_t segment;
	int64_t first[AGILE_SEGMAP_MAX_RANK];
	uint64_t count[AGILE_SEGMAP_MAX_RANK];
	uint32_t next;
};

/**
 * agile_tile_reset - move @cur to @node's next segment of @f
 * @cur:  the cursor; zero it (or pass @f) to start at the first segment
 * @f:    the field (a base field, not a transposed view)
 * @node: the node
 *
 * Thread safety: a cursor is used by one thread at a time.
 *
 * Return: 0, -ENOENT (no segment left), -EINVAL.
 */
int agile_tile_reset(struct agile_tile_cursor *cur, struct agile_field *f,
		     uint32_t node);

/* ---- forall ---- */

/**
 * struct agile_forall_ctx - what a kernel call gets
 * @node:    the node it runs for
 * @segment: the iterated field's segment
 * @grid:    the part to compute: the segment, or one memory block of it
 *           in balance mode, in the iterated field's coordinates
 * @acc:     one accessor per field of the forall, in its order
 * @nr_acc:  how many
 * @worker:  the pool worker running it (NULL on the calling thread)
 */
struct agile_forall_ctx {
	uint32_t node;
	uint32_t segment;
	struct agile_grid grid;
	struct agile_acc *acc;
	uint32_t nr_acc;
	struct agile_worker *worker;
};

/**
 * agile_kernel_fn - a forall kernel
 * @ctx: the call's node, part and accessors
 * @arg: agile_forall's @arg
 *
 * Return: 0 or a negative errno (which forall returns).
 */
typedef int (*agile_kernel_fn)(struct agile_forall_ctx *ctx, void *arg);

/**
 * struct agile_forall_field - a field a kernel uses
 * @field: the field or view
 * @mode:  AGILE_ACC_READ, _WRITE or _RW
 *
 * A WRITE or RW accessor reaches only its node's own blocks, reads
 * included (a cached block is written in place, never a copy); a kernel
 * that writes its own part of a field and reads other nodes' parts of
 * it passes the field twice, once READ and once WRITE.
 */
struct agile_forall_field {
	struct agile_field *field;
	uint32_t mode;
};

/* agile_forall flags */
/*
 * One queue of memory-block tasks per node; each node takes its own from
 * one end and, when they are done, steals from the other end of another
 * node's queue, writing that node's home directly.  Shared-memory scopes
 * only (threads, procs).  In the procs scope the queues are words of
 * memory every process maps (made by the first balanced forall, a
 * collective), so a process steals from the others; its runners are its
 * pool's workers (one on the caller without a pool).  Results do not
 * depend on who ran what; a process that dies mid-forall makes the
 * others' forall return -EPIPE.
 */
#define AGILE_FORALL_BALANCE (1u << 0)
#define AGILE_FORALL_FLAGS_ALL AGILE_FORALL_BALANCE

/**
 * struct agile_forall_stats - what one forall did
 * @calls:  kernel calls made by this process
 * @steals: of them, memory-block tasks run by a node that is not their
 *          owner (balance mode)
 */
struct agile_forall_stats {
	uint64_t calls;
	uint64_t steals;
};

/**
 * agile_forall - run @kernel once per segment of @iter, on its node
 * @sm:        the segment map
 * @iter:      the field whose segments are iterated (its grid is what
 *             ctx->grid covers)
 * @kernel:    the kernel
 * @arg:       its argument
 * @fields:    the fields it uses, each with a mode (may include @iter)
 * @nr_fields: how many, up to 16
 * @flags:     AGILE_FORALL_* flags
 * @stats:     receives counts (may be NULL)
 *
 * Threads scope: the segments are tasks on the map's pool (in order on
 * the caller without one).  Procs and MPI: each process runs its node's
 * segments, then waits at the scope's barrier (collective).  Fields
 * written are dropped from every node's copies at the end.
 *
 * Thread safety: one forall per map at a time.
 *
 * Return: 0, the first kernel or accessor error, -EINVAL, -EOPNOTSUPP
 * (balance mode in a scope without shared memory), -ENOMEM, or a scope's
 * error.
 */
int agile_forall(struct agile_segmap *sm, struct agile_field *iter,
		 agile_kernel_fn kernel, void *arg,
		 const struct agile_forall_field *fields, uint32_t nr_fields,
		 uint32_t flags, struct agile_forall_stats *stats);

/* ---- forall on execution units ---- */

struct agile_eu_pool; /* agile/eu.h */

/**
 * agile_segmap_eus - a segment map whose nodes are groups of @eus's EUs
 * @eus:      the EU pool (not owned; it must outlive the map)
 * @nr_nodes: Q, 1 .. the pool's EU count (each node needs one)
 * @pool:     the sched pool whose workers post a node's tasks (one node
 *            per task of agile_sched_parallel_for), and agile_forall
 *            runs callback kernels on; NULL: the calling thread
 * @out:      receives the map
 *
 * Node q owns the contiguous EUs [first_q, first_q + count_q), count_q
 * being M / Q plus one for the first M % Q nodes (the split agile/offload.h
 * makes among workers).  The kind is AGILE_NODE_GPU for a pool of GPU EUs,
 * else AGILE_NODE_CPU.  The threads scope: every node's home memory is in
 * this process, here page-aligned and mapped for the EUs
 * (agile_eu_pool_map) until the field's storage is freed.  agile_forall
 * works on such a map as on agile_segmap_threads's.
 *
 * Thread safety: thread safe (each call makes its own map); no call on
 * @eus may destroy it while the map lives.
 *
 * Return: 0, -EINVAL (with agile_segmap_why) or -ENOMEM.
 */
int agile_segmap_eus(struct agile_eu_pool *eus, uint32_t nr_nodes,
		     struct agile_sched *pool, struct agile_segmap **out);

/**
 * agile_segmap_node_eus - the EUs of node @node
 * @sm:    a map of agile_segmap_eus
 * @node:  the node
 * @first: receives its first EU (may be NULL)
 * @count: receives how many it owns (may be NULL)
 *
 * Thread safety: thread safe.
 *
 * Return: 0, or -EINVAL (@sm NULL or not of agile_segmap_eus, @node out
 * of range).
 */
int agile_segmap_node_eus(const struct agile_segmap *sm, uint32_t node,
			  uint32_t *first, uint32_t *count);

/* struct agile_forall_eu_opts.tile_map: how field k's tile is named */
/* the iterated tile's coordinates (a view does any transposing) */
#define AGILE_EU_TILE_SAME 0u
/* axes 0 and 1 of the coordinates swapped, and the tile's strides too */
#define AGILE_EU_TILE_SWAP 1u

/**
 * struct agile_eu_tile - one field's tile as an EU task sees it
 * @base:   the EU address of the tile's first element
 * @stride: elements between neighbours along each axis of the iterated
 *          field (swapped for AGILE_EU_TILE_SWAP)
 */
struct agile_eu_tile {
	uint64_t base;
	int64_t stride[AGILE_SEGMAP_MAX_RANK];
};

/**
 * struct agile_forall_eu_task - one algorithmic tile, resolved on the host
 * @node:      the node that owns it
 * @eu:        the EU it goes to
 * @rank:      the iterated field's rank
 * @nr_fields: how many entries of @field are set
 * @tile_idx:  its tile coordinates (as agile_tile_get's)
 * @grid:      its indices, in the iterated field's coordinates
 * @field:     per field of the forall, in its order: the field's tile
 */
struct agile_forall_eu_task {
	uint32_t node;
	uint32_t eu;
	uint32_t rank;
	uint32_t nr_fields;
	int64_t tile_idx[AGILE_SEGMAP_MAX_RANK];
	struct agile_grid grid;
	struct agile_eu_tile field[16];
};

/**
 * agile_forall_eu_encode_fn - write a tile's task arguments
 * @task:    the tile, resolved
 * @args:    the task register's argument words
 * @nr_args: how many there are
 * @arg:     agile_forall_eu_opts.encode_arg
 *
 * Called on the posting thread (a pool worker), concurrently for
 * different nodes.
 *
 * Return: 0, or a negative errno (forall posts nothing more and returns
 * it).
 */
typedef int (*agile_forall_eu_encode_fn)(const struct agile_forall_eu_task *task,
					 uint64_t *args, uint32_t nr_args,
					 void *arg);

/**
 * struct agile_forall_eu_opts - what agile_forall_eu runs
 * @opcode:     a kernel registered in the EU pool's registry
 * @nr_lanes:   the tasks' nr_parts (0 means 1)
 * @tile_map:   per field, AGILE_EU_TILE_*; NULL: AGILE_EU_TILE_SAME for
 *              every field
 * @encode:     NULL for the default layout of the arguments: the tile's
 *              extent (rank words, axis 0 first), then per field its
 *              base and rank strides; else writes them
 * @encode_arg: @encode's last argument
 * @reserved:   must be zero
 */
struct agile_forall_eu_opts {
	uint32_t opcode;
	uint32_t nr_lanes;
	const uint32_t *tile_map;
	agile_forall_eu_encode_fn encode;
	void *encode_arg;
	uint64_t reserved[4];
};

/**
 * agile_forall_eu - a registered kernel per algorithmic tile of @iter, on
 *                   an EU of the node that owns it
 * @sm:        a map of agile_segmap_eus
 * @iter:      the field whose tiles are iterated (a base field: not a
 *             transposed or re-indexed view)
 * @opts:      the kernel and how tasks are written
 * @fields:    the fields the kernel uses, each with a mode (may include
 *             @iter), at most 16
 * @nr_fields: how many
 * @stats:     receives calls = tasks run, steals = 0 (may be NULL)
 *
 * For each node (a task of the map's sched pool each, else one after the
 * other on the caller), for each tile of its segments in order: field k's
 * tile is got for the node with agile_tile_get (owner-copy of an input
 * block the node does not hold; a write reaches only the node's own
 * blocks), its address turned into an EU address (GPU EUs: a copy is
 * read through a page-aligned mirror of it, mapped for the forall and
 * freed at its end: one more host memcpy per copy), the task written into
 * the register of the node's next EU in turn, and posted; an EU is
 * waited for before it is given its next tile, and all at the end.  Every
 * field's tile must have the iterated tile's extent.  Written fields'
 * copies are dropped at the end, as agile_forall does.
 *
 * Thread safety: one forall per map at a time; the EUs of @sm's pool must
 * have no other poster while it runs.
 *
 * Return: 0; the first error of a task (a failed lane's error,
 * -AGILE_E_OPCODE from an EU that lacks the opcode: GPU EUs run the
 * built-in kernels only), of a tile (agile_tile_get's) or of @encode;
 * -AGILE_E_OPCODE (nothing registered at @opts->opcode: nothing ran),
 * -E2BIG (the default layout needs more argument words than a task
 * register holds), -EINVAL (with agile_segmap_why), -ENOMEM, or the
 * error of agile_eu_pool_map.
 */
int agile_forall_eu(struct agile_segmap *sm, struct agile_field *iter,
		    const struct agile_forall_eu_opts *opts,
		    const struct agile_forall_field *fields, uint32_t nr_fields,
		    struct agile_forall_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_SEGMAP_H */
