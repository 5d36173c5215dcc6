// SPDX-License-Identifier: MIT
/*
 * segmap-seed-example - seed 000's worked example, exactly: a matrix of
 * 6x6 algorithmic blocks (numbered row by row: block 6i + j is C(i,j);
 * axis 0 is the column j, axis 1 the row i), memory blocks of 2 block
 * rows x 1 block column, nine 2x2-block segments 20(1)..20(9) on Q = 4
 * nodes by row block-cyclic (ours: segment s -> node s mod 4).
 *
 * C = A + B^T, full global view: segment 20(4) (ours 3, node 3) gets
 * exactly B's memory blocks 2 and 3 (holding blocks 2, 8 and 3, 9) from
 * node 1; touching block 2 brings 8 along and a later touch of 8 moves
 * nothing.  The whole forall: the diagonal segments (all on node 0)
 * move nothing, segments 1, 3, 5 and 7 move 2 memory blocks each, 8 in
 * all (4 to node 1, 4 to node 3), no block moves twice, and C equals a
 * plain reference.  C = A + B moves nothing.
 *
 * At 96x96 doubles (16x16-element blocks: the seed's 6144 scaled by
 * 1/64), and once at the seed's full 6144x6144 in floats (1024x1024
 * blocks), skipped under ASan and TSan (the compilers say which) and
 * with $AGILE_TEST_QUICK.
 */
#include <agile/sched.h>
#include <agile/segmap.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "segmaptest.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

#define MAX_EVENTS 64

/* The owner-copies seen, and which segment's kernel made each. */
static struct {
	pthread_mutex_t lock;
	uint32_t nr;
	uint64_t block[MAX_EVENTS];
	uint32_t from[MAX_EVENTS], to[MAX_EVENTS];
	uint32_t seg_moves[9];
} trace = { .lock = PTHREAD_MUTEX_INITIALIZER };
static __thread int32_t current_segment = -1;

static void on_move(struct agile_field *f, uint64_t block, uint32_t from,
		    uint32_t to, void *arg)
{
	(void)f;
	(void)arg;
	pthread_mutex_lock(&trace.lock);
	if (trace.nr < MAX_EVENTS) {
		trace.block[trace.nr] = block;
		trace.from[trace.nr] = from;
		trace.to[trace.nr] = to;
	}
	trace.nr++;
	if (current_segment >= 0 && current_segment < 9)
		trace.seg_moves[current_segment]++;
	pthread_mutex_unlock(&trace.lock);
}

static void trace_reset(void)
{
	pthread_mutex_lock(&trace.lock);
	trace.nr = 0;
	memset(trace.seg_moves, 0, sizeof(trace.seg_moves));
	pthread_mutex_unlock(&trace.lock);
}

/* Exact small integers, so float and double sums are exact too. */
static double value_a(int64_t x, int64_t y)
{
	return (double)((x * 7 + y * 3) % 1000);
}

static double value_b(int64_t x, int64_t y)
{
	return (double)((x * 5 + y * 11) % 997);
}

struct example {
	uint64_t n, blk; /* elements per side, per algorithmic block */
	size_t elem; /* sizeof(float) or sizeof(double) */
	struct agile_segmap *sm;
	struct agile_rmap *rm;
	struct agile_field *a, *b, *bt, *c;
};

static void store(const struct example *ex, void *p, double v)
{
	if (ex->elem == sizeof(float))
		*(float *)p = (float)v;
	else
		*(double *)p = v;
}

static double load(const struct example *ex, const void *p)
{
	return ex->elem == sizeof(float) ? *(const float *)p :
					   *(const double *)p;
}

/* Each node fills its own part of A and B: no moves. */
static int fill_kernel(struct agile_forall_ctx *ctx, void *arg)
{
	const struct example *ex = arg;
	const struct agile_grid *g = &ctx->grid;

	for (uint64_t y = 0; y < g->extent.n[1]; y++)
		for (uint64_t x = 0; x < g->extent.n[0]; x++) {
			int64_t i[2] = { g->offset.i[0] + (int64_t)x,
					 g->offset.i[1] + (int64_t)y };
			void *pa, *pb;
			int err = agile_acc_ptr(&ctx->acc[0], i, &pa);

			if (!err)
				err = agile_acc_ptr(&ctx->acc[1], i, &pb);
			if (err)
				return err;
			store(ex, pa, value_a(i[0], i[1]));
			store(ex, pb, value_b(i[0], i[1]));
		}
	return 0;
}

/* C = A + X, X being B^T or B: one element at a time, all checked. */
static int add_kernel(struct agile_forall_ctx *ctx, void *arg)
{
	const struct example *ex = arg;
	const struct agile_grid *g = &ctx->grid;

	current_segment = (int32_t)ctx->segment;
	for (uint64_t y = 0; y < g->extent.n[1]; y++)
		for (uint64_t x = 0; x < g->extent.n[0]; x++) {
			int64_t i[2] = { g->offset.i[0] + (int64_t)x,
					 g->offset.i[1] + (int64_t)y };
			void *pc, *pa, *px;
			int err = agile_acc_ptr(&ctx->acc[0], i, &pc);

			if (!err)
				err = agile_acc_ptr(&ctx->acc[1], i, &pa);
			if (!err)
				err = agile_acc_ptr(&ctx->acc[2], i, &px);
			if (err) {
				current_segment = -1;
				return err;
			}
			store(ex, pc, load(ex, pa) + load(ex, px));
		}
	current_segment = -1;
	return 0;
}

static int setup(struct example *ex, struct agile_sched *pool)
{
	struct agile_grid parent = grid2(0, 0, ex->n, ex->n);
	struct agile_extent node_block = ext2(2 * ex->blk, 2 * ex->blk);
	struct agile_proto p = proto(AGILE_PROTO_CYCLIC, 4);
	/* memory blocks: 1 block column (axis 0) x 2 block rows (axis 1) */
	struct agile_levels lv = { .tile = ext2(ex->blk, ex->blk),
				   .block = ext2(ex->blk, 2 * ex->blk) };
	struct agile_forall_field fill[2];
	int err;

	err = agile_segmap_threads(4, pool, &ex->sm);
	if (!err)
		err = agile_rmap_tiles(&parent, &node_block, &p, &ex->rm);
	if (!err)
		err = agile_field_create(ex->sm, ex->rm, &lv, ex->elem, &ex->a);
	if (!err)
		err = agile_field_create(ex->sm, ex->rm, &lv, ex->elem, &ex->b);
	if (!err)
		err = agile_field_create(ex->sm, ex->rm, &lv, ex->elem, &ex->c);
	if (!err)
		err = agile_field_transpose(ex->b, 0, 1, &ex->bt);
	if (err) {
		tap_diag("set-up: %s", agile_segmap_why());
		return err;
	}
	fill[0] = (struct agile_forall_field){ ex->a, AGILE_ACC_WRITE };
	fill[1] = (struct agile_forall_field){ ex->b, AGILE_ACC_WRITE };
	return agile_forall(ex->sm, ex->a, fill_kernel, ex, fill, 2, 0, NULL);
}

static void teardown(struct example *ex)
{
	agile_field_destroy(ex->bt);
	agile_field_destroy(ex->a);
	agile_field_destroy(ex->b);
	agile_field_destroy(ex->c);
	agile_rmap_destroy(ex->rm);
	tap_ok(agile_segmap_destroy(ex->sm) == 0, "segment map destroyed");
}

/* The number of the algorithmic block holding element (x, y) is 6i + j. */
static uint64_t element_block(const struct example *ex, uint64_t block)
{
	return block % 6 * ex->blk + block / 6 * ex->blk * ex->n;
}

/* Segment 20(4) alone, through an accessor of node 3 (ours). */
static void segment_4(struct example *ex)
{
	struct agile_acc acc;
	struct agile_field_stats st;
	uint64_t mb2 = 99, mb8 = 99, mb3 = 99, mb9 = 99;
	struct agile_levels lv = { .tile = ext2(ex->blk, ex->blk),
				   .block = ext2(ex->blk, 2 * ex->blk) };
	uint32_t seg = 99, node = 99;
	void *p;

	/* blocks 2 and 8 are B(0,2) and B(1,2): one memory block */
	agile_levels_tile_block(ex->rm, &lv, 2, &mb2);
	agile_levels_tile_block(ex->rm, &lv, 8, &mb8);
	agile_levels_tile_block(ex->rm, &lv, 3, &mb3);
	agile_levels_tile_block(ex->rm, &lv, 9, &mb9);
	tap_ok(mb2 == 2 && mb8 == 2 && mb3 == 3 && mb9 == 3,
	       "blocks 2, 8 in memory block 2; 3, 9 in memory block 3 (%llu %llu %llu %llu)",
	       (unsigned long long)mb2, (unsigned long long)mb8,
	       (unsigned long long)mb3, (unsigned long long)mb9);
	agile_rmap_find(ex->rm,
			&(struct agile_index){
				.rank = 2, .i = { 0, (int64_t)(2 * ex->blk) } },
			&seg);
	agile_rmap_segment(ex->rm, seg, NULL, &node);
	tap_ok(seg == 3 && node == 3, "C(2,0) is in 20(4) (ours 3) on node 3");
	agile_field_block_where(ex->b, 2, &node, NULL);
	tap_ok(node == 1, "B's memory block 2 lives on node 1 (seed: 2)");

	trace_reset();
	agile_acc_init(&acc, ex->bt, 3, AGILE_ACC_READ);
	/* B^T(2,0)'s first element is B's block 2 */
	{
		uint64_t e = element_block(ex, 2);
		/* B^T index (y, x) for B's element (x, y) */
		int64_t i[2] = { (int64_t)(e / ex->n), (int64_t)(e % ex->n) };

		tap_ok(!agile_acc_ptr(&acc, i, &p), "touch block 2 of B");
	}
	agile_field_stats(ex->b, 3, &st);
	tap_ok(st.moves == 1 && agile_field_block_held(ex->b, mb8, 3) == 1,
	       "block 2 moved, and block 8 came along (%llu moves)",
	       (unsigned long long)st.moves);
	{
		uint64_t e3 = element_block(ex, 3), e9 = element_block(ex, 9);
		int64_t i3[2] = { (int64_t)(e3 / ex->n),
				  (int64_t)(e3 % ex->n) };
		int64_t i9[2] = { (int64_t)(e9 / ex->n),
				  (int64_t)(e9 % ex->n) };

		tap_ok(!agile_acc_ptr(&acc, i3, &p) &&
			       !agile_acc_ptr(&acc, i9, &p),
		       "touch blocks 3 and 9");
	}
	/* the accessor's cache now holds block 3: 8 goes through the table */
	{
		uint64_t e = element_block(ex, 8) + ex->n + 3;
		int64_t i[2] = { (int64_t)(e / ex->n), (int64_t)(e % ex->n) };

		tap_ok(!agile_acc_ptr(&acc, i, &p) && acc.block == 2,
		       "touch block 8 of B after 3 (a cache miss)");
	}
	agile_field_stats(ex->b, 3, &st);
	tap_ok(st.moves == 2, "touching block 8 later moved nothing (%llu)",
	       (unsigned long long)st.moves);
	agile_field_stats(ex->b, AGILE_SEGMAP_ALL_NODES, &st);
	tap_ok(st.moves == 2 && trace.nr == 2 && trace.block[0] == 2 &&
		       trace.from[0] == 1 && trace.to[0] == 3 &&
		       trace.block[1] == 3 && trace.from[1] == 1 &&
		       trace.to[1] == 3,
	       "segment 20(4) got exactly memory blocks 2 and 3 from node 1 (%llu moves, %u traced)",
	       (unsigned long long)st.moves, trace.nr);
	agile_field_drop_copies(ex->b);
	agile_field_stats_reset(ex->b);
}

static int check_c(struct example *ex, bool transposed)
{
	size_t bytes = ex->n * ex->n * ex->elem;
	unsigned char *c = malloc(bytes);
	uint64_t bad = 0;

	if (!c || agile_field_gather(ex->c, c, bytes)) {
		free(c);
		return 0;
	}
	for (uint64_t y = 0; y < ex->n; y++)
		for (uint64_t x = 0; x < ex->n; x++) {
			double b = transposed ?
					   value_b((int64_t)y, (int64_t)x) :
					   value_b((int64_t)x, (int64_t)y);
			double want = value_a((int64_t)x, (int64_t)y) + b;

			if (load(ex, c + (y * ex->n + x) * ex->elem) != want)
				bad++;
		}
	free(c);
	if (bad)
		tap_diag("%llu elements of C wrong", (unsigned long long)bad);
	return bad == 0;
}

static void whole_forall(struct example *ex)
{
	struct agile_forall_field add[3] = {
		{ ex->c, AGILE_ACC_WRITE },
		{ ex->a, AGILE_ACC_READ },
		{ ex->bt, AGILE_ACC_READ },
	};
	/* memory blocks each node receives: by hand, from the map */
	const uint64_t to1[4] = { 6, 7, 14, 15 }, to3[4] = { 2, 3, 10, 11 };
	const uint32_t seg_want[9] = { 0, 2, 0, 2, 0, 2, 0, 2, 0 };
	struct agile_field_stats st, per[4], sa;
	uint32_t wrong = 0, twice = 0;
	int err;

	trace_reset();
	err = agile_forall(ex->sm, ex->c, add_kernel, ex, add, 3, 0, NULL);
	tap_ok_call(err, "forall C = A + B^T");
	agile_field_stats(ex->b, AGILE_SEGMAP_ALL_NODES, &st);
	for (uint32_t q = 0; q < 4; q++)
		agile_field_stats(ex->b, q, &per[q]);
	agile_field_stats(ex->a, AGILE_SEGMAP_ALL_NODES, &sa);
	tap_ok(st.moves == 8 &&
		       st.bytes == 8 * 2 * ex->blk * ex->blk * ex->elem,
	       "8 memory blocks of B moved, %llu bytes (%llu moves)",
	       (unsigned long long)st.bytes, (unsigned long long)st.moves);
	tap_ok(per[0].moves == 0 && per[1].moves == 4 && per[2].moves == 0 &&
		       per[3].moves == 4,
	       "moves per node: %llu %llu %llu %llu (want 0 4 0 4)",
	       (unsigned long long)per[0].moves,
	       (unsigned long long)per[1].moves,
	       (unsigned long long)per[2].moves,
	       (unsigned long long)per[3].moves);
	tap_ok(sa.moves == 0, "A moved nothing");
	tap_ok(!memcmp(trace.seg_moves, seg_want, sizeof(seg_want)),
	       "per segment: 20(1), 20(5), 20(9) nothing; 20(2), 20(4), 20(6), 20(8) two each");
	for (uint32_t k = 0; k < trace.nr && k < MAX_EVENTS; k++) {
		const uint64_t *want = trace.to[k] == 1 ? to1 : to3;
		bool found = false;

		for (uint32_t m = 0; m < 4; m++)
			found |= want[m] == trace.block[k];
		if (!found || (trace.to[k] != 1 && trace.to[k] != 3) ||
		    trace.from[k] != (trace.to[k] == 1 ? 3u : 1u))
			wrong++;
		for (uint32_t m = 0; m < k; m++)
			if (trace.block[m] == trace.block[k] &&
			    trace.to[m] == trace.to[k])
				twice++;
	}
	tap_ok(trace.nr == 8 && !wrong && !twice,
	       "traced: 8 moves, blocks 2 3 10 11 from node 1 to 3 and 6 7 14 15 from 3 to 1, none twice (%u, %u wrong, %u twice)",
	       trace.nr, wrong, twice);
	tap_ok(check_c(ex, true), "C = A + B^T equals the reference");
	/* B was only read: its copies stay, and nothing moves again */
	err = agile_forall(ex->sm, ex->c, add_kernel, ex, add, 3, 0, NULL);
	agile_field_stats(ex->b, AGILE_SEGMAP_ALL_NODES, &st);
	tap_ok(!err && st.moves == 8 && trace.nr == 8,
	       "the same forall again: no block moves twice (%llu moves)",
	       (unsigned long long)st.moves);

	/* C = A + B: the same layout, nothing moves */
	add[2].field = ex->b;
	agile_field_stats_reset(ex->b);
	trace_reset();
	err = agile_forall(ex->sm, ex->c, add_kernel, ex, add, 3, 0, NULL);
	agile_field_stats(ex->b, AGILE_SEGMAP_ALL_NODES, &st);
	tap_ok(!err && st.moves == 0 && trace.nr == 0,
	       "C = A + B: no moves (%llu)", (unsigned long long)st.moves);
	tap_ok(check_c(ex, false), "C = A + B equals the reference");
}

static void run(uint64_t n, size_t elem, struct agile_sched *pool)
{
	struct example ex = { .n = n, .blk = n / 6, .elem = elem };

	tap_diag("%llux%llu %s, %s", (unsigned long long)n,
		 (unsigned long long)n, elem == 4 ? "floats" : "doubles",
		 pool ? "on a pool" : "on the caller");
	if (!tap_ok_call(setup(&ex, pool), "set up A, B, C")) {
		teardown(&ex);
		return;
	}
	agile_field_set_trace(ex.b, on_move, NULL);
	segment_4(&ex);
	whole_forall(&ex);
	teardown(&ex);
}

int main(void)
{
	struct agile_sched_opts o;
	struct agile_sched *pool = NULL;

	agile_sched_opts_init(&o);
	o.nr_workers = 3;
	o.flags = AGILE_SCHED_QUIET;
	if (agile_sched_create(&o, &pool))
		pool = NULL;
	run(96, sizeof(double), NULL);
	run(96, sizeof(double), pool);
	if (SANITIZED)
		tap_skip("6144x6144", "too big under a sanitizer");
	else if (getenv("AGILE_TEST_QUICK"))
		tap_skip("6144x6144", "AGILE_TEST_QUICK");
	else
		run(6144, sizeof(float), pool);
	if (pool)
		agile_sched_destroy(pool);
	return tap_done();
}
