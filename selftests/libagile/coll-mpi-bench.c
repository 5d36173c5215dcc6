// SPDX-License-Identifier: MIT
/*
 * coll-mpi-bench - the machines scope's network transport, plain against
 * interleaved halving: a float-sum allreduce at 1, 4, 16 and 64 MiB with
 * one process per node (the test hook $AGILE_COLL_NODE_ID = rank), so
 * every byte goes through MPI point-to-point.  Each size and layout runs
 * $COLL_MPI_BENCH_REPS times (default 21, at least 15) after 2 warm-ups;
 * a repetition's time is the slowest member's, and rank 0 prints the
 * median and the spread (min, max) in ms.  $COLL_MPI_BENCH_MIB: one
 * of the sizes alone.
 *
 *   make -C libagile mpi-tests   (build/libagile/mpi/tests/coll-mpi-bench)
 *   mpirun -np 2 --mca btl tcp,self --mca pml ob1 .../coll-mpi-bench
 *
 * Not a test: it checks nothing but that the calls succeed.
 */
#define _GNU_SOURCE
#include <agile/coll_mpi.h>
#include <agile/error.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const size_t mib[] = { 1, 4, 16, 64 };
	const char *env = getenv("COLL_MPI_BENCH_REPS");
	const char *only = getenv("COLL_MPI_BENCH_MIB");
	int rank, reps = env ? atoi(env) : 21, rc = 0;
	char id[16];
	double *t;
	float *send, *recv;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (reps < 15)
		reps = 15;
	snprintf(id, sizeof(id), "%d", rank);
	setenv("AGILE_COLL_NODE_ID", id, 1);
	t = malloc((size_t)reps * sizeof(*t));
	send = malloc((64u << 20) + 64);
	recv = malloc((64u << 20) + 64);
	if (!t || !send || !recv) {
		fprintf(stderr, "coll-mpi-bench: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (size_t i = 0; i < (16u << 20); i++)
		send[i] = (float)(i % 13);
	if (rank == 0)
		printf("# size    layout       median ms  (min .. max), %d reps\n",
		       reps);
	for (size_t k = 0; k < sizeof(mib) / sizeof(mib[0]) && !rc; k++) {
		if (only && (size_t)atoi(only) != mib[k])
			continue;
		for (uint32_t inter = 0; inter < 2 && !rc; inter++) {
			size_t count = (mib[k] << 20) / sizeof(float);
			struct agile_coll_opts opts;
			struct agile_coll *coll;

			agile_coll_opts_init(&opts);
			opts.interleaved = inter;
			rc = agile_coll_mpi_create(MPI_COMM_WORLD, &opts,
						   &coll);
			if (rc)
				break;
			for (int r = -2; r < reps && !rc; r++) {
				double t0, dt;

				MPI_Barrier(MPI_COMM_WORLD);
				t0 = MPI_Wtime();
				rc = agile_coll_allreduce(coll, send, recv,
							  count,
							  AGILE_COLL_FLOAT,
							  AGILE_COLL_SUM);
				dt = MPI_Wtime() - t0;
				MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE,
					      MPI_MAX, MPI_COMM_WORLD);
				if (r >= 0)
					t[r] = dt;
			}
			agile_coll_destroy(coll);
			qsort(t, (size_t)reps, sizeof(*t), cmp_double);
			if (rank == 0 && !rc)
				printf("%3zu MiB  %-11s  %9.3f  (%.3f .. %.3f)\n",
				       mib[k], inter ? "interleaved" : "plain",
				       t[reps / 2] * 1e3, t[0] * 1e3,
				       t[reps - 1] * 1e3);
		}
	}
	if (rc)
		fprintf(stderr, "coll-mpi-bench: rank %d: %s\n", rank,
			agile_strerror(rc));
	free(t);
	free(send);
	free(recv);
	MPI_Finalize();
	return rc ? 1 : 0;
}
