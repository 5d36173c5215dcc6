// SPDX-License-Identifier: MIT
/*
 * segmap-mpi-thread - agile_segmap_mpi_create refuses, on every rank
 * alike, a pool of several workers when MPI runs below
 * MPI_THREAD_SERIALIZED (the workers would make MPI calls from several
 * threads): MPI is initialised with MPI_THREAD_FUNNELED here.  A map with
 * no pool, or a pool of one worker, is made; a pool of two on rank 0 only
 * fails the call on every rank (none is left waiting in a collective).
 * Run by coll-mpi.sh (check-mpi) with 2 processes; rank 0 prints the TAP.
 */
#define _GNU_SOURCE
#include <agile/sched.h>
#include <agile/segmap_mpi.h>
#include <errno.h>
#include <mpi.h>
#include <stdio.h>

#include "tap.h"

static int world_rank;

/*
 * agile_segmap_mpi_create with a pool of @workers (0: none) on every rank,
 * or on rank 0 only (@on_all false); what this rank got.
 */
static int make(uint32_t workers, int on_all)
{
	struct agile_sched_opts o;
	struct agile_sched *pool = NULL;
	struct agile_segmap *sm = NULL;
	int err, worst;

	if (workers && (on_all || !world_rank)) {
		agile_sched_opts_init(&o);
		o.nr_workers = workers;
		err = agile_sched_create(&o, &pool);
		if (err)
			return err;
	}
	err = agile_segmap_mpi_create(MPI_COMM_WORLD, pool, &sm);
	if (!err)
		agile_segmap_destroy(sm);
	if (pool)
		agile_sched_destroy(pool);
	/* what every rank got must be the same */
	MPI_Allreduce(&err, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	return err == worst ? err : -EPROTO;
}

int main(int argc, char **argv)
{
	int provided, size;

	if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided)) {
		fprintf(stderr, "segmap-mpi-thread: MPI_Init_thread failed\n");
		return 1;
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (provided >= MPI_THREAD_SERIALIZED) {
		if (!world_rank)
			tap_skip("segmap-mpi-thread",
				 "MPI gave thread level %d for FUNNELED",
				 provided);
		MPI_Finalize();
		return 77;
	}
	int none = make(0, 1), one = make(1, 1), two = make(2, 1);
	int two_on_0 = make(2, 0);

	if (!world_rank) {
		tap_ok(none == 0, "%d ranks: no pool: %d", size, none);
		tap_ok(one == 0, "%d ranks: a pool of one worker: %d", size,
		       one);
		tap_ok(two == -EINVAL,
		       "%d ranks: pools of two workers under FUNNELED: -EINVAL (got %d)",
		       size, two);
		tap_ok(two_on_0 == -EINVAL,
		       "%d ranks: a pool of two on rank 0 only: -EINVAL on every rank (got %d)",
		       size, two_on_0);
	}
	if (MPI_Finalize())
		return 1;
	return world_rank ? 0 : tap_done();
}
