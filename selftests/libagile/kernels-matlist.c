// SPDX-License-Identifier: MIT
/*
 * kernels-matlist - the seed-004 transformation: kernels written as
 * barrier-separated phases run on the CPU lane loops; the seed's
 * small-matrix-list multiply against a plain reference, and without the
 * barrier the overwrite shows.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/kernels.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kerneltest.h"
#include "tap.h"

/* The same without the barrier: lanes overwrite what later lanes read. */
static AGILE_LANE_FN int mm_unsafe(uint32_t lane, uint32_t nr_lanes,
				   const __u64 *args, void *state, void *shared)
{
	int err = mm_multiply(lane, nr_lanes, args, state, shared);

	return err ? err : mm_store(lane, nr_lanes, args, state, shared);
}

static const agile_phase_fn mm_unsafe_phases[] = { mm_unsafe };

static void test_matrices(void)
{
	static double a[NR_MATRICES * DIM * DIM], ref[NR_MATRICES * DIM * DIM];
	static double b[DIM * DIM];
	struct agile_kernel unsafe = mm_kernel;
	struct agile_lane_result res;
	int bad = 0, err = 0, differs = 0;

	fill(a, NR_MATRICES * DIM * DIM, 1);
	fill(b, DIM * DIM, 2);
	memcpy(ref, a, sizeof(a));
	for (int m = 0; m < NR_MATRICES; m++)
		reference_mm(ref + m * DIM * DIM, b);
	for (int m = 0; m < NR_MATRICES && !err; m++) {
		__u64 args[3] = { (uintptr_t)a, (uintptr_t)b, (__u64)m };

		err = run(&mm_kernel, DIM * DIM, args, &res);
		bad += res.status != ~0ULL || res.error;
	}
	tap_ok(!err && !bad && !memcmp(a, ref, sizeof(a)),
	       "matrix-list multiply, lane loops around 2 phases: equals the reference");

	unsafe.nr_phases = 1;
	unsafe.phases = mm_unsafe_phases;
	fill(a, NR_MATRICES * DIM * DIM, 1);
	for (int m = 0; m < NR_MATRICES; m++) {
		__u64 args[3] = { (uintptr_t)a, (uintptr_t)b, (__u64)m };

		run(&unsafe, DIM * DIM, args, &res);
	}
	differs = memcmp(a, ref, sizeof(a)) != 0;
	tap_ok(differs, "without the barrier the in-place result is wrong");
}

int main(void)
{
	test_matrices();
	return tap_done();
}
