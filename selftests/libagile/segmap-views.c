// SPDX-License-Identifier: MIT
/*
 * segmap-views - lower-rank sections (agile_field_slice) and strided
 * views (agile_field_stride), alone and combined with transposes,
 * sub-fields and sections, on a regular map (tiles) and an irregular one
 * (split points) of a rank 3 field.  Each view is checked against a
 * model written out by hand (store coordinates of each view index) over
 * a plain array of the field's values: its grid, get on every element,
 * an accessor on every node (with exactly one owner-copy per foreign
 * memory block the view touches, none on a second pass), spans along
 * axis 0, gather, reduce, a put through the view, and on the regular
 * map every tile.  Bad arguments give -EINVAL with a reason; the tile
 * cursor refuses both kinds of view.
 */
#include <agile/segmap.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "tap.h"
#include "segmaptest.h"

#define FREE_AXIS INT64_MIN

/* the field's grid: 12 x 10 x 6 from (-3, 2, 1) */
static const int64_t O[3] = { -3, 2, 1 };
static const uint64_t N[3] = { 12, 10, 6 };

static double value(const int64_t *s)
{
	return (double)(s[0] + 100 * s[1] + 10000 * s[2]);
}

/*
 * A view as the test expects it: its grid, and store coordinate
 * s[p[a]] = sh[a] + st[a] * i[a] per view axis, s[d] = fix[d] for a
 * fixed store axis.
 */
struct model {
	const char *name;
	uint32_t rank;
	int64_t off[3];
	uint64_t n[3];
	uint32_t p[3];
	int64_t sh[3], st[3];
	int64_t fix[3];
};

static void to_store(const struct model *m, const int64_t *i, int64_t *s)
{
	for (uint32_t d = 0; d < 3; d++)
		s[d] = m->fix[d];
	for (uint32_t a = 0; a < m->rank; a++)
		s[m->p[a]] = m->sh[a] + m->st[a] * i[a];
}

static uint64_t total(const struct model *m)
{
	uint64_t t = 1;

	for (uint32_t a = 0; a < m->rank; a++)
		t *= m->n[a];
	return t;
}

/* view index number @k in flatten order */
static void nth(const struct model *m, uint64_t k, int64_t *i)
{
	for (uint32_t a = 0; a < m->rank; a++) {
		i[a] = m->off[a] + (int64_t)(k % m->n[a]);
		k /= m->n[a];
	}
}

static struct agile_index index_of(uint32_t rank, const int64_t *i)
{
	struct agile_index x = { .rank = rank };

	for (uint32_t a = 0; a < rank; a++)
		x.i[a] = i[a];
	return x;
}

static int fill(struct agile_field *f)
{
	for (int64_t z = O[2]; z < O[2] + (int64_t)N[2]; z++)
		for (int64_t y = O[1]; y < O[1] + (int64_t)N[1]; y++)
			for (int64_t x = O[0]; x < O[0] + (int64_t)N[0]; x++) {
				int64_t s[3] = { x, y, z };
				struct agile_index i = index_of(3, s);
				double v = value(s);
				int err = agile_field_put(f, &i, &v);

				if (err)
					return err;
			}
	return 0;
}

static void check_grid(struct agile_field *v, const struct model *m)
{
	struct agile_grid g;
	int bad = agile_field_grid(v, &g) || g.extent.rank != m->rank ||
		  g.offset.rank != m->rank;

	for (uint32_t a = 0; !bad && a < m->rank; a++)
		bad = g.offset.i[a] != m->off[a] || g.extent.n[a] != m->n[a];
	tap_ok(!bad, "%s: grid of rank %u as expected", m->name, m->rank);
}

static void check_get(struct agile_field *v, const struct model *m)
{
	uint64_t bad = 0, t = total(m);

	for (uint64_t k = 0; k < t; k++) {
		int64_t i[3], s[3];
		struct agile_index x;
		double d = -1;

		nth(m, k, i);
		to_store(m, i, s);
		x = index_of(m->rank, i);
		bad += agile_field_get(v, &x, &d) || d != value(s);
	}
	tap_ok(!bad, "%s: get of all %llu elements (%llu wrong)", m->name,
	       (unsigned long long)t, (unsigned long long)bad);
}

/* the foreign memory blocks of @q the view touches */
static uint32_t foreign_blocks(struct agile_field *f, struct agile_rmap *rm,
			       const struct model *m, uint32_t q)
{
	uint64_t t = total(m), nr = 0, *seen;
	uint32_t foreign = 0;

	seen = calloc(t, sizeof(*seen));
	for (uint64_t k = 0; seen && k < t; k++) {
		int64_t i[3], s[3];
		struct agile_index x;
		uint64_t b, j;
		uint32_t home;

		nth(m, k, i);
		to_store(m, i, s);
		x = index_of(3, s);
		agile_levels_block_of(rm, NULL, &x, &b);
		agile_field_block_where(f, b, &home, NULL);
		for (j = 0; j < nr && seen[j] != b; j++)
			;
		if (j == nr) {
			seen[nr++] = b;
			foreign += home != q;
		}
	}
	free(seen);
	return foreign;
}

static void check_acc(struct agile_field *f, struct agile_field *v,
		      struct agile_rmap *rm, const struct model *m)
{
	for (uint32_t q = 0; q < 3; q++) {
		struct agile_acc acc;
		struct agile_field_stats st, st2;
		uint64_t bad = 0, t = total(m);
		uint32_t want = foreign_blocks(f, rm, m, q);

		agile_field_drop_copies(f);
		agile_field_stats_reset(f);
		agile_acc_init(&acc, v, q, AGILE_ACC_READ);
		for (int pass = 0; pass < 2; pass++) {
			for (uint64_t k = 0; k < t; k++) {
				int64_t i[3], s[3];
				double d = -1;

				nth(m, k, i);
				to_store(m, i, s);
				bad += agile_acc_read(&acc, i, &d) ||
				       d != value(s);
			}
			if (!pass)
				agile_field_stats(f, q, &st);
		}
		agile_field_stats(f, q, &st2);
		tap_ok(!bad && st.moves == want && st2.moves == want,
		       "%s: node %u reads all through an accessor (%llu wrong), %llu moves = %u foreign blocks touched, %llu after a second pass",
		       m->name, q, (unsigned long long)bad,
		       (unsigned long long)st.moves, want,
		       (unsigned long long)st2.moves);
	}
	agile_field_drop_copies(f);
}

/* every row along view axis 0 through spans */
static void check_span(struct agile_field *v, const struct model *m)
{
	struct agile_acc acc;
	uint64_t bad = 0, rows = total(m) / m->n[0];
	int64_t end = m->off[0] + (int64_t)m->n[0];

	agile_acc_init(&acc, v, 1, AGILE_ACC_READ);
	for (uint64_t r = 0; r < rows; r++) {
		int64_t i[3];
		uint64_t seen = 0;

		nth(m, r * m->n[0], i);
		while (i[0] < end) {
			uint64_t count = 0;
			int64_t stride = 0;
			void *p;
			const double *d;

			if (agile_acc_span(&acc, i, &p, &count, &stride) ||
			    !count || i[0] + (int64_t)count > end) {
				bad++;
				break;
			}
			d = p;
			for (uint64_t k = 0; k < count; k++) {
				int64_t j[3] = { i[0] + (int64_t)k, i[1],
						 i[2] };
				int64_t s[3];

				to_store(m, j, s);
				bad += d[(int64_t)k * stride] != value(s);
			}
			seen += count;
			i[0] += (int64_t)count;
		}
		bad += seen != m->n[0];
	}
	tap_ok(!bad,
	       "%s: spans along axis 0 cover each of %llu rows (%llu wrong)",
	       m->name, (unsigned long long)rows, (unsigned long long)bad);
}

static void check_gather_reduce(struct agile_field *v, const struct model *m)
{
	uint64_t t = total(m), bad = 0;
	double *a = calloc(t, sizeof(double)), sum = 0, got = 0;
	int err;

	if (!a || agile_field_gather(v, a, t * sizeof(double))) {
		tap_ok(0, "%s: gather", m->name);
		free(a);
		return;
	}
	for (uint64_t k = 0; k < t; k++) {
		int64_t i[3], s[3];

		nth(m, k, i);
		to_store(m, i, s);
		bad += a[k] != value(s);
		sum += value(s);
	}
	tap_ok(!bad, "%s: gather equals the reference (%llu wrong)", m->name,
	       (unsigned long long)bad);
	err = agile_field_reduce(v, AGILE_COLL_DOUBLE, AGILE_COLL_SUM, &got);
	tap_ok(!err && got == sum, "%s: reduce sum %.0f = %.0f (%d)", m->name,
	       got, sum, err);
	free(a);
}

/* a put through the view lands at the model's store coordinate */
static void check_put(struct agile_field *f, struct agile_field *v,
		      const struct model *m)
{
	int64_t i[3], s[3];
	struct agile_index x, y;
	double nv = -7.5, back = 0, old;

	nth(m, total(m) / 2, i);
	to_store(m, i, s);
	x = index_of(m->rank, i);
	y = index_of(3, s);
	old = value(s);
	tap_ok(!agile_field_put(v, &x, &nv) && !agile_field_get(f, &y, &back) &&
		       back == nv && !agile_field_put(f, &y, &old),
	       "%s: a put through the view is at the store index", m->name);
}

/*
 * Every tile along the view's axes: each either -ERANGE (none of the
 * view in it) or right, and together every element once.
 */
static void check_tiles(struct agile_field *v, const struct model *m,
			const uint64_t *tile)
{
	struct agile_acc acc;
	uint64_t tg[3], nt = 1, seen = 0, bad = 0;

	for (uint32_t a = 0; a < m->rank; a++) {
		tg[a] = (N[m->p[a]] + tile[m->p[a]] - 1) / tile[m->p[a]];
		nt *= tg[a];
	}
	agile_acc_init(&acc, v, 2, AGILE_ACC_READ);
	for (uint64_t k = 0; k < nt; k++) {
		int64_t ti[3];
		uint64_t r = k, cnt = 1;
		struct agile_tile t;
		int err;

		for (uint32_t a = 0; a < m->rank; a++) {
			ti[a] = (int64_t)(r % tg[a]);
			r /= tg[a];
		}
		err = agile_tile_get(&acc, ti, &t);
		if (err == -ERANGE)
			continue;
		if (err) {
			bad++;
			continue;
		}
		for (uint32_t a = 0; a < m->rank; a++)
			cnt *= t.grid.extent.n[a];
		for (uint64_t e = 0; e < cnt; e++) {
			int64_t i[3], s[3], off = 0;
			uint64_t rr = e;

			for (uint32_t a = 0; a < m->rank; a++) {
				int64_t l = (int64_t)(rr % t.grid.extent.n[a]);

				rr /= t.grid.extent.n[a];
				i[a] = t.grid.offset.i[a] + l;
				off += l * t.stride[a];
			}
			to_store(m, i, s);
			bad += ((const double *)t.base)[off] != value(s);
		}
		seen += cnt;
	}
	acc.err = 0;
	tap_ok(!bad && seen == total(m),
	       "%s: tiles: %llu elements in them (want %llu), %llu wrong",
	       m->name, (unsigned long long)seen, (unsigned long long)total(m),
	       (unsigned long long)bad);
}

static void check(struct agile_field *f, struct agile_field *v,
		  struct agile_rmap *rm, const struct model *m,
		  const uint64_t *tile)
{
	if (!v) {
		tap_ok(0, "%s: made", m->name);
		return;
	}
	check_grid(v, m);
	check_get(v, m);
	check_acc(f, v, rm, m);
	check_span(v, m);
	check_gather_reduce(v, m);
	check_put(f, v, m);
	if (tile)
		check_tiles(v, m, tile);
}

static struct model plain(const char *name)
{
	struct model m = { .name = name, .rank = 3 };

	for (uint32_t a = 0; a < 3; a++) {
		m.off[a] = O[a];
		m.n[a] = N[a];
		m.p[a] = a;
		m.sh[a] = 0;
		m.st[a] = 1;
		m.fix[a] = FREE_AXIS;
	}
	return m;
}

static void views(struct agile_field *f, struct agile_rmap *rm,
		  const uint64_t *tile)
{
	struct agile_field *v = NULL, *w = NULL, *u = NULL;
	struct model m;
	struct agile_grid g;

	/* slice axis 1 at y = 7: (x, z) */
	m = plain("slice(1, 7)");
	m.rank = 2;
	m.off[1] = O[2], m.n[1] = N[2], m.p[1] = 2;
	m.fix[1] = 7;
	agile_field_slice(f, 1, 7, &v);
	check(f, v, rm, &m, tile);

	/* slice axis 0 at x = 5: (y, z), no view axis is store axis 0 */
	m = plain("slice(0, 5)");
	m.rank = 2;
	m.off[0] = O[1], m.n[0] = N[1], m.p[0] = 1;
	m.off[1] = O[2], m.n[1] = N[2], m.p[1] = 2;
	m.fix[0] = 5;
	agile_field_slice(f, 0, 5, &w);
	check(f, w, rm, &m, tile);

	/* rank 1: slice(0, 5) sliced at z = 6 (its axis 1): (y) */
	m.name = "slice(0, 5) slice(1, 6)";
	m.rank = 1;
	m.fix[2] = 6;
	agile_field_slice(w, 1, 6, &u);
	check(f, u, rm, &m, tile);
	agile_field_destroy(u);
	agile_field_destroy(w);
	agile_field_destroy(v);
	u = v = w = NULL;

	/* every 3rd x: x = O0 + 3 j', index O0 + j' */
	m = plain("stride(0, 3)");
	m.n[0] = (N[0] + 2) / 3;
	m.sh[0] = -2 * O[0], m.st[0] = 3;
	agile_field_stride(f, 0, 3, &v);
	check(f, v, rm, &m, tile);
	/* of that every 2nd x: step 6 */
	m.name = "stride(0, 3) stride(0, 2)";
	m.n[0] = (m.n[0] + 1) / 2;
	m.sh[0] = -5 * O[0], m.st[0] = 6;
	agile_field_stride(v, 0, 2, &w);
	check(f, w, rm, &m, tile);
	agile_field_destroy(w);
	agile_field_destroy(v);
	v = w = NULL;

	/* every 4th y, then sliced at x = 0: (y', z) */
	m = plain("stride(1, 4) slice(0, 0)");
	m.rank = 2;
	m.off[0] = O[1], m.n[0] = (N[1] + 3) / 4, m.p[0] = 1;
	m.sh[0] = -3 * O[1], m.st[0] = 4;
	m.off[1] = O[2], m.n[1] = N[2], m.p[1] = 2;
	m.fix[0] = 0;
	agile_field_stride(f, 1, 4, &v);
	agile_field_slice(v, 0, 0, &w);
	check(f, w, rm, &m, tile);
	agile_field_destroy(w);
	agile_field_destroy(v);
	v = w = NULL;

	/* slice z = 3, transposed: (y, x) */
	m = plain("slice(2, 3) transpose");
	m.rank = 2;
	m.off[0] = O[1], m.n[0] = N[1], m.p[0] = 1;
	m.off[1] = O[0], m.n[1] = N[0], m.p[1] = 0;
	m.fix[2] = 3;
	agile_field_slice(f, 2, 3, &v);
	agile_field_transpose(v, 0, 1, &w);
	check(f, w, rm, &m, tile);
	agile_field_destroy(w);
	agile_field_destroy(v);
	v = w = NULL;

	/* transposed (z, y, x), every 2nd along its axis 0 (z) */
	m = plain("transpose(0, 2) stride(0, 2)");
	m.off[0] = O[2], m.n[0] = (N[2] + 1) / 2, m.p[0] = 2;
	m.sh[0] = -O[2], m.st[0] = 2;
	m.off[2] = O[0], m.n[2] = N[0], m.p[2] = 0;
	agile_field_transpose(f, 0, 2, &v);
	agile_field_stride(v, 0, 2, &w);
	check(f, w, rm, &m, tile);
	agile_field_destroy(w);
	agile_field_destroy(v);
	v = w = NULL;

	/* every 2nd z, then a sub-field of it (global: its own indices) */
	m = plain("stride(2, 2) sub");
	m.off[0] = O[0] + 2, m.n[0] = 5;
	m.off[1] = O[1] + 3, m.n[1] = 4;
	m.off[2] = O[2] + 1, m.n[2] = 2;
	m.sh[2] = -O[2], m.st[2] = 2;
	g = (struct agile_grid){
		.extent = { .rank = 3, .n = { 5, 4, 2 } },
		.offset = { .rank = 3, .i = { O[0] + 2, O[1] + 3, O[2] + 1 } }
	};
	agile_field_stride(f, 2, 2, &v);
	agile_field_sub(v, &g, &w);
	check(f, w, rm, &m, tile);
	agile_field_destroy(w);
	agile_field_destroy(v);
	v = w = NULL;

	/* every 2nd x, then a section from (1, 1, 0) of it */
	m = plain("stride(0, 2) section");
	m.off[0] = 0, m.n[0] = 3, m.sh[0] = O[0] + 2, m.st[0] = 2;
	m.off[1] = 0, m.n[1] = 3, m.sh[1] = O[1] + 1;
	m.off[2] = 0, m.n[2] = 2, m.sh[2] = O[2];
	g = (struct agile_grid){
		.extent = { .rank = 3, .n = { 3, 3, 2 } },
		.offset = { .rank = 3, .i = { O[0] + 1, O[1] + 1, O[2] } }
	};
	agile_field_stride(f, 0, 2, &v);
	agile_field_section(v, &g, &w);
	check(f, w, rm, &m, tile);
	agile_field_destroy(w);
	agile_field_destroy(v);
}

/* add 0.5 to every element of the call's part, rank 2 */
static int add_half(struct agile_forall_ctx *ctx, void *arg)
{
	const struct agile_grid *g = &ctx->grid;

	(void)arg;
	for (int64_t y = g->offset.i[1];
	     y < g->offset.i[1] + (int64_t)g->extent.n[1]; y++)
		for (int64_t x = g->offset.i[0];
		     x < g->offset.i[0] + (int64_t)g->extent.n[0]; x++) {
			void *p;
			int err = agile_acc_ptr(&ctx->acc[0],
						(int64_t[2]){ x, y }, &p);

			if (err)
				return err;
			*(double *)p += 0.5;
		}
	return 0;
}

/*
 * forall iterating a slice: one call per segment meeting it, the
 * slice's elements changed and no other.
 */
static void check_forall(struct agile_segmap *sm, struct agile_field *f,
			 struct agile_rmap *rm)
{
	struct agile_field *v = NULL;
	struct agile_forall_stats stats = { 0 };
	struct agile_forall_field ff;
	uint64_t bad = 0, want = 0;
	uint32_t nr = (uint32_t)agile_rmap_nr_segments(rm);
	int err;

	for (uint32_t s = 0; s < nr; s++) {
		struct agile_grid g;

		agile_rmap_segment(rm, s, &g, NULL);
		want += 7 >= g.offset.i[1] &&
			7 < g.offset.i[1] + (int64_t)g.extent.n[1];
	}
	agile_field_slice(f, 1, 7, &v);
	ff = (struct agile_forall_field){ v, AGILE_ACC_RW };
	err = agile_forall(sm, v, add_half, NULL, &ff, 1, 0, &stats);
	for (int64_t z = O[2]; z < O[2] + (int64_t)N[2]; z++)
		for (int64_t y = O[1]; y < O[1] + (int64_t)N[1]; y++)
			for (int64_t x = O[0]; x < O[0] + (int64_t)N[0]; x++) {
				int64_t s[3] = { x, y, z };
				struct agile_index i = index_of(3, s);
				double d = 0, old = value(s);

				agile_field_get(f, &i, &d);
				bad += d != old + (y == 7 ? 0.5 : 0);
				agile_field_put(f, &i, &old);
			}
	tap_ok(!err && !bad && stats.calls == want,
	       "forall over slice(1, 7), RW: %d, %llu calls for %llu segments meeting it, %llu elements wrong",
	       err, (unsigned long long)stats.calls, (unsigned long long)want,
	       (unsigned long long)bad);
	agile_field_destroy(v);
}

static void bad_arguments(struct agile_field *f)
{
	struct agile_field *v = NULL, *w = NULL;
	struct agile_tile_cursor cur = { 0 };

	failed_with(agile_field_slice(f, 3, 0, &v), -EINVAL, "axis 3",
		    "slice: axis 3 of a rank 3 field");
	failed_with(agile_field_slice(f, 1, O[1] - 1, &v), -EINVAL, "outside",
		    "slice: a coordinate below the grid");
	failed_with(agile_field_slice(f, 2, O[2] + (int64_t)N[2], &v), -EINVAL,
		    "outside", "slice: a coordinate past the grid");
	failed_with(agile_field_stride(f, 0, 0, &v), -EINVAL, "step 0",
		    "stride: step 0");
	failed_with(agile_field_stride(f, 3, 2, &v), -EINVAL, "axis 3",
		    "stride: axis 3 of a rank 3 field");
	failed_with(agile_field_slice(NULL, 0, 0, &v), -EINVAL, "NULL",
		    "slice: NULL field");
	agile_field_slice(f, 0, 0, &v);
	agile_field_slice(v, 0, O[1], &w);
	failed_with(agile_field_slice(w, 0, O[2], &v), -EINVAL, "rank 1",
		    "slice: a rank 1 field");
	agile_field_destroy(w);
	failed_with(agile_tile_reset(&cur, v, 0), -EINVAL, "sliced",
		    "tile cursor: a slice");
	agile_field_destroy(v);
	agile_field_stride(f, 1, 2, &v);
	failed_with(agile_tile_reset(&cur, v, 0), -EINVAL, "strided",
		    "tile cursor: a strided view");
	agile_field_destroy(v);
}

static void one_map(struct agile_segmap *sm, struct agile_rmap *rm,
		    const uint64_t *tile, const char *what)
{
	struct agile_field *f = NULL;

	tap_diag("%s", what);
	if (!tap_ok_call(agile_field_create(sm, rm, NULL, sizeof(double), &f),
			 what))
		return;
	tap_ok_call(fill(f), "fill through puts");
	views(f, rm, tile);
	check_forall(sm, f, rm);
	bad_arguments(f);
	agile_field_destroy(f);
	agile_rmap_destroy(rm);
}

int main(void)
{
	struct agile_grid g = {
		.extent = { .rank = 3, .n = { N[0], N[1], N[2] } },
		.offset = { .rank = 3, .i = { O[0], O[1], O[2] } }
	};
	struct agile_extent tile = { .rank = 3, .n = { 4, 5, 3 } };
	struct agile_proto p = proto(AGILE_PROTO_CYCLIC, 3);
	int64_t a0[2] = { 0, 5 }, a1[1] = { 6 }, a2[1] = { 3 };
	struct agile_split sp = { .nr = { 2, 1, 1 }, .at = { a0, a1, a2 } };
	struct agile_segmap *sm = NULL;
	struct agile_rmap *rm = NULL;

	if (!tap_ok_call(agile_segmap_threads(3, NULL, &sm), "3 nodes"))
		return tap_done();
	agile_rmap_tiles(&g, &tile, &p, &rm);
	one_map(sm, rm, tile.n, "regular map (tiles 4x5x3, cyclic)");
	rm = NULL;
	p = proto(AGILE_PROTO_BLOCK, 3);
	agile_rmap_split(&g, &sp, &p, &rm);
	one_map(sm, rm, NULL, "irregular map (split points, block)");
	tap_ok(agile_segmap_destroy(sm) == 0, "map destroyed");
	return tap_done();
}
