/* SPDX-License-Identifier: MIT */
/*
 * agile/agile.h - all of libagile's public headers, bottom layer first
 *
 *	version  AGILE_VERSION_MAJOR/MINOR, AGILE_CHECK_VERSION, agile_version_*
 *	error    agile_strerror and the library's own error codes
 *	dev      doorbells and task registers: /dev/agile or memfd + futex
 *	kernels  phase-structured kernels and their opcode registry
 *	launch   grid launches of retargeted CUDA/HIP kernels (agile-retarget)
 *	eu       CPU execution units running kernels from their slots
 *	sched    the cooperative work-stealing scheduler
 *	offload  the scheduler's leaves on execution units
 *	coll     collective reduce among threads and processes (machines:
 *	         agile/coll_mpi.h, in libagile-mpi)
 *	segmap   segmented fields over nodes and their resource maps
 *	runtime  devices, contexts, buffers and a queue with events (seed 003)
 */
#ifndef AGILE_AGILE_H
#define AGILE_AGILE_H

#include <agile/version.h>
#include <agile/error.h>
#include <agile/dev.h>
#include <agile/kernels.h>
#include <agile/launch.h>
#include <agile/eu.h>
#include <agile/gpu.h>
#include <agile/sched.h>
#include <agile/offload.h>
#include <agile/coll.h>
#include <agile/segmap.h>
#include <agile/runtime.h>

#endif /* AGILE_AGILE_H */
