// SPDX-License-Identifier: MIT
/*
 * segmap-mpi-scope - segmap's MPI scope (agile__segmap_scope_mpi,
 * libagile/src/segmap/scope_mpi.c) under mpirun: on MPI_COMM_WORLD, the
 * checks the processes scope passes too (scopetest.h: homes of uneven
 * sizes written by their owners and read by every rank, from several
 * threads at once; puts; agree; allreduce; 150 fields made and freed),
 * then the same on halves of the world (MPI_Comm_split by rank parity:
 * nodes are the sub-communicator's ranks), and scopes made and destroyed
 * over and over.  Run by coll-mpi.sh for each process count; rank 0
 * prints the TAP.
 */
#define _GNU_SOURCE
#include <agile/error.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "segmap/scope_mpi.h"
#include "tap.h"
#include "scopetest.h"

static int world_rank, world_size;

/*
 * One TAP line for what every rank of the world did: passed where every
 * @err is 0, else the first failing rank's @why.
 */
static void report(int err, const char *why, const char *what)
{
	char *all = world_rank ? NULL : malloc((size_t)world_size * ST_WHY);
	char line[ST_WHY];
	int worst = err, first = -1;
	int *errs = world_rank ? NULL :
				 malloc((size_t)world_size * sizeof(int));

	snprintf(line, sizeof(line), "%s", err && why[0] ? why : "");
	MPI_Allreduce(&err, &worst, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	MPI_Gather(&err, 1, MPI_INT, errs, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Gather(line, ST_WHY, MPI_CHAR, all, ST_WHY, MPI_CHAR, 0,
		   MPI_COMM_WORLD);
	if (!world_rank) {
		for (int r = 0; r < world_size && first < 0; r++)
			if (errs[r])
				first = r;
		tap_ok(!worst, "%d ranks: %s%s%s", world_size, what,
		       first < 0 ? "" : ": ",
		       first < 0 ? "" : all + (size_t)first * ST_WHY);
	}
	free(all);
	free(errs);
}

/* Every check on a scope over @comm; 0 or the first failure. */
static int checks_on(MPI_Comm comm, char *why)
{
	struct segmap_scope *sc;
	int rank, size, err;

	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &size);
	err = agile__segmap_scope_mpi(comm, &sc);
	if (err)
		return st_fail(why, err, "agile__segmap_scope_mpi");
	if (sc->kind != AGILE_NODE_RANK || sc->nr_nodes != (uint32_t)size ||
	    sc->self != (uint32_t)rank)
		err = st_fail(why, 0, "kind %d, %u nodes, self %u", sc->kind,
			      sc->nr_nodes, sc->self);
	else
		err = st_all(sc, why);
	sc->ops->destroy(sc);
	return err;
}

/* Scopes made and destroyed, a home left to destroy in each. */
static int again_and_again(char *why)
{
	uint64_t bytes[AGILE_SEGMAP_MAX_NODES];
	struct segmap_scope *sc;
	struct segmap_home *h;
	int err = 0;

	for (int k = 0; !err && k < 20; k++) {
		err = agile__segmap_scope_mpi(MPI_COMM_WORLD, &sc);
		if (err)
			return st_fail(why, err, "agile__segmap_scope_mpi %d",
				       k);
		st_sizes(sc->nr_nodes, (uint32_t)k, bytes);
		err = sc->ops->home_alloc(sc, bytes, &h);
		if (err)
			st_fail(why, err, "home_alloc %d", k);
		sc->ops->destroy(sc);
	}
	return err;
}

int main(int argc, char **argv)
{
	char why[ST_WHY] = "";
	MPI_Comm half;
	int provided, err;

	/*
	 * Serialized, not multiple: the scope serialises its MPI calls, and
	 * Open MPI 4.1's windows between machines over TCP (osc pt2pt)
	 * refuse MPI_THREAD_MULTIPLE.
	 */
	if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided)) {
		fprintf(stderr, "segmap-mpi-scope: MPI_Init_thread failed\n");
		return 1;
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &world_size);
	/* scopetest.h's getters run 4 threads: the scope serialises them. */
	if (provided < MPI_THREAD_SERIALIZED) {
		if (!world_rank)
			tap_skip("segmap-mpi-scope",
				 "MPI gives thread level %d", provided);
		MPI_Finalize();
		return world_rank ? 0 : tap_done();
	}

	err = checks_on(MPI_COMM_WORLD, why);
	report(err, why,
	       "MPI_COMM_WORLD: homes, gets, puts, agree, allreduce, "
	       "150 fields made and freed");

	why[0] = 0;
	MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_size - world_rank,
		       &half);
	err = checks_on(half, why);
	MPI_Comm_free(&half);
	report(err, why, "halves of the world, ranks reversed: the same");

	why[0] = 0;
	err = again_and_again(why);
	report(err, why, "20 scopes made and destroyed, a home left in each");

	if (MPI_Finalize())
		return 1;
	return world_rank ? 0 : tap_done();
}
