/* SPDX-License-Identifier: MIT */
/*
 * segmapseed.h - seed 000's worked example (segmap-seed-example.c) as one
 * node's checks, for the scopes where each node is a process of its own
 * (segmap-procs-seed: forked members of a dev group; segmap-mpi-seed: MPI
 * ranks).  Every process of the map calls seed_run with the same layout;
 * it makes the same collective calls in the same order on every node,
 * whatever its checks find, and records which checks failed on this node.
 *
 * The example: C = A + B^T over 96 x 96 doubles, 6 x 6 algorithmic blocks
 * of 16 x 16 (block 6i + j is C(i, j); axis 0 is the column j, axis 1 the
 * row i), memory blocks of 2 block rows x 1 block column (memory block
 * b + 6 r: column b, block rows 2r and 2r + 1), nine 2 x 2-block segments
 * (segment s: column s mod 3, row s / 3), dealt to Q nodes by a protocol.
 * Segment s = (x, y) of C reads B's segment (y, x): where another node
 * owns that, its 2 memory blocks come over, once.
 *
 * The layouts, worked out by hand from that (not from the library):
 *
 *   Q = 4, cyclic (the seed's row block-cyclic): nodes 0 (segments 0 4
 *   8) and 2 (2 6: each other's transposes) move nothing; node 1 (1 5)
 *   gets B's blocks 6 7 (segment 3) and 14 15 (segment 7) from node 3;
 *   node 3 (3 7) gets 2 3 (segment 1: blocks holding 2, 8 and 3, 9, for
 *   segment 20(4)) and 10 11 (segment 5) from node 1.
 *
 *   Q = 3, row block (the seed's row block-block): node r owns segment
 *   row r.  Node 0 gets 6 7 from 1 (segment 3) and 12 13 from 2
 *   (segment 6); node 1 gets 2 3 from 0 (segment 1) and 14 15 from 2
 *   (segment 7); node 2 gets 4 5 from 0 (segment 2) and 10 11 from 1
 *   (segment 5).
 *
 *   Q = 3, cyclic: node 0 (0 3 6) gets 2 3 from 1 and 4 5 from 2; node 1
 *   (1 4 7) gets 6 7 from 0 and 10 11 from 2; node 2 (2 5 8) gets 12 13
 *   from 0 and 14 15 from 1.
 *
 * Include tap.h and segmaptest.h first.
 */
#ifndef AGILE_SEGMAPSEED_H
#define AGILE_SEGMAPSEED_H

#include <agile/coll.h>
#include <agile/segmap.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEED_N 96 /* elements per side */
#define SEED_BLK 16 /* elements per algorithmic block side */
#define SEED_SEGS 9
#define SEED_MAX_Q 4
#define SEED_WHY 200
#define SEED_MAX_EVENTS 64

/* One node's expected owner-copies: memory block and its home node. */
struct seed_move {
	uint64_t block;
	uint32_t from;
};

/* A layout of the example and what each node must see. */
struct seed_layout {
	const char *name;
	uint32_t proto;
	uint32_t q;
	uint32_t nr_moves[SEED_MAX_Q]; /* memory blocks node q receives */
	struct seed_move moves[SEED_MAX_Q][4];
	uint32_t seg_moves[SEED_SEGS]; /* per segment, by its own kernel */
	bool segment_4; /* check segment 20(4) on node 3 alone first */
};

static const struct seed_layout seed_q4_cyclic __attribute__((unused)) = {
	.name = "Q = 4 row block-cyclic",
	.proto = AGILE_PROTO_CYCLIC,
	.q = 4,
	.nr_moves = { 0, 4, 0, 4 },
	.moves = { {},
		   { { 6, 3 }, { 7, 3 }, { 14, 3 }, { 15, 3 } },
		   {},
		   { { 2, 1 }, { 3, 1 }, { 10, 1 }, { 11, 1 } } },
	.seg_moves = { 0, 2, 0, 2, 0, 2, 0, 2, 0 },
	.segment_4 = true,
};

static const struct seed_layout seed_q3_row_block __attribute__((unused)) = {
	.name = "Q = 3 row block-block",
	.proto = AGILE_PROTO_ROW_BLOCK,
	.q = 3,
	.nr_moves = { 4, 4, 4 },
	.moves = { { { 6, 1 }, { 7, 1 }, { 12, 2 }, { 13, 2 } },
		   { { 2, 0 }, { 3, 0 }, { 14, 2 }, { 15, 2 } },
		   { { 4, 0 }, { 5, 0 }, { 10, 1 }, { 11, 1 } } },
	.seg_moves = { 0, 2, 2, 2, 0, 2, 2, 2, 0 },
};

static const struct seed_layout seed_q3_cyclic __attribute__((unused)) = {
	.name = "Q = 3 cyclic",
	.proto = AGILE_PROTO_CYCLIC,
	.q = 3,
	.nr_moves = { 4, 4, 4 },
	.moves = { { { 2, 1 }, { 3, 1 }, { 4, 2 }, { 5, 2 } },
		   { { 6, 0 }, { 7, 0 }, { 10, 2 }, { 11, 2 } },
		   { { 12, 0 }, { 13, 0 }, { 14, 1 }, { 15, 1 } } },
	.seg_moves = { 0, 2, 2, 2, 0, 2, 2, 2, 0 },
};

/* The checks, each one bit of a node's result; seed_check_name's order. */
enum seed_check {
	SEED_SETUP, /* the map's node, fields made, A and B filled */
	SEED_SEG4, /* segment 20(4) alone on node 3 (Q = 4) */
	SEED_FORALL, /* C = A + B^T returns 0 */
	SEED_MOVES, /* this node's moves and bytes of B; A none */
	SEED_TRACE, /* exactly the blocks expected, from their homes */
	SEED_PER_SEGMENT, /* the moves made by each own segment's kernel */
	SEED_GATHER, /* C gathered here equals the plain reference */
	SEED_REDUCE, /* agile_field_reduce equals the reference sum */
	SEED_AGAIN, /* the same forall again moves nothing */
	SEED_PLAIN_B, /* C = A + B: nothing moves, C right */
	SEED_TEARDOWN, /* fields and map destroyed */
	SEED_NR_CHECKS
};

static inline const char *seed_check_name(uint32_t k)
{
	static const char *const names[SEED_NR_CHECKS] = {
		"set-up: this process is its node; A, B, C made, A and B filled by their owners",
		"segment 20(4) alone: node 3 gets B's memory blocks 2 and 3 (holding 2, 8 and 3, 9) from node 1, touching 8 later moves nothing",
		"forall C = A + B^T",
		"each node moved exactly its memory blocks of B (and their bytes), A nothing",
		"traced: each node got exactly its blocks, each from its home node, none twice",
		"per segment: each node's kernels moved 2 blocks for each segment whose transpose another node owns, else nothing",
		"C = A + B^T gathered on every node equals the plain reference",
		"agile_field_reduce of C equals the reference sum on every node",
		"the same forall again moves nothing",
		"C = A + B moves nothing and equals the reference on every node",
		"fields and segment map destroyed",
	};

	return k < SEED_NR_CHECKS ? names[k] : "?";
}

/* This process's owner-copies of B, and which segment's kernel made each. */
static struct {
	pthread_mutex_t lock;
	uint32_t nr;
	uint64_t block[SEED_MAX_EVENTS];
	uint32_t from[SEED_MAX_EVENTS], to[SEED_MAX_EVENTS];
	uint32_t seg_moves[SEED_SEGS];
} seed_trace = { .lock = PTHREAD_MUTEX_INITIALIZER };
static __thread int32_t seed_current_segment = -1;

static inline void seed_on_move(struct agile_field *f, uint64_t block,
				uint32_t from, uint32_t to, void *arg)
{
	(void)f;
	(void)arg;
	pthread_mutex_lock(&seed_trace.lock);
	if (seed_trace.nr < SEED_MAX_EVENTS) {
		seed_trace.block[seed_trace.nr] = block;
		seed_trace.from[seed_trace.nr] = from;
		seed_trace.to[seed_trace.nr] = to;
	}
	seed_trace.nr++;
	if (seed_current_segment >= 0 && seed_current_segment < SEED_SEGS)
		seed_trace.seg_moves[seed_current_segment]++;
	pthread_mutex_unlock(&seed_trace.lock);
}

static inline void seed_trace_reset(void)
{
	pthread_mutex_lock(&seed_trace.lock);
	seed_trace.nr = 0;
	memset(seed_trace.seg_moves, 0, sizeof(seed_trace.seg_moves));
	pthread_mutex_unlock(&seed_trace.lock);
}

/* Exact small integers: every sum is exact. */
static inline double seed_a(int64_t x, int64_t y)
{
	return (double)((x * 7 + y * 3) % 1000);
}

static inline double seed_b(int64_t x, int64_t y)
{
	return (double)((x * 5 + y * 11) % 997);
}

/*
 * A hook for the tests: called by the add kernel at each call, before
 * any access (segmap-procs-seed's victim dies there).  NULL: none.
 */
static void (*seed_kernel_hook)(struct agile_forall_ctx *ctx);

struct seed_node {
	const struct seed_layout *lay;
	struct agile_segmap *sm;
	struct agile_rmap *rm;
	struct agile_field *a, *b, *bt, *c;
	uint32_t self;
	uint32_t failed; /* bits of enum seed_check */
	int forall_err; /* the first forall's return */
	char why[SEED_NR_CHECKS][SEED_WHY]; /* each check's first failure */
};

static inline __attribute__((format(printf, 4, 5))) bool
seed_ok(struct seed_node *sn, enum seed_check k, bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok)
		return true;
	if (!(sn->failed & 1u << k)) {
		char *why = sn->why[k];
		int used = snprintf(why, SEED_WHY, "node %u: ", sn->self);

		va_start(ap, fmt);
		vsnprintf(why + used, SEED_WHY - (size_t)used, fmt, ap);
		va_end(ap);
	}
	sn->failed |= 1u << k;
	return false;
}

/* Each node fills its own part of A and B: no moves. */
static inline int seed_fill_kernel(struct agile_forall_ctx *ctx, void *arg)
{
	const struct agile_grid *g = &ctx->grid;

	(void)arg;
	for (uint64_t y = 0; y < g->extent.n[1]; y++)
		for (uint64_t x = 0; x < g->extent.n[0]; x++) {
			int64_t i[2] = { g->offset.i[0] + (int64_t)x,
					 g->offset.i[1] + (int64_t)y };
			double va = seed_a(i[0], i[1]), vb = seed_b(i[0], i[1]);
			int err = agile_acc_write(&ctx->acc[0], i, &va);

			if (!err)
				err = agile_acc_write(&ctx->acc[1], i, &vb);
			if (err)
				return err;
		}
	return 0;
}

/* C = A + X, X being B^T or B: one element at a time. */
static inline int seed_add_kernel(struct agile_forall_ctx *ctx, void *arg)
{
	const struct agile_grid *g = &ctx->grid;
	int err = 0;

	(void)arg;
	if (seed_kernel_hook)
		seed_kernel_hook(ctx);
	seed_current_segment = (int32_t)ctx->segment;
	for (uint64_t y = 0; !err && y < g->extent.n[1]; y++)
		for (uint64_t x = 0; !err && x < g->extent.n[0]; x++) {
			int64_t i[2] = { g->offset.i[0] + (int64_t)x,
					 g->offset.i[1] + (int64_t)y };
			void *pc, *pa, *px;

			err = agile_acc_ptr(&ctx->acc[0], i, &pc);
			if (!err)
				err = agile_acc_ptr(&ctx->acc[1], i, &pa);
			if (!err)
				err = agile_acc_ptr(&ctx->acc[2], i, &px);
			if (!err)
				*(double *)pc = *(const double *)pa +
						*(const double *)px;
		}
	seed_current_segment = -1;
	return err;
}

/* This node's B moves; whether they are @moves and their bytes. */
static inline bool seed_moved(struct seed_node *sn, enum seed_check k,
			      uint64_t moves, const char *what)
{
	struct agile_field_stats st = { 0 }, all = { 0 };
	uint64_t block_bytes = 2 * SEED_BLK * SEED_BLK * sizeof(double);

	agile_field_stats(sn->b, sn->self, &st);
	agile_field_stats(sn->b, AGILE_SEGMAP_ALL_NODES, &all);
	return seed_ok(
		sn, k,
		st.moves == moves && st.bytes == moves * block_bytes &&
			all.moves == moves,
		"%s: %llu moves of B (%llu bytes; all nodes %llu), want %llu",
		what, (unsigned long long)st.moves,
		(unsigned long long)st.bytes, (unsigned long long)all.moves,
		(unsigned long long)moves);
}

/* Element (x, y) of B^T's index for B's algorithmic block @blk's corner. */
static inline void seed_bt_index(uint64_t blk, uint64_t dx, uint64_t dy,
				 int64_t *i)
{
	/* B's element (x, y) is B^T's (y, x) */
	uint64_t x = blk % 6 * SEED_BLK + dx, y = blk / 6 * SEED_BLK + dy;

	i[0] = (int64_t)y;
	i[1] = (int64_t)x;
}

/* Segment 20(4) (ours 3, node 3) alone, through an accessor of node 3. */
static inline void seed_segment_4(struct seed_node *sn)
{
	struct agile_levels lv = { .tile = ext2(SEED_BLK, SEED_BLK),
				   .block = ext2(SEED_BLK, 2 * SEED_BLK) };
	uint64_t mb2 = 99, mb8 = 99, mb3 = 99, mb9 = 99;
	uint32_t seg = 99, node = 99, home = 99;
	struct agile_acc acc;
	int64_t i[2];
	void *p;
	int err;

	agile_levels_tile_block(sn->rm, &lv, 2, &mb2);
	agile_levels_tile_block(sn->rm, &lv, 8, &mb8);
	agile_levels_tile_block(sn->rm, &lv, 3, &mb3);
	agile_levels_tile_block(sn->rm, &lv, 9, &mb9);
	agile_rmap_find(sn->rm,
			&(struct agile_index){ .rank = 2,
					       .i = { 0, 2 * SEED_BLK } },
			&seg);
	agile_rmap_segment(sn->rm, seg, NULL, &node);
	agile_field_block_where(sn->b, 2, &home, NULL);
	if (!seed_ok(
		    sn, SEED_SEG4,
		    mb2 == 2 && mb8 == 2 && mb3 == 3 && mb9 == 3 && seg == 3 &&
			    node == 3 && home == 1,
		    "the map: blocks %llu %llu %llu %llu, C(2,0) in segment %u of node %u, B's block 2 home %u",
		    (unsigned long long)mb2, (unsigned long long)mb8,
		    (unsigned long long)mb3, (unsigned long long)mb9, seg, node,
		    home))
		return;
	if (sn->self != 3)
		return;
	seed_trace_reset();
	agile_field_stats_reset(sn->b);
	err = agile_acc_init(&acc, sn->bt, 3, AGILE_ACC_READ);
	seed_bt_index(2, 0, 0, i);
	if (!err)
		err = agile_acc_ptr(&acc, i, &p);
	if (!seed_ok(sn, SEED_SEG4, !err, "touch block 2: %d", err) ||
	    !seed_moved(sn, SEED_SEG4, 1, "block 2 touched") ||
	    !seed_ok(sn, SEED_SEG4, agile_field_block_held(sn->b, 2, 3) == 1,
		     "block 8 did not come along"))
		goto out;
	seed_bt_index(3, 0, 0, i);
	err = agile_acc_ptr(&acc, i, &p);
	seed_bt_index(9, 5, 7, i);
	if (!err)
		err = agile_acc_ptr(&acc, i, &p);
	/* the cache holds block 3 now: block 8 goes through the table */
	seed_bt_index(8, 3, 1, i);
	if (!err)
		err = agile_acc_ptr(&acc, i, &p);
	if (!seed_ok(sn, SEED_SEG4, !err && acc.block == 2,
		     "touch blocks 3, 9, then 8: %d, block %llu", err,
		     (unsigned long long)acc.block) ||
	    !seed_moved(sn, SEED_SEG4, 2, "blocks 3, 9 and 8 touched"))
		goto out;
	seed_ok(sn, SEED_SEG4,
		seed_trace.nr == 2 && seed_trace.block[0] == 2 &&
			seed_trace.from[0] == 1 && seed_trace.to[0] == 3 &&
			seed_trace.block[1] == 3 && seed_trace.from[1] == 1 &&
			seed_trace.to[1] == 3,
		"segment 20(4)'s trace: %u moves, first block %llu from %u",
		seed_trace.nr, (unsigned long long)seed_trace.block[0],
		seed_trace.from[0]);
out:
	agile_field_drop_copies(sn->b);
	agile_field_stats_reset(sn->b);
}

/* C gathered here against A + B^T (or A + B); its sum into @sum. */
static inline bool seed_c_right(struct agile_field *c, bool transposed,
				double *sum)
{
	double *got = malloc(SEED_N * SEED_N * sizeof(double));
	uint64_t bad = 0;

	*sum = 0;
	if (!got ||
	    agile_field_gather(c, got, SEED_N * SEED_N * sizeof(double))) {
		free(got);
		return false;
	}
	for (int64_t y = 0; y < SEED_N; y++)
		for (int64_t x = 0; x < SEED_N; x++) {
			double want =
				seed_a(x, y) +
				(transposed ? seed_b(y, x) : seed_b(x, y));

			*sum += want;
			if (got[y * SEED_N + x] != want)
				bad++;
		}
	free(got);
	return bad == 0;
}

/* This node's trace of the whole forall against the layout. */
static inline void seed_check_trace(struct seed_node *sn)
{
	const struct seed_layout *lay = sn->lay;
	uint32_t want = lay->nr_moves[sn->self], wrong = 0, twice = 0;

	for (uint32_t k = 0; k < seed_trace.nr && k < SEED_MAX_EVENTS; k++) {
		bool found = false;

		for (uint32_t m = 0; m < want; m++)
			found |= lay->moves[sn->self][m].block ==
					 seed_trace.block[k] &&
				 lay->moves[sn->self][m].from ==
					 seed_trace.from[k];
		if (!found || seed_trace.to[k] != sn->self)
			wrong++;
		for (uint32_t m = 0; m < k; m++)
			twice += seed_trace.block[m] == seed_trace.block[k];
	}
	seed_ok(sn, SEED_TRACE, seed_trace.nr == want && !wrong && !twice,
		"traced %u moves (want %u), %u not expected, %u twice",
		seed_trace.nr, want, wrong, twice);
	for (uint32_t s = 0; s < SEED_SEGS; s++) {
		uint32_t node = UINT32_MAX;

		agile_rmap_segment(sn->rm, s, NULL, &node);
		want = node == sn->self ? lay->seg_moves[s] : 0;
		if (!seed_ok(sn, SEED_PER_SEGMENT,
			     seed_trace.seg_moves[s] == want,
			     "segment %u (node %u): %u moves, want %u", s, node,
			     seed_trace.seg_moves[s], want))
			break;
	}
}

static inline int seed_setup(struct seed_node *sn)
{
	struct agile_grid parent = grid2(0, 0, SEED_N, SEED_N);
	struct agile_extent node_block = ext2(2 * SEED_BLK, 2 * SEED_BLK);
	struct agile_proto p = proto(sn->lay->proto, sn->lay->q);
	struct agile_levels lv = { .tile = ext2(SEED_BLK, SEED_BLK),
				   .block = ext2(SEED_BLK, 2 * SEED_BLK) };
	struct agile_forall_field fill[2];
	int err, n = agile_segmap_nr_nodes(sn->sm);

	err = agile_segmap_self(sn->sm, &sn->self);
	if (err || n != (int)sn->lay->q || sn->self >= sn->lay->q) {
		seed_ok(sn, SEED_SETUP, false, "self %u of %d nodes", sn->self,
			n);
		return -EINVAL;
	}
	err = agile_rmap_tiles(&parent, &node_block, &p, &sn->rm);
	if (!err)
		err = agile_field_create(sn->sm, sn->rm, &lv, sizeof(double),
					 &sn->a);
	if (!err)
		err = agile_field_create(sn->sm, sn->rm, &lv, sizeof(double),
					 &sn->b);
	if (!err)
		err = agile_field_create(sn->sm, sn->rm, &lv, sizeof(double),
					 &sn->c);
	if (!err)
		err = agile_field_transpose(sn->b, 0, 1, &sn->bt);
	if (!err) {
		fill[0] = (struct agile_forall_field){ sn->a, AGILE_ACC_WRITE };
		fill[1] = (struct agile_forall_field){ sn->b, AGILE_ACC_WRITE };
		err = agile_forall(sn->sm, sn->a, seed_fill_kernel, NULL, fill,
				   2, 0, NULL);
	}
	if (!err)
		err = agile_field_set_trace(sn->b, seed_on_move, NULL);
	seed_ok(sn, SEED_SETUP, !err, "set-up: %d (%s)", err,
		agile_segmap_why());
	return err;
}

/*
 * The whole example on this process's node of @sm (Q = @lay->q), which
 * it destroys.  Collective.  sn->failed says which checks failed here.
 */
static inline void seed_run(struct agile_segmap *sm,
			    const struct seed_layout *lay, struct seed_node *sn)
{
	struct agile_forall_field add[3];
	struct agile_field_stats sa = { 0 };
	double want_sum = 0, sum = -1;
	int err;

	memset(sn, 0, sizeof(*sn));
	sn->lay = lay;
	sn->sm = sm;
	sn->self = UINT32_MAX;
	seed_trace_reset();
	err = seed_setup(sn);
	if (err)
		goto out;
	if (lay->segment_4)
		seed_segment_4(sn);

	add[0] = (struct agile_forall_field){ sn->c, AGILE_ACC_WRITE };
	add[1] = (struct agile_forall_field){ sn->a, AGILE_ACC_READ };
	add[2] = (struct agile_forall_field){ sn->bt, AGILE_ACC_READ };
	seed_trace_reset();
	err = agile_forall(sm, sn->c, seed_add_kernel, NULL, add, 3, 0, NULL);
	sn->forall_err = err;
	if (!seed_ok(sn, SEED_FORALL, !err, "forall C = A + B^T: %d", err))
		goto out;
	agile_field_stats(sn->a, AGILE_SEGMAP_ALL_NODES, &sa);
	if (seed_moved(sn, SEED_MOVES, lay->nr_moves[sn->self], "the forall"))
		seed_ok(sn, SEED_MOVES, sa.moves == 0, "A moved %llu blocks",
			(unsigned long long)sa.moves);
	seed_check_trace(sn);
	seed_ok(sn, SEED_GATHER, seed_c_right(sn->c, true, &want_sum),
		"C = A + B^T is wrong");
	err = agile_field_reduce(sn->c, AGILE_COLL_DOUBLE, AGILE_COLL_SUM,
				 &sum);
	seed_ok(sn, SEED_REDUCE, !err && sum == want_sum,
		"reduce: %d, %.1f (want %.1f)", err, sum, want_sum);

	/* B was only read: its copies stay, and nothing moves again */
	err = agile_forall(sm, sn->c, seed_add_kernel, NULL, add, 3, 0, NULL);
	seed_ok(sn, SEED_AGAIN,
		!err && seed_trace.nr == lay->nr_moves[sn->self],
		"again: %d, %u traced", err, seed_trace.nr);
	seed_moved(sn, SEED_AGAIN, lay->nr_moves[sn->self], "again");

	/* C = A + B: the same layout, nothing moves */
	add[2].field = sn->b;
	agile_field_stats_reset(sn->b);
	seed_trace_reset();
	err = agile_forall(sm, sn->c, seed_add_kernel, NULL, add, 3, 0, NULL);
	seed_ok(sn, SEED_PLAIN_B, !err && seed_trace.nr == 0,
		"C = A + B: %d, %u traced", err, seed_trace.nr);
	seed_moved(sn, SEED_PLAIN_B, 0, "C = A + B");
	seed_ok(sn, SEED_PLAIN_B, seed_c_right(sn->c, false, &sum),
		"C = A + B is wrong");
out:
	agile_field_destroy(sn->bt);
	agile_field_destroy(sn->a);
	agile_field_destroy(sn->b);
	agile_field_destroy(sn->c);
	agile_rmap_destroy(sn->rm);
	err = agile_segmap_destroy(sm);
	seed_ok(sn, SEED_TEARDOWN, !err, "agile_segmap_destroy: %d", err);
}

#endif /* AGILE_SEGMAPSEED_H */
