// SPDX-License-Identifier: MIT
/*
 * kernels-failures - failing lanes: the first error of a phase stops the
 * kernel after that phase, a positive return and a next() that jumps out
 * are refused, and so are bad lane counts.
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

/* ---- lanes that fail ---- */

/* args: counter per lane and phase [lane * 3 + phase], failing lane, phase */
static AGILE_LANE_FN int fail_phase(uint32_t lane, uint32_t phase,
				    const __u64 *args)
{
	uint32_t *ran = (uint32_t *)(uintptr_t)args[0];

	ran[lane * 3 + phase]++;
	return lane == args[1] && phase == args[2] ? -EXDEV : 0;
}

static int fail0(uint32_t lane, uint32_t n, const __u64 *args, void *st,
		 void *sh)
{
	(void)n;
	(void)st;
	(void)sh;
	return fail_phase(lane, 0, args);
}

static int fail1(uint32_t lane, uint32_t n, const __u64 *args, void *st,
		 void *sh)
{
	(void)n;
	(void)st;
	(void)sh;
	return fail_phase(lane, 1, args);
}

static int fail2(uint32_t lane, uint32_t n, const __u64 *args, void *st,
		 void *sh)
{
	(void)n;
	(void)st;
	(void)sh;
	return fail_phase(lane, 2, args);
}

static int positive(uint32_t lane, uint32_t n, const __u64 *args, void *st,
		    void *sh)
{
	(void)n;
	(void)args;
	(void)st;
	(void)sh;
	return lane == 2 ? 5 : 0;
}

static uint32_t jump_away(uint32_t done, uint32_t n, const __u64 *args,
			  void *sh)
{
	(void)done;
	(void)n;
	(void)args;
	(void)sh;
	return 17;
}

static const agile_phase_fn fail_phases[] = { fail0, fail1, fail2 };
static const agile_phase_fn positive_phases[] = { positive };

static void test_failures(void)
{
	struct agile_kernel k = { .name = "fail",
				  .nr_phases = 3,
				  .phases = fail_phases };
	struct agile_lane_result res;
	uint32_t ran[16 * 3] = { 0 };
	__u64 args[3] = { (uintptr_t)ran, 5, 1 };
	int ok;

	ok = !run(&k, 16, args, &res);
	tap_ok(ok && res.error == -EXDEV && res.error_lane == 5 &&
		       res.status == (0xffffULL & ~(1ULL << 5)),
	       "lane 5 fails in phase 1: error %d, lane %u, status 0x%llx",
	       res.error, res.error_lane, (unsigned long long)res.status);
	tap_ok(ran[5 * 3 + 0] == 1 && ran[5 * 3 + 1] == 1 &&
		       ran[5 * 3 + 2] == 0 && ran[4 * 3 + 2] == 1 &&
		       ran[6 * 3 + 2] == 1,
	       "a failed lane runs no further phase; the others go on");

	k.nr_phases = 1;
	k.phases = positive_phases;
	tap_ok(!run(&k, 4, args, &res) && res.error == -EPROTO &&
		       res.error_lane == 2 && res.status == 0xb,
	       "a positive return fails the lane with -EPROTO");

	k.phases = fail_phases;
	k.next = jump_away;
	args[1] = 99;
	tap_ok(!run(&k, 4, args, &res) && res.error == -EINVAL &&
		       res.status == 0,
	       "next() jumping past the phases fails every lane: -EINVAL");
	k.next = NULL;
	k.max_lanes = 8;
	tap_ok(run(&k, 9, args, &res) == -EINVAL &&
		       run(&k, 0, args, &res) == -EINVAL &&
		       agile_kernels_run(&mm_kernel, 4, args, NULL, &res) ==
			       -EINVAL,
	       "too many lanes, no lane, no scratch: -EINVAL, nothing runs");
}

int main(void)
{
	test_failures();
	return tap_done();
}
