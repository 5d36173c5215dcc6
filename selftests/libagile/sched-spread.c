// SPDX-License-Identifier: MIT
/*
 * sched-spread - a pool's threads keep off each other's CPU (spread.c).
 *
 * Two CPUs of ours, a and b; a busy loop on a; a pool of two workers
 * whose thread may run on a and b; the thread that runs fib (worker 0)
 * pinned to b; the pool's thread put on b as well, where the kernel
 * leaves it when it wakes beside a busy CPU (bound to b for an instant,
 * then given {a, b} back).  fib(30) runs again and again for 1.5 s, then:
 *
 *  - spread (the default): the pool's thread moved off b (stats.moves)
 *    and ran on a most of the time: the busy loop looks where it is
 *    every millisecond (/proc's "processor" of the thread), and at least
 *    60% of the looks find it on a.  The pool's CPU time over the wall
 *    time is reported: sharing b, the two threads get 1.0 CPU; with one
 *    beside the busy loop, up to 1.5;
 *  - AGILE_SCHED_SPREAD=0: no move (the kernel alone put the thread on
 *    a in 14-51% of the looks, measured).
 *
 * Under ThreadSanitizer the share of looks on a is reported, not judged
 * (58-86% there; the moves still are).
 *
 * Skipped with fewer than two CPUs.  $AGILE_TEST_QUICK (the emulated
 * guests): fib(25) for 0.5 s, right results and the knob are judged, the
 * moves and where the thread was are reported only.  There both CPUs are
 * one host thread taking turns, so no placement gives the pool more time;
 * the peer, slowed down as much, spends much of the run napping at its
 * syncs, off its CPU, which is no conflict; and the thread may wake on a
 * to begin with.  Measured in 6.12 guests: 0 or 1 move, 7-16% of the
 * looks on a.
 */
#define _GNU_SOURCE
#include <agile/sched.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define AGILE_TEST_FIB
#include "tap.h"
#include "testutil.h"

/*
 * Measured on the 2-CPU VM: 94-99% of the looks with moves, 14-51%
 * without; the pool used 1.28-1.33 CPUs against 1.02-1.18.
 */
#define MIN_ON_A 0.6

static double clock_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static _Atomic int busy_stop;
static clockid_t busy_clock;
/* The thread the busy loop watches (0: none), and what it saw. */
static _Atomic pid_t watched;
static _Atomic int watched_cpu = -1;
static _Atomic unsigned int samples, samples_on_cpu;

/* The CPU thread @tid last ran on (/proc's "processor"); -1 if unknown. */
static int thread_cpu(pid_t tid)
{
	char path[64], buf[1024], *p;
	int field = 3, cpu = -1;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	for (p = p ? strtok(p + 1, " ") : NULL; p; p = strtok(NULL, " "))
		if (field++ == 39) {
			cpu = atoi(p);
			break;
		}
	return cpu;
}

/*
 * Spins, and every millisecond or so looks where the watched thread is:
 * the share of looks that find it on watched_cpu.
 */
static void *busy_main(void *arg)
{
	double next = 0;

	while (!atomic_load_explicit(&busy_stop, memory_order_relaxed)) {
		pid_t tid =
			atomic_load_explicit(&watched, memory_order_relaxed);
		double now;

		if (!tid)
			continue;
		now = clock_s(CLOCK_MONOTONIC);
		if (now < next)
			continue;
		next = now + 0.001;
		atomic_fetch_add(&samples, 1);
		if (thread_cpu(tid) == atomic_load(&watched_cpu))
			atomic_fetch_add(&samples_on_cpu, 1);
	}
	return arg;
}

/* The thread id of the pool's thread named @name; -1 if none. */
static pid_t find_thread(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t tid = -1;

	if (!d)
		return -1;
	while (tid < 0 && (e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = 0;
			if (!strcmp(comm, name))
				tid = (pid_t)atoi(e->d_name);
		}
		fclose(f);
	}
	closedir(d);
	return tid;
}

struct outcome {
	uint32_t moves;
	double share; /* the pool's CPU time over the wall time */
	double on_a; /* share of the looks that found its thread on CPU a */
	int runs, err;
};

/*
 * One pool as the header says, on CPUs @a and @b, the busy loop already
 * on @a; the calling thread is left pinned to @b.  0 or -errno.
 */
static int run_beside(int a, int b, int n, double seconds, struct outcome *out)
{
	struct agile_sched_opts o;
	struct agile_sched_stats st;
	struct agile_sched *s;
	cpu_set_t ab, only_b;
	double t0, c0, b0, wall;
	pid_t w1;
	int err;

	memset(out, 0, sizeof(*out));
	CPU_ZERO(&ab);
	CPU_SET(a, &ab);
	CPU_SET(b, &ab);
	CPU_ZERO(&only_b);
	CPU_SET(b, &only_b);
	/* The pool's thread inherits {a, b}; this thread then keeps to b. */
	if (sched_setaffinity(0, sizeof(ab), &ab))
		return -errno;
	agile_sched_opts_init(&o);
	o.nr_workers = 2;
	o.flags = AGILE_SCHED_QUIET;
	err = agile_sched_create(&o, &s);
	if (err)
		return err;
	w1 = find_thread("agile-w1");
	if (w1 < 0 || sched_setaffinity(0, sizeof(only_b), &only_b) ||
	    sched_setaffinity(w1, sizeof(only_b), &only_b) ||
	    sched_setaffinity(w1, sizeof(ab), &ab)) {
		err = w1 < 0 ? -ESRCH : -errno;
		goto out;
	}
	atomic_store(&samples, 0);
	atomic_store(&samples_on_cpu, 0);
	atomic_store(&watched_cpu, a);
	atomic_store(&watched, w1);
	t0 = clock_s(CLOCK_MONOTONIC);
	c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	b0 = clock_s(busy_clock);
	do {
		int64_t r = 0;

		out->err = AGILE_RUN(s, fib, n, &r);
		if (!out->err && r != fib_plain(n))
			out->err = -EPROTO;
		out->runs++;
	} while (!out->err && clock_s(CLOCK_MONOTONIC) - t0 < seconds);
	wall = clock_s(CLOCK_MONOTONIC) - t0;
	atomic_store(&watched, 0);
	out->on_a = atomic_load(&samples) ?
			    (double)atomic_load(&samples_on_cpu) /
				    atomic_load(&samples) :
			    0;
	/* The process's CPU time but the busy loop's: the pool's threads'. */
	out->share = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0 -
		      (clock_s(busy_clock) - b0)) /
		     wall;
	agile_sched_stats(s, &st);
	out->moves = st.moves;
out:
	agile_sched_destroy(s);
	return err;
}

int main(void)
{
	bool quick = getenv("AGILE_TEST_QUICK");
	/* Runs long enough for the kernel to settle where it puts threads. */
	int n = quick ? 25 : 30;
	double seconds = quick ? 0.5 : 1.5;
	struct outcome on, off;
	cpu_set_t all, only_a;
	pthread_attr_t attr;
	pthread_t busy;
	int a = -1, b = -1, err;

	if (sched_getaffinity(0, sizeof(all), &all)) {
		tap_skip("spread", "sched_getaffinity: %s", strerror(errno));
		return tap_done();
	}
	for (int c = 0; c < CPU_SETSIZE && b < 0; c++) {
		if (!CPU_ISSET(c, &all))
			continue;
		if (a < 0)
			a = c;
		else
			b = c;
	}
	if (b < 0) {
		tap_skip("spread", "one CPU: nothing to spread over");
		return tap_done();
	}
	CPU_ZERO(&only_a);
	CPU_SET(a, &only_a);
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(only_a), &only_a);
	if (pthread_create(&busy, &attr, busy_main, NULL)) {
		tap_ok(0, "spread: start a busy loop on CPU %d", a);
		return tap_done();
	}
	pthread_attr_destroy(&attr);
	if (pthread_getcpuclockid(busy, &busy_clock)) {
		tap_ok(0, "spread: the busy loop's CPU clock");
		return tap_done();
	}

	err = run_beside(a, b, n, seconds, &on);
	if (quick) {
		tap_ok(!err && !on.err,
		       "spread: fib(%d) right in %d runs beside the busy loop (err %d/%d)",
		       n, on.runs, err, on.err);
		tap_diag(
			"spread: %u moves; the pool's thread was on CPU %d in %.0f%% of the looks, the pool used %.2f CPUs (not judged here)",
			on.moves, a, 100 * on.on_a, on.share);
	} else {
		tap_ok(!err && !on.err && on.moves >= 1,
		       "spread: the pool's thread moved off CPU %d, its peer's, to %d beside the busy loop (%u moves, %d runs, err %d/%d)",
		       b, a, on.moves, on.runs, err, on.err);
#ifdef __SANITIZE_THREAD__
		/*
		 * Under ThreadSanitizer the share is reported only: there it
		 * was 58-86% (once below 60% in a make check whose other
		 * steps kept the CPUs busy), and AGILE_SCHED_SPREAD=0 reaches
		 * 51%.  The moves above are still judged; the placement is in
		 * the plain and ASan builds (94-99% against 14-51%).
		 */
		tap_diag(
			"spread: its thread was on CPU %d in %.0f%% of the looks (the pool used %.2f CPUs; not judged under ThreadSanitizer)",
			a, 100 * on.on_a, on.share);
#else
		tap_ok(!err && on.on_a >= MIN_ON_A,
		       "spread: its thread was on CPU %d in %.0f%% of the looks, at least %.0f%% (the pool used %.2f CPUs)",
		       a, 100 * on.on_a, 100 * MIN_ON_A, on.share);
#endif
	}

	setenv("AGILE_SCHED_SPREAD", "0", 1);
	err = run_beside(a, b, n, seconds, &off);
	unsetenv("AGILE_SCHED_SPREAD");
	tap_ok(!err && !off.err && off.moves == 0,
	       "spread: AGILE_SCHED_SPREAD=0: no move (%u moves, %.2f CPUs, on CPU %d in %.0f%% of the looks, err %d/%d)",
	       off.moves, off.share, a, 100 * off.on_a, err, off.err);

	atomic_store(&busy_stop, 1);
	pthread_join(busy, NULL);
	sched_setaffinity(0, sizeof(all), &all);
	return tap_done();
}
