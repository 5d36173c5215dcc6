// SPDX-License-Identifier: MIT
/*
 * kernels-axpy - axpy on the CPU lane loops, with lanes cutting an uneven
 * range.
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

static void test_axpy(void)
{
	enum { N = 1000 };
	static double x[N], y[N], want[N];
	struct agile_kernel k = { .name = "axpy",
				  .nr_phases = 1,
				  .phases = axpy_phases };
	union {
		double d;
		__u64 bits;
	} a = { .d = 2.5 };
	struct agile_lane_result res;
	__u64 args[4] = { a.bits, (uintptr_t)x, (uintptr_t)y, N };
	int ok = 1;

	for (int lanes = 1; lanes <= 64; lanes += 21) {
		for (int i = 0; i < N; i++) {
			x[i] = i;
			y[i] = 1000 - i;
			want[i] = 2.5 * i + 1000 - i;
		}
		ok &= !run(&k, (uint32_t)lanes, args, &res) &&
		      res.status == (lanes == 64 ? ~0ULL : (1ULL << lanes) - 1);
		ok &= !memcmp(y, want, sizeof(y));
	}
	tap_ok(ok, "axpy over 1000 elements on 1, 22, 43 and 64 lanes");
}

int main(void)
{
	test_axpy();
	return tap_done();
}
