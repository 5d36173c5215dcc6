// SPDX-License-Identifier: MIT
/*
 * segmap-mpi-seed - seed 000's worked example (segmap-seed-example's
 * checks, segmapseed.h) with each node an MPI rank: agile_segmap_mpi_create
 * on MPI_COMM_WORLD, under mpirun (coll-mpi.sh).  With 4 ranks: Q = 4 row
 * block-cyclic, kernels on the caller and on a pool of 2 workers per
 * rank; with 3: Q = 3 row block-block and cyclic.  Per node: exactly its
 * owner-copies of B (MPI_Get from the home rank's window), none twice, a
 * second forall and C = A + B moving nothing, C gathered on every rank
 * equal to the reference, the field's reduce equal to the reference sum.
 * Other rank counts: a SKIP (exit 77).  A rank that dies is MPI's
 * business (Open MPI ends the job): no killed case here
 * (segmap-procs-seed has it).  Rank 0 prints the TAP.
 */
#define _GNU_SOURCE
#include <agile/segmap_mpi.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "segmaptest.h"
#include "segmapseed.h"

static int world_rank, world_size;

/* One TAP line per check for what every rank found. */
static void report(const struct seed_layout *lay, const char *on,
		   const struct seed_node *sn)
{
	char *all = world_rank ? NULL : malloc((size_t)world_size * SEED_WHY);
	uint32_t *failed = world_rank ?
				   NULL :
				   calloc((size_t)world_size, sizeof(uint32_t));

	for (uint32_t k = 0; k < SEED_NR_CHECKS; k++) {
		int first = -1;

		MPI_Gather(&sn->failed, 1, MPI_UINT32_T, failed, 1,
			   MPI_UINT32_T, 0, MPI_COMM_WORLD);
		MPI_Gather(sn->why[k], SEED_WHY, MPI_CHAR, all, SEED_WHY,
			   MPI_CHAR, 0, MPI_COMM_WORLD);
		if (world_rank || (k == SEED_SEG4 && !lay->segment_4))
			continue;
		for (int r = 0; r < world_size && first < 0; r++)
			if (failed[r] & 1u << k)
				first = r;
		tap_ok(first < 0, "%s: %s%s%s", on, seed_check_name(k),
		       first < 0 ? "" : ": ",
		       first < 0 ? "" : all + (size_t)first * SEED_WHY);
	}
	free(all);
	free(failed);
}

static void run_case(const struct seed_layout *lay, uint32_t workers)
{
	struct agile_sched *pool = NULL;
	struct agile_segmap *sm;
	struct seed_node sn;
	char on[128];
	int err;

	snprintf(on, sizeof(on), "%s, %d ranks, %s", lay->name, world_size,
		 workers ? "a pool of 2 workers each" : "on the caller");
	if (workers) {
		struct agile_sched_opts o;

		agile_sched_opts_init(&o);
		o.nr_workers = workers;
		o.flags = AGILE_SCHED_QUIET | AGILE_SCHED_NO_PIN;
		if (agile_sched_create(&o, &pool))
			pool = NULL;
	}
	err = agile_segmap_mpi_create(MPI_COMM_WORLD, pool, &sm);
	if (err) {
		memset(&sn, 0, sizeof(sn));
		sn.self = (uint32_t)world_rank;
		seed_ok(&sn, SEED_SETUP, false, "agile_segmap_mpi_create: %d",
			err);
	} else if (agile_segmap_kind(sm) != AGILE_NODE_RANK) {
		agile_segmap_destroy(sm);
		memset(&sn, 0, sizeof(sn));
		sn.self = (uint32_t)world_rank;
		seed_ok(&sn, SEED_SETUP, false, "kind %d",
			agile_segmap_kind(sm));
	} else {
		seed_run(sm, lay, &sn);
	}
	if (!err && sn.self != (uint32_t)world_rank)
		seed_ok(&sn, SEED_SETUP, false, "node %u is rank %d", sn.self,
			world_rank);
	report(lay, on, &sn);
	if (pool)
		agile_sched_destroy(pool);
}

int main(int argc, char **argv)
{
	int provided;

	/*
	 * Serialized, not multiple: the scope serialises its MPI calls from
	 * the pool's workers (agile/segmap_mpi.h).
	 */
	if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided)) {
		fprintf(stderr, "segmap-mpi-seed: MPI_Init_thread failed\n");
		return 1;
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &world_size);
	if (provided < MPI_THREAD_SERIALIZED ||
	    (world_size != 3 && world_size != 4)) {
		if (!world_rank)
			tap_skip("segmap-mpi-seed",
				 "%d ranks (3 or 4 wanted), thread level %d",
				 world_size, provided);
		MPI_Finalize();
		return 77;
	}
	if (world_size == 4) {
		run_case(&seed_q4_cyclic, 0);
		run_case(&seed_q4_cyclic, 2);
	} else {
		run_case(&seed_q3_row_block, 0);
		run_case(&seed_q3_cyclic, 2);
	}
	if (MPI_Finalize())
		return 1;
	return world_rank ? 0 : tap_done();
}
