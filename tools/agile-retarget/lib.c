// SPDX-License-Identifier: MIT
/*
 * lib.c - libagile-retarget.so: the translator in-process, for the
 * runtime's compile on demand of CUDA and HIP source
 * (libagile/src/runtime/retarget_lib.h is the contract; docs/runtime.md,
 * "CUDA and HIP source").  The same translation as agile-retarget
 * --emit=runtime, from memory into memory, the diagnostics collected
 * rather than printed.  Only the agile_retarget_* symbols are exported
 * (lib.map).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "retarget.h"
#include "runtime/retarget_lib.h"

const int agile_retarget_abi = AGILE_RETARGET_ABI;

agile_retarget_fn agile_retarget_runtime;
agile_retarget_version_fn agile_retarget_version;

const char *agile_retarget_version(void)
{
	return AGILE_PROJECT_VERSION;
}

/*
 * libclang's crash recovery installs signal handlers while it parses: not
 * something a library may do in an application's threads.
 */
static void no_crash_recovery(void)
{
	clang_toggleCrashRecovery(0);
}

/* @args into the runtime's options and libclang's; 0, or 2 (said why). */
static int split_args(int nr_args, const char *const *args,
		      struct runtime_opts *rt, const char **clang_args,
		      int *nr_clang, FILE *err)
{
	for (int i = 0; i < nr_args; i++) {
		const char *a = args[i];

		if (!strncmp(a, "--lane-threads=", 15)) {
			if (runtime_opt('l', a + 15, rt, err))
				return 2;
		} else if (!strncmp(a, "--dynamic-shared=", 17)) {
			if (runtime_opt('s', a + 17, rt, err))
				return 2;
		} else if ((!strncmp(a, "-D", 2) || !strncmp(a, "-U", 2) ||
			    !strncmp(a, "-I", 2)) &&
			   a[2] && *nr_clang < 48) {
			clang_args[(*nr_clang)++] = a;
		} else {
			fprintf(err,
				"agile-retarget: %s: not an option of the "
				"translation (--lane-threads=N, "
				"--dynamic-shared=BYTES, -D, -U, -I)\n",
				a);
			return 2;
		}
	}
	return 0;
}

int agile_retarget_runtime(const char *name, const char *text, size_t size,
			   int nr_args, const char *const *args, char **dialect,
			   char **diags)
{
	struct runtime_opts rt = { .lane_threads = 16 };
	struct translation t = { 0 };
	const char *clang_args[50];
	char *out = NULL, *errs = NULL;
	size_t out_len = 0, errs_len = 0;
	FILE *c_out = NULL, *err;
	struct source src;
	int nr_clang = 0, rc;

	static pthread_once_t once = PTHREAD_ONCE_INIT;

	*dialect = NULL;
	*diags = NULL;
	pthread_once(&once, no_crash_recovery);
	err = open_memstream(&errs, &errs_len);
	if (!err)
		return -ENOMEM;
	rc = split_args(nr_args, args, &rt, clang_args, &nr_clang, err);
	if (!rc) {
		rc = source_open_text(&src, name, text, size, nr_clang,
				      clang_args, err);
		/* -2: C++ refused (cxx.c) */
		rc = rc ? (rc == -2 ? 1 : 2) : translate_analyse(&src, &t);
		if (!rc) {
			c_out = open_memstream(&out, &out_len);
			rc = c_out ? translate_emit(&t, true, &rt, c_out, NULL,
						    "") :
				     -ENOMEM;
			if (c_out && fclose(c_out))
				rc = -ENOMEM;
		}
		translate_free(&t);
		source_close(&src);
	}
	if (fclose(err)) {
		free(out);
		return -ENOMEM;
	}
	if (rc) {
		free(out);
		out = NULL;
	}
	*dialect = out;
	*diags = errs;
	return rc;
}
