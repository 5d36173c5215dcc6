// SPDX-License-Identifier: MIT
/*
 * eu-gpu-modes - AGILE_EU_POOL and AGILE_EU_POOL_GPU_ONLY: GPU EUs or an
 * error, never a silent fallback; agile_eu_run_launch refused on CPU EUs.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/gpu.h>
#include <agile/kernels.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eu/gpu_impl.h"
#include "tap.h"
#include "gputest.h"

int main(void)
{
	struct agile_kernels *reg;
	struct agile_dev *dev;
	char why[512];
	int usable, err;

	/* The tests set AGILE_EU_POOL themselves. */
	unsetenv("AGILE_EU_POOL");
	usable = agile__gpu_status(why, sizeof(why));
	tap_diag("GPU: %s%s", usable ? "" : "none usable: ", why);
	agile_kernels_create(&reg);
	agile_kernels_register_builtins(reg);
	err = open_dev(&dev);
	if (!tap_ok(!err, "open a context: %s", agile_strerror(err)))
		return tap_done();
	test_modes(dev, reg, usable);
	tap_ok(agile_dev_close(dev) == 0 && agile_kernels_destroy(reg) == 0,
	       "close the context, free the registry");
	return tap_done();
}
