// SPDX-License-Identifier: MIT
/*
 * segmap-grid - extents, indices and grids: totals (and their overflow),
 * flatten with index[0] fastest (seed 000's multipliers), contains with
 * its bounds on both sides (a negative offset included), and the
 * arguments each refuses.
 */
#include <agile/segmap.h>
#include <errno.h>
#include <stdint.h>

#include "tap.h"
#include "segmaptest.h"

int main(void)
{
	struct agile_extent e3 = { .rank = 3, .n = { 4, 5, 6 } };
	struct agile_grid g = grid2(10, -3, 6, 4);
	struct agile_grid g3 = { .extent = e3,
				 .offset = { .rank = 3, .i = { 1, 2, 3 } } };
	struct agile_index i3 = { .rank = 3, .i = { 2, 4, 5 } };
	struct agile_extent big = ext2(UINT64_C(1) << 40, UINT64_C(1) << 40);
	struct agile_extent five = { .rank = 5 };
	uint64_t total = 0, flat = 0;
	int err;

	err = agile_extent_total(&e3, &total);
	tap_ok(!err && total == 120, "total of 4x5x6: %llu",
	       (unsigned long long)total);
	tap_ok(agile_extent_total(&big, &total) == -EOVERFLOW,
	       "2^40 x 2^40 overflows");
	tap_ok(agile_extent_total(&five, &total) == -EINVAL, "rank 5 refused");
	e3.n[1] = 0;
	failed_with(agile_extent_total(&e3, &total), -EINVAL, "zero extent",
		    "a zero extent");
	e3.n[1] = 5;

	/* flatten: (i0 - o0) + 6 * (i1 - o1) */
	err = agile_grid_flatten(
		&g, &(struct agile_index){ .rank = 2, .i = { 10, -3 } }, &flat);
	tap_ok(!err && flat == 0, "first index flattens to 0");
	err = agile_grid_flatten(
		&g, &(struct agile_index){ .rank = 2, .i = { 13, -1 } }, &flat);
	tap_ok(!err && flat == 3 + 6 * 2, "(13,-1) flattens to 15: %llu",
	       (unsigned long long)flat);
	err = agile_grid_flatten(
		&g, &(struct agile_index){ .rank = 2, .i = { 15, 0 } }, &flat);
	tap_ok(!err && flat == 23, "last index flattens to total - 1");
	/* rank 3: (1 + 4 * (2 + 5 * 2)) */
	err = agile_grid_flatten(&g3, &i3, &flat);
	tap_ok(!err && flat == 1 + 4 * (2 + 5 * 2), "rank 3 flatten: %llu",
	       (unsigned long long)flat);
	failed_with(agile_grid_flatten(&g,
				       &(struct agile_index){ .rank = 2,
							      .i = { 16, 0 } },
				       &flat),
		    -ERANGE, "outside", "flatten past the end");
	failed_with(agile_grid_flatten(&g, &i3, &flat), -EINVAL, "rank",
		    "flatten with a rank 3 index");

	/* contains: per axis, both bounds, negative coordinates */
	tap_ok(agile_grid_contains(&g,
				   &(struct agile_index){
					   .rank = 2, .i = { 10, -3 } }) == 1,
	       "contains its first index");
	tap_ok(agile_grid_contains(
		       &g,
		       &(struct agile_index){ .rank = 2, .i = { 9, -3 } }) == 0,
	       "not the index before it on axis 0");
	tap_ok(agile_grid_contains(&g,
				   &(struct agile_index){
					   .rank = 2, .i = { 10, -4 } }) == 0,
	       "not the index before it on axis 1 (negative)");
	tap_ok(agile_grid_contains(
		       &g,
		       &(struct agile_index){ .rank = 2, .i = { 15, 0 } }) == 1,
	       "contains its last index");
	tap_ok(agile_grid_contains(
		       &g,
		       &(struct agile_index){ .rank = 2, .i = { 15, 1 } }) == 0,
	       "not one past it");
	tap_ok(agile_grid_contains(
		       &g, &(struct agile_index){ .rank = 2,
						  .i = { INT64_MIN, 0 } }) == 0,
	       "not INT64_MIN");
	tap_ok(agile_grid_contains(&g, &i3) == -EINVAL, "rank mismatch");
	tap_ok(agile_grid_contains(NULL, &i3) == -EINVAL, "NULL grid");
	return tap_done();
}
