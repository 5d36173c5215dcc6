// SPDX-License-Identifier: MIT
/*
 * segmap-copy-once - owner-copy makes one copy of a block per node even
 * when many threads need it at the same moment: node 0 owns 16 segments
 * of C, every one of whose kernels reads all of B (all of it on node 1,
 * in 8 memory blocks), run as tasks on a pool of 4 workers.  Each round
 * (B's copies dropped in between) moves exactly 8 blocks to node 0, each
 * once (the trace), and every kernel reads B's values right; 100 rounds.
 */
#include <agile/sched.h>
#include <agile/segmap.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "tap.h"
#include "segmaptest.h"

#define N 64 /* C and B are N x N doubles */
#define BLOCKS 8 /* B's memory blocks: N x N/8 each */
#define ROUNDS 100

static _Atomic uint32_t copies_of[BLOCKS], wrong_to, bad_values;

static void on_move(struct agile_field *f, uint64_t block, uint32_t from,
		    uint32_t to, void *arg)
{
	(void)f;
	(void)arg;
	if (block < BLOCKS && from == 1 && to == 0)
		atomic_fetch_add(&copies_of[block], 1);
	else
		atomic_fetch_add(&wrong_to, 1);
}

static double bval(int64_t x, int64_t y)
{
	return (double)(x * 3 + y * 5);
}

/* acc[0] C (write), acc[1] B (read): C's part = the sum of all of B. */
static int sum_all_of_b(struct agile_forall_ctx *ctx, void *arg)
{
	const struct agile_grid *g = &ctx->grid;
	double sum = 0, want = 0;

	(void)arg;
	for (int64_t y = 0; y < N; y++)
		for (int64_t x = 0; x < N; x++) {
			int64_t i[2] = { (x + ctx->segment * 5) % N, y };
			double v;
			int err = agile_acc_read(&ctx->acc[1], i, &v);

			if (err)
				return err;
			sum += v;
			want += bval(i[0], i[1]);
		}
	if (sum != want)
		atomic_fetch_add(&bad_values, 1);
	for (int64_t y = g->offset.i[1];
	     y < g->offset.i[1] + (int64_t)g->extent.n[1]; y++)
		for (int64_t x = g->offset.i[0];
		     x < g->offset.i[0] + (int64_t)g->extent.n[0]; x++) {
			int64_t i[2] = { x, y };
			int err = agile_acc_write(&ctx->acc[0], i, &sum);

			if (err)
				return err;
		}
	return 0;
}

int main(void)
{
	struct agile_grid parent = grid2(0, 0, N, N), segs[16];
	struct agile_levels lv = { .tile = ext2(N, N / BLOCKS),
				   .block = ext2(N, N / BLOCKS) };
	struct agile_extent whole = ext2(N, N);
	struct agile_proto on1 = proto(AGILE_PROTO_BLOCK, 2);
	struct agile_rmap *rm_c = NULL, *rm_b = NULL;
	struct agile_field *c = NULL, *b = NULL;
	struct agile_sched_opts so;
	struct agile_sched *pool = NULL;
	struct agile_segmap *sm = NULL;
	uint32_t nodes[16];
	double weights[2] = { 1e-9, 1 }; /* B: all of it on node 1 */
	int err, rounds_ok = 0;

	for (uint32_t s = 0; s < 16; s++) {
		segs[s] = grid2((s % 4) * (N / 4), (s / 4) * (N / 4), N / 4,
				N / 4);
		nodes[s] = 0;
	}
	on1.weights = weights;
	agile_sched_opts_init(&so);
	so.nr_workers = 4;
	err = agile_sched_create(&so, &pool);
	if (!err)
		err = agile_segmap_threads(2, pool, &sm);
	if (!err)
		err = agile_rmap_list(&parent, 16, segs, nodes, 2, &rm_c);
	if (!err)
		err = agile_rmap_tiles(&parent, &whole, &on1, &rm_b);
	if (!err)
		err = agile_field_create(sm, rm_c, NULL, sizeof(double), &c);
	if (!err)
		err = agile_field_create(sm, rm_b, &lv, sizeof(double), &b);
	if (!tap_ok(!err,
		    "set-up: 4 workers, C on node 0 (16 segments), B on node 1 (%d blocks): %d",
		    BLOCKS, err))
		return tap_done();
	uint32_t home;

	agile_rmap_segment(rm_b, 0, NULL, &home);
	tap_ok(home == 1, "B's one segment is on node 1 (%u)", home);
	for (int64_t y = 0; y < N && !err; y++)
		for (int64_t x = 0; x < N && !err; x++) {
			struct agile_index i = idx2(x, y);
			double v = bval(x, y);

			err = agile_field_put(b, &i, &v);
		}
	tap_ok(!err, "B filled: %d", err);
	agile_field_set_trace(b, on_move, NULL);
	for (int r = 0; r < ROUNDS; r++) {
		const struct agile_forall_field ff[2] = {
			{ c, AGILE_ACC_WRITE },
			{ b, AGILE_ACC_READ },
		};
		struct agile_field_stats st;
		bool once = true;

		for (int k = 0; k < BLOCKS; k++)
			atomic_store(&copies_of[k], 0);
		agile_field_drop_copies(b);
		agile_field_stats_reset(b);
		err = agile_forall(sm, c, sum_all_of_b, NULL, ff, 2, 0, NULL);
		agile_field_stats(b, 0, &st);
		for (int k = 0; k < BLOCKS; k++)
			once &= atomic_load(&copies_of[k]) == 1;
		if (!err && once && st.moves == BLOCKS &&
		    st.bytes == (uint64_t)N * N * sizeof(double))
			rounds_ok++;
		else
			tap_ok(0,
			       "round %d: forall %d, moves %llu (want %d), each block once: %s",
			       r, err, (unsigned long long)st.moves, BLOCKS,
			       once ? "yes" : "no");
	}
	tap_ok(rounds_ok == ROUNDS,
	       "%d of %d rounds: 16 kernels at once on 4 workers copy each of B's %d blocks to node 0 exactly once",
	       rounds_ok, ROUNDS, BLOCKS);
	tap_ok(!atomic_load(&wrong_to), "no copy to or from another node (%u)",
	       atomic_load(&wrong_to));
	tap_ok(!atomic_load(&bad_values),
	       "every kernel read B's values (%u wrong sums)",
	       atomic_load(&bad_values));
	agile_field_destroy(b);
	agile_field_destroy(c);
	agile_rmap_destroy(rm_b);
	agile_rmap_destroy(rm_c);
	agile_segmap_destroy(sm);
	agile_sched_destroy(pool);
	return tap_done();
}
