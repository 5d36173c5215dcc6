/* SPDX-License-Identifier: MIT */
/*
 * tap.h - the smallest TAP producer: each selftest is its own program,
 * prints "ok N - ..." / "not ok N - ..." lines, then the plan, and exits
 * 1 if anything failed, 77 (the runners' SKIP) if every test was skipped,
 * else 0 (tap_done).
 */
#ifndef AGILE_TAP_H
#define AGILE_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_count, tap_failures, tap_skips;

static inline __attribute__((format(printf, 2, 3))) int
tap_ok(int pass, const char *fmt, ...)
{
	va_list ap;

	tap_count++;
	if (!pass)
		tap_failures++;
	printf("%sok %d - ", pass ? "" : "not ", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	return pass;
}

/* A test that could not run here: "ok N - ... # SKIP why". */
static inline __attribute__((format(printf, 2, 3))) void
tap_skip(const char *what, const char *fmt, ...)
{
	va_list ap;

	tap_count++;
	tap_skips++;
	printf("ok %d - %s # SKIP ", tap_count, what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* A comment line; does not count. */
static inline __attribute__((format(printf, 1, 2))) void
tap_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Checks that a libagile call returned 0, naming the errno if not. */
static inline int tap_ok_call(int err, const char *what)
{
	return tap_ok(err == 0, "%s%s%s", what, err ? ": " : "",
		      err ? strerror(-err) : "");
}

static inline int tap_done(void)
{
	printf("1..%d\n", tap_count);
	fflush(stdout);
	if (tap_failures)
		return 1;
	/* Nothing ran here: the whole program is skipped. */
	return tap_count && tap_skips == tap_count ? 77 : 0;
}

#endif /* AGILE_TAP_H */
