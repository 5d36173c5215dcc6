// SPDX-License-Identifier: MIT
/*
 * segmap-rmap - resource maps: split points make prod(N(i) + 1)
 * segments of the right extents; every protocol with Q = 3 and Q = 4
 * against node assignments written out by hand from seed 000's 6x6
 * examples (elements and the nine 2x2 segments 20(1)..20(9), numbered
 * row by row; ours are 0-based), including its row block-cyclic Q = 4
 * (segment s -> node (s - 1) mod 4); weighted block; block-block on a
 * node grid; and lookups (tile division, per-axis search, explicit
 * lists) against a scan of the segments.
 */
#include <agile/segmap.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "tap.h"
#include "segmaptest.h"

/* The nodes of @rm's segments equal @want. */
static void check_nodes(struct agile_rmap *rm, const uint32_t *want,
			uint32_t nr, const char *what)
{
	int n = rm ? agile_rmap_nr_segments(rm) : -1;
	uint32_t bad = UINT32_MAX, node = 0;

	for (uint32_t s = 0; n == (int)nr && s < nr; s++) {
		agile_rmap_segment(rm, s, NULL, &node);
		if (node != want[s] && bad == UINT32_MAX)
			bad = s;
	}
	tap_ok(n == (int)nr && bad == UINT32_MAX, "%s: %d segments%s", what, n,
	       bad == UINT32_MAX ? "" : ", a segment on the wrong node");
	if (bad != UINT32_MAX) {
		agile_rmap_segment(rm, bad, NULL, &node);
		tap_diag("segment %u on node %u, want %u", bad, node,
			 want[bad]);
	}
	agile_rmap_destroy(rm);
}

static struct agile_rmap *elements(uint32_t kind, uint32_t q, uint32_t run)
{
	struct agile_grid g = grid2(0, 0, 6, 6);
	struct agile_extent one = ext2(1, 1);
	struct agile_proto p = proto(kind, q);
	struct agile_rmap *rm = NULL;

	p.run = run;
	if (agile_rmap_tiles(&g, &one, &p, &rm))
		tap_diag("tiles: %s", agile_segmap_why());
	return rm;
}

static struct agile_rmap *segments9(uint32_t kind, uint32_t q)
{
	struct agile_grid g = grid2(0, 0, 6, 6);
	struct agile_extent two = ext2(2, 2);
	struct agile_proto p = proto(kind, q);
	struct agile_rmap *rm = NULL;

	if (agile_rmap_tiles(&g, &two, &p, &rm))
		tap_diag("tiles: %s", agile_segmap_why());
	return rm;
}

static void seed_protocols(void)
{
	uint32_t want[36];
	struct agile_grid sg;

	/* row block, Q = 3: elements 0-11, 12-23, 24-35 */
	for (uint32_t e = 0; e < 36; e++)
		want[e] = e / 12;
	check_nodes(elements(AGILE_PROTO_BLOCK, 3, 0), want, 36,
		    "seed row block Q=3 (BLOCK over elements)");
	check_nodes(elements(AGILE_PROTO_ROW_BLOCK, 3, 0), want, 36,
		    "seed row block Q=3 (ROW_BLOCK over elements)");
	/* row block, Q = 4: elements 0-8, 9-17, 18-26, 27-35 */
	for (uint32_t e = 0; e < 36; e++)
		want[e] = e / 9;
	check_nodes(elements(AGILE_PROTO_BLOCK, 4, 0), want, 36,
		    "seed row block Q=4 (ends at element 35)");
	/* row cyclic: element 3k (4k) to node 1, 3k+1 to node 2, ... */
	for (uint32_t e = 0; e < 36; e++)
		want[e] = e % 3;
	check_nodes(elements(AGILE_PROTO_CYCLIC, 3, 0), want, 36,
		    "seed row cyclic Q=3");
	for (uint32_t e = 0; e < 36; e++)
		want[e] = e % 4;
	check_nodes(elements(AGILE_PROTO_CYCLIC, 4, 0), want, 36,
		    "seed row cyclic Q=4");
	/* block-cyclic with runs of 2 elements */
	for (uint32_t e = 0; e < 36; e++)
		want[e] = e / 2 % 3;
	check_nodes(elements(AGILE_PROTO_BLOCK_CYCLIC, 3, 2), want, 36,
		    "block-cyclic run 2 Q=3");
	for (uint32_t e = 0; e < 36; e++)
		want[e] = e / 2 % 4;
	check_nodes(elements(AGILE_PROTO_BLOCK_CYCLIC, 4, 2), want, 36,
		    "block-cyclic run 2 Q=4");

	/* the nine 2x2 segments: 20(1) holds elements 0, 1, 6, 7 */
	{
		struct agile_rmap *rm = segments9(AGILE_PROTO_CYCLIC, 4);
		uint32_t seg = 99;

		agile_rmap_segment(rm, 1, &sg, NULL);
		tap_ok(sg.offset.i[0] == 2 && sg.offset.i[1] == 0 &&
			       sg.extent.n[0] == 2 && sg.extent.n[1] == 2,
		       "20(2) is elements 2, 3, 8, 9: offset (2,0) extent 2x2");
		agile_rmap_find(
			rm, &(struct agile_index){ .rank = 2, .i = { 1, 1 } },
			&seg);
		tap_ok(seg == 0, "element 7 = (1,1) is in 20(1)");
		agile_rmap_find(
			rm, &(struct agile_index){ .rank = 2, .i = { 3, 1 } },
			&seg);
		tap_ok(seg == 1, "element 9 = (3,1) is in 20(2)");
		agile_rmap_destroy(rm);
	}
	/* row block-cyclic: Q = 3: 20(1), 20(4), 20(7) to node 1, ... */
	{
		uint32_t q3[9] = { 0, 1, 2, 0, 1, 2, 0, 1, 2 };
		/* Q = 4: 20(1), 20(5), 20(9) node 1; 20(2), 20(6) node 2; ... */
		uint32_t q4[9] = { 0, 1, 2, 3, 0, 1, 2, 3, 0 };

		check_nodes(segments9(AGILE_PROTO_CYCLIC, 3), q3, 9,
			    "seed row block-cyclic Q=3");
		check_nodes(segments9(AGILE_PROTO_BLOCK_CYCLIC, 3), q3, 9,
			    "seed row block-cyclic Q=3 (BLOCK_CYCLIC run 1)");
		check_nodes(segments9(AGILE_PROTO_CYCLIC, 4), q4, 9,
			    "seed row block-cyclic Q=4: s -> (s-1) mod 4");
		check_nodes(segments9(AGILE_PROTO_BLOCK_CYCLIC, 4), q4, 9,
			    "seed row block-cyclic Q=4 (BLOCK_CYCLIC run 1)");
	}
	/* column block Q = 3: columns of segments 20(1),20(4),20(7) node 1 */
	{
		uint32_t c3[9] = { 0, 1, 2, 0, 1, 2, 0, 1, 2 };
		/* Q = 4: three columns for four nodes, node 4 gets none */
		uint32_t c4[9] = { 0, 1, 2, 0, 1, 2, 0, 1, 2 };

		check_nodes(segments9(AGILE_PROTO_COLUMN_BLOCK, 3), c3, 9,
			    "seed column block Q=3");
		check_nodes(segments9(AGILE_PROTO_COLUMN_BLOCK, 4), c4, 9,
			    "column block Q=4");
	}
	/* row block-block Q = 3: 20(1)-20(3) node 1, 20(4)-20(6) node 2, ... */
	{
		uint32_t r3[9] = { 0, 0, 0, 1, 1, 1, 2, 2, 2 };
		uint32_t r4[9] = { 0, 0, 0, 1, 1, 1, 2, 2, 2 };
		/* BLOCK Q = 4 over 9: runs of 3, 2, 2, 2 */
		uint32_t b4[9] = { 0, 0, 0, 1, 1, 2, 2, 3, 3 };

		check_nodes(segments9(AGILE_PROTO_ROW_BLOCK, 3), r3, 9,
			    "seed row block-block Q=3 (ROW_BLOCK)");
		check_nodes(segments9(AGILE_PROTO_BLOCK, 3), r3, 9,
			    "seed row block-block Q=3 (BLOCK)");
		check_nodes(segments9(AGILE_PROTO_ROW_BLOCK, 4), r4, 9,
			    "row block Q=4 over three rows");
		check_nodes(segments9(AGILE_PROTO_BLOCK, 4), b4, 9,
			    "block Q=4 over nine segments");
	}
	/* block-block: Q = 4 as 2 x 2 nodes over 3 x 3 segments */
	{
		uint32_t bb4[9] = { 0, 1, 1, 2, 3, 3, 2, 3, 3 };
		/* Q = 3 picks 3 x 1: each node a column of segments */
		uint32_t bb3[9] = { 0, 1, 2, 0, 1, 2, 0, 1, 2 };
		struct agile_grid g = grid2(0, 0, 6, 6);
		struct agile_extent two = ext2(2, 2);
		struct agile_proto p = proto(AGILE_PROTO_BLOCK_BLOCK, 4);
		struct agile_rmap *rm = NULL;

		p.node_grid = ext2(2, 2);
		agile_rmap_tiles(&g, &two, &p, &rm);
		check_nodes(rm, bb4, 9, "block-block Q=4 on a 2x2 node grid");
		check_nodes(segments9(AGILE_PROTO_BLOCK_BLOCK, 4), bb4, 9,
			    "block-block Q=4, node grid picked");
		check_nodes(segments9(AGILE_PROTO_BLOCK_BLOCK, 3), bb3, 9,
			    "block-block Q=3, node grid picked (3x1)");
	}
}

static void weighted(void)
{
	struct agile_grid g = grid2(0, 0, 12, 1);
	struct agile_extent one = ext2(1, 1);
	double w3[3] = { 1, 2, 1 };
	double w2[2] = { 3, 1 };
	/* 12 tiles at 1:2:1 -> 3, 6, 3 */
	uint32_t want[12] = { 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2 };
	uint32_t cols[16] = { 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1 };
	struct agile_proto p = proto(AGILE_PROTO_BLOCK, 3);
	struct agile_rmap *rm = NULL;
	double bad[3] = { 1, 0, 1 };

	p.weights = w3;
	agile_rmap_tiles(&g, &one, &p, &rm);
	check_nodes(rm, want, 12, "weighted block 1:2:1 over 12");
	/* column block, 3:1 over 8 columns of a 8x2 grid: 6 and 2 */
	g = grid2(0, 0, 8, 2);
	p = proto(AGILE_PROTO_COLUMN_BLOCK, 2);
	p.weights = w2;
	rm = NULL;
	agile_rmap_tiles(&g, &one, &p, &rm);
	check_nodes(rm, cols, 16, "weighted column block 3:1 over 8 columns");
	p = proto(AGILE_PROTO_BLOCK, 3);
	p.weights = bad;
	failed_with(agile_rmap_tiles(&g, &one, &p, &rm), -EINVAL, "weight",
		    "a zero weight");
}

static void split_points(void)
{
	struct agile_grid g = grid2(0, 0, 36, 36);
	int64_t a0[1] = { 16 }, a1[2] = { 10, 20 };
	struct agile_split sp = { .nr = { 1, 2 }, .at = { a0, a1 } };
	struct agile_proto p = proto(AGILE_PROTO_CYCLIC, 4);
	struct agile_rmap *rm = NULL;
	struct agile_grid s5;
	int err;

	err = agile_rmap_split(&g, &sp, &p, &rm);
	tap_ok(!err && agile_rmap_nr_segments(rm) == 6,
	       "split 1 x 2 points: (1+1)(2+1) = 6 segments");
	agile_rmap_segment(rm, 5, &s5, NULL);
	tap_ok(s5.offset.i[0] == 16 && s5.offset.i[1] == 20 &&
		       s5.extent.n[0] == 20 && s5.extent.n[1] == 16,
	       "segment 5: offset (16,20), extent 20x16");
	agile_rmap_destroy(rm);

	/* rank 3: 2, 0 and 3 points: 3 x 1 x 4 = 12 */
	{
		struct agile_grid g3 = {
			.extent = { .rank = 3, .n = { 10, 10, 10 } },
			.offset = { .rank = 3, .i = { -5, 0, 5 } },
		};
		int64_t b0[2] = { -2, 0 }, b2[3] = { 6, 7, 12 };
		struct agile_split s3 = { .nr = { 2, 0, 3 },
					  .at = { b0, NULL, b2 } };

		rm = NULL;
		err = agile_rmap_split(&g3, &s3, &p, &rm);
		tap_ok(!err && agile_rmap_nr_segments(rm) == 12,
		       "rank 3 split: 3 x 1 x 4 = 12 segments");
		agile_rmap_destroy(rm);
	}
}

/* Every index of @rm's parent is found in the segment that holds it. */
static void check_find(struct agile_rmap *rm, const char *what)
{
	struct agile_grid parent, sg;
	uint32_t bad = 0, n = (uint32_t)agile_rmap_nr_segments(rm);

	agile_rmap_segment(rm, 0, &parent, NULL);
	/* the parent: the box around all segments */
	for (uint32_t s = 1; s < n; s++) {
		agile_rmap_segment(rm, s, &sg, NULL);
		for (uint32_t d = 0; d < 2; d++) {
			int64_t hi = parent.offset.i[d] +
				     (int64_t)parent.extent.n[d];
			int64_t shi = sg.offset.i[d] + (int64_t)sg.extent.n[d];

			if (sg.offset.i[d] < parent.offset.i[d])
				parent.offset.i[d] = sg.offset.i[d];
			if (shi > hi)
				hi = shi;
			parent.extent.n[d] =
				(uint64_t)(hi - parent.offset.i[d]);
		}
	}
	for (uint64_t y = 0; y < parent.extent.n[1]; y++)
		for (uint64_t x = 0; x < parent.extent.n[0]; x++) {
			struct agile_index i =
				idx2(parent.offset.i[0] + (int64_t)x,
				     parent.offset.i[1] + (int64_t)y);
			uint32_t seg = UINT32_MAX;

			if (agile_rmap_find(rm, &i, &seg) ||
			    agile_rmap_segment(rm, seg, &sg, NULL) ||
			    agile_grid_contains(&sg, &i) != 1)
				bad++;
		}
	tap_ok(bad == 0, "%s: every index found in its segment (%u wrong)",
	       what, bad);
	agile_rmap_destroy(rm);
}

static void lookups(void)
{
	struct agile_grid g = grid2(-7, 3, 23, 17);
	struct agile_proto p = proto(AGILE_PROTO_BLOCK, 3);
	struct agile_extent t = ext2(5, 4);
	int64_t a0[3] = { -6, 0, 9 }, a1[2] = { 4, 15 };
	struct agile_split sp = { .nr = { 3, 2 }, .at = { a0, a1 } };
	struct agile_rmap *rm = NULL;

	agile_rmap_tiles(&g, &t, &p, &rm);
	check_find(rm, "tiles 5x4 with ragged edges (division)");
	rm = NULL;
	agile_rmap_split(&g, &sp, &p, &rm);
	check_find(rm, "split points (binary search)");
	{
		/* an L-shaped list: no product structure */
		struct agile_grid segs[4] = {
			grid2(0, 0, 4, 2),
			grid2(4, 0, 2, 5),
			grid2(0, 2, 3, 3),
			grid2(3, 2, 1, 3),
		};
		uint32_t nodes[4] = { 0, 1, 0, 1 };
		struct agile_grid parent = grid2(0, 0, 6, 5);
		int err;

		rm = NULL;
		err = agile_rmap_list(&parent, 4, segs, nodes, 2, &rm);
		tap_ok(!err, "an explicit list of 4 boxes: %s",
		       agile_segmap_why());
		if (!err)
			check_find(rm, "explicit list (binary search)");
	}
}

int main(void)
{
	seed_protocols();
	weighted();
	split_points();
	lookups();
	return tap_done();
}
