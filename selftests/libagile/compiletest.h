/* SPDX-License-Identifier: MIT */
/*
 * compiletest.h - what the runtime-compile-* selftests share: a user
 * kernel source in the dialect of docs/runtime.md, its expected
 * results, a fresh cache folder per test program, and a task on an EU.
 * Include tap.h first.
 */
#ifndef AGILE_COMPILETEST_H
#define AGILE_COMPILETEST_H

#include <agile/eu.h>
#include <agile/kernels.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/compile.h"

/*
 * Two kernels.  user_rotate: x[(l + 1) % n] = x[l] * args[1], which is
 * right only if every lane's load (phase 0) comes before any lane's store
 * (phase 1): the barrier, with the loaded value promoted across it.
 * user_fail_odd: odd lanes fail with -ERANGE; at most 8 lanes.
 */
static const char user_source[] =
	"struct rot_state { double v; };\n"
	"\n"
	"AGILE_PHASE(rot_load)\n"
	"{\n"
	"	const double *x = (const double *)(uintptr_t)args[0];\n"
	"	struct rot_state *st = (struct rot_state *)state;\n"
	"\n"
	"	st->v = x[lane] * (double)args[1];\n"
	"	return 0;\n"
	"}\n"
	"\n"
	"AGILE_PHASE(rot_store)\n"
	"{\n"
	"	double *x = (double *)(uintptr_t)args[0];\n"
	"	const struct rot_state *st = (const struct rot_state *)state;\n"
	"\n"
	"	x[(lane + 1) % nr_lanes] = st->v;\n"
	"	return 0;\n"
	"}\n"
	"\n"
	"AGILE_PHASE(fail_odd)\n"
	"{\n"
	"	return lane & 1 ? -ERANGE : 0;\n"
	"}\n"
	"\n"
	"#define AGILE_USER_KERNELS(K) \\\n"
	"	K(user_rotate, struct rot_state, 0, rot_load, rot_store) \\\n"
	"	K(user_fail_odd, struct agile_no_state, 8, fail_odd)\n";

#define ROTATE_FACTOR 3
#define ROTATE_LANES 64
#define FAIL_ODD_LANES 8

/* @x as user_rotate leaves it, given @in (ROTATE_LANES doubles). */
static inline void rotate_expect(const double *in, double *out)
{
	for (int l = 0; l < ROTATE_LANES; l++)
		out[(l + 1) % ROTATE_LANES] = in[l] * ROTATE_FACTOR;
}

/* A fresh, empty cache folder for this program: $AGILE_CACHE_DIR. */
static char cache_dir[256];

static inline int cache_fresh(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(cache_dir, sizeof(cache_dir), "%s/agile-cache-test-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(cache_dir))
		return -errno;
	return setenv("AGILE_CACHE_DIR", cache_dir, 1) ? -errno : 0;
}

static inline int remove_one(const char *path, const struct stat *st, int type,
			     struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

/* Removes the cache folder and everything under it. */
static inline void cache_remove(void)
{
	nftw(cache_dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Files in the cache folder whose name starts with @prefix. */
static inline int cache_count(const char *prefix)
{
	DIR *d = opendir(cache_dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)) != NULL)
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	if (d)
		closedir(d);
	return n;
}

/*
 * One task on EU @eu: @opcode over @parts lanes with @args; the wait's
 * result, the failed lane in *@lane.
 */
static inline int eu_task(struct agile_eu_pool *pool, uint32_t eu,
			  uint32_t opcode, uint32_t parts, const __u64 *args,
			  int nr_args, uint32_t *lane)
{
	struct agile_task_reg *r;
	int err = agile_eu_task_reg(pool, eu, &r, NULL);

	if (err)
		return err;
	r->opcode = opcode;
	r->nr_parts = parts;
	r->flags = 0;
	for (int i = 0; i < nr_args; i++)
		r->args[i] = args[i];
	return agile_eu_call(pool, eu, 10ULL * 1000 * 1000 * 1000, lane);
}

#endif /* AGILE_COMPILETEST_H */
