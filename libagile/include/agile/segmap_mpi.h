/* SPDX-License-Identifier: MIT */
/*
 * agile/segmap_mpi.h - segment maps over machines: node q is rank q of
 * an MPI communicator, its home memory an MPI window; a node reading
 * another's block gets its copy with MPI_Get.  In libagile-mpi (link
 * -lagile-mpi -lagile, or `pkg-config agile-mpi`), so that libagile never
 * links libmpi.
 *
 * Thread safety: the map's collective calls (fields, forall, reduce) are
 * made by one thread per rank.  Inside a forall the pool's workers get
 * blocks concurrently: the scope serialises its own MPI calls with a
 * mutex, so MPI must be initialised with at least MPI_THREAD_SERIALIZED
 * when a pool runs the kernels, and with MPI_THREAD_MULTIPLE when the
 * application makes MPI calls of its own from other threads meanwhile.
 * Prefer MPI_THREAD_SERIALIZED: Open MPI 4.1 cannot make the windows
 * between machines that talk TCP under MPI_THREAD_MULTIPLE (its osc pt2pt
 * refuses it), and the map's first field then fails with -EPROTO.  Over
 * its tcp btl, Open MPI 4.1 also needs `mpirun --mca osc ^rdma` (osc rdma,
 * its first choice, cannot make those windows at all: -EPROTO again).
 */
#ifndef AGILE_SEGMAP_MPI_H
#define AGILE_SEGMAP_MPI_H

#include <mpi.h>

#include <agile/segmap.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * agile_segmap_mpi_create - a segment map over the ranks of @comm
 * @comm: every rank of it calls this, collectively; duplicated, so the
 *        caller may free @comm before the map
 * @pool: runs this rank's kernels (NULL: the calling thread)
 * @out:  receives the map
 *
 * Node q is rank q of @comm.  Its allreduces go through an
 * agile_coll_mpi_create communicator of the same ranks.  Destroy the map
 * before MPI_Finalize.  An MPI error is -EPROTO; MPI itself decides what a
 * failed rank does to the others (Open MPI: ends the job).
 *
 * Thread safety: collective over @comm; see the top for MPI's thread
 * level.
 *
 * Return: 0, -EINVAL (MPI not initialised, more than
 * AGILE_SEGMAP_MAX_NODES ranks, @out NULL, or, on every rank, a @pool of
 * more than one worker on some rank while MPI runs below
 * MPI_THREAD_SERIALIZED), -ENOMEM, -EPROTO, or an error of
 * agile_coll_mpi_create.
 */
int agile_segmap_mpi_create(MPI_Comm comm, struct agile_sched *pool,
			    struct agile_segmap **out);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_SEGMAP_MPI_H */
