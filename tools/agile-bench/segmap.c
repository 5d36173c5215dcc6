// SPDX-License-Identifier: MIT
/*
 * segmap - segmented fields (agile/segmap.h, seed 000) on Q compute nodes
 * of the threads scope, whose kernels run on a pool of -t workers, beside
 * the same computations on plain arrays, all measured in this one run:
 *
 * add-bt: C = A + B^T over N x N doubles (--seg-n, default 1536: the
 * seed's 6144 example scaled by 1/4), in the seed's decomposition:
 * algorithmic tiles N/6 x N/6, memory blocks of 2 tile rows x 1 tile
 * column, node blocks (segments) N/3 x N/3 dealt row block-cyclic to Q
 * nodes (--seg-nodes, default 4: segment s to node s mod Q).
 *
 *   plain          one thread, tile by tile, on plain arrays
 *   pfor-Tw        agile_sched_parallel_for over the tiles, same loop
 *   segmap-qQ-Tw   agile_forall, one kernel call per segment on its node,
 *                  every element through the full global view accessors
 *                  (C write, A read, the transposed view of B read), the
 *                  segment's tiles in the plain loop's order; B's copies
 *                  dropped before every run, so each run moves its B
 *                  blocks again (what a run after B changed costs)
 *   segmap-cached  the same, B's copies kept from the run before: the
 *                  owner-copy cache at work (moves nothing)
 *   segmap-tiles   as segmap-qQ-Tw (copies dropped), through the local
 *                  global view: agile_tile_get per tile, then unchecked
 *                  pointers and strides inside it
 *   segmap-span    as segmap-qQ-Tw (copies dropped), the full global
 *                  view a row run at a time: agile_acc_span per field
 *                  per run inside a block, then a plain inner loop
 *
 * Least data movement: segment (i, j) reads B's segment (j, i); where
 * another node owns that, its two memory blocks must come over, once.
 *
 * stencil: Jacobi iterations (--seg-iters per run, default 10) of a
 * 5-point stencil over an N x N field pair (stencil.h), the fields
 * swapped after each.  Segments: Q bands of N/Q whole rows, band q on
 * node q; memory blocks and tiles one row, so that a halo is a thin
 * block.
 *
 *   plain          one thread, row by row
 *   pfor-Tw        agile_sched_parallel_for over the rows
 *   segmap-qQ-Tw   one agile_forall per iteration (the new field written,
 *                  the old one read), a row at a time through
 *                  agile_tile_get (the local global view: unchecked
 *                  pointers inside a tile); a band's first and last rows
 *                  read their neighbours' rows by owner-copy, and the
 *                  forall that writes a field drops its copies, so each
 *                  iteration moves the halos afresh
 *   segmap-procs-qQ  the processes scope: Q forked processes of a dev
 *                  group (kmod where /dev/agile exists, else the user
 *                  backend; $AGILE_BACKEND), agile_segmap_procs_join, one
 *                  node each, its kernels on its own thread: the same
 *                  fields, forall and kernel as segmap-qQ-Tw; a halo row
 *                  is one copy out of the neighbour's group segment.  A
 *                  run's time is its slowest member's, each run started
 *                  after an empty forall (the scope's barrier)
 *   mpi-Qr         Open MPI, Q ranks of agile-bench-stencil-mpi
 *                  (segmap_mpi.c) under mpirun: the same bands, halos by
 *                  MPI_Sendrecv; "n/a" without mpirun or the program
 *   segmap-mpi-Qr  the same mpirun run: the segmap contender's forall and
 *                  kernel over agile_segmap_mpi_create (node q is rank q,
 *                  a halo row an MPI_Get from the neighbour's window)
 *
 * Least data movement: two halo rows per boundary between bands per
 * iteration, 2 (Q - 1) N 8 bytes.
 *
 * Every contender's result is checked against the plain one (bit for
 * bit: the same operations in the same order) and a wrong one fails the
 * run.  The bytes moved are the fields' owner-copy counters
 * (agile_field_stats) over one run, beside the least the decomposition
 * needs, counted here by arithmetic; Open MPI's are the bytes its
 * Sendrecvs carry.  The processes and MPI scopes' results are checked by
 * every member (gathered, compared with the plain reference) and their
 * bytes summed over the members' own counters.
 */
#define _GNU_SOURCE
#include <agile/sched.h>
#include <agile/segmap.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "stencil.h"
#include "stencil_segmap.h"

#define SEG_MPI_WARMUP 1

/* What both computations share: the sizes, the pool and the nodes. */
struct seg_env {
	int64_t n;
	int iters;
	uint32_t nodes;
	int threads;
	bool no_pin;
	struct agile_sched *pool;
	struct agile_segmap *sm;
};

static struct agile_extent ext2(uint64_t n0, uint64_t n1)
{
	return (struct agile_extent){ .rank = 2, .n = { n0, n1 } };
}

static struct agile_grid grid2(uint64_t n0, uint64_t n1)
{
	return (struct agile_grid){ .extent = ext2(n0, n1),
				    .offset = { .rank = 2 } };
}

/* A field's owner-copy bytes over all nodes. */
static uint64_t moved_bytes(struct agile_field *f)
{
	struct agile_field_stats st = { 0 };

	agile_field_stats(f, AGILE_SEGMAP_ALL_NODES, &st);
	return st.bytes;
}

static void record(int *slot, int err)
{
	if (err && !*slot)
		*slot = err;
}

/* ---- add-bt: C = A + B^T ---- */

struct addt {
	const struct seg_env *env;
	int64_t n, tile; /* side, algorithmic tile side (N / 6) */
	const double *a, *b; /* plain inputs, row y at y * n */
	double *c; /* the plain contenders' output */
	struct agile_rmap *rm;
	struct agile_field *fa, *fb, *fbt, *fc;
	bool cached; /* keep B's copies from the run before */
	bool tiles; /* the local global view's kernel */
	bool span; /* the full global view, a row run at a time */
	int err;
};

/* Small integers: every sum is exact. */
static double addt_a(int64_t x, int64_t y)
{
	return (double)((x * 7 + y * 3) % 1000);
}

static double addt_b(int64_t x, int64_t y)
{
	return (double)((x * 5 + y * 11) % 997);
}

static void addt_tile(const struct addt *t, int64_t tx, int64_t ty)
{
	int64_t n = t->n;

	for (int64_t y = ty * t->tile; y < (ty + 1) * t->tile; y++)
		for (int64_t x = tx * t->tile; x < (tx + 1) * t->tile; x++)
			t->c[y * n + x] = t->a[y * n + x] + t->b[x * n + y];
}

static void run_addt_plain(void *arg)
{
	struct addt *t = arg;
	int64_t per = t->n / t->tile;

	for (int64_t ty = 0; ty < per; ty++)
		for (int64_t tx = 0; tx < per; tx++)
			addt_tile(t, tx, ty);
}

static int addt_pfor_body(int64_t lo, int64_t hi, void *arg)
{
	struct addt *t = arg;
	int64_t per = t->n / t->tile;

	for (int64_t i = lo; i < hi; i++)
		addt_tile(t, i % per, i / per);
	return 0;
}

static void run_addt_pfor(void *arg)
{
	struct addt *t = arg;
	int64_t per = t->n / t->tile;

	record(&t->err, agile_sched_parallel_for(t->env->pool, 0, per * per, 1,
						 addt_pfor_body, t));
}

/* Each node fills its own part of A and B: moves nothing. */
static int addt_fill_kernel(struct agile_forall_ctx *ctx, void *arg)
{
	const struct agile_grid *g = &ctx->grid;

	(void)arg;
	for (int64_t y = g->offset.i[1];
	     y < g->offset.i[1] + (int64_t)g->extent.n[1]; y++)
		for (int64_t x = g->offset.i[0];
		     x < g->offset.i[0] + (int64_t)g->extent.n[0]; x++) {
			int64_t i[2] = { x, y };
			double va = addt_a(x, y), vb = addt_b(x, y);
			int err = agile_acc_write(&ctx->acc[0], i, &va);

			if (!err)
				err = agile_acc_write(&ctx->acc[1], i, &vb);
			if (err)
				return err;
		}
	return 0;
}

/* c[k] = a[k] + b[k * sb] for k < n: C and A runs are contiguous. */
static void addt_row(double *restrict c, const double *restrict a,
		     const double *restrict b, int64_t sb, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++)
		c[k] = a[k] + b[(int64_t)k * sb];
}

/* acc[0] C (write), acc[1] A, acc[2] B^T (read), tile by tile. */
static int addt_kernel(struct agile_forall_ctx *ctx, void *arg)
{
	const struct addt *t = arg;
	const struct agile_grid *g = &ctx->grid;
	int64_t x0 = g->offset.i[0], y0 = g->offset.i[1];
	int64_t x1 = x0 + (int64_t)g->extent.n[0];
	int64_t y1 = y0 + (int64_t)g->extent.n[1];

	for (int64_t ty = y0; ty < y1; ty += t->tile)
		for (int64_t tx = x0; tx < x1; tx += t->tile)
			for (int64_t y = ty; y < ty + t->tile; y++)
				for (int64_t x = tx; x < tx + t->tile; x++) {
					int64_t i[2] = { x, y };
					void *pc, *pa, *pb;
					int err = agile_acc_ptr(&ctx->acc[0], i,
								&pc);

					if (!err)
						err = agile_acc_ptr(
							&ctx->acc[1], i, &pa);
					if (!err)
						err = agile_acc_ptr(
							&ctx->acc[2], i, &pb);
					if (err)
						return err;
					*(double *)pc = *(const double *)pa +
							*(const double *)pb;
				}
	return 0;
}

/*
 * The full global view a run at a time: agile_acc_span gives each
 * field's run along x inside its cached block, and the inner loop over
 * the shortest of them is plain (C and A contiguous, B^T strided).
 */
static int addt_span_kernel(struct agile_forall_ctx *ctx, void *arg)
{
	const struct addt *t = arg;
	const struct agile_grid *g = &ctx->grid;
	int64_t x0 = g->offset.i[0], y0 = g->offset.i[1];
	int64_t x1 = x0 + (int64_t)g->extent.n[0];
	int64_t y1 = y0 + (int64_t)g->extent.n[1];

	for (int64_t ty = y0; ty < y1; ty += t->tile)
		for (int64_t tx = x0; tx < x1; tx += t->tile)
			for (int64_t y = ty; y < ty + t->tile; y++)
				for (int64_t x = tx; x < tx + t->tile;) {
					int64_t i[2] = { x, y }, sc, sa, sb;
					uint64_t nc, na, nb, n;
					void *pc, *pa, *pb;
					int err = agile_acc_span(
						&ctx->acc[0], i, &pc, &nc, &sc);

					if (!err)
						err = agile_acc_span(
							&ctx->acc[1], i, &pa,
							&na, &sa);
					if (!err)
						err = agile_acc_span(
							&ctx->acc[2], i, &pb,
							&nb, &sb);
					if (err)
						return err;
					n = (uint64_t)(tx + t->tile - x);
					n = nc < n ? nc : n;
					n = na < n ? na : n;
					n = nb < n ? nb : n;
					addt_row((double *)pc,
						 (const double *)pa,
						 (const double *)pb, sb, n);
					x += (int64_t)n;
				}
	return 0;
}

/* The same through the local global view: unchecked pointers per tile. */
static int addt_tiles_kernel(struct agile_forall_ctx *ctx, void *arg)
{
	const struct addt *t = arg;
	const struct agile_grid *g = &ctx->grid;
	int64_t tx0 = g->offset.i[0] / t->tile, ty0 = g->offset.i[1] / t->tile;
	int64_t tx1 = tx0 + (int64_t)g->extent.n[0] / t->tile;
	int64_t ty1 = ty0 + (int64_t)g->extent.n[1] / t->tile;

	for (int64_t ty = ty0; ty < ty1; ty++)
		for (int64_t tx = tx0; tx < tx1; tx++) {
			int64_t at[2] = { tx, ty };
			struct agile_tile tc, ta, tb;
			int err = agile_tile_get(&ctx->acc[0], at, &tc);
			double *c;
			const double *a, *b;

			if (!err)
				err = agile_tile_get(&ctx->acc[1], at, &ta);
			if (!err)
				err = agile_tile_get(&ctx->acc[2], at, &tb);
			if (err)
				return err;
			c = (double *)tc.base;
			a = (const double *)ta.base;
			b = (const double *)tb.base;
			for (int64_t y = 0; y < (int64_t)tc.grid.extent.n[1];
			     y++)
				for (int64_t x = 0;
				     x < (int64_t)tc.grid.extent.n[0]; x++)
					c[x * tc.stride[0] + y * tc.stride[1]] =
						a[x * ta.stride[0] +
						  y * ta.stride[1]] +
						b[x * tb.stride[0] +
						  y * tb.stride[1]];
		}
	return 0;
}

static int addt_forall(struct addt *t)
{
	const struct agile_forall_field ff[3] = {
		{ t->fc, AGILE_ACC_WRITE },
		{ t->fa, AGILE_ACC_READ },
		{ t->fbt, AGILE_ACC_READ },
	};
	int err = 0;

	if (!t->cached)
		err = agile_field_drop_copies(t->fb);
	if (!err)
		err = agile_forall(t->env->sm, t->fc,
				   t->tiles ? addt_tiles_kernel :
				   t->span  ? addt_span_kernel :
					      addt_kernel,
				   t, ff, 3, 0, NULL);
	return err;
}

static void run_addt_segmap(void *arg)
{
	struct addt *t = arg;

	record(&t->err, addt_forall(t));
}

/*
 * The least bytes C = A + B^T moves: segment s = (sx, sy) of C reads B's
 * segment (sy, sx); when another node owns it, all of it comes over.
 */
static uint64_t addt_min_bytes(const struct seg_env *env)
{
	uint64_t seg_bytes = (uint64_t)(env->n / 3) * (uint64_t)(env->n / 3) *
			     sizeof(double);
	uint64_t bytes = 0;

	for (uint32_t sy = 0; sy < 3; sy++)
		for (uint32_t sx = 0; sx < 3; sx++) {
			uint32_t mine = (sx + 3 * sy) % env->nodes;
			uint32_t theirs = (sy + 3 * sx) % env->nodes;

			if (mine != theirs)
				bytes += seg_bytes;
		}
	return bytes;
}

static int addt_setup(struct addt *t)
{
	int64_t n = t->n;
	struct agile_grid parent = grid2((uint64_t)n, (uint64_t)n);
	struct agile_extent node_block = ext2((uint64_t)n / 3, (uint64_t)n / 3);
	struct agile_proto p = { .proto = AGILE_PROTO_CYCLIC,
				 .nr_nodes = t->env->nodes };
	/* memory blocks: 1 tile column (axis 0) x 2 tile rows (axis 1) */
	struct agile_levels lv = {
		.tile = ext2((uint64_t)t->tile, (uint64_t)t->tile),
		.block = ext2((uint64_t)t->tile, 2 * (uint64_t)t->tile),
	};
	struct agile_forall_field fill[2];
	int err;

	err = agile_rmap_tiles(&parent, &node_block, &p, &t->rm);
	if (!err)
		err = agile_field_create(t->env->sm, t->rm, &lv, sizeof(double),
					 &t->fa);
	if (!err)
		err = agile_field_create(t->env->sm, t->rm, &lv, sizeof(double),
					 &t->fb);
	if (!err)
		err = agile_field_create(t->env->sm, t->rm, &lv, sizeof(double),
					 &t->fc);
	if (!err)
		err = agile_field_transpose(t->fb, 0, 1, &t->fbt);
	if (err) {
		fprintf(stderr, "  segmap: add-bt fields: %s (%s)\n",
			strerror(-err), agile_segmap_why());
		return err;
	}
	fill[0] = (struct agile_forall_field){ t->fa, AGILE_ACC_WRITE };
	fill[1] = (struct agile_forall_field){ t->fb, AGILE_ACC_WRITE };
	return agile_forall(t->env->sm, t->fa, addt_fill_kernel, NULL, fill, 2,
			    0, NULL);
}

/*
 * One run of @t's kernel, C gathered into @out and compared with @ref;
 * *@moved: the bytes it moved.
 */
static int addt_check(struct addt *t, double *out, const double *ref,
		      size_t bytes, uint64_t *moved)
{
	int err;

	agile_field_stats_reset(t->fa);
	agile_field_stats_reset(t->fb);
	err = addt_forall(t);
	*moved = moved_bytes(t->fa) + moved_bytes(t->fb);
	if (!err)
		err = agile_field_gather(t->fc, out, bytes);
	if (!err && memcmp(out, ref, bytes))
		err = -EPROTO;
	return err;
}

static void addt_teardown(struct addt *t)
{
	agile_field_destroy(t->fbt);
	agile_field_destroy(t->fa);
	agile_field_destroy(t->fb);
	agile_field_destroy(t->fc);
	agile_rmap_destroy(t->rm);
}

static int bench_addt(const struct seg_env *env, int reps)
{
	int64_t n = env->n;
	size_t bytes = (size_t)(n * n) * sizeof(double);
	double *a = malloc(bytes), *b = malloc(bytes);
	double *ref = malloc(bytes), *out = malloc(bytes);
	struct addt plain = { .env = env, .n = n, .tile = n / 6 };
	struct addt pfor, seg, cached, tiles, span;
	char pfor_name[32], seg_name[32], cached_name[32], tiles_name[32];
	char span_name[32];
	uint64_t cold = 0, warm = 0, tiles_moved = 0, span_moved = 0;
	int err = 0;

	if (!a || !b || !ref || !out) {
		err = -ENOMEM;
		goto out;
	}
	for (int64_t y = 0; y < n; y++)
		for (int64_t x = 0; x < n; x++) {
			a[y * n + x] = addt_a(x, y);
			b[y * n + x] = addt_b(x, y);
		}
	plain.a = a;
	plain.b = b;
	plain.c = ref;
	pfor = plain;
	pfor.c = out;
	seg = plain;
	err = addt_setup(&seg);
	if (err)
		goto out_fields;
	cached = seg;
	cached.cached = true;
	tiles = seg;
	tiles.tiles = true;
	span = seg;
	span.span = true;

	/* The reference, checked against the formula. */
	run_addt_plain(&plain);
	for (int64_t y = 0; y < n && !err; y++)
		for (int64_t x = 0; x < n && !err; x++)
			if (ref[y * n + x] != addt_a(x, y) + addt_b(y, x))
				err = -EPROTO;
	/* One run of each segmap kernel, untimed: checked, bytes counted. */
	if (!err)
		err = addt_check(&seg, out, ref, bytes, &cold);
	if (!err)
		err = addt_check(&cached, out, ref, bytes, &warm);
	if (!err)
		err = addt_check(&tiles, out, ref, bytes, &tiles_moved);
	if (!err)
		err = addt_check(&span, out, ref, bytes, &span_moved);
	if (err) {
		fprintf(stderr, "  segmap: add-bt: %s\n", strerror(-err));
		goto out_fields;
	}

	snprintf(pfor_name, sizeof(pfor_name), "pfor-%dw", env->threads);
	snprintf(seg_name, sizeof(seg_name), "segmap-q%u-%dw", env->nodes,
		 env->threads);
	snprintf(cached_name, sizeof(cached_name), "segmap-cached-q%u-%dw",
		 env->nodes, env->threads);
	snprintf(tiles_name, sizeof(tiles_name), "segmap-tiles-q%u-%dw",
		 env->nodes, env->threads);
	snprintf(span_name, sizeof(span_name), "segmap-span-q%u-%dw",
		 env->nodes, env->threads);
	const struct contender c[] = {
		{ "plain", 1, run_addt_plain, &plain, reps },
		{ pfor_name, env->threads, run_addt_pfor, &pfor, reps },
		{ seg_name, env->threads, run_addt_segmap, &seg, reps },
		{ cached_name, env->threads, run_addt_segmap, &cached, reps },
		{ tiles_name, env->threads, run_addt_segmap, &tiles, reps },
		{ span_name, env->threads, run_addt_segmap, &span, reps },
	};
	bench_run("add-bt", c, sizeof(c) / sizeof(c[0]));

	/* C = A + B^T is the same every run: the last one must be right. */
	err = pfor.err	 ? pfor.err :
	      seg.err	 ? seg.err :
	      cached.err ? cached.err :
	      tiles.err	 ? tiles.err :
			   span.err;
	if (!err && memcmp(out, ref, bytes)) {
		fprintf(stderr, "  segmap: add-bt: pfor's C is wrong\n");
		err = -EPROTO;
	}
	if (!err)
		err = agile_field_gather(seg.fc, out, bytes);
	if (!err && memcmp(out, ref, bytes)) {
		fprintf(stderr, "  segmap: add-bt: segmap's C is wrong\n");
		err = -EPROTO;
	}
	if (err) {
		fprintf(stderr, "  segmap: add-bt: %s\n", strerror(-err));
		goto out_fields;
	}
	bench_row_moved("add-bt", seg_name, cold, addt_min_bytes(env));
	bench_row_moved("add-bt", cached_name, warm, 0);
	bench_row_moved("add-bt", tiles_name, tiles_moved, addt_min_bytes(env));
	bench_row_moved("add-bt", span_name, span_moved, addt_min_bytes(env));
	bench_compare("add-bt", seg_name, "plain", true, NULL);
	bench_compare("add-bt", pfor_name, "plain", true, NULL);
	bench_compare("add-bt", seg_name, pfor_name, false, NULL);
	bench_compare("add-bt", cached_name, pfor_name, false, NULL);
	bench_compare("add-bt", tiles_name, pfor_name, false, NULL);
	bench_compare("add-bt", span_name, pfor_name, false, NULL);
	bench_compare("add-bt", span_name, seg_name, false, NULL);
out_fields:
	addt_teardown(&seg);
out:
	free(a);
	free(b);
	free(ref);
	free(out);
	return err;
}

/* ---- stencil: Jacobi over row bands ---- */

struct sten {
	const struct seg_env *env;
	int64_t n;
	double *cur, *next; /* plain contenders: the pair, swapped */
	struct agile_rmap *rm;
	struct agile_field *fcur, *fnext; /* segmap: the pair, swapped */
	int err;
};

static void plain_start(double *f, int64_t n)
{
	for (int64_t y = 0; y < n; y++)
		for (int64_t x = 0; x < n; x++)
			f[y * n + x] = stencil_start(x, y);
}

static void sten_swap(struct sten *s)
{
	double *tmp = s->cur;
	struct agile_field *ftmp = s->fcur;

	s->cur = s->next;
	s->next = tmp;
	s->fcur = s->fnext;
	s->fnext = ftmp;
}

static int sten_rows(int64_t lo, int64_t hi, void *arg)
{
	struct sten *s = arg;
	int64_t n = s->n;

	for (int64_t y = lo; y < hi; y++)
		stencil_row(s->next + y * n, s->cur + (y - 1) * n,
			    s->cur + y * n, s->cur + (y + 1) * n, n);
	return 0;
}

static void run_sten_plain(void *arg)
{
	struct sten *s = arg;

	for (int i = 0; i < s->env->iters; i++) {
		sten_rows(1, s->n - 1, s);
		sten_swap(s);
	}
}

static void run_sten_pfor(void *arg)
{
	struct sten *s = arg;

	for (int i = 0; i < s->env->iters && !s->err; i++) {
		record(&s->err,
		       agile_sched_parallel_for(s->env->pool, 1, s->n - 1, 0,
						sten_rows, s));
		sten_swap(s);
	}
}

static int sten_segmap_run(struct sten *s)
{
	int err = 0;

	for (int i = 0; i < s->env->iters && !err; i++) {
		const struct agile_forall_field ff[2] = {
			{ s->fnext, AGILE_ACC_WRITE },
			{ s->fcur, AGILE_ACC_READ },
		};

		err = agile_forall(s->env->sm, s->fnext, stencil_kernel, &s->n,
				   ff, 2, 0, NULL);
		sten_swap(s);
	}
	return err;
}

static void run_sten_segmap(void *arg)
{
	struct sten *s = arg;

	if (!s->err)
		record(&s->err, sten_segmap_run(s));
}

static int sten_setup(struct sten *s)
{
	uint64_t n = (uint64_t)s->n;
	struct agile_grid parent = grid2(n, n);
	struct agile_extent band = ext2(n, n / s->env->nodes);
	struct agile_proto p = { .proto = AGILE_PROTO_BLOCK,
				 .nr_nodes = s->env->nodes };
	/* a memory block is one row: a halo moves as one thin block */
	struct agile_levels lv = { .tile = ext2(n, 1), .block = ext2(n, 1) };
	int err;

	err = agile_rmap_tiles(&parent, &band, &p, &s->rm);
	if (!err)
		err = agile_field_create(s->env->sm, s->rm, &lv, sizeof(double),
					 &s->fcur);
	if (!err)
		err = agile_field_create(s->env->sm, s->rm, &lv, sizeof(double),
					 &s->fnext);
	if (err)
		fprintf(stderr, "  segmap: stencil fields: %s (%s)\n",
			strerror(-err), agile_segmap_why());
	return err;
}

static int sten_segmap_start(struct sten *s)
{
	const struct agile_forall_field ff[2] = {
		{ s->fcur, AGILE_ACC_WRITE },
		{ s->fnext, AGILE_ACC_WRITE },
	};

	return agile_forall(s->env->sm, s->fcur, stencil_fill_kernel, &s->n, ff,
			    2, 0, NULL);
}

/* ---- stencil: the processes scope, one forked member per node ---- */

#define SEG_PROCS_JOIN_NS (60ULL * 1000 * 1000 * 1000) /* and collectives */
#define SEG_PROCS_MAX_REPS 64

/* What the members tell the parent, in memory shared with it. */
struct procs_share {
	int err; /* the first member error */
	int wrong; /* members whose gathered result was not the reference */
	uint64_t moved; /* the checked run's owner-copy bytes, all members */
	double ms[]; /* [node * SEG_PROCS_MAX_REPS + rep] */
};

static int noop_kernel(struct agile_forall_ctx *ctx, void *arg)
{
	(void)ctx;
	(void)arg;
	return 0;
}

/* Every member's runs start together: a forall that does nothing. */
static int procs_line_up(struct sten *s)
{
	const struct agile_forall_field ff = { s->fcur, AGILE_ACC_READ };

	return agile_forall(s->env->sm, s->fcur, noop_kernel, NULL, &ff, 1, 0,
			    NULL);
}

/*
 * In a forked member: join as one node (kernels on this thread), the
 * same fields and kernel as segmap-qQ-Tw; ITERS iterations from the
 * start, gathered and compared with @ref; then the timed runs.
 */
static int procs_member(const struct seg_env *penv, uint64_t key,
			const double *ref, int reps, struct procs_share *sh)
{
	struct seg_env env = *penv;
	struct sten s = { .env = &env, .n = env.n };
	size_t bytes = (size_t)(env.n * env.n) * sizeof(double);
	double *got = malloc(bytes);
	uint32_t self = 0;
	int err;

	env.pool = NULL;
	env.sm = NULL;
	if (!got)
		return -ENOMEM;
	err = agile_segmap_procs_join(key, env.nodes, SEG_PROCS_JOIN_NS, NULL,
				      &env.sm);
	if (err) {
		free(got);
		return err;
	}
	err = agile_segmap_self(env.sm, &self);
	if (!err)
		err = sten_setup(&s);
	if (!err)
		err = sten_segmap_start(&s);
	if (!err) {
		agile_field_stats_reset(s.fcur);
		agile_field_stats_reset(s.fnext);
		err = sten_segmap_run(&s);
		__atomic_add_fetch(&sh->moved,
				   moved_bytes(s.fcur) + moved_bytes(s.fnext),
				   __ATOMIC_RELAXED);
	}
	if (!err)
		err = agile_field_gather(s.fcur, got, bytes);
	if (!err && memcmp(got, ref, bytes))
		__atomic_add_fetch(&sh->wrong, 1, __ATOMIC_RELAXED);
	for (int r = 0; !err && r < SEG_MPI_WARMUP + reps; r++) {
		double t0;

		err = procs_line_up(&s);
		t0 = bench_now_ms();
		if (!err)
			err = sten_segmap_run(&s);
		if (r >= SEG_MPI_WARMUP)
			sh->ms[self * SEG_PROCS_MAX_REPS +
			       (uint32_t)(r - SEG_MPI_WARMUP)] =
				bench_now_ms() - t0;
	}
	agile_field_destroy(s.fcur);
	agile_field_destroy(s.fnext);
	agile_rmap_destroy(s.rm);
	agile_segmap_destroy(env.sm);
	free(got);
	return err;
}

/*
 * The stencil on env->nodes forked processes of a dev group (kmod where
 * /dev/agile exists, else the user backend, or $AGILE_BACKEND); a run's
 * time is its slowest member's.  -EPROTO when a member's result is wrong.
 */
static int sten_procs(const struct seg_env *env, const double *ref,
		      const char *variant, int reps, uint64_t least)
{
	size_t share_bytes =
		sizeof(struct procs_share) +
		(size_t)env->nodes * SEG_PROCS_MAX_REPS * sizeof(double);
	struct procs_share *sh;
	double ms[SEG_PROCS_MAX_REPS];
	uint64_t key = 0;
	pid_t *pids;
	int failed = 0;

	if (reps > SEG_PROCS_MAX_REPS)
		reps = SEG_PROCS_MAX_REPS;
	while (!key)
		if (getrandom(&key, sizeof(key), 0) != sizeof(key))
			key = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
	sh = mmap(NULL, share_bytes, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pids = calloc(env->nodes, sizeof(*pids));
	if (sh == MAP_FAILED || !pids) {
		if (sh != MAP_FAILED)
			munmap(sh, share_bytes);
		free(pids);
		return -ENOMEM;
	}
	fflush(NULL);
	for (uint32_t q = 0; q < env->nodes; q++) {
		pids[q] = fork();
		if (pids[q] == 0) {
			int err = procs_member(env, key, ref, reps, sh);

			if (err)
				__atomic_compare_exchange_n(
					&sh->err, &(int){ 0 }, err, false,
					__ATOMIC_RELAXED, __ATOMIC_RELAXED);
			_exit(err ? 1 : 0);
		}
		if (pids[q] < 0)
			failed++;
	}
	for (uint32_t q = 0; q < env->nodes; q++) {
		int status = 0;

		if (pids[q] > 0 && (waitpid(pids[q], &status, 0) < 0 ||
				    !WIFEXITED(status) || WEXITSTATUS(status)))
			failed++;
	}
	free(pids);
	if (sh->wrong) {
		fprintf(stderr,
			"  segmap: stencil: %d processes' results are wrong\n",
			sh->wrong);
		munmap(sh, share_bytes);
		return -EPROTO;
	}
	if (failed) {
		fprintf(stderr, "  segmap: stencil: processes scope: %s\n",
			sh->err ? strerror(-sh->err) : "a member failed");
		bench_row_na("stencil", variant, (int)env->nodes,
			     "a member failed");
		munmap(sh, share_bytes);
		return 0;
	}
	for (int r = 0; r < reps; r++) {
		ms[r] = 0;
		for (uint32_t q = 0; q < env->nodes; q++)
			if (sh->ms[q * SEG_PROCS_MAX_REPS + (uint32_t)r] >
			    ms[r])
				ms[r] = sh->ms[q * SEG_PROCS_MAX_REPS +
					       (uint32_t)r];
	}
	bench_row("stencil", variant, (int)env->nodes,
		  bench_summarize(ms, reps));
	bench_row_moved("stencil", variant, sh->moved, least);
	munmap(sh, share_bytes);
	return 0;
}

/* ---- stencil: Open MPI's agile-bench-stencil-mpi under mpirun ---- */

/* What one mpirun of agile-bench-stencil-mpi said. */
struct mpi_out {
	double ms[64], seg_ms[64]; /* Sendrecv's times, segmap's */
	uint64_t halo, seg_moved;
	int done, seg_done;
	bool ok, seg_ok;
	char seg_na[128]; /* why segmap's scope could not be made */
};

/* "times ms ms ..." after @pos into @ms; how many (up to @reps). */
static int parse_times(char *pos, double *ms, int reps)
{
	int done = 0;
	char *end;

	for (; done < reps; pos = end) {
		ms[done] = strtod(pos, &end);
		if (end == pos)
			break;
		done++;
	}
	return done;
}

/*
 * One mpirun: the check, the halo bytes and @reps times, and the same of
 * the segmap contender over the MPI scope.  -ECHILD when mpirun failed,
 * -EPROTO when the program found a result wrong.
 */
static int mpi_once(const struct seg_env *env, const char *prog, int reps,
		    bool no_single_copy, struct mpi_out *o)
{
	char cmd[4096], line[16384];
	int status;
	bool wrong = false;
	FILE *f;

	memset(o, 0, sizeof(*o));
	/* osc ^rdma: segmap's windows (agile/segmap_mpi.h) */
	snprintf(
		cmd, sizeof(cmd),
		"mpirun --oversubscribe --mca osc ^rdma%s%s%s -np %u '%s' %lld %d %d %d",
		geteuid() == 0 ? " --allow-run-as-root" : "",
		env->no_pin ? " --bind-to none" : "",
		no_single_copy ? " --mca btl_vader_single_copy_mechanism none" :
				 "",
		env->nodes, prog, (long long)env->n, env->iters, SEG_MPI_WARMUP,
		reps);
	fflush(NULL);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "check ok", 8)) {
			o->ok = true;
		} else if (!strncmp(line, "error", 5)) {
			wrong = true;
			fprintf(stderr, "  segmap: mpi: %s", line);
		} else if (!strncmp(line, "halo ", 5)) {
			o->halo = strtoull(line + 5, NULL, 10);
		} else if (!strncmp(line, "times", 5)) {
			o->done = parse_times(line + 5, o->ms, reps);
		} else if (!strncmp(line, "segmap check ok", 15)) {
			o->seg_ok = true;
		} else if (!strncmp(line, "segmap moved ", 13)) {
			o->seg_moved = strtoull(line + 13, NULL, 10);
		} else if (!strncmp(line, "segmap times", 12)) {
			o->seg_done = parse_times(line + 12, o->seg_ms, reps);
		} else if (!strncmp(line, "segmap n/a ", 11)) {
			line[11 + strcspn(line + 11, "\n")] = '\0';
			snprintf(o->seg_na, sizeof(o->seg_na), "%.100s",
				 line + 11);
		}
	}
	status = pclose(f);
	if (wrong)
		return -EPROTO;
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) ||
	    !o->ok || o->done < reps)
		return -ECHILD;
	return 0;
}

/* mpi-Qr (@variant) and segmap-mpi-Qr (@seg_variant), one mpirun. */
static int sten_mpi(const struct seg_env *env, const char *variant,
		    const char *seg_variant, int reps)
{
	static struct mpi_out o;
	uint64_t least = 2 * (uint64_t)(env->nodes - 1) * (uint64_t)env->n *
			 sizeof(double) * (uint64_t)env->iters;
	char prog[PATH_MAX];
	int err;

	if (reps > 64)
		reps = 64;
	if (bench_find_program("agile-bench-stencil-mpi",
			       "AGILE_BENCH_STENCIL_MPI", prog, sizeof(prog))) {
		bench_row_na("stencil", variant, (int)env->nodes,
			     "no agile-bench-stencil-mpi");
		bench_row_na("stencil", seg_variant, (int)env->nodes,
			     "no agile-bench-stencil-mpi");
		return 0;
	}
	if (system("command -v mpirun >/dev/null 2>&1")) {
		bench_row_na("stencil", variant, (int)env->nodes, "no mpirun");
		bench_row_na("stencil", seg_variant, (int)env->nodes,
			     "no mpirun");
		return 0;
	}
	err = mpi_once(env, prog, reps, false, &o);
	/* Containers often refuse vader's single copy (CMA): without it. */
	if (err == -ECHILD)
		err = mpi_once(env, prog, reps, true, &o);
	if (err == -EPROTO) {
		fprintf(stderr, "  segmap: mpi: wrong result\n");
		return err;
	}
	if (err) {
		bench_row_na("stencil", variant, (int)env->nodes,
			     "mpirun failed");
		bench_row_na("stencil", seg_variant, (int)env->nodes,
			     "mpirun failed");
		return 0;
	}
	bench_row("stencil", variant, (int)env->nodes,
		  bench_summarize(o.ms, reps));
	bench_row_moved("stencil", variant, o.halo, least);
	if (!o.seg_ok || o.seg_done < reps) {
		bench_row_na("stencil", seg_variant, (int)env->nodes,
			     o.seg_na[0] ? o.seg_na : "no segmap result");
		return 0;
	}
	bench_row("stencil", seg_variant, (int)env->nodes,
		  bench_summarize(o.seg_ms, reps));
	bench_row_moved("stencil", seg_variant, o.seg_moved, least);
	return 0;
}

static int bench_stencil(const struct seg_env *env, int reps)
{
	int64_t n = env->n;
	size_t bytes = (size_t)(n * n) * sizeof(double);
	struct sten plain = { .env = env, .n = n }, pfor = plain, seg = plain;
	double *ref = NULL, *got = NULL;
	char pfor_name[32], seg_name[32], mpi_name[32], procs_name[32];
	char seg_mpi_name[32];
	uint64_t moved = 0, least = 2 * (uint64_t)(env->nodes - 1) *
				    (uint64_t)n * sizeof(double) *
				    (uint64_t)env->iters;
	int err = 0;

	plain.cur = malloc(bytes);
	plain.next = malloc(bytes);
	pfor.cur = malloc(bytes);
	pfor.next = malloc(bytes);
	ref = malloc(bytes);
	got = malloc(bytes);
	if (!plain.cur || !plain.next || !pfor.cur || !pfor.next || !ref ||
	    !got) {
		err = -ENOMEM;
		goto out;
	}
	err = sten_setup(&seg);
	if (err)
		goto out;

	/* One run of each from the start, untimed: checked, bytes counted. */
	plain_start(plain.cur, n);
	plain_start(plain.next, n);
	plain_start(pfor.cur, n);
	plain_start(pfor.next, n);
	run_sten_plain(&plain);
	memcpy(ref, plain.cur, bytes);
	run_sten_pfor(&pfor);
	err = pfor.err;
	if (!err && memcmp(pfor.cur, ref, bytes)) {
		fprintf(stderr, "  segmap: stencil: pfor's result is wrong\n");
		err = -EPROTO;
	}
	if (!err)
		err = sten_segmap_start(&seg);
	if (!err) {
		agile_field_stats_reset(seg.fcur);
		agile_field_stats_reset(seg.fnext);
		err = sten_segmap_run(&seg);
		moved = moved_bytes(seg.fcur) + moved_bytes(seg.fnext);
	}
	if (!err)
		err = agile_field_gather(seg.fcur, got, bytes);
	if (!err && memcmp(got, ref, bytes)) {
		fprintf(stderr,
			"  segmap: stencil: segmap's result is wrong\n");
		err = -EPROTO;
	}
	if (err) {
		fprintf(stderr, "  segmap: stencil: %s\n", strerror(-err));
		goto out_fields;
	}

	snprintf(pfor_name, sizeof(pfor_name), "pfor-%dw", env->threads);
	snprintf(seg_name, sizeof(seg_name), "segmap-q%u-%dw", env->nodes,
		 env->threads);
	snprintf(mpi_name, sizeof(mpi_name), "mpi-%ur", env->nodes);
	snprintf(procs_name, sizeof(procs_name), "segmap-procs-q%u",
		 env->nodes);
	snprintf(seg_mpi_name, sizeof(seg_mpi_name), "segmap-mpi-%ur",
		 env->nodes);
	const struct contender c[] = {
		{ "plain", 1, run_sten_plain, &plain, reps },
		{ pfor_name, env->threads, run_sten_pfor, &pfor, reps },
		{ seg_name, env->threads, run_sten_segmap, &seg, reps },
	};
	bench_run("stencil", c, sizeof(c) / sizeof(c[0]));
	err = pfor.err ? pfor.err : seg.err;
	if (err) {
		fprintf(stderr, "  segmap: stencil: %s\n", strerror(-err));
		goto out_fields;
	}
	bench_row_moved("stencil", seg_name, moved, least);
	err = sten_procs(env, ref, procs_name, reps, least);
	if (!err)
		err = sten_mpi(env, mpi_name, seg_mpi_name, reps);
	bench_compare("stencil", seg_name, "plain", true, NULL);
	bench_compare("stencil", pfor_name, "plain", true, NULL);
	bench_compare("stencil", seg_name, pfor_name, false, NULL);
	bench_compare("stencil", seg_name, mpi_name, true, NULL);
	bench_compare("stencil", procs_name, seg_name, false, NULL);
	bench_compare("stencil", procs_name, mpi_name, true, NULL);
	bench_compare("stencil", seg_mpi_name, mpi_name, true, NULL);
out_fields:
	agile_field_destroy(seg.fcur);
	agile_field_destroy(seg.fnext);
	agile_rmap_destroy(seg.rm);
out:
	free(plain.cur);
	free(plain.next);
	free(pfor.cur);
	free(pfor.next);
	free(ref);
	free(got);
	return err;
}

/* The backend agile_segmap_procs_join takes (the dev layer's default). */
static const char *procs_backend(void)
{
	const char *env = getenv("AGILE_BACKEND");

	if (env && *env)
		return env;
	return access("/dev/agile", F_OK) ? "user" : "kmod";
}

int bench_segmap(const struct bench_opts *o)
{
	struct seg_env env = {
		.n = o->seg_n,
		.iters = o->seg_iters,
		.nodes = (uint32_t)o->seg_nodes,
		.threads = o->threads,
		.no_pin = o->no_pin,
	};
	struct agile_sched_opts opts;
	int err, e;

	if (env.n < 6 || env.n % 6 || env.n % env.nodes ||
	    env.nodes > AGILE_SEGMAP_MAX_NODES)
		return -EINVAL;
	agile_sched_opts_init(&opts);
	opts.flags = AGILE_SCHED_QUIET | (o->no_pin ? AGILE_SCHED_NO_PIN : 0);
	opts.nr_workers = (uint32_t)o->threads;
	err = agile_sched_create(&opts, &env.pool);
	if (err)
		return err;
	err = agile_segmap_threads(env.nodes, env.pool, &env.sm);
	if (err) {
		agile_sched_destroy(env.pool);
		return err;
	}
	err = bench_addt(&env, o->reps);
	e = bench_stencil(&env, o->reps);
	err = err ? err : e;
	agile_segmap_destroy(env.sm);
	agile_sched_destroy(env.pool);
	bench_note(
		"segmap: N = %lld doubles, Q = %u nodes of the threads scope on %d workers, %d stencil iterations per run; stencil segmap-procs-q%u: %u processes of a %s dev group, one node each",
		(long long)env.n, env.nodes, env.threads, env.iters, env.nodes,
		env.nodes, procs_backend());
	return err;
}
