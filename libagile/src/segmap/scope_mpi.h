/* SPDX-License-Identifier: MIT */
/*
 * scope_mpi.h - segmap's MPI scope (scope_mpi.c), in libagile-mpi only:
 * scope.h is MPI-free, so its constructor is declared here.
 */
#ifndef AGILE_SEGMAP_SCOPE_MPI_H
#define AGILE_SEGMAP_SCOPE_MPI_H

#include <mpi.h>

#include "segmap/scope.h"

/*
 * agile__segmap_scope_mpi - the scope whose node q is rank q of @comm
 * (collective over @comm, which is duplicated: the caller may free it
 * first).  0, -EINVAL (MPI not initialised, more ranks than
 * AGILE_SEGMAP_MAX_NODES, NULL @out), -ENOMEM, -EPROTO (an MPI call
 * failed), or an error of agile_coll_mpi_create.  See scope_mpi.c.
 */
int agile__segmap_scope_mpi(MPI_Comm comm, struct segmap_scope **out);

#endif /* AGILE_SEGMAP_SCOPE_MPI_H */
