// SPDX-License-Identifier: MIT
/*
 * private_file.c - the files the library loads as code without linking
 * them, found by one rule (private_file.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "private_file.h"

#define REASON(r, rlen, ...)                                \
	do {                                                \
		if ((r) && (rlen))                          \
			snprintf((r), (rlen), __VA_ARGS__); \
	} while (0)

/*
 * Whether @path may be loaded from a place the caller did not name: owned
 * by root or the caller, and not writable by everyone.  The compiled-in
 * build folder may not exist where an installed library runs, and then
 * anyone who may create that path could plant code there.
 */
static bool trusted(const char *path)
{
	struct stat st;

	return !stat(path, &st) && (st.st_uid == 0 || st.st_uid == geteuid()) &&
	       !(st.st_mode & S_IWOTH);
}

static int try_in(const char *dir, const char *file, char *path, size_t len,
		  bool check)
{
	int n = snprintf(path, len, "%s/%s", dir, file);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	if (access(path, R_OK))
		return -ENOENT;
	return !check || (trusted(dir) && trusted(path)) ? 0 : -EPERM;
}

int agile__private_find(const struct agile__private_place *place,
			const char *file, char *path, size_t len, char *reason,
			size_t rlen)
{
	/* Not from the environment of a set-user-ID program: code. */
	const char *env = secure_getenv(place->env);
	char looked[2 * PATH_MAX] = "";
	size_t off = 0;
	int err = 0;

	if (!file || !path || !len)
		return -EINVAL;
	path[0] = '\0';
	REASON(reason, rlen, "%s", "");
	if (env && *env) {
		/* Set: the only place, so a test or a user gets what it says. */
		if (!try_in(env, file, path, len, false))
			return 0;
		REASON(reason, rlen, "%s %s not found in %s=%s", place->what,
		       file, place->env, env);
		path[0] = '\0';
		return -ENOENT;
	}
	if (place->build_dir) {
		err = try_in(place->build_dir, file, path, len, true);
		if (!err)
			return 0;
		off += (size_t)snprintf(looked + off, sizeof(looked) - off,
					"%s%s", place->build_dir,
					err == -EPERM ?
						" (skipped: not owned by root "
						"or you, or world-writable)" :
						"");
	}
#ifndef AGILE_NO_DLOPEN
	{
		Dl_info info;
		char dir[PATH_MAX], *obj = NULL;

		/* The library's own file, or the program's when linked in. */
		if (dladdr((void *)agile__private_find, &info) &&
		    info.dli_fname)
			obj = realpath(info.dli_fname, NULL);
		if (obj && strrchr(obj, '/')) {
			int n = snprintf(dir, sizeof(dir), "%.*s/agile",
					 (int)(strrchr(obj, '/') - obj), obj);

			if (n > 0 && (size_t)n < sizeof(dir)) {
				err = try_in(dir, file, path, len, true);
				if (!err) {
					free(obj);
					return 0;
				}
				if (off < sizeof(looked))
					off += (size_t)snprintf(
						looked + off,
						sizeof(looked) - off, "%s%s%s",
						off ? ", " : "", dir,
						err == -EPERM ?
							" (skipped: not "
							"trusted)" :
							"");
			}
		}
		free(obj);
	}
#endif
	path[0] = '\0';
	REASON(reason, rlen, "%s %s not found (%s unset; looked in %s; %s)",
	       place->what, file, place->env, off ? looked : "no directory",
	       place->hint);
	return -ENOENT;
}
