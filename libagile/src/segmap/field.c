// SPDX-License-Identifier: MIT
/*
 * field.c - fields: storage in the nodes' home memories, views,
 * element get and put, gather and reduce, and the location table with
 * owner-copy (a node's private copy of another node's memory block).
 */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "segmap/segmap_impl.h"

static uint64_t block_bytes(const struct segmap_store *st, uint64_t b)
{
	uint64_t n = st->elem_size;

	for (uint32_t d = 0; d < st->rank; d++)
		n *= st->blocks[b].grid.extent.n[d];
	return n;
}

/*
 * The memory blocks and their places: node q's home holds its segments
 * in segment order, each segment's blocks in flatten order, each block
 * contiguous.  Every process computes the same from the map.
 */
static int layout(struct segmap_store *st, uint64_t *home_bytes)
{
	const struct agile_rmap *rm = st->rm;
	uint64_t total = 1;

	if (st->has_block) {
		for (uint32_t d = 0; d < st->rank; d++) {
			st->bgrid[d] =
				rm->parent.extent.n[d] / st->block_ext[d];
			total *= st->bgrid[d];
		}
	} else {
		total = rm->nr_segments;
	}
	st->nr_blocks = total;
	st->blocks = calloc(total, sizeof(*st->blocks));
	if (!st->blocks)
		return -ENOMEM;
	for (uint32_t s = 0; s < rm->nr_segments; s++) {
		const struct agile_grid *g = &rm->seg[s];
		uint32_t q = rm->node[s];
		uint64_t n[RANK_MAX], c[RANK_MAX], nr = 1;

		if (!st->has_block) {
			st->blocks[s].grid = *g;
			st->blocks[s].home = q;
			st->blocks[s].seg = s;
			st->blocks[s].off = home_bytes[q];
			home_bytes[q] += block_bytes(st, s);
			continue;
		}
		for (uint32_t d = 0; d < st->rank; d++) {
			n[d] = g->extent.n[d] / st->block_ext[d];
			nr *= n[d];
		}
		for (uint64_t k = 0; k < nr; k++) {
			int64_t first[RANK_MAX];
			uint64_t b;

			segmap_unflatten(st->rank, n, k, c);
			for (uint32_t d = 0; d < st->rank; d++)
				first[d] = g->offset.i[d] +
					   (int64_t)(c[d] * st->block_ext[d]);
			b = segmap_block_of(st, first);
			st->blocks[b].grid.extent.rank = st->rank;
			st->blocks[b].grid.offset.rank = st->rank;
			for (uint32_t d = 0; d < st->rank; d++) {
				st->blocks[b].grid.offset.i[d] = first[d];
				st->blocks[b].grid.extent.n[d] =
					st->block_ext[d];
			}
			st->blocks[b].home = q;
			st->blocks[b].seg = s;
			st->blocks[b].off = home_bytes[q];
			home_bytes[q] += block_bytes(st, b);
		}
	}
	return 0;
}

static void store_free(struct segmap_store *st)
{
	segmap_store_drop_copies(st);
	if (st->home)
		st->sm->scope->ops->home_free(st->sm->scope, st->home);
	if (st->copies)
		for (uint32_t q = 0; q < st->rm->nr_nodes; q++)
			free((void *)st->copies[q]);
	free((void *)st->copies);
	free(st->nr_copies);
	free((void *)st->moves);
	free((void *)st->bytes);
	free(st->blocks);
	pthread_mutex_destroy(&st->lock);
	atomic_fetch_sub_explicit(&st->sm->nr_fields, 1, memory_order_relaxed);
	segmap_rmap_put(st->rm);
	free(st);
}

static void identity_view(struct agile_field *f, const struct agile_grid *g)
{
	f->grid = *g;
	for (uint32_t d = 0; d < RANK_MAX; d++) {
		f->perm[d] = d;
		f->shift[d] = 0;
		f->step[d] = 1;
		f->fixed_at[d] = 0;
	}
	f->fixed = 0;
}

int agile_field_create(struct agile_segmap *sm, struct agile_rmap *rm,
		       const struct agile_levels *lv, size_t elem_size,
		       struct agile_field **out)
{
	struct segmap_scope *sc;
	struct segmap_store *st;
	struct agile_field *f;
	uint64_t *home_bytes;
	int err;

	segmap_why_clear();
	if (!sm || !rm || !out)
		return segmap_fail(-EINVAL, "field: NULL argument");
	sc = sm->scope;
	if (!elem_size || elem_size > SEGMAP_MAX_ELEM)
		return segmap_fail(-EINVAL, "field: element of %zu bytes",
				   elem_size);
	if (rm->nr_nodes != sc->nr_nodes)
		return segmap_fail(
			-EINVAL,
			"field: the resource map has %u nodes, the segment map %u",
			rm->nr_nodes, sc->nr_nodes);
	if (lv) {
		err = agile_levels_check(rm, lv);
		if (err)
			return err;
	}
	st = calloc(1, sizeof(*st));
	f = calloc(1, sizeof(*f));
	home_bytes = calloc(sc->nr_nodes, sizeof(*home_bytes));
	if (!st || !f || !home_bytes) {
		free(st);
		free(f);
		free(home_bytes);
		return -ENOMEM;
	}
	atomic_init(&st->refs, 1);
	st->sm = sm;
	st->rm = segmap_rmap_get(rm);
	atomic_fetch_add_explicit(&sm->nr_fields, 1, memory_order_relaxed);
	pthread_mutex_init(&st->lock, NULL);
	st->rank = rm->rank;
	st->elem_size = (uint32_t)elem_size;
	if (lv && lv->block.rank) {
		st->has_block = true;
		memcpy(st->block_ext, lv->block.n, sizeof(st->block_ext));
	}
	/* tiles: M1, else M2, else the map's own tiles */
	if (lv && lv->tile.rank) {
		st->has_tile = true;
		memcpy(st->tile_ext, lv->tile.n, sizeof(st->tile_ext));
	} else if (st->has_block) {
		st->has_tile = true;
		memcpy(st->tile_ext, st->block_ext, sizeof(st->tile_ext));
	} else if (rm->regular) {
		st->has_tile = true;
		memcpy(st->tile_ext, rm->tile, sizeof(st->tile_ext));
	}
	for (uint32_t d = 0; st->has_tile && d < st->rank; d++)
		st->tgrid[d] = (rm->parent.extent.n[d] + st->tile_ext[d] - 1) /
			       st->tile_ext[d];
	err = layout(st, home_bytes);
	if (!err) {
		st->copies = calloc(sc->nr_nodes, sizeof(*st->copies));
		st->nr_copies = calloc(st->nr_blocks, sizeof(*st->nr_copies));
		st->moves = calloc(sc->nr_nodes, sizeof(*st->moves));
		st->bytes = calloc(sc->nr_nodes, sizeof(*st->bytes));
		if (!st->copies || !st->nr_copies || !st->moves || !st->bytes)
			err = -ENOMEM;
	}
	/* collective: every process reaches the allocation */
	err = sc->ops->agree(sc, err);
	if (!err)
		err = sc->ops->home_alloc(sc, home_bytes, &st->home);
	free(home_bytes);
	if (err) {
		store_free(st);
		free(f);
		return err;
	}
	f->st = st;
	identity_view(f, &rm->parent);
	*out = f;
	return 0;
}

int agile_field_destroy(struct agile_field *f)
{
	struct segmap_store *st;

	if (!f)
		return -EINVAL;
	st = f->st;
	free(f);
	if (atomic_fetch_sub_explicit(&st->refs, 1, memory_order_acq_rel) == 1)
		store_free(st);
	return 0;
}

static int new_view(struct agile_field *f, struct agile_field **out)
{
	struct agile_field *v;

	if (!out)
		return segmap_fail(-EINVAL, "view: NULL result");
	v = malloc(sizeof(*v));
	if (!v)
		return -ENOMEM;
	*v = *f;
	atomic_fetch_add_explicit(&f->st->refs, 1, memory_order_relaxed);
	*out = v;
	return 0;
}

static int check_part(struct agile_field *f, const struct agile_grid *g)
{
	int err;

	if (!f)
		return segmap_fail(-EINVAL, "view: NULL field");
	err = segmap_check_grid(g, "view grid");
	if (err)
		return err;
	if (g->extent.rank != f->grid.extent.rank)
		return segmap_fail(-EINVAL, "view grid of rank %u, field of %u",
				   g->extent.rank, f->grid.extent.rank);
	if (!segmap_box_inside(&f->grid, g))
		return segmap_fail(-EINVAL,
				   "view grid is not inside the field's grid");
	return 0;
}

int agile_field_sub(struct agile_field *f, const struct agile_grid *g,
		    struct agile_field **out)
{
	int err;

	segmap_why_clear();
	err = check_part(f, g);
	if (err)
		return err;
	err = new_view(f, out);
	if (!err)
		(*out)->grid = *g;
	return err;
}

int agile_field_section(struct agile_field *f, const struct agile_grid *g,
			struct agile_field **out)
{
	int err;

	segmap_why_clear();
	err = check_part(f, g);
	if (err)
		return err;
	err = new_view(f, out);
	if (err)
		return err;
	(*out)->grid = *g;
	for (uint32_t d = 0; d < g->extent.rank; d++) {
		(*out)->grid.offset.i[d] = 0;
		(*out)->shift[d] += (*out)->step[d] * g->offset.i[d];
	}
	return 0;
}

int agile_field_transpose(struct agile_field *f, uint32_t a, uint32_t b,
			  struct agile_field **out)
{
	struct agile_field *v;
	uint32_t p;
	int64_t t;
	uint64_t n;
	int err;

	segmap_why_clear();
	if (!f)
		return segmap_fail(-EINVAL, "transpose: NULL field");
	if (a >= f->grid.extent.rank || b >= f->grid.extent.rank || a == b)
		return segmap_fail(
			-EINVAL, "transpose: axes %u and %u of a rank %u field",
			a, b, f->grid.extent.rank);
	err = new_view(f, out);
	if (err)
		return err;
	v = *out;
	p = v->perm[a], v->perm[a] = v->perm[b], v->perm[b] = p;
	t = v->shift[a], v->shift[a] = v->shift[b], v->shift[b] = t;
	t = v->step[a], v->step[a] = v->step[b], v->step[b] = t;
	n = v->grid.extent.n[a];
	v->grid.extent.n[a] = v->grid.extent.n[b];
	v->grid.extent.n[b] = n;
	t = v->grid.offset.i[a];
	v->grid.offset.i[a] = v->grid.offset.i[b];
	v->grid.offset.i[b] = t;
	return 0;
}

int agile_field_slice(struct agile_field *f, uint32_t axis, int64_t coord,
		      struct agile_field **out)
{
	struct agile_field *v;
	uint32_t rank;
	int64_t lo;
	int err;

	segmap_why_clear();
	if (!f)
		return segmap_fail(-EINVAL, "slice: NULL field");
	rank = f->grid.extent.rank;
	if (rank < 2)
		return segmap_fail(
			-EINVAL,
			"slice: a rank %u field has no lower-rank section",
			rank);
	if (axis >= rank)
		return segmap_fail(-EINVAL, "slice: axis %u of a rank %u field",
				   axis, rank);
	lo = f->grid.offset.i[axis];
	if ((uint64_t)coord - (uint64_t)lo >= f->grid.extent.n[axis])
		return segmap_fail(
			-EINVAL,
			"slice: coordinate %lld is outside axis %u's [%lld, %lld)",
			(long long)coord, axis, (long long)lo,
			(long long)(lo + (int64_t)f->grid.extent.n[axis]));
	err = new_view(f, out);
	if (err)
		return err;
	v = *out;
	v->fixed |= 1u << f->perm[axis];
	v->fixed_at[f->perm[axis]] = f->shift[axis] + f->step[axis] * coord;
	for (uint32_t a = axis; a + 1 < rank; a++) {
		v->perm[a] = v->perm[a + 1];
		v->shift[a] = v->shift[a + 1];
		v->step[a] = v->step[a + 1];
		v->grid.offset.i[a] = v->grid.offset.i[a + 1];
		v->grid.extent.n[a] = v->grid.extent.n[a + 1];
	}
	v->perm[rank - 1] = 0;
	v->shift[rank - 1] = 0;
	v->step[rank - 1] = 1;
	v->grid.offset.i[rank - 1] = 0;
	v->grid.extent.n[rank - 1] = 0;
	v->grid.extent.rank = rank - 1;
	v->grid.offset.rank = rank - 1;
	return 0;
}

int agile_field_stride(struct agile_field *f, uint32_t axis, uint64_t step,
		       struct agile_field **out)
{
	struct agile_field *v;
	uint64_t n;
	int64_t o, k;
	int err;

	segmap_why_clear();
	if (!f)
		return segmap_fail(-EINVAL, "stride: NULL field");
	if (axis >= f->grid.extent.rank)
		return segmap_fail(-EINVAL,
				   "stride: axis %u of a rank %u field", axis,
				   f->grid.extent.rank);
	if (!step)
		return segmap_fail(-EINVAL, "stride: step 0 along axis %u",
				   axis);
	n = f->grid.extent.n[axis];
	/* a step past the extent sees one element, as the extent does */
	k = (int64_t)(step < n ? step : n);
	err = new_view(f, out);
	if (err)
		return err;
	v = *out;
	o = f->grid.offset.i[axis];
	/* view index o + j is @f's o + j k: store shift + step (o + j k) */
	v->shift[axis] = f->shift[axis] - f->step[axis] * (k - 1) * o;
	v->step[axis] = f->step[axis] * k;
	v->grid.extent.n[axis] = (n + (uint64_t)k - 1) / (uint64_t)k;
	return 0;
}

int agile_field_grid(const struct agile_field *f, struct agile_grid *out)
{
	if (!f || !out)
		return -EINVAL;
	*out = f->grid;
	return 0;
}

bool segmap_view_to_store(const struct agile_field *f, const int64_t *idx,
			  int64_t *s)
{
	for (uint32_t d = 0; d < f->grid.extent.rank; d++) {
		if ((uint64_t)idx[d] - (uint64_t)f->grid.offset.i[d] >=
		    f->grid.extent.n[d]) {
			char str[128];

			segmap_format_index(str, sizeof(str),
					    f->grid.extent.rank, idx);
			segmap_fail(
				-ERANGE,
				"index %s is out of range: axis %u outside the field",
				str, d);
			return false;
		}
	}
	segmap_view_store(f, idx, s);
	return true;
}

/* ceil(@a / @b) for @b >= 1 */
static int64_t div_up(int64_t a, int64_t b)
{
	if (b == 1)
		return a;
	return a >= 0 ? (a + b - 1) / b : -(-a / b);
}

void segmap_view_range(const struct agile_field *f, uint32_t a, int64_t lo,
		       int64_t hi, int64_t *ilo, int64_t *ihi)
{
	/* shift + step i in [lo, hi) */
	*ilo = div_up(lo - f->shift[a], f->step[a]);
	*ihi = div_up(hi - f->shift[a], f->step[a]);
	if (*ihi < *ilo)
		*ihi = *ilo;
}

bool segmap_box_to_view(const struct agile_field *f,
			const struct agile_grid *box, struct agile_grid *out)
{
	struct agile_grid v = f->grid;

	for (uint32_t d = 0; d < f->st->rank; d++)
		if ((f->fixed & (1u << d)) &&
		    (uint64_t)f->fixed_at[d] - (uint64_t)box->offset.i[d] >=
			    box->extent.n[d])
			return false;
	for (uint32_t a = 0; a < f->grid.extent.rank; a++) {
		uint32_t s = f->perm[a];
		int64_t lo, hi;

		segmap_view_range(f, a, box->offset.i[s],
				  box->offset.i[s] + (int64_t)box->extent.n[s],
				  &lo, &hi);
		if (hi == lo)
			return false;
		v.offset.i[a] = lo;
		v.extent.n[a] = (uint64_t)(hi - lo);
	}
	return segmap_box_meet(&v, &f->grid, out);
}

/* Byte offset of store index @s inside block @b. */
static uint64_t in_block(const struct segmap_store *st, uint64_t b,
			 const int64_t *s)
{
	const struct agile_grid *g = &st->blocks[b].grid;
	uint64_t c[RANK_MAX];

	for (uint32_t d = 0; d < st->rank; d++)
		c[d] = (uint64_t)(s[d] - g->offset.i[d]);
	return segmap_flatten(st->rank, g->extent.n, c) * st->elem_size;
}

static int element_at(struct agile_field *f, const struct agile_index *idx,
		      uint64_t *b, uint64_t *off)
{
	int64_t s[RANK_MAX];

	segmap_why_clear();
	if (!f || !idx)
		return segmap_fail(-EINVAL, "element: NULL argument");
	if (idx->rank != f->grid.extent.rank)
		return segmap_fail(-EINVAL,
				   "index of rank %u, field of rank %u",
				   idx->rank, f->grid.extent.rank);
	if (!segmap_view_to_store(f, idx->i, s))
		return -ERANGE;
	*b = segmap_block_of(f->st, s);
	*off = f->st->blocks[*b].off + in_block(f->st, *b, s);
	return 0;
}

int agile_field_get(struct agile_field *f, const struct agile_index *idx,
		    void *elem)
{
	uint64_t b, off;
	int err = element_at(f, idx, &b, &off);

	if (err)
		return err;
	if (!elem)
		return segmap_fail(-EINVAL, "get: NULL element");
	return f->st->sm->scope->ops->home_get(f->st->home,
					       f->st->blocks[b].home, off, elem,
					       f->st->elem_size);
}

/*
 * tab[b] while one thread makes node's copy of block b: the others that
 * need it wait for the address (or for NULL again, when the copy failed,
 * to try themselves).  No lock is held across the copy, so copies of
 * different blocks, and of one block for different nodes, go on at once.
 */
static const unsigned char copy_busy_marker;
#define COPY_BUSY ((unsigned char *)&copy_busy_marker)

/*
 * Free this process's copies of block @b (with @st->lock held, which
 * serialises drops; a copy being made meanwhile, against the calls'
 * contracts, is left to finish).
 */
static void drop_block(struct segmap_store *st, uint64_t b)
{
	for (uint32_t q = 0; q < st->rm->nr_nodes; q++) {
		_Atomic(unsigned char *) *tab = atomic_load_explicit(
			&st->copies[q], memory_order_relaxed);
		unsigned char *p;

		if (!tab)
			continue;
		p = atomic_load_explicit(&tab[b], memory_order_acquire);
		if (p == COPY_BUSY ||
		    !atomic_compare_exchange_strong_explicit(
			    &tab[b], &p, NULL, memory_order_acquire,
			    memory_order_relaxed))
			continue;
		if (p) {
			free(p);
			atomic_fetch_sub_explicit(&st->nr_copies[b], 1,
						  memory_order_relaxed);
		}
	}
}

int agile_field_put(struct agile_field *f, const struct agile_index *idx,
		    const void *elem)
{
	uint64_t b, off;
	int err = element_at(f, idx, &b, &off);

	if (err)
		return err;
	if (!elem)
		return segmap_fail(-EINVAL, "put: NULL element");
	pthread_mutex_lock(&f->st->lock);
	drop_block(f->st, b);
	pthread_mutex_unlock(&f->st->lock);
	return f->st->sm->scope->ops->home_put(f->st->home,
					       f->st->blocks[b].home, off, elem,
					       f->st->elem_size);
}

void segmap_store_drop_copies(struct segmap_store *st)
{
	if (!st->copies)
		return;
	pthread_mutex_lock(&st->lock);
	for (uint64_t b = 0; b < st->nr_blocks; b++)
		drop_block(st, b);
	pthread_mutex_unlock(&st->lock);
}

int agile_field_drop_copies(struct agile_field *f)
{
	if (!f)
		return -EINVAL;
	segmap_store_drop_copies(f->st);
	return 0;
}

/* Node @node's row of the copy table, made on first use. */
static _Atomic(unsigned char *) *copy_table(struct segmap_store *st,
					    uint32_t node)
{
	_Atomic(unsigned char *) *tab, *mine, *none = NULL;

	/* acquire: pairs with the release CAS below */
	tab = atomic_load_explicit(&st->copies[node], memory_order_acquire);
	if (tab)
		return tab;
	mine = calloc(st->nr_blocks, sizeof(*mine));
	if (!mine)
		return NULL;
	if (atomic_compare_exchange_strong_explicit(&st->copies[node], &none,
						    mine, memory_order_acq_rel,
						    memory_order_acquire))
		return mine;
	free((void *)mine); /* another thread's row won */
	return none;
}

int segmap_block_addr(struct agile_field *f, uint64_t b, uint32_t node,
		      bool direct, unsigned char **addr, int *moved)
{
	struct segmap_store *st = f->st;
	const struct segmap_scope_ops *ops = st->sm->scope->ops;
	const struct segmap_block *blk = &st->blocks[b];
	_Atomic(unsigned char *) *tab;
	unsigned char *p, *home;
	uint64_t bytes;
	int err;

	*moved = 0;
	if (blk->home == node || direct) {
		home = ops->home_addr(st->home, blk->home);
		if (!home)
			return -EPROTO;
		*addr = home + blk->off;
		return 0;
	}
	tab = copy_table(st, node);
	if (!tab)
		return -ENOMEM;
	for (;;) {
		/* acquire: pairs with the release store of a finished copy */
		p = atomic_load_explicit(&tab[b], memory_order_acquire);
		if (p && p != COPY_BUSY) {
			*addr = p;
			return 0;
		}
		if (!p && atomic_compare_exchange_weak_explicit(
				  &tab[b], &p, COPY_BUSY, memory_order_acquire,
				  memory_order_relaxed))
			break; /* this thread makes the copy */
		if (p == COPY_BUSY)
			sched_yield(); /* another makes it: a block's copy */
	}
	bytes = block_bytes(st, b);
	p = bytes <= SIZE_MAX ? malloc(bytes ? (size_t)bytes : 1) : NULL;
	err = p ? ops->home_get(st->home, blk->home, blk->off, p,
				(size_t)bytes) :
		  -ENOMEM;
	if (err) {
		free(p);
		/* release the claim: a waiter tries (and fails) itself */
		atomic_store_explicit(&tab[b], NULL, memory_order_release);
		return err;
	}
	atomic_fetch_add_explicit(&st->nr_copies[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&st->moves[node], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&st->bytes[node], bytes,
				  memory_order_relaxed);
	/* release: the copy's bytes (and its count) before its address */
	atomic_store_explicit(&tab[b], p, memory_order_release);
	*moved = 1;
	if (st->trace)
		st->trace(f, b, blk->home, node, st->trace_arg);
	*addr = p;
	return 0;
}

int agile_field_stats(const struct agile_field *f, uint32_t node,
		      struct agile_field_stats *stats)
{
	const struct segmap_store *st;

	if (!f || !stats)
		return -EINVAL;
	st = f->st;
	if (node != AGILE_SEGMAP_ALL_NODES && node >= st->rm->nr_nodes)
		return -EINVAL;
	stats->moves = stats->bytes = 0;
	for (uint32_t q = 0; q < st->rm->nr_nodes; q++) {
		if (node != AGILE_SEGMAP_ALL_NODES && q != node)
			continue;
		stats->moves += atomic_load_explicit(&st->moves[q],
						     memory_order_relaxed);
		stats->bytes += atomic_load_explicit(&st->bytes[q],
						     memory_order_relaxed);
	}
	return 0;
}

int agile_field_stats_reset(struct agile_field *f)
{
	if (!f)
		return -EINVAL;
	for (uint32_t q = 0; q < f->st->rm->nr_nodes; q++) {
		atomic_store_explicit(&f->st->moves[q], 0,
				      memory_order_relaxed);
		atomic_store_explicit(&f->st->bytes[q], 0,
				      memory_order_relaxed);
	}
	return 0;
}

int agile_field_set_trace(struct agile_field *f, agile_field_trace_fn fn,
			  void *arg)
{
	if (!f)
		return -EINVAL;
	f->st->trace = fn;
	f->st->trace_arg = arg;
	return 0;
}

int agile_field_block_where(const struct agile_field *f, uint64_t block,
			    uint32_t *home, uint32_t *nr_copies)
{
	if (!f || !home)
		return -EINVAL;
	if (block >= f->st->nr_blocks)
		return -ERANGE;
	*home = f->st->blocks[block].home;
	if (nr_copies)
		*nr_copies = atomic_load_explicit(&f->st->nr_copies[block],
						  memory_order_relaxed);
	return 0;
}

int agile_field_block_held(const struct agile_field *f, uint64_t block,
			   uint32_t node)
{
	_Atomic(unsigned char *) *tab;

	if (!f || node >= f->st->rm->nr_nodes)
		return -EINVAL;
	if (block >= f->st->nr_blocks)
		return -ERANGE;
	if (f->st->blocks[block].home == node)
		return 1;
	tab = atomic_load_explicit(&f->st->copies[node], memory_order_acquire);
	return tab && atomic_load_explicit(&tab[block], memory_order_acquire);
}

/* ---- whole-field reads ---- */

/*
 * Call @fn on every run of the part of block @b that view @f covers,
 * along the view axis that is store axis 0 (else view axis 0): @src the
 * run's first byte in the block, @src_step the elements between its
 * neighbours there, @dst_elem the flatten position of its first element
 * in @f's grid, @dst_step the distance in @f's flatten order between
 * neighbours.
 */
typedef void (*run_fn)(const unsigned char *src, uint64_t src_step,
		       uint64_t dst_elem, uint64_t dst_step, uint64_t n,
		       void *arg);

static void walk_block(const struct agile_field *f, uint64_t b,
		       const unsigned char *bytes, run_fn fn, void *arg)
{
	const struct segmap_store *st = f->st;
	const struct agile_grid *sbox = &st->blocks[b].grid;
	struct agile_grid part;
	uint64_t vmul[RANK_MAX], smul[RANK_MAX], sstep[RANK_MAX];
	uint64_t m[RANK_MAX], c[RANK_MAX], rows = 1, src0 = 0, dst0 = 0;
	uint32_t axes[RANK_MAX], nr = 0, run = 0;
	uint32_t rank = f->grid.extent.rank;
	int64_t s[RANK_MAX];

	if (!segmap_box_to_view(f, sbox, &part))
		return;
	for (uint32_t d = 0; d < st->rank; d++)
		smul[d] = d ? smul[d - 1] * sbox->extent.n[d - 1] : 1;
	for (uint32_t a = 0; a < rank; a++) {
		vmul[a] = a ? vmul[a - 1] * f->grid.extent.n[a - 1] : 1;
		sstep[a] = smul[f->perm[a]] * (uint64_t)f->step[a];
		if (f->perm[a] == 0)
			run = a;
	}
	/* the other axes, whose every combination is a run */
	for (uint32_t a = 0; a < rank; a++) {
		if (a == run)
			continue;
		axes[nr] = a;
		m[nr++] = part.extent.n[a];
		rows *= part.extent.n[a];
	}
	segmap_view_store(f, part.offset.i, s);
	for (uint32_t d = 0; d < st->rank; d++)
		src0 += (uint64_t)(s[d] - sbox->offset.i[d]) * smul[d];
	for (uint32_t a = 0; a < rank; a++)
		dst0 += (uint64_t)(part.offset.i[a] - f->grid.offset.i[a]) *
			vmul[a];
	for (uint64_t r = 0; r < rows; r++) {
		uint64_t src = src0, dst = dst0;

		if (nr)
			segmap_unflatten(nr, m, r, c);
		for (uint32_t k = 0; k < nr; k++) {
			src += c[k] * sstep[axes[k]];
			dst += c[k] * vmul[axes[k]];
		}
		fn(bytes + src * st->elem_size, sstep[run], dst, vmul[run],
		   part.extent.n[run], arg);
	}
}

/* The bytes of block @b as this process can read them: home or a get. */
static int block_bytes_here(const struct segmap_store *st, uint64_t b,
			    unsigned char **tmp, const unsigned char **out)
{
	const struct segmap_scope_ops *ops = st->sm->scope->ops;
	unsigned char *home = ops->home_addr(st->home, st->blocks[b].home);
	uint64_t bytes = block_bytes(st, b);

	if (home && segmap_scope_local(st->sm->scope, st->blocks[b].home)) {
		*out = home + st->blocks[b].off;
		return 0;
	}
	free(*tmp);
	*tmp = bytes <= SIZE_MAX ? malloc(bytes ? (size_t)bytes : 1) : NULL;
	if (!*tmp)
		return -ENOMEM;
	*out = *tmp;
	return ops->home_get(st->home, st->blocks[b].home, st->blocks[b].off,
			     *tmp, (size_t)bytes);
}

struct gather_arg {
	unsigned char *dst;
	uint32_t elem_size;
};

static void gather_run(const unsigned char *src, uint64_t src_step,
		       uint64_t dst_elem, uint64_t dst_step, uint64_t n,
		       void *arg)
{
	struct gather_arg *g = arg;

	for (uint64_t k = 0; k < n; k++)
		memcpy(g->dst + (dst_elem + k * dst_step) * g->elem_size,
		       src + k * src_step * g->elem_size, g->elem_size);
}

int agile_field_gather(struct agile_field *f, void *dst, size_t bytes)
{
	struct gather_arg g;
	unsigned char *tmp = NULL;
	uint64_t total;
	int err;

	segmap_why_clear();
	if (!f || !dst)
		return segmap_fail(-EINVAL, "gather: NULL argument");
	err = agile_extent_total(&f->grid.extent, &total);
	if (err)
		return err;
	if (total > bytes / f->st->elem_size)
		return segmap_fail(-ENOSPC,
				   "gather: %zu bytes for %llu elements", bytes,
				   (unsigned long long)total);
	g.dst = dst;
	g.elem_size = f->st->elem_size;
	for (uint64_t b = 0; b < f->st->nr_blocks; b++) {
		struct agile_grid part;
		const unsigned char *src;

		if (!segmap_box_to_view(f, &f->st->blocks[b].grid, &part))
			continue;
		err = block_bytes_here(f->st, b, &tmp, &src);
		if (err)
			break;
		walk_block(f, b, src, gather_run, &g);
	}
	free(tmp);
	return err;
}

struct reduce_arg {
	uint32_t size;
	enum agile_coll_type type;
	enum agile_coll_op op;
	union {
		int32_t i32;
		int64_t i64;
		float f32;
		double f64;
	} acc;
};

#define REDUCE_ONE(FIELD, T, V)                                               \
	do {                                                                  \
		T v_ = (V);                                                   \
		switch (r->op) {                                              \
		case AGILE_COLL_SUM:                                          \
			r->acc.FIELD += v_;                                   \
			break;                                                \
		case AGILE_COLL_PROD:                                         \
			r->acc.FIELD *= v_;                                   \
			break;                                                \
		case AGILE_COLL_MIN:                                          \
			r->acc.FIELD = v_ < r->acc.FIELD ? v_ : r->acc.FIELD; \
			break;                                                \
		default:                                                      \
			r->acc.FIELD = v_ > r->acc.FIELD ? v_ : r->acc.FIELD; \
			break;                                                \
		}                                                             \
	} while (0)

static void reduce_run(const unsigned char *src0, uint64_t src_step,
		       uint64_t dst_elem, uint64_t dst_step, uint64_t n,
		       void *arg)
{
	struct reduce_arg *r = arg;

	(void)dst_elem;
	(void)dst_step;
	for (uint64_t k = 0; k < n; k++) {
		const unsigned char *src = src0 + k * src_step * r->size;

		switch (r->type) {
		case AGILE_COLL_INT32: {
			int32_t v;

			memcpy(&v, src, 4);
			/* wrap around, as coll's integer sum and prod do */
			if (r->op == AGILE_COLL_SUM)
				r->acc.i32 = (int32_t)((uint32_t)r->acc.i32 +
						       (uint32_t)v);
			else if (r->op == AGILE_COLL_PROD)
				r->acc.i32 = (int32_t)((uint32_t)r->acc.i32 *
						       (uint32_t)v);
			else
				REDUCE_ONE(i32, int32_t, v);
			break;
		}
		case AGILE_COLL_INT64: {
			int64_t v;

			memcpy(&v, src, 8);
			if (r->op == AGILE_COLL_SUM)
				r->acc.i64 = (int64_t)((uint64_t)r->acc.i64 +
						       (uint64_t)v);
			else if (r->op == AGILE_COLL_PROD)
				r->acc.i64 = (int64_t)((uint64_t)r->acc.i64 *
						       (uint64_t)v);
			else
				REDUCE_ONE(i64, int64_t, v);
			break;
		}
		case AGILE_COLL_FLOAT: {
			float v;

			memcpy(&v, src, 4);
			REDUCE_ONE(f32, float, v);
			break;
		}
		default: {
			double v;

			memcpy(&v, src, 8);
			REDUCE_ONE(f64, double, v);
			break;
		}
		}
	}
}

static void reduce_identity(struct reduce_arg *r)
{
	bool min = r->op == AGILE_COLL_MIN, max = r->op == AGILE_COLL_MAX;
	int one = r->op == AGILE_COLL_PROD;

	switch (r->type) {
	case AGILE_COLL_INT32:
		r->acc.i32 = min ? INT32_MAX : max ? INT32_MIN : one;
		break;
	case AGILE_COLL_INT64:
		r->acc.i64 = min ? INT64_MAX : max ? INT64_MIN : one;
		break;
	case AGILE_COLL_FLOAT:
		r->acc.f32 = min ? FLT_MAX : max ? -FLT_MAX : (float)one;
		break;
	default:
		r->acc.f64 = min ? DBL_MAX : max ? -DBL_MAX : (double)one;
		break;
	}
}

int agile_field_reduce(struct agile_field *f, enum agile_coll_type type,
		       enum agile_coll_op op, void *result)
{
	struct segmap_scope *sc;
	struct reduce_arg r;
	unsigned char *tmp = NULL;
	int err = 0;

	segmap_why_clear();
	if (!f || !result)
		return segmap_fail(-EINVAL, "reduce: NULL argument");
	if (type != AGILE_COLL_INT32 && type != AGILE_COLL_INT64 &&
	    type != AGILE_COLL_FLOAT && type != AGILE_COLL_DOUBLE)
		return segmap_fail(-EINVAL, "reduce: type %d not reduced here",
				   (int)type);
	if (op != AGILE_COLL_SUM && op != AGILE_COLL_MIN &&
	    op != AGILE_COLL_MAX && op != AGILE_COLL_PROD)
		return segmap_fail(-EINVAL, "reduce: op %d not reduced here",
				   (int)op);
	if (agile_coll_type_size(type) != f->st->elem_size)
		return segmap_fail(-EINVAL,
				   "reduce: elements of %u bytes, type of %zu",
				   f->st->elem_size,
				   agile_coll_type_size(type));
	sc = f->st->sm->scope;
	r.size = f->st->elem_size;
	r.type = type;
	r.op = op;
	reduce_identity(&r);
	for (uint64_t b = 0; b < f->st->nr_blocks && !err; b++) {
		const unsigned char *src;

		/* each process its own nodes' blocks */
		if (!segmap_scope_local(sc, f->st->blocks[b].home))
			continue;
		err = block_bytes_here(f->st, b, &tmp, &src);
		if (!err)
			walk_block(f, b, src, reduce_run, &r);
	}
	free(tmp);
	err = sc->ops->agree(sc, err);
	if (err)
		return err;
	return sc->ops->allreduce(sc, &r.acc, result, 1, type, op);
}
