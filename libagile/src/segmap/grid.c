// SPDX-License-Identifier: MIT
/*
 * grid.c - extents, indices and grids (seed 000's extent<N>, index<N>,
 * grid<N>), and the per-thread sentence that says why a call failed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "segmap/segmap_impl.h"

/*
 * Why the calling thread's last segmap call failed.  Per thread, so that
 * two threads building maps do not read each other's reasons; a buffer
 * rather than an argument so that every call can leave one.
 */
static __thread char why_buf[256];

int segmap_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why_buf, sizeof(why_buf), fmt, ap);
	va_end(ap);
	return err;
}

void segmap_why_clear(void)
{
	why_buf[0] = '\0';
}

const char *agile_segmap_why(void)
{
	return why_buf;
}

int segmap_format_index(char *buf, size_t size, uint32_t rank,
			const int64_t *idx)
{
	size_t n = 0;

	n += snprintf(buf + n, size - n, "(");
	for (uint32_t d = 0; d < rank && n < size; d++)
		n += snprintf(buf + n, size - n, "%s%lld", d ? "," : "",
			      (long long)idx[d]);
	if (n < size)
		snprintf(buf + n, size - n, ")");
	return 0;
}

int segmap_check_extent(const struct agile_extent *e, const char *what)
{
	if (!e)
		return segmap_fail(-EINVAL, "%s: NULL", what);
	if (e->rank < 1 || e->rank > RANK_MAX)
		return segmap_fail(-EINVAL, "%s: rank %u is not 1..%u", what,
				   e->rank, RANK_MAX);
	for (uint32_t d = 0; d < e->rank; d++)
		if (!e->n[d])
			return segmap_fail(
				-EINVAL, "%s: zero extent on axis %u", what, d);
	return 0;
}

int segmap_check_grid(const struct agile_grid *g, const char *what)
{
	int err;

	if (!g)
		return segmap_fail(-EINVAL, "%s: NULL", what);
	err = segmap_check_extent(&g->extent, what);
	if (err)
		return err;
	if (g->offset.rank != g->extent.rank)
		return segmap_fail(-EINVAL,
				   "%s: offset rank %u, extent rank %u", what,
				   g->offset.rank, g->extent.rank);
	for (uint32_t d = 0; d < g->extent.rank; d++)
		if (g->extent.n[d] > (uint64_t)INT64_MAX ||
		    g->offset.i[d] > INT64_MAX - (int64_t)g->extent.n[d])
			return segmap_fail(-EINVAL,
					   "%s: axis %u passes INT64_MAX", what,
					   d);
	return 0;
}

bool segmap_box_inside(const struct agile_grid *in, const struct agile_grid *g)
{
	for (uint32_t d = 0; d < g->extent.rank; d++)
		if (g->offset.i[d] < in->offset.i[d] ||
		    g->offset.i[d] + (int64_t)g->extent.n[d] >
			    in->offset.i[d] + (int64_t)in->extent.n[d])
			return false;
	return true;
}

bool segmap_box_meet(const struct agile_grid *a, const struct agile_grid *b,
		     struct agile_grid *out)
{
	struct agile_grid m = *a;

	for (uint32_t d = 0; d < a->extent.rank; d++) {
		int64_t lo = a->offset.i[d] > b->offset.i[d] ? a->offset.i[d] :
							       b->offset.i[d];
		int64_t ha = a->offset.i[d] + (int64_t)a->extent.n[d];
		int64_t hb = b->offset.i[d] + (int64_t)b->extent.n[d];
		int64_t hi = ha < hb ? ha : hb;

		if (hi <= lo)
			return false;
		m.offset.i[d] = lo;
		m.extent.n[d] = (uint64_t)(hi - lo);
	}
	*out = m;
	return true;
}

uint64_t segmap_flatten(uint32_t rank, const uint64_t *dims,
			const uint64_t *coord)
{
	uint64_t flat = 0;

	for (uint32_t d = rank; d-- > 0;)
		flat = flat * dims[d] + coord[d];
	return flat;
}

void segmap_unflatten(uint32_t rank, const uint64_t *dims, uint64_t flat,
		      uint64_t *coord)
{
	for (uint32_t d = 0; d < rank; d++) {
		coord[d] = flat % dims[d];
		flat /= dims[d];
	}
}

int agile_extent_total(const struct agile_extent *e, uint64_t *out)
{
	uint64_t total = 1;
	int err;

	segmap_why_clear();
	err = segmap_check_extent(e, "extent");
	if (err)
		return err;
	if (!out)
		return segmap_fail(-EINVAL, "extent total: NULL result");
	for (uint32_t d = 0; d < e->rank; d++) {
		if (e->n[d] > (uint64_t)INT64_MAX / total)
			return segmap_fail(-EOVERFLOW,
					   "extent: the total passes 2^63");
		total *= e->n[d];
	}
	*out = total;
	return 0;
}

static int check_index(const struct agile_grid *g,
		       const struct agile_index *idx)
{
	int err = segmap_check_grid(g, "grid");

	if (err)
		return err;
	if (!idx)
		return segmap_fail(-EINVAL, "index: NULL");
	if (idx->rank != g->extent.rank)
		return segmap_fail(-EINVAL, "index of rank %u, grid of rank %u",
				   idx->rank, g->extent.rank);
	return 0;
}

int agile_grid_contains(const struct agile_grid *g,
			const struct agile_index *idx)
{
	int err;

	segmap_why_clear();
	err = check_index(g, idx);
	if (err)
		return err;
	for (uint32_t d = 0; d < idx->rank; d++)
		if ((uint64_t)idx->i[d] - (uint64_t)g->offset.i[d] >=
		    g->extent.n[d])
			return 0;
	return 1;
}

int agile_grid_flatten(const struct agile_grid *g,
		       const struct agile_index *idx, uint64_t *out)
{
	uint64_t local[RANK_MAX];
	int err;

	segmap_why_clear();
	err = check_index(g, idx);
	if (err)
		return err;
	if (!out)
		return segmap_fail(-EINVAL, "flatten: NULL result");
	for (uint32_t d = 0; d < idx->rank; d++) {
		local[d] = (uint64_t)idx->i[d] - (uint64_t)g->offset.i[d];
		if (local[d] >= g->extent.n[d]) {
			char s[128];

			segmap_format_index(s, sizeof(s), idx->rank, idx->i);
			return segmap_fail(-ERANGE,
					   "index %s: axis %u outside the grid",
					   s, d);
		}
	}
	*out = segmap_flatten(idx->rank, g->extent.n, local);
	return 0;
}
