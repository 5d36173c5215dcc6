// SPDX-License-Identifier: MIT
/*
 * segmap-bad-maps - maps, levels and indices that must be refused, each
 * with -EINVAL (or -ERANGE for an index) and a sentence that names the
 * fault: overlapping segments, a gap, a segment out of range, bad split
 * points, levels that do not divide each other or a segment, ranks that
 * do not match, more than 4 dimensions, zero extents, node counts that
 * disagree, and indices outside the grid (negative ones too).
 */
#include <agile/segmap.h>
#include <errno.h>
#include <stdint.h>

#include "tap.h"
#include "segmaptest.h"

static void lists(void)
{
	struct agile_grid parent = grid2(0, 0, 4, 4);
	uint32_t nodes[4] = { 0, 1, 0, 1 };
	struct agile_rmap *rm = NULL;
	struct agile_grid overlap[4] = {
		grid2(0, 0, 2, 2),
		grid2(1, 0, 3, 2), /* shares column 1 with segment 0 */
		grid2(0, 2, 2, 2),
		grid2(2, 2, 2, 2),
	};
	struct agile_grid gap[3] = {
		grid2(0, 0, 4, 2), grid2(0, 2, 2, 2),
		grid2(3, 2, 1, 2), /* column 2 of rows 2, 3: nobody's */
	};
	struct agile_grid out[2] = {
		grid2(0, 0, 4, 2),
		grid2(0, 2, 4, 3), /* row 4 is past the parent */
	};
	struct agile_grid neg[2] = {
		grid2(-1, 0, 4, 2),
		grid2(0, 2, 4, 2),
	};
	struct agile_grid rank3[2] = {
		grid2(0, 0, 4, 2),
		{ .extent = { .rank = 3, .n = { 4, 2, 1 } },
		  .offset = { .rank = 3, .i = { 0, 2, 0 } } },
	};
	struct agile_grid good[2] = { grid2(0, 0, 4, 2), grid2(0, 2, 4, 2) };
	uint32_t bad_node[2] = { 0, 2 };

	failed_with(agile_rmap_list(&parent, 4, overlap, nodes, 2, &rm),
		    -EINVAL, "overlaps", "overlapping segments");
	failed_with(agile_rmap_list(&parent, 3, gap, nodes, 2, &rm), -EINVAL,
		    "gap", "a gap between segments");
	failed_with(agile_rmap_list(&parent, 3, gap, nodes, 2, &rm), -EINVAL,
		    "(2,2)", "the gap's first index named");
	failed_with(agile_rmap_list(&parent, 2, out, nodes, 2, &rm), -EINVAL,
		    "out of range", "a segment past the parent");
	failed_with(agile_rmap_list(&parent, 2, neg, nodes, 2, &rm), -EINVAL,
		    "out of range", "a segment before the parent (negative)");
	failed_with(agile_rmap_list(&parent, 2, rank3, nodes, 2, &rm), -EINVAL,
		    "rank", "a segment of another rank");
	failed_with(agile_rmap_list(&parent, 2, good, bad_node, 2, &rm),
		    -EINVAL, "node 2", "a node past Q");
	tap_ok(rm == NULL, "no map came out of the refusals");
	tap_ok_call(agile_rmap_list(&parent, 2, good, nodes, 2, &rm),
		    "the same list made right");
	agile_rmap_destroy(rm);
}

static void grids_and_splits(void)
{
	struct agile_grid parent = grid2(0, 0, 8, 8);
	struct agile_grid five = parent;
	struct agile_grid zero = grid2(0, 0, 8, 0);
	struct agile_extent t = ext2(2, 2);
	struct agile_proto p = proto(AGILE_PROTO_BLOCK, 2);
	int64_t outside[1] = { 8 }, down[2] = { 5, 3 };
	struct agile_split s1 = { .nr = { 1 }, .at = { outside } };
	struct agile_split s2 = { .nr = { 0, 2 }, .at = { NULL, down } };
	struct agile_extent t3 = { .rank = 3, .n = { 2, 2, 2 } };
	struct agile_rmap *rm = NULL;

	five.extent.rank = five.offset.rank = 5;
	failed_with(agile_rmap_tiles(&five, &t, &p, &rm), -EINVAL, "rank 5",
		    "more than 4 dimensions");
	failed_with(agile_rmap_tiles(&zero, &t, &p, &rm), -EINVAL,
		    "zero extent", "a zero extent");
	failed_with(agile_rmap_tiles(&parent, &t3, &p, &rm), -EINVAL, "rank",
		    "a tile of another rank");
	failed_with(agile_rmap_split(&parent, &s1, &p, &rm), -EINVAL,
		    "not inside", "a split point on the parent's end");
	failed_with(agile_rmap_split(&parent, &s2, &p, &rm), -EINVAL,
		    "not inside", "split points not increasing");
	p.nr_nodes = 0;
	failed_with(agile_rmap_tiles(&parent, &t, &p, &rm), -EINVAL, "nodes",
		    "no nodes");
	p = proto(AGILE_PROTO_BLOCK_BLOCK, 4);
	p.node_grid = ext2(3, 1);
	failed_with(agile_rmap_tiles(&parent, &t, &p, &rm), -EINVAL,
		    "node grid", "a node grid of 3 nodes for 4");
	p = proto(99, 4);
	failed_with(agile_rmap_tiles(&parent, &t, &p, &rm), -EINVAL,
		    "no such protocol", "an unknown protocol");
}

static void levels(void)
{
	struct agile_grid parent = grid2(0, 0, 12, 12);
	struct agile_extent seg = ext2(6, 4);
	struct agile_proto p = proto(AGILE_PROTO_CYCLIC, 2);
	struct agile_rmap *rm = NULL;
	struct agile_segmap *sm = NULL, *sm3 = NULL;
	struct agile_field *f = NULL;
	struct agile_levels lv;

	if (!tap_ok_call(agile_rmap_tiles(&parent, &seg, &p, &rm), "tiles 6x4"))
		return;
	lv = (struct agile_levels){ .tile = ext2(2, 2), .block = ext2(3, 4) };
	failed_with(agile_levels_check(rm, &lv), -EINVAL, "not a multiple",
		    "M1 2x2 does not divide M2 3x4");
	lv = (struct agile_levels){ .tile = ext2(2, 2), .block = ext2(4, 4) };
	failed_with(agile_levels_check(rm, &lv), -EINVAL, "whole number",
		    "M2 4x4 does not divide a 6x4 segment");
	lv = (struct agile_levels){ .block = { .rank = 3, .n = { 3, 2, 1 } } };
	failed_with(agile_levels_check(rm, &lv), -EINVAL, "rank",
		    "a memory block of rank 3");
	lv = (struct agile_levels){ .tile = ext2(5, 1) };
	failed_with(agile_levels_check(rm, &lv), -EINVAL, "whole number",
		    "a tile of 5 in a segment of 6");
	lv = (struct agile_levels){ .tile = ext2(3, 2), .block = ext2(6, 2) };
	tap_ok_call(agile_levels_check(rm, &lv), "M1 3x2 | M2 6x2 | 6x4");

	agile_segmap_threads(2, NULL, &sm);
	agile_segmap_threads(3, NULL, &sm3);
	lv = (struct agile_levels){ .tile = ext2(2, 2), .block = ext2(4, 4) };
	failed_with(agile_field_create(sm, rm, &lv, 8, &f), -EINVAL,
		    "whole number", "a field with indivisible levels");
	failed_with(agile_field_create(sm3, rm, NULL, 8, &f), -EINVAL, "nodes",
		    "a field of a 2-node map on 3 nodes");
	failed_with(agile_field_create(sm, rm, NULL, 0, &f), -EINVAL, "element",
		    "elements of 0 bytes");
	tap_ok(f == NULL, "no field came out of the refusals");

	/* indices outside: -ERANGE, the index named */
	if (tap_ok_call(agile_field_create(sm, rm, NULL, 8, &f),
			"a good field")) {
		double v = 1;
		uint32_t sg;
		struct agile_acc acc;
		void *ptr;
		int64_t minus[2] = { -1, 0 };

		failed_with(agile_field_put(f,
					    &(struct agile_index){
						    .rank = 2, .i = { 0, 12 } },
					    &v),
			    -ERANGE, "(0,12)", "put at (0,12)");
		failed_with(agile_field_get(f,
					    &(struct agile_index){
						    .rank = 2, .i = { -1, 3 } },
					    &v),
			    -ERANGE, "out of range", "get at (-1,3)");
		failed_with(agile_rmap_find(rm,
					    &(struct agile_index){
						    .rank = 2, .i = { 3, -5 } },
					    &sg),
			    -ERANGE, "out of range", "find (3,-5)");
		failed_with(
			agile_field_get(f,
					&(struct agile_index){
						.rank = 3, .i = { 1, 1, 1 } },
					&v),
			-EINVAL, "rank", "a rank 3 index");
		agile_acc_init(&acc, f, 0, AGILE_ACC_READ);
		tap_ok(agile_acc_ptr(&acc, minus, &ptr) == -ERANGE &&
			       acc.err == -ERANGE,
		       "an accessor at (-1,0): -ERANGE, recorded");
		agile_field_destroy(f);
	}
	tap_ok(agile_segmap_destroy(sm) == 0 && agile_segmap_destroy(sm3) == 0,
	       "maps destroyed");
	agile_rmap_destroy(rm);
}

int main(void)
{
	lists();
	grids_and_splits();
	levels();
	return tap_done();
}
