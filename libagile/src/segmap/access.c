// SPDX-License-Identifier: MIT
/*
 * access.c - the two views of a field from a node: the full global view
 * (struct agile_acc: the inline checked fast path of agile/segmap.h, the
 * miss path here) and the local global view (algorithmic tiles, explicit
 * moves, a cursor over a node's segments).
 */
#include <errno.h>
#include <string.h>

#include "segmap/segmap_impl.h"

int agile_acc_init(struct agile_acc *acc, struct agile_field *f, uint32_t node,
		   uint32_t mode)
{
	segmap_why_clear();
	if (!acc || !f)
		return segmap_fail(-EINVAL, "accessor: NULL argument");
	if (!mode || (mode & ~AGILE_ACC_RW))
		return segmap_fail(-EINVAL, "accessor: mode %#x", mode);
	if (node >= f->st->rm->nr_nodes ||
	    !segmap_scope_local(f->st->sm->scope, node))
		return segmap_fail(-EINVAL,
				   "accessor: node %u is not this process's",
				   node);
	memset(acc, 0, sizeof(*acc));
	acc->field = f;
	acc->node = node;
	acc->mode = mode;
	acc->rank = f->grid.extent.rank;
	acc->elem_size = f->st->elem_size;
	acc->block = UINT64_MAX;
	return 0;
}

/* Strides (elements) of a block's axes, store order. */
static void block_strides(const struct segmap_store *st, uint64_t b,
			  uint64_t *smul)
{
	const struct agile_grid *g = &st->blocks[b].grid;

	for (uint32_t d = 0; d < st->rank; d++)
		smul[d] = d ? smul[d - 1] * g->extent.n[d - 1] : 1;
}

void segmap_acc_cache(struct agile_acc *acc, uint64_t b, unsigned char *addr)
{
	const struct agile_field *f = acc->field;
	const struct agile_grid *g = &f->st->blocks[b].grid;
	uint64_t smul[RANK_MAX], off = 0;

	block_strides(f->st, b, smul);
	/* a slice's fixed axes: the block holds the fixed coordinate */
	for (uint32_t d = 0; f->fixed && d < f->st->rank; d++)
		if (f->fixed & (1u << d))
			off += (uint64_t)(f->fixed_at[d] - g->offset.i[d]) *
			       smul[d];
	for (uint32_t a = 0; a < acc->rank; a++) {
		uint32_t s = f->perm[a];
		int64_t lo, hi;
		int64_t glo = f->grid.offset.i[a];
		int64_t ghi = glo + (int64_t)f->grid.extent.n[a];

		/* the view indices whose store coordinate is in the block */
		segmap_view_range(f, a, g->offset.i[s],
				  g->offset.i[s] + (int64_t)g->extent.n[s], &lo,
				  &hi);
		/* clipped to the view, so that outside it misses */
		if (glo > lo)
			lo = glo;
		if (ghi < hi)
			hi = ghi;
		if (hi < lo)
			hi = lo;
		off += (uint64_t)(f->shift[a] + f->step[a] * lo -
				  g->offset.i[s]) *
		       smul[s];
		acc->lo[a] = lo;
		acc->ext[a] = (uint64_t)(hi - lo);
		acc->stride[a] = (int64_t)smul[s] * f->step[a];
	}
	acc->base = addr + off * acc->elem_size;
	acc->block = b;
}

static int acc_error(struct agile_acc *acc, int err)
{
	if (!acc->err)
		acc->err = err;
	return err;
}

/*
 * Where block @b is for a use of @mode from @node: writes only to the
 * node's own blocks, or, for a thief of balance mode, to the owner's
 * home where this process can address it.
 */
static int reach_block(struct agile_field *f, uint64_t b, uint32_t node,
		       uint32_t mode, bool thief, unsigned char **addr)
{
	const struct segmap_store *st = f->st;
	uint32_t home = st->blocks[b].home;
	bool direct = false;
	int moved;

	if ((mode & AGILE_ACC_WRITE) && home != node) {
		if (!thief || !st->sm->scope->ops->home_addr(st->home, home))
			return segmap_fail(
				-EACCES,
				"node %u may not write memory block %llu: node %u holds it",
				node, (unsigned long long)b, home);
		direct = true;
	}
	return segmap_block_addr(f, b, node, direct, addr, &moved);
}

int agile_acc_miss(struct agile_acc *acc, const int64_t *idx, void **out)
{
	struct agile_field *f;
	int64_t s[RANK_MAX];
	unsigned char *addr;
	uint64_t b;
	int err;

	if (!acc || !acc->field || !idx || !out)
		return -EINVAL;
	f = acc->field;
	if (!segmap_view_to_store(f, idx, s))
		return acc_error(acc, -ERANGE);
	b = segmap_block_of(f->st, s);
	err = reach_block(f, b, acc->node, acc->mode, acc->thief, &addr);
	if (err)
		return acc_error(acc, err);
	segmap_acc_cache(acc, b, addr);
	return agile_acc_ptr(acc, idx, out);
}

/* ---- tiles ---- */

/* Store axis @d of @box: tile @t of it (clipped to the parent). */
static void tile_axis(const struct segmap_store *st, uint32_t d, uint64_t t,
		      struct agile_grid *box)
{
	const struct agile_grid *parent = &st->rm->parent;
	uint64_t lo = t * st->tile_ext[d], hi = lo + st->tile_ext[d];

	if (hi > parent->extent.n[d])
		hi = parent->extent.n[d];
	box->offset.i[d] = parent->offset.i[d] + (int64_t)lo;
	box->extent.n[d] = hi - lo;
}

/*
 * Tile @tile_idx of view @f: tile coordinates are global, counted from
 * the parent grid's origin in units of M1, along @f's axes (a slice's
 * fixed axes: the tile holding the fixed coordinate).  *@box gets the
 * tile's store box (clipped to the parent), *@vt the part of it @f sees;
 * false (-ERANGE) when @f sees none of it (a strided view may skip a
 * tile).
 */
static bool tile_box(const struct agile_field *f, const int64_t *tile_idx,
		     struct agile_grid *box, struct agile_grid *vt)
{
	const struct segmap_store *st = f->st;
	const struct agile_grid *parent = &st->rm->parent;

	*box = *parent;
	for (uint32_t d = 0; d < st->rank; d++)
		if (f->fixed & (1u << d))
			tile_axis(st, d,
				  (uint64_t)(f->fixed_at[d] -
					     parent->offset.i[d]) /
					  st->tile_ext[d],
				  box);
	for (uint32_t a = 0; a < f->grid.extent.rank; a++) {
		uint32_t d = f->perm[a];

		if (tile_idx[a] < 0 || (uint64_t)tile_idx[a] >= st->tgrid[d]) {
			segmap_fail(
				-ERANGE,
				"tile coordinate %lld on axis %u is out of range",
				(long long)tile_idx[a], a);
			return false;
		}
		tile_axis(st, d, (uint64_t)tile_idx[a], box);
	}
	if (!segmap_box_to_view(f, box, vt)) {
		segmap_fail(-ERANGE, "the tile lies outside the field's view");
		return false;
	}
	return true;
}

int agile_tile_get(struct agile_acc *acc, const int64_t *tile_idx,
		   struct agile_tile *out)
{
	struct agile_field *f;
	struct segmap_store *st;
	struct agile_grid tbox, vt;
	int64_t s[RANK_MAX];
	uint64_t smul[RANK_MAX], b, off = 0;
	unsigned char *addr;
	int err;

	segmap_why_clear();
	if (!acc || !acc->field || !tile_idx || !out)
		return segmap_fail(-EINVAL, "tile: NULL argument");
	f = acc->field;
	st = f->st;
	if (!st->has_tile)
		return segmap_fail(
			-EINVAL,
			"tile: the field has no tile level (an irregular map without levels)");
	if (!tile_box(f, tile_idx, &tbox, &vt))
		return acc_error(acc, -ERANGE);
	/* M1 divides M2: the whole tile is in one memory block */
	b = segmap_block_of(st, tbox.offset.i);
	err = reach_block(f, b, acc->node, acc->mode, acc->thief, &addr);
	if (err)
		return acc_error(acc, err);
	block_strides(st, b, smul);
	segmap_view_store(f, vt.offset.i, s);
	for (uint32_t d = 0; d < st->rank; d++)
		off += (uint64_t)(s[d] - st->blocks[b].grid.offset.i[d]) *
		       smul[d];
	for (uint32_t a = 0; a < acc->rank; a++)
		out->stride[a] = (int64_t)smul[f->perm[a]] * f->step[a];
	out->grid = vt;
	out->base = addr + off * st->elem_size;
	out->block = b;
	return 0;
}

int agile_tile_move(struct agile_field *owner, struct agile_field *source,
		    const int64_t *tile_idx)
{
	struct agile_grid box, vt;
	unsigned char *addr;
	uint32_t node;
	int err, moved;

	segmap_why_clear();
	if (!owner || !source || !tile_idx)
		return segmap_fail(-EINVAL, "move: NULL argument");
	if (owner->st->sm != source->st->sm ||
	    owner->grid.extent.rank != source->grid.extent.rank)
		return segmap_fail(
			-EINVAL,
			"move: the fields are not of one segment map and rank");
	if (!owner->st->has_tile || !source->st->has_tile)
		return segmap_fail(-EINVAL, "move: a field has no tile level");
	if (!tile_box(owner, tile_idx, &box, &vt))
		return -ERANGE;
	node = owner->st->blocks[segmap_block_of(owner->st, box.offset.i)].home;
	if (!segmap_scope_local(owner->st->sm->scope, node))
		return segmap_fail(
			-EINVAL,
			"move: the owner's tile is on node %u, not this process's",
			node);
	if (!tile_box(source, tile_idx, &box, &vt))
		return -ERANGE;
	err = segmap_block_addr(source,
				segmap_block_of(source->st, box.offset.i), node,
				false, &addr, &moved);
	if (err)
		return err;
	return moved ? 0 : 1;
}

int agile_tile_reset(struct agile_tile_cursor *cur, struct agile_field *f,
		     uint32_t node)
{
	const struct agile_rmap *rm;

	segmap_why_clear();
	if (!cur || !f)
		return segmap_fail(-EINVAL, "tile cursor: NULL argument");
	rm = f->st->rm;
	if (f->fixed)
		return segmap_fail(-EINVAL,
				   "tile cursor: a sliced (lower-rank) view");
	for (uint32_t d = 0; d < RANK_MAX; d++)
		if (f->perm[d] != d || f->shift[d] || f->step[d] != 1)
			return segmap_fail(
				-EINVAL,
				"tile cursor: a transposed, re-indexed or strided view");
	if (!f->st->has_tile)
		return segmap_fail(-EINVAL, "tile cursor: no tile level");
	if (node >= rm->nr_nodes)
		return segmap_fail(-EINVAL, "tile cursor: node %u", node);
	if (cur->field != f || cur->node != node) {
		memset(cur, 0, sizeof(*cur));
		cur->field = f;
		cur->node = node;
	}
	for (uint32_t s = cur->next; s < rm->nr_segments; s++) {
		const struct agile_grid *g = &rm->seg[s];

		if (rm->node[s] != node)
			continue;
		cur->segment = s;
		cur->next = s + 1;
		for (uint32_t d = 0; d < rm->rank; d++) {
			uint64_t t = f->st->tile_ext[d];
			uint64_t lo = (uint64_t)(g->offset.i[d] -
						 rm->parent.offset.i[d]);

			cur->first[d] = (int64_t)(lo / t);
			cur->count[d] =
				(lo + g->extent.n[d] + t - 1) / t - lo / t;
		}
		return 0;
	}
	cur->next = rm->nr_segments;
	return -ENOENT;
}
