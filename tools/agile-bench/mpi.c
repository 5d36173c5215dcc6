// SPDX-License-Identifier: MIT
/*
 * agile-bench-mpi - the Open MPI baseline of `agile-bench allreduce`:
 * MPI_Allreduce (float, sum) over MPI_COMM_WORLD, timed the way
 * allreduce.c times agile's process-scope allreduce, so the rows
 * compare.  agile-bench starts it through mpirun (with Open MPI's defaults,
 * and again with each forced coll_tuned_allreduce_algorithm) and reads its
 * output; it is not meant to be run by hand, though it can be:
 *
 *	mpirun -np N agile-bench-mpi WARMUP COLD_FROM BYTES:REPS...
 *
 * For each size, WARMUP untimed then REPS timed calls, each between
 * barriers; a call's time is the slowest rank's.  Buffers are private
 * (posix_memalign, first touched by the rank).  From COLD_FROM bytes up,
 * each rank rewrites its send buffer before every call (untimed, before
 * the barrier) with a value that changes from call to call, as allreduce.c
 * does.  Rank 0 prints one line per size: "BYTES ms ms ..." (every timed
 * call), or "BYTES error what".  The last call's result is checked
 * against the exact sum on every rank.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rank @rank's input of call @call: the same values as allreduce.c's. */
static float value(int rank, int call)
{
	return (float)(rank + 1 + (call & 7));
}

static void fill(float *buf, size_t count, int rank, int call)
{
	float v = value(rank, call);

	for (size_t i = 0; i < count; i++)
		buf[i] = v;
	__asm__ __volatile__("" : : "r"(buf) : "memory");
}

static int run_size(size_t bytes, size_t cold_from, int warmup, int reps,
		    int rank, int size)
{
	size_t count = bytes / sizeof(float);
	float *send = NULL, *recv = NULL;
	double *ms = calloc((size_t)reps, sizeof(*ms));
	int bad = 0, any_bad = 0, call = 0;
	float expect;

	if (!ms || posix_memalign((void **)&send, 4096, bytes ? bytes : 1) ||
	    posix_memalign((void **)&recv, 4096, bytes ? bytes : 1)) {
		bad = 1;
		goto out;
	}
	fill(send, count, rank, 0);
	memset(recv, 0, bytes);
	for (int r = 0; r < warmup + reps; r++) {
		double t0, t, slowest;

		if (bytes >= cold_from) {
			call = r;
			fill(send, count, rank, call);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM,
			      MPI_COMM_WORLD);
		t = (MPI_Wtime() - t0) * 1e3;
		MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0,
			   MPI_COMM_WORLD);
		if (r >= warmup)
			ms[r - warmup] = slowest;
	}
	expect = (float)(size * (size + 1) / 2 + size * (call & 7));
	for (size_t i = 0; i < count; i++)
		bad |= recv[i] != expect;
out:
	MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("%zu", bytes);
		if (any_bad)
			printf(" error %s", bad ? "wrong sum or no memory" :
						  "on another rank");
		else
			for (int r = 0; r < reps; r++)
				printf(" %.6f", ms[r]);
		printf("\n");
		fflush(stdout);
	}
	free(send);
	free(recv);
	free(ms);
	return any_bad;
}

int main(int argc, char **argv)
{
	int rank, size, warmup, err = 0;
	size_t cold_from = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc >= 3)
		cold_from = strtoull(argv[2], NULL, 0);
	if (argc < 4 || (warmup = atoi(argv[1])) < 0) {
		if (rank == 0)
			fprintf(stderr,
				"usage: mpirun -np N %s WARMUP COLD_FROM BYTES:REPS...\n",
				argv[0]);
		MPI_Finalize();
		return 2;
	}
	for (int i = 3; i < argc; i++) {
		char *end;
		size_t bytes = strtoull(argv[i], &end, 0);
		int reps = *end == ':' ? atoi(end + 1) : 1;

		err |= run_size(bytes, cold_from, warmup, reps < 1 ? 1 : reps,
				rank, size);
	}
	MPI_Finalize();
	return err ? 1 : 0;
}
