// SPDX-License-Identifier: MIT
/*
 * segmap-forall.c - C = A + B^T over a segmented matrix (seed 000).
 *
 * An N x N matrix of doubles is cut into 3 x 3 segments ("node blocks"
 * of N/3 x N/3), dealt row block-cyclic to Q = 4 compute nodes: segment
 * s, counted row by row, belongs to node s mod 4.  Each node keeps its
 * segments in its own home memory, in memory blocks of N/6 columns by
 * N/3 rows: the unit data moves in.  Here the nodes are shares of a pool
 * of worker threads (the threads scope); the same program runs over
 * processes or MPI ranks with another agile_segmap_* constructor.
 *
 * agile_forall runs the kernel once per segment of C on the node that
 * owns it.  The kernel reads A and the transposed view of B through the
 * full global view: any element, by its global index.  Where B's element
 * lives on another node, the node copies that whole memory block once
 * (owner-copy) and reads its copy from then on; the trace callback below
 * prints each copy.  Then a reduce sums C, and the program checks C
 * against a plain loop.
 *
 *	cc -O2 segmap-forall.c $(pkg-config --cflags --libs agile) -o segmap-forall
 *	./segmap-forall [N, a multiple of 6 (default 96)]
 *
 * Exits 0 when C and its sum are right.
 */
#include <agile/agile.h>
#include <stdio.h>
#include <stdlib.h>

#define NODES 4

/* Small integers, so that every sum is exact. */
static double a_value(int64_t x, int64_t y)
{
	return (double)((x * 7 + y * 3) % 1000);
}

static double b_value(int64_t x, int64_t y)
{
	return (double)((x * 5 + y * 11) % 997);
}

/*
 * Fill: each node writes its own segment of A (acc[0]) and B (acc[1]).
 * ctx->grid is the segment; index[0] is the column x, index[1] the row y.
 */
static int fill(struct agile_forall_ctx *ctx, void *arg)
{
	const struct agile_grid *g = &ctx->grid;

	(void)arg;
	for (int64_t y = g->offset.i[1];
	     y < g->offset.i[1] + (int64_t)g->extent.n[1]; y++)
		for (int64_t x = g->offset.i[0];
		     x < g->offset.i[0] + (int64_t)g->extent.n[0]; x++) {
			int64_t idx[2] = { x, y };
			double a = a_value(x, y), b = b_value(x, y);
			int err = agile_acc_write(&ctx->acc[0], idx, &a);

			if (!err)
				err = agile_acc_write(&ctx->acc[1], idx, &b);
			if (err)
				return err;
		}
	return 0;
}

/* C(x, y) = A(x, y) + B^T(x, y): acc[0] C, acc[1] A, acc[2] B^T. */
static int add_transposed(struct agile_forall_ctx *ctx, void *arg)
{
	const struct agile_grid *g = &ctx->grid;

	(void)arg;
	for (int64_t y = g->offset.i[1];
	     y < g->offset.i[1] + (int64_t)g->extent.n[1]; y++)
		for (int64_t x = g->offset.i[0];
		     x < g->offset.i[0] + (int64_t)g->extent.n[0]; x++) {
			int64_t idx[2] = { x, y };
			double a, bt, c;
			int err = agile_acc_read(&ctx->acc[1], idx, &a);

			if (!err)
				err = agile_acc_read(&ctx->acc[2], idx, &bt);
			c = a + bt;
			if (!err)
				err = agile_acc_write(&ctx->acc[0], idx, &c);
			if (err)
				return err;
		}
	return 0;
}

/* Called at every owner-copy (from the pool's threads). */
static void on_copy(struct agile_field *f, uint64_t block, uint32_t from,
		    uint32_t to, void *arg)
{
	(void)f;
	printf("  %s: memory block %llu copied from node %u to node %u\n",
	       (const char *)arg, (unsigned long long)block, from, to);
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 96;
	struct agile_sched_opts opts;
	struct agile_sched *pool = NULL;
	struct agile_segmap *sm = NULL;
	struct agile_rmap *rm = NULL;
	struct agile_field *a = NULL, *b = NULL, *bt = NULL, *c = NULL;
	struct agile_field_stats moved_b, moved_a;
	double *got = NULL, sum = 0, want_sum = 0;
	uint64_t wrong = 0;
	int err;

	if (n < 6 || n % 6 || n > 6144) {
		fprintf(stderr, "usage: %s [N: a multiple of 6, <= 6144]\n",
			argv[0]);
		return 2;
	}

	/* The parent grid, its segments and who owns them. */
	struct agile_grid matrix = {
		.extent = { .rank = 2, .n = { n, n } },
		.offset = { .rank = 2 },
	};
	struct agile_extent segment = { .rank = 2, .n = { n / 3, n / 3 } };
	struct agile_proto row_block_cyclic = { .proto = AGILE_PROTO_CYCLIC,
						.nr_nodes = NODES };
	/* Algorithmic tiles N/6 square; memory blocks N/6 wide, N/3 high. */
	struct agile_levels levels = {
		.tile = { .rank = 2, .n = { n / 6, n / 6 } },
		.block = { .rank = 2, .n = { n / 6, n / 3 } },
	};

	agile_sched_opts_init(&opts); /* a worker per CPU */
	err = agile_sched_create(&opts, &pool);
	if (!err)
		err = agile_segmap_threads(NODES, pool, &sm);
	if (!err)
		err = agile_rmap_tiles(&matrix, &segment, &row_block_cyclic,
				       &rm);
	if (!err)
		err = agile_field_create(sm, rm, &levels, sizeof(double), &a);
	if (!err)
		err = agile_field_create(sm, rm, &levels, sizeof(double), &b);
	if (!err)
		err = agile_field_create(sm, rm, &levels, sizeof(double), &c);
	/* A view, not a copy: B^T(x, y) is B(y, x). */
	if (!err)
		err = agile_field_transpose(b, 0, 1, &bt);
	if (err) {
		fprintf(stderr, "set-up: %s %s\n", agile_strerror(err),
			agile_segmap_why());
		goto out;
	}
	printf("%llu x %llu doubles, %d segments on %d nodes (row block-cyclic)\n",
	       (unsigned long long)n, (unsigned long long)n,
	       agile_rmap_nr_segments(rm), NODES);

	struct agile_forall_field fill_fields[] = {
		{ a, AGILE_ACC_WRITE },
		{ b, AGILE_ACC_WRITE },
	};
	err = agile_forall(sm, a, fill, NULL, fill_fields, 2, 0, NULL);
	if (err) {
		fprintf(stderr, "fill: %s\n", agile_strerror(err));
		goto out;
	}

	agile_field_set_trace(b, on_copy, "B");
	struct agile_forall_field add_fields[] = {
		{ c, AGILE_ACC_WRITE },
		{ a, AGILE_ACC_READ },
		{ bt, AGILE_ACC_READ },
	};
	err = agile_forall(sm, c, add_transposed, NULL, add_fields, 3, 0, NULL);
	if (err) {
		fprintf(stderr, "C = A + B^T: %s\n", agile_strerror(err));
		goto out;
	}
	/* A is read where it lives: only B's blocks move. */
	agile_field_stats(b, AGILE_SEGMAP_ALL_NODES, &moved_b);
	agile_field_stats(a, AGILE_SEGMAP_ALL_NODES, &moved_a);
	printf("C = A + B^T moved %llu memory blocks of B (%llu bytes), %llu of A\n",
	       (unsigned long long)moved_b.moves,
	       (unsigned long long)moved_b.bytes,
	       (unsigned long long)moved_a.moves);

	err = agile_field_reduce(c, AGILE_COLL_DOUBLE, AGILE_COLL_SUM, &sum);
	if (err) {
		fprintf(stderr, "reduce: %s\n", agile_strerror(err));
		goto out;
	}

	/* The check: C gathered into a plain array beside a plain loop. */
	got = malloc(n * n * sizeof(double));
	if (!got || agile_field_gather(c, got, n * n * sizeof(double))) {
		fprintf(stderr, "gather failed\n");
		err = 1;
		goto out;
	}
	for (uint64_t y = 0; y < n; y++)
		for (uint64_t x = 0; x < n; x++) {
			double want = a_value((int64_t)x, (int64_t)y) +
				      b_value((int64_t)y, (int64_t)x);

			want_sum += want;
			wrong += got[y * n + x] != want;
		}
	printf("sum of C: %.0f (want %.0f); %llu wrong elements: %s\n", sum,
	       want_sum, (unsigned long long)wrong,
	       !wrong && sum == want_sum ? "correct" : "WRONG");
	if (wrong || sum != want_sum)
		err = 1;
out:
	free(got);
	agile_field_destroy(bt);
	agile_field_destroy(a);
	agile_field_destroy(b);
	agile_field_destroy(c);
	agile_rmap_destroy(rm);
	if (sm)
		agile_segmap_destroy(sm);
	if (pool)
		agile_sched_destroy(pool);
	return err ? 1 : 0;
}
