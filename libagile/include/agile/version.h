/* SPDX-License-Identifier: MIT */
/*
 * agile/version.h - which libagile a program is built against, and runs on
 *
 * AGILE_VERSION_MAJOR and AGILE_VERSION_MINOR are the version of the
 * headers a program is compiled with; agile_version_major and
 * agile_version_minor that of the library the dynamic linker loaded, which
 * may be newer.  The minor version counts the version nodes of
 * libagile.map (AGILE_0.<minor> is the newest node): a library of minor
 * version m exports every call of AGILE_0.1 .. AGILE_0.m.  The soname
 * stays libagile.so.0 while the major version is 0.
 *
 * The checks follow liburing's io_uring_check_version: they say whether
 * the library is OLDER than the version asked for, so that
 *
 *	#if AGILE_CHECK_VERSION(0, 6)
 *		... code for headers before 0.6 ...
 *	#else
 *		... code that needs 0.6 ...
 *	#endif
 */
#ifndef AGILE_VERSION_H
#define AGILE_VERSION_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AGILE_VERSION_MAJOR 0
#define AGILE_VERSION_MINOR 11

/**
 * AGILE_CHECK_VERSION - compile-time check of the headers' version
 * @major: the major version asked for
 * @minor: the minor version asked for
 *
 * Usable in #if.
 *
 * Return: 1 if the headers are older than @major.@minor, 0 if they are
 * that version or newer.
 */
#define AGILE_CHECK_VERSION(major, minor) \
	((major) > AGILE_VERSION_MAJOR || \
	 ((major) == AGILE_VERSION_MAJOR && (minor) > AGILE_VERSION_MINOR))

/**
 * agile_version_major - the major version of the library loaded
 *
 * Thread safety: thread safe.
 *
 * Return: the library's AGILE_VERSION_MAJOR.
 */
int agile_version_major(void);

/**
 * agile_version_minor - the minor version of the library loaded
 *
 * Thread safety: thread safe.
 *
 * Return: the library's AGILE_VERSION_MINOR.
 */
int agile_version_minor(void);

/**
 * agile_version_check - run-time check of the loaded library's version
 * @major: the major version asked for
 * @minor: the minor version asked for
 *
 * AGILE_CHECK_VERSION, against the library the dynamic linker loaded
 * rather than the headers.
 *
 * Thread safety: thread safe.
 *
 * Return: true if the library is older than @major.@minor, false if it is
 * that version or newer.
 */
bool agile_version_check(int major, int minor);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_VERSION_H */
