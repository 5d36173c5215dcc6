// SPDX-License-Identifier: MIT
/*
 * agile-bench-mpi - the Open MPI baseline of `agile-bench allreduce`:
 * MPI_Allreduce (float, sum) over MPI_COMM_WORLD, timed the way
 * allreduce.c times agile's process-scope allreduce, so the two rows
 * compare.  agile-bench starts it through mpirun and reads its output;
 * it is not meant to be run by hand, though it can be:
 *
 *	mpirun -np N agile-bench-mpi [-r] WARMUP BYTES:REPS...
 *
 * For each size, WARMUP untimed then REPS timed calls, each between
 * barriers; a call's time is the slowest rank's.  With -r, each rank
 * rewrites its send buffer with new values before every call (untimed:
 * cold data, as allreduce.c does by default).  Rank 0 prints one line
 * per size: "BYTES ms ms ..." (every timed call), or "BYTES error what".
 * The last call's result is checked.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* allreduce.c's ar_value and ar_expect: the same values. */
static void fill(float *send, size_t count, int rank, int r)
{
	float v = (float)(rank + 1 + (r & 3));

	for (size_t i = 0; i < count; i++)
		send[i] = v;
}

static int run_size(size_t bytes, int warmup, int reps, int rank, int size,
		    int rewrite)
{
	size_t count = bytes / sizeof(float);
	float *send = NULL, *recv = NULL;
	double *ms = calloc((size_t)reps, sizeof(*ms));
	int bad = 0, any_bad = 0, r = 0;
	float expect;

	/* Page-aligned and touched before timing, as allreduce.c's are. */
	if (!ms || posix_memalign((void **)&send, 4096, bytes ? bytes : 1) ||
	    posix_memalign((void **)&recv, 4096, bytes ? bytes : 1)) {
		bad = 1;
		goto out;
	}
	fill(send, count, rank, 0);
	memset(recv, 0, bytes);
	for (r = 0; r < warmup + reps; r++) {
		double t0, t, slowest;

		if (rewrite)
			fill(send, count, rank, r);
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
	r = rewrite ? r - 1 : 0;
	expect = (float)size * (float)(size + 1) / 2 + (float)size * (r & 3);
	for (size_t i = 0; i < count; i++)
		bad |= recv[i] != expect;
out:
	MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("%zu", bytes);
		if (any_bad)
			printf(" error %s", bad ? "wrong result or no memory" :
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
	int rank, size, warmup, err = 0, rewrite = 0, first = 1;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc > 1 && !strcmp(argv[1], "-r")) {
		rewrite = 1;
		first = 2;
	}
	if (argc < first + 2 || (warmup = atoi(argv[first])) < 0) {
		if (rank == 0)
			fprintf(stderr,
				"usage: mpirun -np N %s [-r] WARMUP BYTES:REPS...\n",
				argv[0]);
		MPI_Finalize();
		return 2;
	}
	for (int i = first + 1; i < argc; i++) {
		char *end;
		size_t bytes = strtoull(argv[i], &end, 0);
		int reps = *end == ':' ? atoi(end + 1) : 1;

		err |= run_size(bytes, warmup, reps < 1 ? 1 : reps, rank, size,
				rewrite);
	}
	MPI_Finalize();
	return err ? 1 : 0;
}
