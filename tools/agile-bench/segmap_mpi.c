// SPDX-License-Identifier: MIT
/*
 * agile-bench-stencil-mpi - the Open MPI baseline of `agile-bench segmap`'s
 * stencil: the same N x N Jacobi iterations (stencil.h) by hand with MPI,
 * in the decomposition the segmap contender uses: rank r holds the band of
 * rows r * N / P .. (r + 1) * N / P - 1, plus one halo row above and one
 * below, refreshed before every iteration by two MPI_Sendrecv (its first
 * row up, its last row down).  agile-bench starts it through mpirun and
 * reads its output; by hand:
 *
 *	mpirun -np P agile-bench-stencil-mpi N ITERS WARMUP REPS
 *
 * First a check: ITERS iterations from the start, the bands gathered on
 * rank 0 and compared bit for bit with ITERS plain iterations there.
 * Then WARMUP untimed and REPS timed runs of ITERS iterations each, every
 * run between barriers, its time the slowest rank's.  Rank 0 prints
 * "check ok" (or "error what"), then "halo BYTES" (the bytes one run's
 * Sendrecvs move), then "times ms ms ...".
 *
 * Then, in the same run, the segmap contender of agile-bench segmap's
 * stencil over the MPI scope (agile_segmap_mpi_create on MPI_COMM_WORLD:
 * node q is rank q, its home an MPI window, a halo row an MPI_Get): the
 * same bands (segments of N/P whole rows, block protocol), memory blocks
 * and tiles of one row, one agile_forall per iteration writing the new
 * field and reading the old one a row at a time through agile_tile_get.
 * The same check (every rank gathers the field and compares it with its
 * own plain iterations), then the same timed runs.  Rank 0 prints
 * "segmap check ok" (or "error segmap what", or "segmap n/a why" where
 * the scope cannot be made), "segmap moved BYTES" (one run's owner-copy
 * bytes, all ranks) and "segmap times ms ms ...".  The windows need
 * `mpirun --mca osc ^rdma` over Open MPI 4.1's tcp btl (agile/segmap_mpi.h).
 */
#define _GNU_SOURCE
#include <agile/segmap.h>
#include <agile/segmap_mpi.h>
#include <errno.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stencil.h"
#include "stencil_segmap.h"

struct band {
	int64_t n, first, rows; /* field side, first global row, rows held */
	int rank, size;
	double *cur, *next; /* (rows + 2) x n: halo, the band, halo */
};

static void band_start(struct band *b)
{
	for (int64_t r = 0; r < b->rows + 2; r++)
		for (int64_t x = 0; x < b->n; x++) {
			int64_t y = b->first + r - 1;
			double v = y >= 0 && y < b->n ? stencil_start(x, y) : 0;

			b->cur[r * b->n + x] = v;
			b->next[r * b->n + x] = v;
		}
}

/* One Jacobi iteration of the band: halos, then its interior rows. */
static void band_iterate(struct band *b)
{
	int up = b->rank > 0 ? b->rank - 1 : MPI_PROC_NULL;
	int down = b->rank < b->size - 1 ? b->rank + 1 : MPI_PROC_NULL;
	int n = (int)b->n;
	double *tmp;

	MPI_Sendrecv(b->cur + b->n, n, MPI_DOUBLE, up, 0,
		     b->cur + (b->rows + 1) * b->n, n, MPI_DOUBLE, down, 0,
		     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Sendrecv(b->cur + b->rows * b->n, n, MPI_DOUBLE, down, 1, b->cur, n,
		     MPI_DOUBLE, up, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	for (int64_t r = 1; r <= b->rows; r++) {
		int64_t y = b->first + r - 1;

		if (y == 0 || y == b->n - 1)
			continue; /* the fixed boundary */
		stencil_row(b->next + r * b->n, b->cur + (r - 1) * b->n,
			    b->cur + r * b->n, b->cur + (r + 1) * b->n, b->n);
	}
	tmp = b->cur;
	b->cur = b->next;
	b->next = tmp;
}

/* ITERS iterations from the start, compared on rank 0 with plain ones. */
static int check(struct band *b, int iters)
{
	size_t bytes = (size_t)(b->n * b->n) * sizeof(double);
	double *all = NULL, *ref = NULL, *ref_next = NULL;
	int bad = 0;

	band_start(b);
	for (int i = 0; i < iters; i++)
		band_iterate(b);
	if (b->rank == 0) {
		all = malloc(bytes);
		ref = malloc(bytes);
		ref_next = malloc(bytes);
		if (!all || !ref || !ref_next)
			bad = 1;
	}
	MPI_Gather(b->cur + b->n, (int)(b->rows * b->n), MPI_DOUBLE, all,
		   (int)(b->rows * b->n), MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (b->rank == 0 && !bad) {
		for (int64_t y = 0; y < b->n; y++)
			for (int64_t x = 0; x < b->n; x++)
				ref[y * b->n + x] = ref_next[y * b->n + x] =
					stencil_start(x, y);
		for (int i = 0; i < iters; i++) {
			double *tmp;

			for (int64_t y = 1; y < b->n - 1; y++)
				stencil_row(ref_next + y * b->n,
					    ref + (y - 1) * b->n,
					    ref + y * b->n,
					    ref + (y + 1) * b->n, b->n);
			tmp = ref;
			ref = ref_next;
			ref_next = tmp;
		}
		bad = memcmp(all, ref, bytes) != 0;
	}
	free(all);
	free(ref);
	free(ref_next);
	MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
	return bad;
}

/* ---- the segmap contender over the MPI scope ---- */

struct seg {
	int64_t n;
	int iters;
	struct agile_segmap *sm;
	struct agile_rmap *rm;
	struct agile_field *cur, *next;
};

static struct agile_extent ext2(uint64_t n0, uint64_t n1)
{
	return (struct agile_extent){ .rank = 2, .n = { n0, n1 } };
}

/* ITERS foralls, the fields swapped after each. */
static int seg_run(struct seg *s)
{
	int err = 0;

	for (int i = 0; i < s->iters && !err; i++) {
		const struct agile_forall_field ff[2] = {
			{ s->next, AGILE_ACC_WRITE },
			{ s->cur, AGILE_ACC_READ },
		};
		struct agile_field *tmp;

		err = agile_forall(s->sm, s->next, stencil_kernel, &s->n, ff, 2,
				   0, NULL);
		tmp = s->cur;
		s->cur = s->next;
		s->next = tmp;
	}
	return err;
}

static int seg_setup(struct seg *s, int size)
{
	uint64_t n = (uint64_t)s->n;
	struct agile_grid parent = { .extent = ext2(n, n),
				     .offset = { .rank = 2 } };
	struct agile_extent band = ext2(n, n / (uint64_t)size);
	struct agile_proto p = { .proto = AGILE_PROTO_BLOCK,
				 .nr_nodes = (uint32_t)size };
	/* a memory block is one row: a halo moves as one thin block */
	struct agile_levels lv = { .tile = ext2(n, 1), .block = ext2(n, 1) };
	struct agile_forall_field ff[2];
	int err;

	err = agile_rmap_tiles(&parent, &band, &p, &s->rm);
	if (!err)
		err = agile_field_create(s->sm, s->rm, &lv, sizeof(double),
					 &s->cur);
	if (!err)
		err = agile_field_create(s->sm, s->rm, &lv, sizeof(double),
					 &s->next);
	if (err)
		return err;
	ff[0] = (struct agile_forall_field){ s->cur, AGILE_ACC_WRITE };
	ff[1] = (struct agile_forall_field){ s->next, AGILE_ACC_WRITE };
	return agile_forall(s->sm, s->cur, stencil_fill_kernel, &s->n, ff, 2, 0,
			    NULL);
}

static uint64_t seg_moved(struct seg *s)
{
	struct agile_field_stats a = { 0 }, b = { 0 };

	agile_field_stats(s->cur, AGILE_SEGMAP_ALL_NODES, &a);
	agile_field_stats(s->next, AGILE_SEGMAP_ALL_NODES, &b);
	return a.bytes + b.bytes;
}

/*
 * The segmap contender: the check, the bytes, then WARMUP + REPS timed
 * runs into @ms (rank 0's: the slowest rank's times).  Collective.
 */
static void segmap_stencil(int64_t n, int iters, int warmup, int reps,
			   double *ms, int rank, int size)
{
	struct seg s = { .n = n, .iters = iters };
	size_t bytes = (size_t)(n * n) * sizeof(double);
	double *got = malloc(bytes), *ref = malloc(bytes),
	       *ref_next = malloc(bytes);
	unsigned long long mine = 0, moved = 0;
	int err, bad = 0, any;

	err = agile_segmap_mpi_create(MPI_COMM_WORLD, NULL, &s.sm);
	if (err) {
		if (rank == 0)
			printf("segmap n/a agile_segmap_mpi_create: %s\n",
			       strerror(-err));
		goto out;
	}
	err = seg_setup(&s, size);
	if (!err) {
		agile_field_stats_reset(s.cur);
		agile_field_stats_reset(s.next);
		err = seg_run(&s);
		mine = seg_moved(&s);
	}
	/* every rank checks the whole field against its own plain run */
	if (!err && (!got || !ref || !ref_next))
		err = -ENOMEM;
	if (!err)
		err = agile_field_gather(s.cur, got, bytes);
	if (!err) {
		for (int64_t y = 0; y < n; y++)
			for (int64_t x = 0; x < n; x++)
				ref[y * n + x] = ref_next[y * n + x] =
					stencil_start(x, y);
		for (int i = 0; i < iters; i++) {
			double *tmp;

			for (int64_t y = 1; y < n - 1; y++)
				stencil_row(ref_next + y * n, ref + (y - 1) * n,
					    ref + y * n, ref + (y + 1) * n, n);
			tmp = ref;
			ref = ref_next;
			ref_next = tmp;
		}
		bad = memcmp(got, ref, bytes) != 0;
	}
	any = err ? 2 : bad;
	MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	MPI_Reduce(&mine, &moved, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0,
		   MPI_COMM_WORLD);
	if (rank == 0) {
		if (any)
			printf("error segmap %s\n",
			       any == 2 ? "a rank failed" : "wrong result");
		else
			printf("segmap check ok\nsegmap moved %llu\n", moved);
	}
	for (int r = 0; !any && r < warmup + reps; r++) {
		double t0, t, slowest;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		err = seg_run(&s);
		t = (MPI_Wtime() - t0) * 1e3;
		MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0,
			   MPI_COMM_WORLD);
		if (r >= warmup)
			ms[r - warmup] = slowest;
		any = err ? 2 : 0;
		MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX,
			      MPI_COMM_WORLD);
		if (any && rank == 0)
			printf("error segmap a timed run failed\n");
	}
	if (!any && rank == 0) {
		printf("segmap times");
		for (int r = 0; r < reps; r++)
			printf(" %.6f", ms[r]);
		printf("\n");
	}
	agile_field_destroy(s.cur);
	agile_field_destroy(s.next);
	agile_rmap_destroy(s.rm);
	agile_segmap_destroy(s.sm);
out:
	fflush(stdout);
	free(got);
	free(ref);
	free(ref_next);
}

int main(int argc, char **argv)
{
	struct band b = { 0 };
	int iters, warmup, reps, bad;
	double *ms;

	int provided;

	/* at least serialized: the MPI scope (agile/segmap_mpi.h) */
	MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &b.size);
	if (argc != 5 || (b.n = atoll(argv[1])) < 3 ||
	    (iters = atoi(argv[2])) < 1 || (warmup = atoi(argv[3])) < 0 ||
	    (reps = atoi(argv[4])) < 1 || b.n % b.size || b.n / b.size < 1 ||
	    b.n > 1 << 20) {
		if (b.rank == 0)
			fprintf(stderr,
				"usage: mpirun -np P %s N ITERS WARMUP REPS (P divides N)\n",
				argv[0]);
		MPI_Finalize();
		return 2;
	}
	b.rows = b.n / b.size;
	b.first = b.rank * b.rows;
	b.cur = malloc((size_t)((b.rows + 2) * b.n) * sizeof(double));
	b.next = malloc((size_t)((b.rows + 2) * b.n) * sizeof(double));
	ms = calloc((size_t)reps, sizeof(*ms));
	bad = !b.cur || !b.next || !ms;
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	if (bad) {
		if (b.rank == 0)
			printf("error no memory\n");
		MPI_Finalize();
		return 1;
	}
	if (check(&b, iters)) {
		if (b.rank == 0)
			printf("error wrong result\n");
		MPI_Finalize();
		return 1;
	}
	if (b.rank == 0)
		printf("check ok\nhalo %lld\n",
		       (long long)(2 * (b.size - 1) * b.n * iters) *
			       (long long)sizeof(double));
	band_start(&b);
	for (int r = 0; r < warmup + reps; r++) {
		double t0, t, slowest;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++)
			band_iterate(&b);
		t = (MPI_Wtime() - t0) * 1e3;
		MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0,
			   MPI_COMM_WORLD);
		if (r >= warmup)
			ms[r - warmup] = slowest;
	}
	if (b.rank == 0) {
		printf("times");
		for (int r = 0; r < reps; r++)
			printf(" %.6f", ms[r]);
		printf("\n");
		fflush(stdout);
	}
	segmap_stencil(b.n, iters, warmup, reps, ms, b.rank, b.size);
	free(b.cur);
	free(b.next);
	free(ms);
	MPI_Finalize();
	return 0;
}
