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
#include <sys/wait.h>
#ifndef AGILE_NO_DLOPEN
#include <dlfcn.h>
#endif

#include "eu/gpu_impl.h"
#include "tap.h"
#include "gputest.h"

#ifndef AGILE_NO_DLOPEN
#define MOCK_DIR AGILE_GPU_BUILD_DIR "/mock"

static const struct {
	const char *api, *lib, *code;
} mocks[] = {
	{ "hip", "libamdhip64.so.5", AGILE_GPU_CODE_HIP },
	{ "cuda", "libcuda.so.1", AGILE_GPU_CODE_CUDA },
};

/* The stand-in runtime's count of registrations still in place. */
static int mock_registered(const char *name)
{
	void *lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
	int (*fn)(void) = lib ? (int (*)(void))dlsym(lib, "mock_registered") :
				NULL;

	return fn ? fn() : -1;
}

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
	tap_ok(mock_registered(lib) == 0,
	       "nothing left registered with the runtime");
	agile_dev_close(dev);
	agile_kernels_destroy(reg);
	return tap_done();
}

/* Runs eu-gpu --mock with stand-in @m first on the library path. */
static void test_mock_one(int m)
{
	char dir[1024], lib[2048], code[2048], line[1024];
	int fds[2], status, bad = 0, n = 0;
	FILE *out;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/%s", MOCK_DIR, mocks[m].api);
	snprintf(lib, sizeof(lib), "%s/%s", dir, mocks[m].lib);
	snprintf(code, sizeof(code), "%s/%s", AGILE_GPU_BUILD_DIR,
		 mocks[m].code);
	if (access(lib, R_OK) || access(code, R_OK)) {
		tap_skip("GPU EUs on a stand-in runtime",
			 "%s or %s not built (make -C libagile gpu; no "
			 "compiler?)",
			 lib, code);
		return;
	}
	if (pipe(fds)) {
		tap_ok(0, "pipe");
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		setenv("LD_LIBRARY_PATH", dir, 1);
		unsetenv("AGILE_GPU_CODE_DIR");
		execl("/proc/self/exe", "eu-gpu", "--mock", mocks[m].lib,
		      (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	out = fdopen(fds[0], "r");
	while (out && fgets(line, sizeof(line), out)) {
		line[strcspn(line, "\n")] = '\0';
		tap_diag("%s mock: %s", mocks[m].api, line);
		bad += !strncmp(line, "not ok", 6);
		n += !strncmp(line, "ok", 2);
	}
	if (out)
		fclose(out);
	waitpid(pid, &status, 0);
	tap_ok(pid > 0 && WIFEXITED(status) && !WEXITSTATUS(status) && !bad &&
		       n > 10,
	       "GPU EUs on the stand-in %s runtime: %d passed, %d failed",
	       mocks[m].lib, n, bad);
}

static void test_mock(void)
{
	for (int m = 0; m < (int)(sizeof(mocks) / sizeof(mocks[0])); m++)
		test_mock_one(m);
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
