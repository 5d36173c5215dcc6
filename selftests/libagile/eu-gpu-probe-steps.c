// SPDX-License-Identifier: MIT
/*
 * eu-gpu-probe-steps - the GPU probe finds the runtimes by driver API and
 * soname family, and the reason for every fallback names the step that
 * failed.  Each case runs this program again (--status) with the
 * stand-in runtime of gpu-mock.c linked under one library name into a
 * fresh folder, found through LD_LIBRARY_PATH or $ROCM_PATH, and one
 * failure asked of it by $GPU_MOCK_PROBE; the child prints
 * agile__gpu_status's line.  Cases:
 *  - a CUDA 12 driver (libcuda.so.1) beside a CUDA 13 libcudart.so.13
 *    that refuses it (error 35): the GPU is usable all the same;
 *  - libcuda missing, cuInit failing, no device, device 0 of an
 *    architecture no code object covers: each reason names the library,
 *    the call, the error or the architecture;
 *  - HIP as libamdhip64.so.6 in $ROCM_PATH/lib and as .so.7 on the
 *    library path; hipInit failing, no device;
 * and which code runs on which architecture (SASS within a major, PTX
 * for newer GPUs, AMD ISAs exactly; gfx942's name from the KFD topology).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "eu/gpu_impl.h"
#include "eu/gpu_runtime.h"
#include "tap.h"

#define MOCK_LIB AGILE_GPU_BUILD_DIR "/mock/libgpu-mock.so"

static char tmp[] = "/tmp/agile-probe-XXXXXX";

/* The child: one line, the probe's account; exit 0 if usable, 1 if not. */
static int status_child(void)
{
	char why[1024];
	int usable = agile__gpu_status(why, sizeof(why));

	printf("%s\n", why);
	return usable ? 0 : 1;
}

/*
 * Runs --status with @lib (a name, or "lib/<name>") linked to the stand-in
 * in a fresh folder under tmp, @env ("NAME=value" pairs, NULL ended) set;
 * the folder is the library path unless @rocm_path, then $ROCM_PATH.
 * Returns 1 usable, 0 not, -1 the child failed; its line into @out.
 */
static void write_targets(const char *dir, const char *file,
			  const char *targets);

static int run_case(int nr, const char *lib, const char *const *env,
		    bool rocm_path, const char *targets, char *out, size_t len)
{
	char dir[PATH_MAX], path[PATH_MAX + 64], sub[PATH_MAX + 8];
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/%d", tmp, nr);
	snprintf(sub, sizeof(sub), "%s/lib", dir);
	if (mkdir(dir, 0700) || mkdir(sub, 0700))
		return -1;
	if (lib) {
		snprintf(path, sizeof(path), "%s/%s", dir, lib);
		if (symlink(MOCK_LIB, path))
			return -1;
	}
	if (targets)
		write_targets(dir, AGILE_GPU_TARGETS_CUDA, targets);
	if (pipe(fds))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		setenv("LD_LIBRARY_PATH", rocm_path ? "/nonexistent" : dir, 1);
		if (rocm_path)
			setenv("ROCM_PATH", dir, 1);
		else
			unsetenv("ROCM_PATH");
		setenv("AGILE_GPU_CODE_DIR", dir, 1);
		unsetenv("GPU_MOCK_PROBE");
		for (int i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		execl("/proc/self/exe", "eu-gpu-probe-steps", "--status",
		      (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	n = read(fds[0], out, len - 1);
	out[n > 0 ? n : 0] = '\0';
	out[strcspn(out, "\n")] = '\0';
	close(fds[0]);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) > 1)
		return -1;
	return !WEXITSTATUS(status);
}

/* Writes @targets into @dir/@file, as `make gpu` does. */
static void write_targets(const char *dir, const char *file,
			  const char *targets)
{
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%s\n", targets);
		fclose(f);
	}
}

static int nr_case;

/* One case: usable as @want_usable, the line holding @want. */
static void expect(const char *what, const char *lib, const char *const *env,
		   bool rocm_path, const char *targets, int want_usable,
		   const char *want)
{
	char out[1024];
	int usable = run_case(nr_case++, lib, env, rocm_path, targets, out,
			      sizeof(out));

	tap_ok(usable == want_usable && strstr(out, want), "%s: %s, \"%s\"",
	       what,
	       usable < 0 ? "child failed" :
	       usable	  ? "usable" :
			    "not usable",
	       want);
	tap_diag("  %s", out);
}

static const char *const cudart_35[] = { "GPU_MOCK_PROBE=cudart-35", NULL };
static const char *const init_fails[] = { "GPU_MOCK_PROBE=init-fails", NULL };
static const char *const no_device[] = { "GPU_MOCK_PROBE=no-device", NULL };
static const char *const sm_75[] = { "GPU_MOCK_PROBE=sm_75", NULL };
static const char *const sm_86[] = { "GPU_MOCK_PROBE=sm_86", NULL };
static const char *const sm_120[] = { "GPU_MOCK_PROBE=sm_120", NULL };
#define CUDA_TARGETS "sm_80 sm_90 compute_90"

static void test_cuda(void)
{
	char out[1024];
	int usable;

	/* The runtime API is no longer asked: only the driver's library. */
	usable = run_case(nr_case++, "libcudart.so.13", cudart_35, false, NULL,
			  out, sizeof(out));
	if (strstr(out, "CUDA: libcuda.so.1,"))
		tap_skip("libcuda missing", "this machine has one: %s", out);
	else
		tap_ok(usable == 0 &&
			       strstr(out, "CUDA: libcuda.so.1 or libcuda.so "
					   "(the NVIDIA driver's library) not "
					   "found"),
		       "only libcudart.so.13: libcuda named as missing");
	tap_diag("  %s", out);
	expect("libcuda.so.1 (CUDA 12.8) beside a libcudart.so.13 that says 35",
	       "libcuda.so.1", cudart_35, false, NULL, 1,
	       "CUDA: libcuda.so.1, driver 12.8, 1 device, device 0 sm_80");
	expect("cuInit fails", "libcuda.so.1", init_fails, false, NULL, 0,
	       "CUDA: libcuda.so.1: cuInit failed: error 100");
	expect("no device", "libcuda.so.1", no_device, false, NULL, 0,
	       "CUDA: libcuda.so.1 (driver 12.8): cuDeviceGetCount reports "
	       "no device");
	expect("sm_75 and code for sm_80 sm_90 compute_90", "libcuda.so.1",
	       sm_75, false, CUDA_TARGETS, 0,
	       "CUDA: libcuda.so.1: no code object for sm_75 "
	       "(agile-gpu-cuda.targets has sm_80 sm_90 compute_90)");
	expect("sm_86 runs sm_80's SASS", "libcuda.so.1", sm_86, false,
	       CUDA_TARGETS, 1, "device 0 sm_86");
	expect("sm_120 JIT-compiles compute_90's PTX", "libcuda.so.1", sm_120,
	       false, CUDA_TARGETS, 1, "device 0 sm_120");
}

static void test_hip(void)
{
	char want[PATH_MAX + 64];

	snprintf(want, sizeof(want),
		 "HIP: %s/%d/lib/libamdhip64.so.6, driver 60342000, 1 device",
		 tmp, nr_case);
	expect("libamdhip64.so.6 in $ROCM_PATH/lib", "lib/libamdhip64.so.6",
	       NULL, true, NULL, 1, want);
	expect("libamdhip64.so.7 on the library path", "libamdhip64.so.7", NULL,
	       false, NULL, 1, "HIP: libamdhip64.so.7, driver 60342000");
	expect("hipInit fails", "libamdhip64.so.7", init_fails, false, NULL, 0,
	       "HIP: libamdhip64.so.7: hipInit failed: error 100");
	expect("no HIP device", "libamdhip64.so.7", no_device, false, NULL, 0,
	       "HIP: libamdhip64.so.7 (driver 60342000): hipGetDeviceCount "
	       "reports no device");
}

static void test_arch(void)
{
	static const char amd[] = "gfx908 gfx90a:xnack- gfx1030";
	char name[32];

	agile__gpu_gfx_name(90402, name, sizeof(name));
	tap_ok(!strcmp(name, "gfx942"), "KFD 90402 is %s (gfx942)", name);
	agile__gpu_gfx_name(90010, name, sizeof(name));
	tap_ok(!strcmp(name, "gfx90a"), "KFD 90010 is %s (gfx90a)", name);
	agile__gpu_gfx_name(100300, name, sizeof(name));
	tap_ok(!strcmp(name, "gfx1030"), "KFD 100300 is %s (gfx1030)", name);
	tap_ok(!agile__gpu_arch_covered("gfx942", amd) &&
		       agile__gpu_arch_covered("gfx90a", amd) &&
		       agile__gpu_arch_covered("gfx1030", amd) &&
		       !agile__gpu_arch_covered("gfx90", amd),
	       "AMD: exact ISAs only (gfx942 not in \"%s\")", amd);
	tap_ok(!agile__gpu_arch_covered("sm_75", CUDA_TARGETS) &&
		       agile__gpu_arch_covered("sm_80", CUDA_TARGETS) &&
		       agile__gpu_arch_covered("sm_89", CUDA_TARGETS) &&
		       agile__gpu_arch_covered("sm_100", CUDA_TARGETS) &&
		       !agile__gpu_arch_covered("sm_86", "sm_90"),
	       "NVIDIA: SASS within a major, PTX for newer");
}

int main(int argc, char **argv)
{
	char cmd[64];

	if (argc > 1 && !strcmp(argv[1], "--status"))
		return status_child();
	if (access(MOCK_LIB, R_OK)) {
		tap_skip("probe steps", "%s not built", MOCK_LIB);
		return tap_done();
	}
	if (!mkdtemp(tmp)) {
		tap_ok(0, "mkdtemp: %s", strerror(errno));
		return tap_done();
	}
	test_arch();
	test_cuda();
	test_hip();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd))
		tap_diag("could not remove %s", tmp);
	return tap_done();
}
