// SPDX-License-Identifier: MIT
/*
 * eu-gpu-memory - memory stays registered for the life of a GPU pool:
 * agile_eu_pool_unmap while the persistent kernel runs unregisters
 * nothing (on ROCm 6 the unregister would wait for that kernel, which
 * never ends); the same buffer maps again to the same address; destroy
 * unregisters everything after the kernel has ended.
 *
 * Where a GPU is usable it runs there (a regression hangs on ROCm 6,
 * which check-gpu's timeout reports); elsewhere against the stand-in
 * runtime (gpu-mock.c, whose unregister blocks while a kernel runs and
 * counts a hang past a bound), as HIP and as CUDA, which also counts the
 * registrations.  Skipped in the static build.
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

#ifndef AGILE_NO_DLOPEN
#include "gpumock.h"

/* A stand-in's count, or @real on a real runtime (@lib NULL). */
static int count(const char *lib, const char *hook, int real)
{
	return lib ? mock_call(lib, hook, 0) : real;
}

/* axpy with a = 1 over @n doubles on EU 0: y += x. */
static int axpy(struct agile_eu_pool *pool, struct agile_kernels *reg,
		uint64_t dx, uint64_t dy, uint64_t n)
{
	const struct agile_kernel *k;
	struct agile_task_reg *tr;
	uint32_t lane;

	agile_kernels_find(reg, AGILE_KERNEL_AXPY, &k);
	if (agile_eu_task_reg(pool, 0, &tr, NULL))
		return -EBUSY;
	tr->opcode = k->opcode;
	tr->nr_parts = AGILE_MAX_LANES;
	tr->flags = 0;
	tr->args[0] = double_bits(1.0);
	tr->args[1] = dx;
	tr->args[2] = dy;
	tr->args[3] = n;
	return agile_eu_call(pool, 0, WAIT_NS, &lane);
}

static int child(const char *lib)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t n = page / sizeof(double);
	struct agile_eu_pool_info info;
	struct agile_kernels *reg;
	struct agile_eu_pool *pool;
	struct agile_dev *dev;
	double *x = aligned_alloc(page, page), *y = aligned_alloc(page, page);
	uint64_t dx, dy, dy2;
	int err, regs;

	agile_kernels_create(&reg);
	agile_kernels_register_builtins(reg);
	err = open_dev(&dev);
	if (!tap_ok(!err && x && y, "open a context: %s", agile_strerror(err)))
		return tap_done();
	err = make_pool(dev, reg, AGILE_EU_POOL_GPU_ONLY, &pool);
	if (!tap_ok(!err && !agile_eu_pool_info(pool, &info) &&
			    info.kind == AGILE_EU_KIND_GPU,
		    "GPU EUs on %s: %s", lib ? lib : "the GPU",
		    agile_strerror(err)))
		return tap_done();
	for (size_t i = 0; i < n; i++) {
		x[i] = 1;
		y[i] = 0;
	}
	regs = count(lib, "mock_registered", 0);
	err = agile_eu_pool_map(pool, x, page, &dx);
	if (!err)
		err = agile_eu_pool_map(pool, y, page, &dy);
	if (!err)
		err = axpy(pool, reg, dx, dy, n);
	tap_ok(!err && y[0] == 1 && y[n - 1] == 1, "map, run axpy: %s",
	       agile_strerror(err));

	/* The kernel runs: an unregister now would never return on ROCm 6. */
	err = agile_eu_pool_unmap(pool, y);
	tap_ok(!err && count(lib, "mock_hangs", 0) == 0,
	       "unmap while the kernel runs: %s, no unregister blocked (%d)",
	       agile_strerror(err), count(lib, "mock_hangs", 0));
	tap_ok(count(lib, "mock_registered", regs + 2) == regs + 2,
	       "the unmapped buffer stays registered until destroy");
	tap_ok(agile_eu_pool_unmap(pool, y) == -ENOENT,
	       "a second unmap: -ENOENT");
	tap_ok(agile_eu_pool_map(pool, y, 2 * page, &dy2) == -EBUSY,
	       "mapping it again with another size: -EBUSY");
	err = agile_eu_pool_map(pool, y, page, &dy2);
	tap_ok(!err && dy2 == dy, "mapping it again: the same address: %s",
	       agile_strerror(err));
	tap_ok(agile_eu_pool_map(pool, y, page, &dy2) == -EEXIST,
	       "and once more: -EEXIST");
	err = axpy(pool, reg, dx, dy2, n);
	tap_ok(!err && y[0] == 2 && y[n - 1] == 2, "axpy through it: %s",
	       agile_strerror(err));
	tap_ok(!agile_eu_pool_unmap(pool, x) && !agile_eu_pool_unmap(pool, y),
	       "unmap both while the kernel runs");

	err = agile_eu_pool_destroy(pool);
	tap_ok(!err && count(lib, "mock_registered", 0) == 0 &&
		       count(lib, "mock_hangs", 0) == 0 &&
		       count(lib, "mock_running", 0) == 0,
	       "destroy: the kernel ended first, then everything was "
	       "unregistered, none of it blocked: %s",
	       agile_strerror(err));
	agile_dev_close(dev);
	agile_kernels_destroy(reg);
	free(x);
	free(y);
	return tap_done();
}
#endif

int main(int argc, char **argv)
{
	char why[512];

#ifdef AGILE_NO_DLOPEN
	(void)argc;
	(void)argv;
	(void)why;
	tap_skip("GPU pool memory on a stand-in runtime",
		 "a static build loads no runtime");
	return tap_done();
#else
	if (argc > 2)
		return mock_main(argc, argv, child, 11);
	if (agile__gpu_status(why, sizeof(why))) {
		tap_diag("GPU: %s", why);
		return child(NULL);
	}
	return mock_main(argc, argv, child, 11);
#endif
}
