// SPDX-License-Identifier: MIT
/*
 * version.c - the version of the library the dynamic linker loaded
 * (agile/version.h): the headers' macros, compiled in.
 */
#include <agile/version.h>

int agile_version_major(void)
{
	return AGILE_VERSION_MAJOR;
}

int agile_version_minor(void)
{
	return AGILE_VERSION_MINOR;
}

bool agile_version_check(int major, int minor)
{
	return major > agile_version_major() ||
	       (major == agile_version_major() &&
		minor > agile_version_minor());
}
