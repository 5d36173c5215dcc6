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
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stencil.h"

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

int main(int argc, char **argv)
{
	struct band b = { 0 };
	int iters, warmup, reps, bad;
	double *ms;

	MPI_Init(&argc, &argv);
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
	free(b.cur);
	free(b.next);
	free(ms);
	MPI_Finalize();
	return 0;
}
