// SPDX-License-Identifier: MIT
/*
 * segmap-local-view - the local global view on seed 000's example
 * (96x96, 16x16 algorithmic tiles, 16x32 memory blocks, nine 32x32
 * segments on 4 nodes row block-cyclic): the tile cursor visits each
 * node's segments in order and ends with -ENOENT; a tile's pointer and
 * strides reach the same elements as agile_field_get; C = A + B^T by
 * tiles with explicit moves (the seed's move_memory(C, B)): a move
 * returns 0 when it copied a memory block and 1 when the block was
 * there already (block 8 after block 2), 8 moves in all, and the tile
 * reads after the moves copy nothing more.
 */
#include <agile/segmap.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "tap.h"
#include "segmaptest.h"

#define N 96
#define BLK 16

static double value_a(int64_t x, int64_t y)
{
	return (double)(x * 3 + y);
}

static double value_b(int64_t x, int64_t y)
{
	return (double)(x - 2 * y);
}

static double *at(const struct agile_tile *t, int64_t x, int64_t y)
{
	return (double *)t->base + (x - t->grid.offset.i[0]) * t->stride[0] +
	       (y - t->grid.offset.i[1]) * t->stride[1];
}

static void cursor(struct agile_field *c)
{
	/* node 0 holds 20(1), 20(5), 20(9): ours 0, 4, 8 */
	struct agile_tile_cursor cur = { 0 };
	uint32_t segs[4], nr = 0;
	int err;

	while (!(err = agile_tile_reset(&cur, c, 0)) && nr < 4)
		segs[nr++] = cur.segment;
	tap_ok(err == -ENOENT && nr == 3 && segs[0] == 0 && segs[1] == 4 &&
		       segs[2] == 8,
	       "node 0's cursor: segments 0, 4, 8, then -ENOENT");
	cur = (struct agile_tile_cursor){ 0 };
	agile_tile_reset(&cur, c, 3);
	tap_ok(cur.segment == 3 && cur.first[0] == 0 && cur.first[1] == 2 &&
		       cur.count[0] == 2 && cur.count[1] == 2,
	       "node 3's first segment 20(4): tiles (0..1, 2..3)");
}

static void fill(struct agile_field *f, double (*value)(int64_t, int64_t))
{
	for (int64_t y = 0; y < N; y++)
		for (int64_t x = 0; x < N; x++) {
			double v = value(x, y);

			agile_field_put(f,
					&(struct agile_index){ .rank = 2,
							       .i = { x, y } },
					&v);
		}
}

static void tiles_match(struct agile_field *a)
{
	struct agile_acc acc;
	struct agile_tile t;
	uint32_t bad = 0;
	int err;

	agile_acc_init(&acc, a, 2, AGILE_ACC_READ);
	err = agile_tile_get(&acc, (int64_t[2]){ 3, 5 }, &t);
	for (int64_t y = t.grid.offset.i[1];
	     !err && y < t.grid.offset.i[1] + (int64_t)t.grid.extent.n[1]; y++)
		for (int64_t x = t.grid.offset.i[0];
		     x < t.grid.offset.i[0] + (int64_t)t.grid.extent.n[0]; x++)
			bad += *at(&t, x, y) != value_a(x, y);
	tap_ok(!err && t.grid.offset.i[0] == 3 * BLK &&
		       t.grid.offset.i[1] == 5 * BLK && !bad,
	       "tile (3,5): its 16x16 elements by pointer and strides (%u wrong)",
	       bad);
	tap_ok(agile_tile_get(&acc, (int64_t[2]){ 6, 0 }, &t) == -ERANGE,
	       "tile (6,0) is outside");
	agile_acc_init(&acc, a, 2, AGILE_ACC_WRITE);
	tap_ok(agile_tile_get(&acc, (int64_t[2]){ 0, 0 }, &t) == -EACCES,
	       "node 2 may not write tile (0,0) (node 0's)");
	agile_field_drop_copies(a);
	agile_field_stats_reset(a);
}

/* C = A + B^T, node by node, segment by segment, tile by tile. */
static void transpose_add(struct agile_field *c, struct agile_field *a,
			  struct agile_field *b, struct agile_field *bt)
{
	struct agile_field_stats st;
	uint32_t bad = 0, moved = 0, there = 0;
	int err = 0;

	for (uint32_t q = 0; q < 4; q++) {
		struct agile_tile_cursor cur = { 0 };
		struct agile_acc ac, aa, ab;

		agile_acc_init(&ac, c, q, AGILE_ACC_WRITE);
		agile_acc_init(&aa, a, q, AGILE_ACC_READ);
		agile_acc_init(&ab, bt, q, AGILE_ACC_READ);
		while (!agile_tile_reset(&cur, c, q)) {
			for (uint64_t j = 0; j < cur.count[1]; j++)
				for (uint64_t i = 0; i < cur.count[0]; i++) {
					int64_t ti[2] = {
						cur.first[0] + (int64_t)i,
						cur.first[1] + (int64_t)j
					};
					struct agile_tile tc, ta, tb;
					int r = agile_tile_move(c, bt, ti);

					moved += r == 0;
					there += r == 1;
					if (r < 0 ||
					    (err = agile_tile_get(&ac, ti,
								  &tc)) ||
					    (err = agile_tile_get(&aa, ti,
								  &ta)) ||
					    (err = agile_tile_get(&ab, ti,
								  &tb))) {
						bad++;
						continue;
					}
					for (int64_t y = tc.grid.offset.i[1];
					     y < tc.grid.offset.i[1] + BLK; y++)
						for (int64_t x =
							     tc.grid.offset.i[0];
						     x <
						     tc.grid.offset.i[0] + BLK;
						     x++)
							*at(&tc, x, y) =
								*at(&ta, x, y) +
								*at(&tb, x, y);
				}
		}
	}
	agile_field_stats(b, AGILE_SEGMAP_ALL_NODES, &st);
	tap_ok(!bad && moved == 8 && there == 28 && st.moves == 8,
	       "36 tiles: 8 moves copied a block, 28 found it there (%u, %u, %llu counted, %u failed)",
	       moved, there, (unsigned long long)st.moves, bad);
	{
		double *g = malloc(N * N * sizeof(double));
		uint32_t wrong = 0;

		agile_field_gather(c, g, N * N * sizeof(double));
		for (int64_t y = 0; y < N; y++)
			for (int64_t x = 0; x < N; x++)
				wrong += g[y * N + x] !=
					 value_a(x, y) + value_b(y, x);
		tap_ok(!wrong, "C = A + B^T by tiles equals the reference");
		free(g);
	}
}

static void seed_moves(struct agile_field *c, struct agile_field *b,
		       struct agile_field *bt)
{
	/* C(2,0) in 20(4) on node 3 needs B^T tile (0,2) = B's block 2 */
	tap_ok(agile_tile_move(c, bt, (int64_t[2]){ 0, 2 }) == 0,
	       "move_memory(C, B) for C(2,0): block 2 copied");
	tap_ok(agile_tile_move(c, bt, (int64_t[2]){ 1, 2 }) == 1,
	       "for C(2,1): block 8 came with 2, nothing to copy");
	tap_ok(agile_field_block_held(b, 2, 3) == 1,
	       "node 3 holds B's memory block 2");
	agile_field_drop_copies(b);
	agile_field_stats_reset(b);
}

int main(void)
{
	struct agile_grid g = grid2(0, 0, N, N);
	struct agile_extent seg = ext2(2 * BLK, 2 * BLK);
	struct agile_proto p = proto(AGILE_PROTO_CYCLIC, 4);
	struct agile_levels lv = { .tile = ext2(BLK, BLK),
				   .block = ext2(BLK, 2 * BLK) };
	struct agile_segmap *sm = NULL;
	struct agile_rmap *rm = NULL;
	struct agile_field *a = NULL, *b = NULL, *c = NULL, *bt = NULL;
	int err;

	err = agile_segmap_threads(4, NULL, &sm);
	if (!err)
		err = agile_rmap_tiles(&g, &seg, &p, &rm);
	if (!err)
		err = agile_field_create(sm, rm, &lv, sizeof(double), &a);
	if (!err)
		err = agile_field_create(sm, rm, &lv, sizeof(double), &b);
	if (!err)
		err = agile_field_create(sm, rm, &lv, sizeof(double), &c);
	if (!err)
		err = agile_field_transpose(b, 0, 1, &bt);
	if (!tap_ok_call(err, "the seed's fields"))
		return tap_done();
	fill(a, value_a);
	fill(b, value_b);
	cursor(c);
	tiles_match(a);
	seed_moves(c, b, bt);
	transpose_add(c, a, b, bt);
	agile_field_destroy(bt);
	agile_field_destroy(a);
	agile_field_destroy(b);
	agile_field_destroy(c);
	agile_rmap_destroy(rm);
	tap_ok(agile_segmap_destroy(sm) == 0, "map destroyed");
	return tap_done();
}
