// SPDX-License-Identifier: MIT
/*
 * rmap.c - resource maps: segments of a parent grid and their nodes
 * (explicit lists, split points, equal tiles), the protocols that give
 * segments to nodes, the lookups from an index to its segment, and the
 * three levels (algorithmic tiles, memory blocks, segments).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "segmap/segmap_impl.h"

struct agile_rmap *segmap_rmap_get(struct agile_rmap *rm)
{
	atomic_fetch_add_explicit(&rm->refs, 1, memory_order_relaxed);
	return rm;
}

void segmap_rmap_put(struct agile_rmap *rm)
{
	/* acq_rel: the last one frees what the others read */
	if (atomic_fetch_sub_explicit(&rm->refs, 1, memory_order_acq_rel) != 1)
		return;
	for (uint32_t d = 0; d < RANK_MAX; d++)
		free(rm->starts[d]);
	free(rm->cell_seg);
	free(rm->seg);
	free(rm->node);
	free(rm);
}

static struct agile_rmap *rmap_alloc(const struct agile_grid *parent,
				     uint32_t nr_segments, uint32_t nr_nodes)
{
	struct agile_rmap *rm = calloc(1, sizeof(*rm));

	if (!rm)
		return NULL;
	atomic_init(&rm->refs, 1);
	rm->rank = parent->extent.rank;
	rm->parent = *parent;
	rm->nr_segments = nr_segments;
	rm->nr_nodes = nr_nodes;
	rm->seg = calloc(nr_segments, sizeof(*rm->seg));
	rm->node = calloc(nr_segments, sizeof(*rm->node));
	if (!rm->seg || !rm->node) {
		free(rm->seg);
		free(rm->node);
		free(rm);
		return NULL;
	}
	return rm;
}

/* The largest k with starts[k] <= x (starts[0] <= x). */
static uint32_t search(const int64_t *starts, uint32_t n, int64_t x)
{
	uint32_t lo = 0, hi = n;

	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (starts[mid] <= x)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static void cell_dims(const struct agile_rmap *rm, uint64_t *dims)
{
	for (uint32_t d = 0; d < rm->rank; d++)
		dims[d] = rm->nr_starts[d];
}

uint32_t segmap_rmap_lookup(const struct agile_rmap *rm, const int64_t *s)
{
	uint64_t c[RANK_MAX], dims[RANK_MAX];

	if (rm->regular) {
		for (uint32_t d = 0; d < rm->rank; d++)
			c[d] = (uint64_t)(s[d] - rm->parent.offset.i[d]) /
			       rm->tile[d];
		return (uint32_t)segmap_flatten(rm->rank, rm->tgrid, c);
	}
	for (uint32_t d = 0; d < rm->rank; d++)
		c[d] = search(rm->starts[d], rm->nr_starts[d], s[d]);
	cell_dims(rm, dims);
	return rm->cell_seg[segmap_flatten(rm->rank, dims, c)];
}

/* ---- protocols ---- */

/*
 * Band boundaries: @count items among @nr nodes, node q getting
 * [b[q], b[q+1]): equal (ceil(q * count / nr): with fewer items than
 * nodes the last nodes get none) or in proportion to @w.
 */
static void bands(uint64_t count, uint32_t nr, const double *w, uint64_t *b)
{
	double total = 0, sum = 0;

	if (!w) {
		/* the first count % nr nodes get one more */
		for (uint32_t q = 0; q <= nr; q++)
			b[q] = (count * q + nr - 1) / nr;
		return;
	}
	for (uint32_t q = 0; q < nr; q++)
		total += w[q];
	b[0] = 0;
	for (uint32_t q = 1; q < nr; q++) {
		sum += w[q - 1];
		b[q] = (uint64_t)floor((double)count * sum / total + 0.5);
		if (b[q] > count)
			b[q] = count;
		if (b[q] < b[q - 1])
			b[q] = b[q - 1];
	}
	b[nr] = count;
}

static uint32_t band_of(const uint64_t *b, uint32_t nr, uint64_t t)
{
	for (uint32_t k = 0; k < nr; k++)
		if (b[k] <= t && t < b[k + 1])
			return k;
	return nr - 1;
}

static int check_proto(const struct agile_proto *p, uint32_t rank)
{
	if (!p)
		return segmap_fail(-EINVAL, "protocol: NULL");
	if (p->proto >= AGILE_PROTO_NR)
		return segmap_fail(-EINVAL, "protocol %u: no such protocol",
				   p->proto);
	if (p->nr_nodes < 1 || p->nr_nodes > AGILE_SEGMAP_MAX_NODES)
		return segmap_fail(-EINVAL, "protocol: %u nodes is not 1..%u",
				   p->nr_nodes, AGILE_SEGMAP_MAX_NODES);
	if (p->reserved)
		return segmap_fail(-EINVAL, "protocol: reserved not zero");
	if (p->weights)
		for (uint32_t q = 0; q < p->nr_nodes; q++)
			if (!(p->weights[q] > 0) || isinf(p->weights[q]))
				return segmap_fail(
					-EINVAL,
					"protocol: node %u's weight is not a positive number",
					q);
	if (p->proto == AGILE_PROTO_BLOCK_BLOCK && p->node_grid.rank) {
		uint64_t prod = 1;

		if (p->node_grid.rank != rank)
			return segmap_fail(
				-EINVAL,
				"block-block: node grid of rank %u, map of rank %u",
				p->node_grid.rank, rank);
		for (uint32_t d = 0; d < rank; d++) {
			if (!p->node_grid.n[d] ||
			    p->node_grid.n[d] > AGILE_SEGMAP_MAX_NODES)
				return segmap_fail(
					-EINVAL,
					"block-block: node grid axis %u is %llu",
					d,
					(unsigned long long)p->node_grid.n[d]);
			prod *= p->node_grid.n[d];
		}
		if (prod != p->nr_nodes)
			return segmap_fail(
				-EINVAL,
				"block-block: node grid of %llu nodes, not %u",
				(unsigned long long)prod, p->nr_nodes);
	}
	return 0;
}

/* Give each segment of a grid of segments (@dims per axis) its node. */
static int assign(const struct agile_proto *p, uint32_t rank,
		  const uint64_t *dims, uint32_t *node)
{
	uint32_t nr = p->nr_nodes, run = p->run ? p->run : 1;
	uint64_t total = 1;
	uint64_t c[RANK_MAX], ngrid[RANK_MAX] = { 0 }, axis_len;
	uint64_t *b = calloc(nr + 1, sizeof(*b));
	uint32_t axis = 0;

	if (!b)
		return -ENOMEM;
	for (uint32_t d = 0; d < rank; d++)
		total *= dims[d];
	switch (p->proto) {
	case AGILE_PROTO_ROW_BLOCK:
		axis = rank - 1;
		break;
	case AGILE_PROTO_BLOCK_BLOCK:
		if (p->node_grid.rank) {
			for (uint32_t d = 0; d < rank; d++)
				ngrid[d] = p->node_grid.n[d];
		} else {
			uint32_t pp = nr;

			for (uint32_t k = 1; k <= nr; k++)
				if (nr % k == 0 && (uint64_t)k * k >= nr) {
					pp = k;
					break;
				}
			for (uint32_t d = 0; d < rank; d++)
				ngrid[d] = 1;
			ngrid[0] = pp;
			if (rank > 1)
				ngrid[1] = nr / pp;
			else
				ngrid[0] = nr;
		}
		break;
	default:
		break;
	}
	axis_len = p->proto == AGILE_PROTO_BLOCK ? total : dims[axis];
	bands(axis_len, nr, p->weights, b);
	for (uint64_t s = 0; s < total; s++) {
		uint64_t q = 0;

		segmap_unflatten(rank, dims, s, c);
		switch (p->proto) {
		case AGILE_PROTO_BLOCK:
			q = band_of(b, nr, s);
			break;
		case AGILE_PROTO_CYCLIC:
			q = s % nr;
			break;
		case AGILE_PROTO_BLOCK_CYCLIC:
			q = s / run % nr;
			break;
		case AGILE_PROTO_ROW_BLOCK:
		case AGILE_PROTO_COLUMN_BLOCK:
			q = band_of(b, nr, c[axis]);
			break;
		case AGILE_PROTO_BLOCK_BLOCK: {
			uint64_t nc[RANK_MAX];

			/* largest k with floor(k * dims / ngrid) <= c */
			for (uint32_t d = 0; d < rank; d++)
				nc[d] = ((c[d] + 1) * ngrid[d] - 1) / dims[d];
			q = segmap_flatten(rank, ngrid, nc);
			break;
		}
		}
		node[s] = (uint32_t)q;
	}
	free(b);
	return 0;
}

/* ---- constructors ---- */

static int check_parent(const struct agile_grid *parent)
{
	return segmap_check_grid(parent, "parent grid");
}

int agile_rmap_tiles(const struct agile_grid *parent,
		     const struct agile_extent *tile,
		     const struct agile_proto *proto, struct agile_rmap **out)
{
	uint64_t dims[RANK_MAX] = { 0 }, total = 1, c[RANK_MAX];
	struct agile_rmap *rm;
	int err;

	segmap_why_clear();
	err = check_parent(parent);
	if (!err)
		err = segmap_check_extent(tile, "tile");
	if (!err)
		err = check_proto(proto, parent->extent.rank);
	if (err)
		return err;
	if (!out)
		return segmap_fail(-EINVAL, "tiles: NULL result");
	if (tile->rank != parent->extent.rank)
		return segmap_fail(-EINVAL,
				   "tile of rank %u, parent of rank %u",
				   tile->rank, parent->extent.rank);
	for (uint32_t d = 0; d < tile->rank; d++) {
		dims[d] = (parent->extent.n[d] + tile->n[d] - 1) / tile->n[d];
		if (dims[d] > UINT32_MAX / total)
			return segmap_fail(-EINVAL,
					   "tiles: more than 2^32 segments");
		total *= dims[d];
	}
	rm = rmap_alloc(parent, (uint32_t)total, proto->nr_nodes);
	if (!rm)
		return -ENOMEM;
	rm->regular = true;
	for (uint32_t d = 0; d < tile->rank; d++) {
		rm->tile[d] = tile->n[d];
		rm->tgrid[d] = dims[d];
	}
	for (uint64_t s = 0; s < total; s++) {
		struct agile_grid *g = &rm->seg[s];

		segmap_unflatten(tile->rank, dims, s, c);
		g->extent.rank = g->offset.rank = tile->rank;
		for (uint32_t d = 0; d < tile->rank; d++) {
			uint64_t lo = c[d] * tile->n[d];
			uint64_t hi = lo + tile->n[d];

			if (hi > parent->extent.n[d])
				hi = parent->extent.n[d];
			g->offset.i[d] = parent->offset.i[d] + (int64_t)lo;
			g->extent.n[d] = hi - lo;
		}
	}
	err = assign(proto, tile->rank, dims, rm->node);
	if (err) {
		segmap_rmap_put(rm);
		return err;
	}
	*out = rm;
	return 0;
}

/* Cells of an irregular map: every segment's cells name it. */
static int build_cells(struct agile_rmap *rm)
{
	uint64_t dims[RANK_MAX], cells = 1;
	uint32_t *cell;

	for (uint32_t d = 0; d < rm->rank; d++) {
		if (rm->nr_starts[d] > SEGMAP_MAX_CELLS / cells)
			return segmap_fail(
				-E2BIG,
				"the segments' boundaries make more than 2^24 cells");
		cells *= rm->nr_starts[d];
	}
	cell = malloc(cells * sizeof(*cell));
	if (!cell)
		return -ENOMEM;
	memset(cell, 0xff, cells * sizeof(*cell));
	cell_dims(rm, dims);
	for (uint32_t s = 0; s < rm->nr_segments; s++) {
		const struct agile_grid *g = &rm->seg[s];
		uint64_t lo[RANK_MAX], n[RANK_MAX], k = 0, c[RANK_MAX], nr = 1;

		for (uint32_t d = 0; d < rm->rank; d++) {
			int64_t end = g->offset.i[d] + (int64_t)g->extent.n[d];
			uint32_t hi;

			lo[d] = search(rm->starts[d], rm->nr_starts[d],
				       g->offset.i[d]);
			hi = search(rm->starts[d], rm->nr_starts[d], end - 1);
			n[d] = hi - lo[d] + 1;
			nr *= n[d];
		}
		for (k = 0; k < nr; k++) {
			uint64_t at;

			segmap_unflatten(rm->rank, n, k, c);
			for (uint32_t d = 0; d < rm->rank; d++)
				c[d] += lo[d];
			at = segmap_flatten(rm->rank, dims, c);
			if (cell[at] != UINT32_MAX) {
				int64_t idx[RANK_MAX];
				uint32_t other = cell[at];
				char str[128];

				for (uint32_t d = 0; d < rm->rank; d++)
					idx[d] = rm->starts[d][c[d]];
				segmap_format_index(str, sizeof(str), rm->rank,
						    idx);
				free(cell);
				return segmap_fail(
					-EINVAL,
					"segment %u overlaps segment %u at index %s",
					s, other, str);
			}
			cell[at] = s;
		}
	}
	for (uint64_t at = 0; at < cells; at++) {
		if (cell[at] == UINT32_MAX) {
			int64_t idx[RANK_MAX];
			uint64_t c[RANK_MAX];
			char str[128];

			segmap_unflatten(rm->rank, dims, at, c);
			for (uint32_t d = 0; d < rm->rank; d++)
				idx[d] = rm->starts[d][c[d]];
			segmap_format_index(str, sizeof(str), rm->rank, idx);
			free(cell);
			return segmap_fail(
				-EINVAL,
				"a gap: index %s is in no segment (the segments must cover the parent grid)",
				str);
		}
	}
	rm->cell_seg = cell;
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int agile_rmap_list(const struct agile_grid *parent, uint32_t nr_segments,
		    const struct agile_grid *segments, const uint32_t *nodes,
		    uint32_t nr_nodes, struct agile_rmap **out)
{
	struct agile_rmap *rm;
	uint32_t rank;
	int err;

	segmap_why_clear();
	err = check_parent(parent);
	if (err)
		return err;
	rank = parent->extent.rank;
	if (!nr_segments || !segments || !nodes || !out)
		return segmap_fail(-EINVAL, "list: no segments");
	if (nr_nodes < 1 || nr_nodes > AGILE_SEGMAP_MAX_NODES)
		return segmap_fail(-EINVAL, "list: %u nodes is not 1..%u",
				   nr_nodes, AGILE_SEGMAP_MAX_NODES);
	for (uint32_t s = 0; s < nr_segments; s++) {
		char what[48];

		snprintf(what, sizeof(what), "segment %u", s);
		err = segmap_check_grid(&segments[s], what);
		if (err)
			return err;
		if (segments[s].extent.rank != rank)
			return segmap_fail(
				-EINVAL,
				"segment %u: rank %u, parent grid rank %u", s,
				segments[s].extent.rank, rank);
		if (!segmap_box_inside(parent, &segments[s]))
			return segmap_fail(
				-EINVAL,
				"segment %u is out of range: it passes the parent grid",
				s);
		if (nodes[s] >= nr_nodes)
			return segmap_fail(-EINVAL,
					   "segment %u: node %u of %u nodes", s,
					   nodes[s], nr_nodes);
	}
	rm = rmap_alloc(parent, nr_segments, nr_nodes);
	if (!rm)
		return -ENOMEM;
	memcpy(rm->seg, segments, nr_segments * sizeof(*segments));
	memcpy(rm->node, nodes, nr_segments * sizeof(*nodes));
	/* boundaries: every segment's start and end but the parent's end */
	for (uint32_t d = 0; d < rank; d++) {
		int64_t *st =
			malloc((2 * (size_t)nr_segments + 1) * sizeof(*st));
		int64_t pend =
			parent->offset.i[d] + (int64_t)parent->extent.n[d];
		uint32_t n = 0, u = 0;

		if (!st) {
			segmap_rmap_put(rm);
			return -ENOMEM;
		}
		st[n++] = parent->offset.i[d];
		for (uint32_t s = 0; s < nr_segments; s++) {
			int64_t end = segments[s].offset.i[d] +
				      (int64_t)segments[s].extent.n[d];

			st[n++] = segments[s].offset.i[d];
			if (end < pend)
				st[n++] = end;
		}
		qsort(st, n, sizeof(*st), cmp_i64);
		for (uint32_t k = 0; k < n; k++)
			if (!u || st[k] != st[u - 1])
				st[u++] = st[k];
		rm->starts[d] = st;
		rm->nr_starts[d] = u;
	}
	err = build_cells(rm);
	if (err) {
		segmap_rmap_put(rm);
		return err;
	}
	*out = rm;
	return 0;
}

int agile_rmap_split(const struct agile_grid *parent,
		     const struct agile_split *split,
		     const struct agile_proto *proto, struct agile_rmap **out)
{
	uint64_t dims[RANK_MAX] = { 0 }, total = 1, c[RANK_MAX];
	struct agile_rmap *rm;
	uint32_t rank;
	int err;

	segmap_why_clear();
	err = check_parent(parent);
	if (!err)
		err = check_proto(proto, parent->extent.rank);
	if (err)
		return err;
	if (!split || !out)
		return segmap_fail(-EINVAL, "split: NULL argument");
	rank = parent->extent.rank;
	for (uint32_t d = 0; d < RANK_MAX; d++) {
		int64_t lo = parent->offset.i[d];
		int64_t hi = lo + (int64_t)parent->extent.n[d];

		if (d >= rank) {
			if (split->nr[d])
				return segmap_fail(
					-EINVAL,
					"split: points on axis %u of a rank %u grid",
					d, rank);
			continue;
		}
		if (split->nr[d] && !split->at[d])
			return segmap_fail(-EINVAL,
					   "split: axis %u's points NULL", d);
		for (uint32_t k = 0; k < split->nr[d]; k++) {
			int64_t p = split->at[d][k];

			if (p <= lo || p >= hi)
				return segmap_fail(
					-EINVAL,
					"split: point %lld on axis %u is not inside (%lld, %lld)",
					(long long)p, d, (long long)lo,
					(long long)hi);
			lo = p;
		}
		dims[d] = split->nr[d] + 1ull;
		if (dims[d] > UINT32_MAX / total)
			return segmap_fail(-EINVAL,
					   "split: more than 2^32 segments");
		total *= dims[d];
	}
	if (total > SEGMAP_MAX_CELLS)
		return segmap_fail(-E2BIG, "split: more than 2^24 segments");
	rm = rmap_alloc(parent, (uint32_t)total, proto->nr_nodes);
	if (!rm)
		return -ENOMEM;
	for (uint32_t d = 0; d < rank; d++) {
		rm->nr_starts[d] = (uint32_t)dims[d];
		rm->starts[d] = malloc(dims[d] * sizeof(int64_t));
		if (!rm->starts[d]) {
			segmap_rmap_put(rm);
			return -ENOMEM;
		}
		rm->starts[d][0] = parent->offset.i[d];
		for (uint32_t k = 0; k < split->nr[d]; k++)
			rm->starts[d][k + 1] = split->at[d][k];
	}
	rm->cell_seg = malloc(total * sizeof(uint32_t));
	if (!rm->cell_seg) {
		segmap_rmap_put(rm);
		return -ENOMEM;
	}
	for (uint64_t s = 0; s < total; s++) {
		struct agile_grid *g = &rm->seg[s];

		rm->cell_seg[s] = (uint32_t)s;
		segmap_unflatten(rank, dims, s, c);
		g->extent.rank = g->offset.rank = rank;
		for (uint32_t d = 0; d < rank; d++) {
			int64_t lo = rm->starts[d][c[d]];
			int64_t hi =
				c[d] + 1 < dims[d] ?
					rm->starts[d][c[d] + 1] :
					parent->offset.i[d] +
						(int64_t)parent->extent.n[d];

			g->offset.i[d] = lo;
			g->extent.n[d] = (uint64_t)(hi - lo);
		}
	}
	err = assign(proto, rank, dims, rm->node);
	if (err) {
		segmap_rmap_put(rm);
		return err;
	}
	*out = rm;
	return 0;
}

int agile_rmap_destroy(struct agile_rmap *rm)
{
	if (!rm)
		return -EINVAL;
	segmap_rmap_put(rm);
	return 0;
}

int agile_rmap_nr_segments(const struct agile_rmap *rm)
{
	if (!rm)
		return -EINVAL;
	return (int)(rm->nr_segments > INT32_MAX ? INT32_MAX : rm->nr_segments);
}

int agile_rmap_segment(const struct agile_rmap *rm, uint32_t seg,
		       struct agile_grid *grid, uint32_t *node)
{
	if (!rm || seg >= rm->nr_segments)
		return -EINVAL;
	if (grid)
		*grid = rm->seg[seg];
	if (node)
		*node = rm->node[seg];
	return 0;
}

static int check_in_parent(const struct agile_rmap *rm,
			   const struct agile_index *idx)
{
	if (!idx)
		return segmap_fail(-EINVAL, "index: NULL");
	if (idx->rank != rm->rank)
		return segmap_fail(-EINVAL, "index of rank %u, map of rank %u",
				   idx->rank, rm->rank);
	for (uint32_t d = 0; d < rm->rank; d++) {
		if ((uint64_t)idx->i[d] - (uint64_t)rm->parent.offset.i[d] >=
		    rm->parent.extent.n[d]) {
			char s[128];

			segmap_format_index(s, sizeof(s), idx->rank, idx->i);
			return segmap_fail(
				-ERANGE,
				"index %s is out of range: axis %u outside the parent grid",
				s, d);
		}
	}
	return 0;
}

int agile_rmap_find(const struct agile_rmap *rm, const struct agile_index *idx,
		    uint32_t *seg)
{
	int err;

	segmap_why_clear();
	if (!rm || !seg)
		return segmap_fail(-EINVAL, "find: NULL argument");
	err = check_in_parent(rm, idx);
	if (err)
		return err;
	*seg = segmap_rmap_lookup(rm, idx->i);
	return 0;
}

/* ---- levels ---- */

int agile_levels_check(const struct agile_rmap *rm,
		       const struct agile_levels *lv)
{
	const struct agile_extent *t, *b;
	int err;

	segmap_why_clear();
	if (!rm || !lv)
		return segmap_fail(-EINVAL, "levels: NULL argument");
	t = &lv->tile;
	b = &lv->block;
	if (t->rank) {
		err = segmap_check_extent(t, "algorithmic tile (M1)");
		if (err)
			return err;
		if (t->rank != rm->rank)
			return segmap_fail(
				-EINVAL,
				"algorithmic tile of rank %u, map of rank %u",
				t->rank, rm->rank);
	}
	if (b->rank) {
		err = segmap_check_extent(b, "memory block (M2)");
		if (err)
			return err;
		if (b->rank != rm->rank)
			return segmap_fail(
				-EINVAL,
				"memory block of rank %u, map of rank %u",
				b->rank, rm->rank);
	}
	for (uint32_t d = 0; d < rm->rank; d++) {
		if (t->rank && b->rank && b->n[d] % t->n[d])
			return segmap_fail(
				-EINVAL,
				"levels: axis %u: the memory block's %llu is not a multiple of the algorithmic tile's %llu",
				d, (unsigned long long)b->n[d],
				(unsigned long long)t->n[d]);
	}
	for (uint32_t s = 0; s < rm->nr_segments; s++) {
		const struct agile_grid *g = &rm->seg[s];
		const struct agile_extent *unit = b->rank ? b : t;
		const char *name = b->rank ? "memory block" :
					     "algorithmic tile";

		if (!unit->rank)
			break;
		for (uint32_t d = 0; d < rm->rank; d++) {
			uint64_t off = (uint64_t)(g->offset.i[d] -
						  rm->parent.offset.i[d]);
			uint64_t end = off + g->extent.n[d];
			/* a ragged last tile of the parent is allowed */
			bool last = end == rm->parent.extent.n[d] && !b->rank;

			if (off % unit->n[d] ||
			    (!last && g->extent.n[d] % unit->n[d]))
				return segmap_fail(
					-EINVAL,
					"levels: segment %u (axis %u: offset %llu, extent %llu) is not a whole number of %ss of %llu",
					s, d, (unsigned long long)off,
					(unsigned long long)g->extent.n[d],
					name, (unsigned long long)unit->n[d]);
		}
	}
	return 0;
}

uint64_t segmap_levels_block(const struct agile_rmap *rm,
			     const uint64_t *block_ext, const int64_t *s)
{
	uint64_t c[RANK_MAX], dims[RANK_MAX];

	if (!block_ext)
		return segmap_rmap_lookup(rm, s);
	for (uint32_t d = 0; d < rm->rank; d++) {
		c[d] = (uint64_t)(s[d] - rm->parent.offset.i[d]) / block_ext[d];
		dims[d] = rm->parent.extent.n[d] / block_ext[d];
	}
	return segmap_flatten(rm->rank, dims, c);
}

int agile_levels_block_of(const struct agile_rmap *rm,
			  const struct agile_levels *lv,
			  const struct agile_index *idx, uint64_t *block)
{
	int err;

	if (!rm || !block)
		return segmap_fail(-EINVAL, "block_of: NULL argument");
	if (lv) {
		err = agile_levels_check(rm, lv);
		if (err)
			return err;
	}
	segmap_why_clear();
	err = check_in_parent(rm, idx);
	if (err)
		return err;
	*block = segmap_levels_block(
		rm, lv && lv->block.rank ? lv->block.n : NULL, idx->i);
	return 0;
}

int agile_levels_tile_block(const struct agile_rmap *rm,
			    const struct agile_levels *lv, uint64_t tile,
			    uint64_t *block)
{
	const struct agile_extent *t;
	uint64_t dims[RANK_MAX], c[RANK_MAX], total = 1;
	struct agile_index idx = { 0 };
	int err;

	if (!rm || !lv || !block)
		return segmap_fail(-EINVAL, "tile_block: NULL argument");
	err = agile_levels_check(rm, lv);
	if (err)
		return err;
	t = lv->tile.rank ? &lv->tile : &lv->block;
	if (!t->rank)
		return segmap_fail(-EINVAL,
				   "tile_block: the levels have no tile");
	for (uint32_t d = 0; d < rm->rank; d++) {
		dims[d] = (rm->parent.extent.n[d] + t->n[d] - 1) / t->n[d];
		total *= dims[d];
	}
	if (tile >= total)
		return segmap_fail(-ERANGE, "tile %llu of %llu tiles",
				   (unsigned long long)tile,
				   (unsigned long long)total);
	segmap_unflatten(rm->rank, dims, tile, c);
	idx.rank = rm->rank;
	for (uint32_t d = 0; d < rm->rank; d++)
		idx.i[d] = rm->parent.offset.i[d] + (int64_t)(c[d] * t->n[d]);
	*block = segmap_levels_block(rm, lv->block.rank ? lv->block.n : NULL,
				     idx.i);
	return 0;
}
