// SPDX-License-Identifier: MIT
/*
 * eu-gpu - GPU execution units run tasks.  Where a GPU pool starts:
 * axpy and matrix-list tasks through the doorbells to the persistent
 * kernel, the same through a plain launch, an opcode the GPU lacks
 * (-AGILE_E_OPCODE), DISCONNECT; skipped elsewhere, with the reason.
 *
 * Without a GPU the GPU part still runs, twice, in child processes whose
 * runtime is the stand-in of gpu-mock.c (CPU threads for work-groups): as
 * libamdhip64.so.5, then as libcuda.so.1.  That checks libagile's host
 * side - registration flags, device addresses, the code object and kernel
 * names, co-residency, the launch, DISCONNECT, unregistering everything -
 * but not the GPU code.  Neither a GPU nor the stand-in built: exit 77.
 *
 * eu-gpu --gpu-status (for make check-gpu) prints one line and exits 0
 * when GPU EUs start, 77 when there is no usable GPU, 1 when there is one
 * and GPU EUs do not start.
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

/* eu-gpu --mock LIB: the GPU part against gpu-mock.c, TAP on stdout. */
static int mock_child(const char *lib)
{
	struct agile_kernels *reg;
	struct agile_dev *dev;
	int err;

	agile_kernels_create(&reg);
	agile_kernels_register_builtins(reg);
	err = open_dev(&dev);
	if (!tap_ok(!err, "open a context: %s", agile_strerror(err)))
		return tap_done();
	tap_ok(agile_gpu_available() == 1, "the stand-in %s counts a device",
	       lib);
	test_modes(dev, reg, 1);
	test_gpu(dev, reg, 1);
	tap_ok(mock_call(lib, "mock_registered", 0) == 0 &&
		       mock_call(lib, "mock_hangs", 0) == 0,
	       "nothing left registered with the runtime, no unregister hung");
	agile_dev_close(dev);
	agile_kernels_destroy(reg);
	return tap_done();
}

static void test_mock(void)
{
	for (int m = 0; m < (int)(sizeof(mocks) / sizeof(mocks[0])); m++)
		mock_run_one(m, 11);
}
#else
static void test_mock(void)
{
	tap_skip("GPU EUs on a stand-in runtime",
		 "a static build loads no runtime");
}
#endif

/* --gpu-status: what make check-gpu needs to know. */
static int gpu_status(void)
{
	struct agile_eu_pool_info info;
	struct agile_kernels *reg;
	struct agile_eu_pool *pool;
	struct agile_dev *dev;
	char why[512];
	int err;

	if (!agile__gpu_status(why, sizeof(why))) {
		printf("%s\n", why);
		return 77;
	}
	agile_kernels_create(&reg);
	agile_kernels_register_builtins(reg);
	err = open_dev(&dev);
	if (err) {
		printf("open a context: %s\n", agile_strerror(err));
		return 1;
	}
	setenv("AGILE_QUIET", "1", 1);
	unsetenv("AGILE_EU_POOL");
	err = make_pool(dev, reg, AGILE_EU_POOL_AUTO, &pool);
	if (err) {
		printf("pool: %s\n", agile_strerror(err));
		return 1;
	}
	agile_eu_pool_info(pool, &info);
	if (info.kind == AGILE_EU_KIND_GPU)
		printf("GPU EUs start\n");
	else
		printf("%s\n", info.reason);
	agile_eu_pool_destroy(pool);
	agile_dev_close(dev);
	agile_kernels_destroy(reg);
	return info.kind == AGILE_EU_KIND_GPU ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *mode = getenv("AGILE_EU_POOL");
	int required = mode && !strcmp(mode, "gpu");
	struct agile_kernels *reg;
	struct agile_dev *dev;
	char why[512];
	int err;

	if (argc > 1 && !strcmp(argv[1], "--gpu-status"))
		return gpu_status();
#ifndef AGILE_NO_DLOPEN
	if (argc > 2 && !strcmp(argv[1], "--mock"))
		return mock_child(argv[2]);
#endif
	unsetenv("AGILE_EU_POOL");
	if (!agile__gpu_status(why, sizeof(why))) {
		tap_skip("GPU EUs run tasks", "no usable GPU: %s", why);
		test_mock();
		return tap_done();
	}
	tap_diag("GPU: %s", why);
	agile_kernels_create(&reg);
	agile_kernels_register_builtins(reg);
	err = open_dev(&dev);
	if (!tap_ok(!err, "open a context: %s", agile_strerror(err)))
		return tap_done();
	test_gpu(dev, reg, required);
	tap_ok(agile_dev_close(dev) == 0 && agile_kernels_destroy(reg) == 0,
	       "close the context, free the registry");
	return tap_done();
}
