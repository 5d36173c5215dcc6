/* SPDX-License-Identifier: MIT */
/*
 * private_file.h - where the library finds the files it loads as code
 * and does not link: the GPU code objects (eu/gpu_launch.c) and the CUDA
 * translator, libagile-retarget.so (runtime/retarget.c).  One rule for
 * both (docs/gpu.md, "Code objects").  Private header.
 */
#ifndef AGILE_SRC_PRIVATE_FILE_H
#define AGILE_SRC_PRIVATE_FILE_H

#include <stddef.h>

/**
 * struct agile__private_place - where one kind of file is looked for
 * @what:      what the reason calls it ("GPU code object")
 * @env:       the variable naming the only folder to look in
 * @build_dir: the build folder compiled in (NULL: none)
 * @hint:      how to make it, for the reason ("make -C libagile gpu builds it")
 */
struct agile__private_place {
	const char *what;
	const char *env;
	const char *build_dir;
	const char *hint;
};

/*
 * agile__private_find - where @file is
 *
 * Looked for, in this order: $@place->env when it is set and not empty
 * (and nowhere else then), @place->build_dir, and "agile/" beside the
 * library (or program) this code is linked into, e.g.
 * /usr/local/lib/agile/.  The last two, which the caller did not name,
 * only when the folder and the file are owned by root or the caller and
 * not writable by everyone.  Returns 0 with the path in @path, or
 * -ENOENT with where it looked in @reason (@rlen bytes; either buffer
 * always terminated).  Thread safe.
 */
int agile__private_find(const struct agile__private_place *place,
			const char *file, char *path, size_t len, char *reason,
			size_t rlen);

#endif /* AGILE_SRC_PRIVATE_FILE_H */
