/* SPDX-License-Identifier: MIT */
/*
 * env.h - what the library says about the environment variables it reads
 * (env.c): a value a variable does not take is named on standard error,
 * once per variable and process, with what the variable takes and what
 * the library does instead.  Private header.
 */
#ifndef AGILE_SRC_ENV_H
#define AGILE_SRC_ENV_H

#include <stdbool.h>

/*
 * $@name is set to @value, which it does not take: one line on stderr,
 * "agile: NAME=\"VALUE\" is not valid: EXPECTED", the first time for
 * @name in this process (@expected says what it takes and what happens
 * instead).  Not silenced by AGILE_QUIET: the library is not doing what
 * the user asked for.
 */
void agile__env_invalid(const char *name, const char *value,
			const char *expected);

/*
 * $AGILE_DEBUG is "1": the library says on stderr what it chose and why
 * (the dev layer's backend).  Unset, empty or "0": false; any other value
 * is invalid (agile__env_invalid) and false.
 */
bool agile__env_debug(void);

#endif /* AGILE_SRC_ENV_H */
