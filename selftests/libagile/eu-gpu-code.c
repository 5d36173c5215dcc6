// SPDX-License-Identifier: MIT
/*
 * eu-gpu-code - finding the GPU code object: $AGILE_GPU_CODE_DIR at
 * nothing gives the documented reason; at the built objects, or unset,
 * they are found; a missing one names the places looked in.
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
#include <sys/stat.h>

#include "eu/gpu_impl.h"
#include "tap.h"
#include "gputest.h"

/*
 * A folder the caller did not name is used only when root or the caller
 * owns it and not everyone may write to it: made world-writable for a
 * moment, the build folder is passed over, and named in the reason.
 */
static void test_untrusted(const char *file)
{
	char path[4096], why[512];
	struct stat st;
	int err;

	if (stat(AGILE_GPU_BUILD_DIR, &st) ||
	    chmod(AGILE_GPU_BUILD_DIR, st.st_mode | S_IWOTH)) {
		tap_skip("an untrusted build folder is passed over",
			 "cannot change %s's mode", AGILE_GPU_BUILD_DIR);
		return;
	}
	err = agile__gpu_code_find(file, path, sizeof(path), why, sizeof(why));
	chmod(AGILE_GPU_BUILD_DIR, st.st_mode & 07777);
	tap_ok(err == -ENOENT && strstr(why, "world-writable"),
	       "the build folder world-writable: %s passed over (%s)", file,
	       agile_strerror(err));
	tap_diag("reason: %s", why);
}

static void test_code_lookup(void)
{
	char path[4096], why[512], built[4096];
	int err;

	setenv("AGILE_GPU_CODE_DIR", "/nonexistent/agile-gpu", 1);
	err = agile__gpu_code_find(AGILE_GPU_CODE_HIP, path, sizeof(path), why,
				   sizeof(why));
	tap_ok(err == -ENOENT && !path[0] &&
		       strstr(why,
			      "AGILE_GPU_CODE_DIR=/nonexistent/agile-gpu") &&
		       strstr(why, AGILE_GPU_CODE_HIP),
	       "AGILE_GPU_CODE_DIR at nothing: -ENOENT, and the reason says "
	       "where");
	tap_diag("reason: %s", why);

	for (int v = 0; v < 2; v++) {
		const char *file = v ? AGILE_GPU_CODE_CUDA : AGILE_GPU_CODE_HIP;

		snprintf(built, sizeof(built), "%s/%s", AGILE_GPU_BUILD_DIR,
			 file);
		if (access(built, R_OK)) {
			tap_skip("code object found",
				 "%s not built here "
				 "(make -C libagile gpu; no compiler?)",
				 file);
			continue;
		}
		setenv("AGILE_GPU_CODE_DIR", AGILE_GPU_BUILD_DIR, 1);
		err = agile__gpu_code_find(file, path, sizeof(path), why,
					   sizeof(why));
		tap_ok(!err && !strcmp(path, built),
		       "AGILE_GPU_CODE_DIR at the build: %s found", file);
		unsetenv("AGILE_GPU_CODE_DIR");
		err = agile__gpu_code_find(file, path, sizeof(path), why,
					   sizeof(why));
		tap_ok(!err && !strcmp(path, built),
		       "AGILE_GPU_CODE_DIR unset: %s found in the build "
		       "directory compiled in",
		       file);
		test_untrusted(file);
	}
	unsetenv("AGILE_GPU_CODE_DIR");
	err = agile__gpu_code_find("no-such-code-object", path, sizeof(path),
				   why, sizeof(why));
	tap_ok(err == -ENOENT && strstr(why, "AGILE_GPU_CODE_DIR unset") &&
		       strstr(why, AGILE_GPU_BUILD_DIR),
	       "not anywhere: -ENOENT naming the places looked in");
	tap_diag("reason: %s", why);
}

int main(void)
{
	test_code_lookup();
	return tap_done();
}
