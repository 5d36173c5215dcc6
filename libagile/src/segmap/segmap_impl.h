/* SPDX-License-Identifier: MIT */
/*
 * segmap_impl.h - what the files of the segmap core share: the segment
 * map, resource map, field storage and view structures, and the lookups
 * between indices, segments and memory blocks.  Private.
 *
 * Coordinates: a field's STORAGE is indexed in the resource map's parent
 * grid ("store coordinates"); a view (sub-field, section, transpose,
 * slice, stride) maps its own index (its own rank, <= the store's) to
 * storage as store[perm[a]] = shift[a] + step[a] * idx[a] for each of
 * its axes a, and store[d] = fixed_at[d] for each store axis d in
 * @fixed (a slice's).
 */
#ifndef AGILE_SEGMAP_IMPL_H
#define AGILE_SEGMAP_IMPL_H

#include <agile/segmap.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "segmap/scope.h"

#define RANK_MAX AGILE_SEGMAP_MAX_RANK

/* Most cells an irregular map's lookup table may have. */
#define SEGMAP_MAX_CELLS (1u << 24)
/* Most fields one forall takes. */
#define SEGMAP_FORALL_MAX_FIELDS 16
/* Largest element. */
#define SEGMAP_MAX_ELEM 4096

struct agile_segmap {
	struct segmap_scope *scope;
	struct agile_sched *pool;
	atomic_uint nr_fields;
	/*
	 * Balance mode's queue words in the procs scope: a line per node,
	 * shared by the processes (forall.c); made by the first balanced
	 * forall, freed with the map.
	 */
	struct segmap_home *queues;
};

/*
 * A resource map.  Segments are boxes of @parent.  Lookups: a tile map
 * (@regular) divides by @tile per axis; any other map searches each
 * axis's cell boundaries (@starts: the distinct first indices of the
 * segments along that axis, sorted) and reads the cell's segment from
 * @cell_seg, so an explicit list is looked up as fast as a split map.
 */
struct agile_rmap {
	atomic_uint refs;
	uint32_t rank;
	uint32_t nr_nodes;
	uint32_t nr_segments;
	struct agile_grid parent;
	struct agile_grid *seg;
	uint32_t *node;
	bool regular;
	uint64_t tile[RANK_MAX]; /* regular: the tile extent */
	uint64_t tgrid[RANK_MAX]; /* regular: tiles per axis */
	uint32_t nr_starts[RANK_MAX]; /* irregular: cells per axis */
	int64_t *starts[RANK_MAX];
	uint32_t *cell_seg;
};

/* One memory block of a field's storage. */
struct segmap_block {
	struct agile_grid grid; /* store coordinates */
	uint64_t off; /* byte offset in its home node's memory */
	uint32_t home; /* the node whose segment holds it */
	uint32_t seg;
};

/*
 * A field's storage, shared by the field and its views (@refs).  The
 * location table is @blocks (each block's home) plus, per node, the
 * copies this process made for it (@copies[node][block]: a row made on
 * first use by a CAS; an entry claimed by a CAS from NULL to a busy
 * marker by the one thread that copies the block, then set by a release
 * store to the copy; read with acquire loads; no lock across a copy).
 */
struct segmap_store {
	atomic_uint refs;
	struct agile_segmap *sm;
	struct agile_rmap *rm;
	uint32_t rank;
	uint32_t elem_size;
	bool has_block;
	uint64_t block_ext[RANK_MAX]; /* has_block: M2 */
	uint64_t bgrid[RANK_MAX]; /* has_block: blocks per axis */
	bool has_tile;
	uint64_t tile_ext[RANK_MAX]; /* M1 (or M2, or the map's tile) */
	uint64_t tgrid[RANK_MAX];
	uint64_t nr_blocks;
	struct segmap_block *blocks;
	struct segmap_home *home;
	pthread_mutex_t lock; /* serialises dropping copies */
	_Atomic(unsigned char *) *_Atomic *copies; /* [nr_nodes][nr_blocks] */
	atomic_uint *nr_copies; /* [nr_blocks] */
	_Atomic uint64_t *moves; /* [nr_nodes] */
	_Atomic uint64_t *bytes; /* [nr_nodes] */
	agile_field_trace_fn trace;
	void *trace_arg;
};

struct agile_field {
	struct segmap_store *st;
	struct agile_grid grid; /* the view's own index domain */
	uint32_t perm[RANK_MAX]; /* view axis -> store axis */
	int64_t shift[RANK_MAX]; /* per view axis */
	int64_t step[RANK_MAX]; /* per view axis, >= 1 */
	uint32_t fixed; /* bit d: store axis d is fixed (a slice) */
	int64_t fixed_at[RANK_MAX]; /* per store axis in @fixed */
};

/* grid.c */
int segmap_fail(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void segmap_why_clear(void);
int segmap_check_extent(const struct agile_extent *e, const char *what);
int segmap_check_grid(const struct agile_grid *g, const char *what);
bool segmap_box_inside(const struct agile_grid *in, const struct agile_grid *g);
/* the box @a and @b share, false if none */
bool segmap_box_meet(const struct agile_grid *a, const struct agile_grid *b,
		     struct agile_grid *out);
uint64_t segmap_flatten(uint32_t rank, const uint64_t *dims,
			const uint64_t *coord);
void segmap_unflatten(uint32_t rank, const uint64_t *dims, uint64_t flat,
		      uint64_t *coord);
int segmap_format_index(char *buf, size_t size, uint32_t rank,
			const int64_t *idx);

/* rmap.c */
struct agile_rmap *segmap_rmap_get(struct agile_rmap *rm);
void segmap_rmap_put(struct agile_rmap *rm);
/* the segment of store index @s (inside the parent: not checked) */
uint32_t segmap_rmap_lookup(const struct agile_rmap *rm, const int64_t *s);
/*
 * The memory block of store index @s: flatten order over the grid of
 * @block_ext blocks, or the segment where @block_ext is NULL.  The one
 * numbering agile_levels_block_of and the fields share.
 */
uint64_t segmap_levels_block(const struct agile_rmap *rm,
			     const uint64_t *block_ext, const int64_t *s);

/* field.c */
/* the memory block of store index @s (inside the parent) */
static inline uint64_t segmap_block_of(const struct segmap_store *st,
				       const int64_t *s)
{
	return segmap_levels_block(st->rm, st->has_block ? st->block_ext : NULL,
				   s);
}
/* view index -> store index, @idx inside the view (not checked) */
static inline void segmap_view_store(const struct agile_field *f,
				     const int64_t *idx, int64_t *s)
{
	for (uint32_t d = 0; d < f->st->rank; d++)
		if (f->fixed & (1u << d))
			s[d] = f->fixed_at[d];
	for (uint32_t a = 0; a < f->grid.extent.rank; a++)
		s[f->perm[a]] = f->shift[a] + f->step[a] * idx[a];
}
/*
 * The view indices i of axis @a whose store coordinate lies in [@lo,
 * @hi): [*@ilo, *@ihi), maybe empty.
 */
void segmap_view_range(const struct agile_field *f, uint32_t a, int64_t lo,
		       int64_t hi, int64_t *ilo, int64_t *ihi);
/* view index -> store index; false (and a why) when outside the view */
bool segmap_view_to_store(const struct agile_field *f, const int64_t *idx,
			  int64_t *s);
/* a store box as seen through view @f, clipped to its grid */
bool segmap_box_to_view(const struct agile_field *f,
			const struct agile_grid *box, struct agile_grid *out);
/*
 * The address of block @b's bytes for @node: its home where @node is
 * the home (or @direct and the home is addressable here), else this
 * process's copy for @node, made now if there is none (owner-copy,
 * counted, traced as a move of @f).  *@moved: 1 if it moved now.
 */
int segmap_block_addr(struct agile_field *f, uint64_t b, uint32_t node,
		      bool direct, unsigned char **addr, int *moved);
void segmap_store_drop_copies(struct segmap_store *st);

/* access.c */
/* fill @acc's cache for block @b at address @addr */
void segmap_acc_cache(struct agile_acc *acc, uint64_t b, unsigned char *addr);

#endif /* AGILE_SEGMAP_IMPL_H */
