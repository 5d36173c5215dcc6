// SPDX-License-Identifier: MIT
/*
 * api-version - the library's run-time version (agile_version_*) is the
 * headers' (AGILE_VERSION_*), and the checks say "older" exactly when
 * the version asked for is newer.
 */
#include <agile/agile.h>

#include "tap.h"

#if AGILE_CHECK_VERSION(AGILE_VERSION_MAJOR, AGILE_VERSION_MINOR)
#error "AGILE_CHECK_VERSION: the headers are older than themselves"
#endif
#if !AGILE_CHECK_VERSION(AGILE_VERSION_MAJOR, AGILE_VERSION_MINOR + 1)
#error "AGILE_CHECK_VERSION: the next minor version is not newer"
#endif

int main(void)
{
	int major = agile_version_major(), minor = agile_version_minor();

	tap_ok(major == AGILE_VERSION_MAJOR, "major %d (headers %d)", major,
	       AGILE_VERSION_MAJOR);
	tap_ok(minor == AGILE_VERSION_MINOR, "minor %d (headers %d)", minor,
	       AGILE_VERSION_MINOR);
	tap_ok(!agile_version_check(major, minor), "not older than itself");
	tap_ok(!agile_version_check(major, 0) && !agile_version_check(0, 1),
	       "not older than earlier versions");
	tap_ok(agile_version_check(major, minor + 1) &&
		       agile_version_check(major + 1, 0),
	       "older than later versions");
	tap_ok(!AGILE_CHECK_VERSION(0, 5) && AGILE_CHECK_VERSION(1, 0),
	       "AGILE_CHECK_VERSION(0, 5) is 0, (1, 0) is 1");
	return tap_done();
}
