/* SPDX-License-Identifier: MIT */
/*
 * testutil.h - helpers more than one libagile selftest uses: counting the
 * process's threads (that a pool started and joined its own), and, for
 * the tests that define AGILE_TEST_FIB before including this, the fib
 * fork/join task.  Everything is static: each selftest is its own program.
 */
#ifndef AGILE_TESTUTIL_H
#define AGILE_TESTUTIL_H

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

/* The threads of this process, from /proc/self/task; -1 if unreadable. */
static inline int nr_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static inline void *testutil_nothing(void *arg)
{
	return arg;
}

/*
 * The thread count before the test, after one thread came and went: a
 * sanitizer's run-time starts a helper thread of its own at the first
 * pthread_create, which must not count as a leak.
 */
static inline int settled_threads(void)
{
	pthread_t t;

	int n, prev = -1;

	if (!pthread_create(&t, NULL, testutil_nothing, NULL))
		pthread_join(t, NULL);
	/* Until the joined thread is reaped too (see threads_settle). */
	for (int i = 0; i < 100; i++) {
		n = nr_threads();
		if (n == prev)
			break;
		prev = n;
		usleep(10000);
	}
	return n;
}

/*
 * The thread count once it reaches @want, or after a second: a joined
 * thread may still be listed for a moment (pthread_join returns when the
 * thread's TID is cleared, a little before the kernel reaps it).
 */
static inline int threads_settle(int want)
{
	int n = nr_threads();

	for (int i = 0; i < 100 && n != want; i++) {
		usleep(10000);
		n = nr_threads();
	}
	return n;
}

/* fib(n) without the scheduler, to check results against. */
/*
 * 1 once *@flag is set (acquire: pairs with the setter's release), 0 if
 * it was not within @ms milliseconds: a bug fails the test, never hangs it.
 */
static inline int await_flag(_Atomic int *flag, unsigned int ms)
{
	for (unsigned int i = 0; i < ms * 10; i++) {
		if (atomic_load_explicit(flag, memory_order_acquire))
			return 1;
		usleep(100);
	}
	return 0;
}

static inline int64_t fib_plain(int n)
{
	return n < 2 ? n : fib_plain(n - 1) + fib_plain(n - 2);
}

/*
 * Run @test on the backend $AGILE_BACKEND names ("kmod" or "user"), or
 * else on the user backend and, where /dev/agile exists, on kmod too (a
 * SKIP line where it does not).  Include tap.h first.
 */
#ifdef AGILE_TAP_H
#include <stdlib.h>
#include <string.h>
#include <agile/dev.h>

static inline void run_backends(void (*test)(int backend))
{
	const char *env = getenv("AGILE_BACKEND");

	if (env && !strcmp(env, "kmod")) {
		test(AGILE_BACKEND_KMOD);
	} else if (env && !strcmp(env, "user")) {
		test(AGILE_BACKEND_USER);
	} else {
		test(AGILE_BACKEND_USER);
		if (access("/dev/agile", F_OK))
			tap_skip("kmod backend", "no /dev/agile here");
		else
			test(AGILE_BACKEND_KMOD);
	}
}
#endif

/*
 * The fork/join fib task: every call with n >= 2 spawns one child.  Only
 * where asked for, since an unused task is a warning (-Werror).
 */
#ifdef AGILE_TEST_FIB
#include <agile/sched.h>

AGILE_TASK(int64_t, fib, w, int, n)
{
	int64_t b;

	if (n < 2)
		return n;
	AGILE_SPAWN(w, fib, n - 1);
	b = AGILE_CALL(w, fib, n - 2);
	return AGILE_SYNC(w, fib) + b;
}
#endif

#endif /* AGILE_TESTUTIL_H */
