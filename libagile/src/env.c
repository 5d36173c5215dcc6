// SPDX-License-Identifier: MIT
/*
 * env.c - one message per bad environment variable (env.h).  A variable
 * is read at every call that depends on it (agile_dev_opts_init, every
 * pool or collective created), so the message is said once per variable,
 * not once per read.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"

/* More than the library reads (README.md's list): a full table still says. */
#define ENV_SAID_MAX 64

/*
 * The variables already named on stderr: process-wide because the
 * message is (one stderr); under said_lock.
 */
static pthread_mutex_t said_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *said[ENV_SAID_MAX];
static unsigned int nr_said;

/* Whether @name was said before; marks it said.  Under said_lock. */
static bool said_before(const char *name)
{
	for (unsigned int i = 0; i < nr_said; i++)
		if (!strcmp(said[i], name))
			return true;
	if (nr_said < ENV_SAID_MAX)
		said[nr_said++] = name;
	return false;
}

void agile__env_invalid(const char *name, const char *value,
			const char *expected)
{
	bool before;

	pthread_mutex_lock(&said_lock);
	before = said_before(name);
	pthread_mutex_unlock(&said_lock);
	if (!before)
		fprintf(stderr, "agile: %s=\"%.64s%s\" is not valid: %s\n",
			name, value, strlen(value) > 64 ? "..." : "", expected);
}

bool agile__env_debug(void)
{
	const char *v = getenv("AGILE_DEBUG");

	if (!v || !*v || !strcmp(v, "0"))
		return false;
	if (strcmp(v, "1"))
		agile__env_invalid("AGILE_DEBUG", v,
				   "1 (say what the library chose and why) "
				   "or 0; off");
	return !strcmp(v, "1");
}
