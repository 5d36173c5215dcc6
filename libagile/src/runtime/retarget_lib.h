/* SPDX-License-Identifier: MIT */
/*
 * retarget_lib.h - the contract between the runtime and libagile-retarget.so,
 * agile-retarget's translator built as a shared object
 * (tools/agile-retarget/lib.c): the runtime dlopens it when a program is
 * built with "-x cuda" or "-x hip" (docs/runtime.md, "CUDA and HIP
 * source"), so libagile itself never needs libclang.  Private header:
 * the tool's Makefile puts libagile/src on its include path.
 */
#ifndef AGILE_RUNTIME_RETARGET_LIB_H
#define AGILE_RUNTIME_RETARGET_LIB_H

#include <stddef.h>

/* The file the runtime looks for, and the symbols it takes from it. */
#define AGILE_RETARGET_LIB "libagile-retarget.so"
#define AGILE_RETARGET_ABI_SYMBOL "agile_retarget_abi"
#define AGILE_RETARGET_FN_SYMBOL "agile_retarget_runtime"
#define AGILE_RETARGET_VERSION_SYMBOL "agile_retarget_version"

/* Bumped when agile_retarget_fn's meaning changes; the library exports it. */
#define AGILE_RETARGET_ABI 1

/*
 * agile_retarget_runtime - CUDA/HIP text to the runtime's dialect, as
 * "agile-retarget --emit=runtime" writes it
 * @name:    what the diagnostics call the text (e.g. "user-kernels.cu")
 * @text:    the source, @size bytes (no NUL needed)
 * @nr_args: how many words @args has
 * @args:    the tool's options, one word each: --lane-threads=N,
 *           --dynamic-shared=BYTES, -DNAME[=VALUE], -UNAME, -IDIR
 * @dialect: receives the dialect's text (malloc'd, NUL-terminated), or
 *           NULL when not translated
 * @diags:   receives the diagnostics (malloc'd, NUL-terminated; "" none),
 *           one "NAME:LINE:COL: error: ..." line each, as the tool's
 *
 * Thread safe: each call parses with its own libclang index.
 *
 * Return: 0 translated; 1 refused (@diags says where and why); 2 a bad
 * option, or libclang could not parse the text; -ENOMEM.
 */
typedef int agile_retarget_fn(const char *name, const char *text, size_t size,
			      int nr_args, const char *const *args,
			      char **dialect, char **diags);

/* agile_retarget_version: the translator's version ("0.10.0"). */
typedef const char *agile_retarget_version_fn(void);

#endif /* AGILE_RUNTIME_RETARGET_LIB_H */
