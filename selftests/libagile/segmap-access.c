// SPDX-License-Identifier: MIT
/*
 * segmap-access - the full global view's accessor: every element read
 * through it on each node equals what was put there, on a regular map
 * (tile division) and an irregular one (per-axis binary search), with
 * exactly one owner-copy per block the node does not own; bounds on
 * both sides of each axis (negative indices included) give -ERANGE and
 * are recorded; a write to another node's block gives -EACCES; and the
 * views (transpose, sub-field, section) index the same storage, with
 * the sub-field's bounds its own, not its block's; spans
 * (agile_acc_span) give runs that are right and end at segment edges.
 */
#include <agile/segmap.h>
#include <errno.h>
#include <stdint.h>

#include "tap.h"
#include "segmaptest.h"

static double value(int64_t x, int64_t y)
{
	return (double)(x * 1000 + y);
}

static int fill(struct agile_field *f, const struct agile_grid *g)
{
	for (int64_t y = g->offset.i[1];
	     y < g->offset.i[1] + (int64_t)g->extent.n[1]; y++)
		for (int64_t x = g->offset.i[0];
		     x < g->offset.i[0] + (int64_t)g->extent.n[0]; x++) {
			double v = value(x, y);
			int err = agile_field_put(
				f,
				&(struct agile_index){ .rank = 2,
						       .i = { x, y } },
				&v);

			if (err)
				return err;
		}
	return 0;
}

/* Node @q reads every element; the moves it made are its foreign blocks. */
static void read_all(struct agile_field *f, struct agile_rmap *rm,
		     const struct agile_grid *g, uint32_t q, const char *what)
{
	struct agile_acc acc;
	struct agile_field_stats st;
	uint32_t foreign = 0, node, bad = 0;
	int n = agile_rmap_nr_segments(rm);

	for (int s = 0; s < n; s++) {
		agile_rmap_segment(rm, (uint32_t)s, NULL, &node);
		foreign += node != q;
	}
	agile_field_stats_reset(f);
	agile_acc_init(&acc, f, q, AGILE_ACC_READ);
	/* twice: the second pass moves nothing */
	for (int pass = 0; pass < 2; pass++)
		for (int64_t y = g->offset.i[1];
		     y < g->offset.i[1] + (int64_t)g->extent.n[1]; y++)
			for (int64_t x = g->offset.i[0];
			     x < g->offset.i[0] + (int64_t)g->extent.n[0];
			     x++) {
				int64_t i[2] = { x, y };
				double v = -1;

				if (agile_acc_read(&acc, i, &v) ||
				    v != value(x, y))
					bad++;
			}
	agile_field_stats(f, q, &st);
	tap_ok(!bad && st.moves == foreign,
	       "%s, node %u: every element right (%u wrong), %llu moves = %u foreign segments",
	       what, q, bad, (unsigned long long)st.moves, foreign);
	agile_field_drop_copies(f);
}

static void bounds(struct agile_field *f, const struct agile_grid *g)
{
	struct agile_acc acc;
	int64_t lo0 = g->offset.i[0], lo1 = g->offset.i[1];
	int64_t hi0 = lo0 + (int64_t)g->extent.n[0];
	int64_t hi1 = lo1 + (int64_t)g->extent.n[1];
	int64_t outside[6][2] = {
		{ lo0 - 1, lo1 }, { lo0, lo1 - 1 },   { hi0, lo1 },
		{ lo0, hi1 },	  { INT64_MIN, lo1 }, { lo0, INT64_MAX },
	};
	uint32_t bad = 0;
	void *p;

	agile_acc_init(&acc, f, 0, AGILE_ACC_READ);
	/* a hit first, so the misses below start from a cached block */
	agile_acc_ptr(&acc, (int64_t[2]){ lo0, lo1 }, &p);
	for (int k = 0; k < 6; k++)
		bad += agile_acc_ptr(&acc, outside[k], &p) != -ERANGE;
	tap_ok(!bad && acc.err == -ERANGE,
	       "both bounds of both axes, negative and extreme: -ERANGE (%u not), recorded",
	       bad);
}

static void writes(struct agile_field *f, struct agile_rmap *rm)
{
	struct agile_acc acc;
	struct agile_grid sg;
	uint32_t node;
	double v = 42, back = 0;
	int err;

	agile_rmap_segment(rm, 1, &sg, &node);
	agile_acc_init(&acc, f, (node + 1) % 3, AGILE_ACC_WRITE);
	err = agile_acc_write(&acc, sg.offset.i, &v);
	tap_ok(err == -EACCES && acc.err == -EACCES,
	       "node %u writing node %u's block: -EACCES, recorded (%d)",
	       (node + 1) % 3, node, err);
	agile_acc_init(&acc, f, node, AGILE_ACC_RW);
	err = agile_acc_write(&acc, sg.offset.i, &v);
	agile_field_get(f, &sg.offset, &back);
	tap_ok(!err && back == 42, "node %u writes its own block", node);
	v = value(sg.offset.i[0], sg.offset.i[1]);
	agile_field_put(f, &sg.offset, &v);
}

static void views(struct agile_field *f, const struct agile_grid *g)
{
	struct agile_field *t = NULL, *sub = NULL, *sec = NULL;
	struct agile_grid part =
		grid2(g->offset.i[0] + 3, g->offset.i[1] + 2, 7, 5);
	struct agile_acc acc;
	uint32_t bad = 0;
	double v;
	void *p;

	agile_field_transpose(f, 0, 1, &t);
	agile_acc_init(&acc, t, 1, AGILE_ACC_READ);
	for (int64_t y = g->offset.i[1];
	     y < g->offset.i[1] + (int64_t)g->extent.n[1]; y++)
		for (int64_t x = g->offset.i[0];
		     x < g->offset.i[0] + (int64_t)g->extent.n[0]; x++)
			if (agile_acc_read(&acc, (int64_t[2]){ y, x }, &v) ||
			    v != value(x, y))
				bad++;
	tap_ok(!bad, "transpose: (y, x) reads (x, y) (%u wrong)", bad);

	agile_field_sub(f, &part, &sub);
	agile_acc_init(&acc, sub, 2, AGILE_ACC_READ);
	tap_ok(!agile_acc_read(&acc, part.offset.i, &v) &&
		       v == value(part.offset.i[0], part.offset.i[1]),
	       "sub-field: global coordinates");
	tap_ok(agile_acc_ptr(&acc,
			     (int64_t[2]){ part.offset.i[0] - 1,
					   part.offset.i[1] },
			     &p) == -ERANGE,
	       "sub-field: its own bounds, not its block's");
	agile_field_section(f, &part, &sec);
	agile_acc_init(&acc, sec, 2, AGILE_ACC_READ);
	tap_ok(!agile_acc_read(&acc, (int64_t[2]){ 6, 4 }, &v) &&
		       v == value(part.offset.i[0] + 6, part.offset.i[1] + 4),
	       "section: (6,4) is the part's last element");
	tap_ok(agile_acc_ptr(&acc, (int64_t[2]){ 7, 0 }, &p) == -ERANGE,
	       "section: (7,0) is outside");
	agile_field_destroy(t);
	agile_field_destroy(sub);
	agile_field_destroy(sec);
}

/*
 * Spans: each row read a run at a time (agile_acc_span), from a start
 * that moves with the row (mid-segment): every run is
 * right, ends exactly where the row leaves its segment (or the field),
 * so a row takes one span per segment it crosses; a transposed view's
 * runs step by the block's row length; a sub-field's stop at its edge.
 */
static void spans(struct agile_field *f, struct agile_rmap *rm,
		  const struct agile_grid *g)
{
	int64_t x1 = g->offset.i[0] + (int64_t)g->extent.n[0];
	int64_t y1 = g->offset.i[1] + (int64_t)g->extent.n[1];
	struct agile_field *t = NULL, *sub = NULL;
	struct agile_grid part =
		grid2(g->offset.i[0] + 3, g->offset.i[1] + 2, 7, 5);
	uint32_t bad = 0, ends = 0, calls = 0, want = 0;
	struct agile_acc acc;
	uint64_t count;
	int64_t stride;
	void *p;

	agile_acc_init(&acc, f, 1, AGILE_ACC_READ);
	for (int64_t y = g->offset.i[1]; y < y1; y++)
		for (int64_t x = g->offset.i[0] + y % 5; x < x1;
		     x += (int64_t)count) {
			struct agile_index last = idx2(x, y), next;
			uint32_t s0 = 0, s1 = 1;
			const double *d;

			count = 1;
			calls++;
			if (agile_acc_span(&acc, (int64_t[2]){ x, y }, &p,
					   &count, &stride) ||
			    !count || stride != 1) {
				bad++;
				continue;
			}
			d = p;
			for (uint64_t k = 0; k < count; k++)
				bad += d[k * (uint64_t)stride] !=
				       value(x + (int64_t)k, y);
			/* the run ends at a segment boundary or the edge */
			last.i[0] = x + (int64_t)count - 1;
			next = idx2(x + (int64_t)count, y);
			if (next.i[0] < x1) {
				agile_rmap_find(rm, &last, &s0);
				agile_rmap_find(rm, &next, &s1);
			}
			ends += s0 == s1;
		}
	/* one span per segment a row crosses */
	for (int64_t y = g->offset.i[1]; y < y1; y++) {
		uint32_t prev = UINT32_MAX, s;

		for (int64_t x = g->offset.i[0] + y % 5; x < x1; x++) {
			struct agile_index i = idx2(x, y);

			agile_rmap_find(rm, &i, &s);
			want += s != prev;
			prev = s;
		}
	}
	tap_ok(!bad && !ends && calls == want,
	       "span: every run right (%u wrong), ending where its segment "
	       "does (%u not), %u spans for %u row-segments",
	       bad, ends, calls, want);

	agile_field_transpose(f, 0, 1, &t);
	agile_acc_init(&acc, t, 0, AGILE_ACC_READ);
	bad = 0;
	for (int64_t x = g->offset.i[0]; x < x1; x++)
		for (int64_t y = g->offset.i[1]; y < y1; y += (int64_t)count) {
			const double *d;

			count = 1;
			if (agile_acc_span(&acc, (int64_t[2]){ y, x }, &p,
					   &count, &stride) ||
			    !count) {
				bad++;
				continue;
			}
			d = p;
			for (uint64_t k = 0; k < count; k++)
				bad += d[k * (uint64_t)stride] !=
				       value(x, y + (int64_t)k);
		}
	tap_ok(!bad, "span of a transposed view: strided runs (%u wrong)", bad);

	agile_field_sub(f, &part, &sub);
	agile_acc_init(&acc, sub, 2, AGILE_ACC_READ);
	count = 0;
	bad = agile_acc_span(&acc, part.offset.i, &p, &count, &stride) != 0;
	tap_ok(!bad && count && count <= part.extent.n[0] &&
		       *(double *)p ==
			       value(part.offset.i[0], part.offset.i[1]),
	       "span of a sub-field: stops at its edge (%llu of %llu)",
	       (unsigned long long)count, (unsigned long long)part.extent.n[0]);
	tap_ok(agile_acc_span(&acc, (int64_t[2]){ part.offset.i[0] - 1, 0 }, &p,
			      &count, &stride) == -ERANGE,
	       "span outside: -ERANGE");
	agile_field_destroy(t);
	agile_field_destroy(sub);
}

static void one_map(struct agile_segmap *sm, struct agile_rmap *rm,
		    const struct agile_grid *g, const char *what)
{
	struct agile_field *f = NULL;

	if (!tap_ok_call(agile_field_create(sm, rm, NULL, sizeof(double), &f),
			 what))
		return;
	tap_ok_call(fill(f, g), "fill through puts");
	for (uint32_t q = 0; q < 3; q++)
		read_all(f, rm, g, q, what);
	bounds(f, g);
	writes(f, rm);
	views(f, g);
	spans(f, rm, g);
	agile_field_destroy(f);
	agile_rmap_destroy(rm);
}

int main(void)
{
	struct agile_grid g = grid2(-5, 2, 30, 24);
	struct agile_extent tile = ext2(10, 8);
	struct agile_proto p = proto(AGILE_PROTO_CYCLIC, 3);
	int64_t a0[3] = { -1, 7, 8 }, a1[2] = { 3, 20 };
	struct agile_split sp = { .nr = { 3, 2 }, .at = { a0, a1 } };
	struct agile_segmap *sm = NULL;
	struct agile_rmap *rm = NULL;

	if (!tap_ok_call(agile_segmap_threads(3, NULL, &sm), "3 nodes"))
		return tap_done();
	agile_rmap_tiles(&g, &tile, &p, &rm);
	one_map(sm, rm, &g, "regular map (tiles 10x8)");
	rm = NULL;
	p = proto(AGILE_PROTO_BLOCK, 3);
	agile_rmap_split(&g, &sp, &p, &rm);
	one_map(sm, rm, &g, "irregular map (split points)");
	tap_ok(agile_segmap_destroy(sm) == 0, "map destroyed");
	return tap_done();
}
