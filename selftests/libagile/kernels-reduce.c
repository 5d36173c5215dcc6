// SPDX-License-Identifier: MIT
/*
 * kernels-reduce - a tree reduction whose barrier sits in a uniform loop
 * (the next() hook), on the CPU lane loops.
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

/* ---- a tree reduction: the barrier inside a uniform loop ---- */

struct reduce_shared {
	uint32_t stride; /* uniform: written only by the convergent next() */
	uint32_t pad;
	int64_t partial[AGILE_MAX_LANES];
};

/* args: values (int64_t per lane), the result */
static AGILE_LANE_FN int reduce_load(uint32_t lane, uint32_t nr_lanes,
				     const __u64 *args, void *state,
				     void *shared)
{
	struct reduce_shared *sh = shared;

	(void)nr_lanes;
	(void)state;
	sh->partial[lane] = ((const int64_t *)(uintptr_t)args[0])[lane];
	return 0;
}

static AGILE_LANE_FN int reduce_step(uint32_t lane, uint32_t nr_lanes,
				     const __u64 *args, void *state,
				     void *shared)
{
	struct reduce_shared *sh = shared;

	(void)nr_lanes;
	(void)args;
	(void)state;
	if (lane < sh->stride && lane + sh->stride < nr_lanes)
		sh->partial[lane] += sh->partial[lane + sh->stride];
	return 0;
}

static AGILE_LANE_FN int reduce_store(uint32_t lane, uint32_t nr_lanes,
				      const __u64 *args, void *state,
				      void *shared)
{
	struct reduce_shared *sh = shared;

	(void)nr_lanes;
	(void)state;
	if (!lane)
		*(int64_t *)(uintptr_t)args[1] = sh->partial[0];
	return 0;
}

/*
 * for (stride = half; stride > 0; stride /= 2) { step; barrier; }
 * as jumps between phases: the loop control is convergent code.
 */
static AGILE_LANE_FN uint32_t reduce_next(uint32_t done, uint32_t nr_lanes,
					  const __u64 *args, void *shared)
{
	struct reduce_shared *sh = shared;
	uint32_t half = 1;

	(void)args;
	switch (done) {
	case 0:
		while (half < nr_lanes)
			half *= 2;
		sh->stride = half / 2;
		return sh->stride ? 1 : 2;
	case 1:
		sh->stride /= 2;
		return sh->stride ? 1 : 2;
	}
	return AGILE_KERNEL_DONE;
}

static const agile_phase_fn reduce_phases[] = { reduce_load, reduce_step,
						reduce_store };

static void test_reduce(void)
{
	struct agile_kernel k = {
		.name = "reduce",
		.nr_phases = 3,
		.phases = reduce_phases,
		.next = reduce_next,
		.shared_size = sizeof(struct reduce_shared),
	};
	struct agile_lane_result res;
	int64_t values[64], sum = 0, got = -1;
	__u64 args[2] = { (uintptr_t)values, (uintptr_t)&got };
	int ok = 1;

	for (int i = 0; i < 64; i++)
		values[i] = (int64_t)i * i - 7;
	for (uint32_t lanes = 1; lanes <= 64; lanes++) {
		sum += values[lanes - 1];
		got = -1;
		ok &= !run(&k, lanes, args, &res) && !res.error && got == sum;
	}
	tap_ok(ok, "tree reduction, barrier in a uniform loop: 1..64 lanes");
}

int main(void)
{
	test_reduce();
	return tap_done();
}
