/* SPDX-License-Identifier: MIT */
/*
 * gpumock.h - running a selftest's GPU part against the stand-in runtime
 * of gpu-mock.c where there is no GPU: the program runs itself again as
 * "PROG --mock LIB" in a child whose library path holds the stand-in, once
 * as HIP (libamdhip64.so.5) and once as the CUDA driver API
 * (libcuda.so.1), and passes when the child's TAP lines all pass.  The
 * child reaches the stand-in's test hooks (mock_registered, mock_hangs,
 * ...) with mock_call.  Include tap.h first; needs dlopen (not in the
 * static build).
 */
#ifndef AGILE_GPUMOCK_H
#define AGILE_GPUMOCK_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "eu/gpu_impl.h"

#define MOCK_DIR AGILE_GPU_BUILD_DIR "/mock"

static const struct {
	const char *api, *lib, *code;
} mocks[] = {
	{ "hip", "libamdhip64.so.5", AGILE_GPU_CODE_HIP },
	{ "cuda", "libcuda.so.1", AGILE_GPU_CODE_CUDA },
};

/* The stand-in's hook @fn (int (*)(int)); NULL outside a --mock child. */
static inline int (*mock_hook(const char *lib, const char *fn))(int)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);

	return h ? (int (*)(int))dlsym(h, fn) : NULL;
}

/* Calls hook @fn of stand-in @lib with @arg; -1 if there is none. */
static inline int mock_call(const char *lib, const char *fn, int arg)
{
	int (*hook)(int) = mock_hook(lib, fn);

	return hook ? hook(arg) : -1;
}

/* Runs "PROG --mock LIB" with stand-in @m first on the library path. */
static inline void mock_run_one(int m, int min_passed)
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
		unsetenv("AGILE_EU_POOL");
		unsetenv("AGILE_GPU_SHARE");
		execl("/proc/self/exe", "selftest", "--mock", mocks[m].lib,
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
		       n >= min_passed,
	       "GPU EUs on the stand-in %s runtime: %d passed, %d failed",
	       mocks[m].lib, n, bad);
}

/*
 * The whole of a stand-in test: in a --mock child, @child(lib) (its exit
 * status); else one child per stand-in, each to pass at least
 * @min_passed, and tap_done().
 */
static inline int mock_main(int argc, char **argv,
			    int (*child)(const char *lib), int min_passed)
{
	if (argc > 2 && !strcmp(argv[1], "--mock"))
		return child(argv[2]);
	for (int m = 0; m < (int)(sizeof(mocks) / sizeof(mocks[0])); m++)
		mock_run_one(m, min_passed);
	return tap_done();
}

#endif /* AGILE_GPUMOCK_H */
