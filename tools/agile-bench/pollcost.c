// SPDX-License-Identifier: MIT
/*
 * pollcost - what the module's poller costs while many contexts sleep.
 *
 * For each N of --sleepers (default 0,100,1000,3000), N contexts (one
 * /dev/agile file each, one slot) get one thread each asleep in FENCE
 * WAIT on a condition only a plain store makes true: the poller's work.
 * Then, for --period ms, one busy loop per online CPU counts iterations
 * while the sleepers sleep, and the run reads
 *
 *   poller    the poller's own time, from sysfs poll_ns (with poll_ticks
 *             and poll_checks: checks per tick, ticks per second, ns per
 *             check): ms of poller per second, i.e. tenths of a percent
 *             of one CPU ("n/a" on a module without the counters, as
 *             before the one-poller design)
 *   softirq   the machine's softirq time from /proc/stat, where the
 *             poller's hrtimer runs (any module), ms per second; sampled
 *             at the scheduler tick and with every other softirq in it,
 *             so only large differences mean anything
 *   busy      the busy loops' time per 10^8 iterations: beside N = 0, the
 *             CPU the poller takes from everyone else
 *   wake      the time from plain stores to all N doorbells until every
 *             sleeper has returned: the poller's wake-up of N sleepers
 *   other     while the N sleep (after the busy period), another user's
 *             (uid 65534's) one context, with one thread in FENCE WAIT:
 *             OTHER_WAKES times, a plain store to its doorbell at a random
 *             moment and the time until that thread returns, in us: what
 *             one user's sleepers cost another's wake-up (the poller's
 *             fairness).  Needs root to make the context as uid 65534
 *             (CTX_INIT under setresuid); otherwise it is the same user's
 *             and the row says so.
 *
 * The N values are interleaved, reversed every other repetition, so a
 * drift of the machine's speed weighs on all alike; each figure is given
 * as min / median / max over the repetitions.  Rows: pollcost poller-N,
 * softirq-N, busy-N (and ratios busy-N / busy-0).  Needs /dev/agile: run
 * it in a test guest (tools/agile-bench/pollcost.sh), where times are
 * software-emulated: compare within one run only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/agile.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define MAX_NS 16
#define MAX_REPS 64
#define SLEEP_TIMEOUT_NS (600ULL * 1000000000ULL)
#define THREAD_STACK (64 * 1024)
#define SETTLE_MS 50
#define OTHER_WAKES 20
#define OTHER_UID 65534

struct sleeper {
	int fd;
	struct agile_doorbell *db;
	size_t db_bytes;
	pthread_t thread;
	int ret;
};

struct busy {
	pthread_t thread;
	int cpu;
	const _Atomic bool *stop;
	_Alignas(64) _Atomic uint64_t iters;
};

/* One measurement's counters. */
struct snapshot {
	double ms;
	long long poll_ns, poll_ticks, poll_checks; /* -1: no such file */
	long long softirq_ticks;
	uint64_t iters;
};

/* Per N, per repetition. */
struct samples {
	double poller[MAX_REPS], softirq[MAX_REPS], busy[MAX_REPS];
	double wake[MAX_REPS], checks_per_tick[MAX_REPS], ticks_per_s[MAX_REPS];
	double ns_per_check[MAX_REPS];
	double other_us[MAX_REPS * OTHER_WAKES]; /* every wake, all reps */
	int nr, nr_other;
	bool have_poll;
};

/* The other user's context, its one slot, and its sleeper's end time. */
struct other {
	int fd;
	struct agile_doorbell *db;
	size_t db_bytes;
	bool other_user; /* made as OTHER_UID, not as the caller */
	pthread_t thread;
	double woke_ms;
	int ret;
};

static long long read_sysfs_ll(const char *name)
{
	char path[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/misc/agile/%s", name);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Softirq time of all CPUs, in USER_HZ ticks (/proc/stat), or -1. */
static long long read_softirq_ticks(void)
{
	unsigned long long v[7];
	long long ret = -1;
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return -1;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
		   &v[2], &v[3], &v[4], &v[5], &v[6]) == 7)
		ret = (long long)v[6];
	fclose(f);
	return ret;
}

static void *busy_main(void *arg)
{
	struct busy *b = arg;
	cpu_set_t set;
	uint64_t n = 0;

	CPU_ZERO(&set);
	CPU_SET(b->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	while (!atomic_load_explicit(b->stop, memory_order_relaxed)) {
		for (int k = 0; k < 1000; k++)
			__asm__ volatile("" ::: "memory");
		n += 1000;
		atomic_store_explicit(&b->iters, n, memory_order_relaxed);
	}
	return NULL;
}

static void snap(struct snapshot *s, struct busy *busy, int nr_busy)
{
	s->ms = bench_now_ms();
	s->iters = 0;
	for (int i = 0; i < nr_busy; i++)
		s->iters += atomic_load_explicit(&busy[i].iters,
						 memory_order_relaxed);
	s->poll_ns = read_sysfs_ll("poll_ns");
	s->poll_ticks = read_sysfs_ll("poll_ticks");
	s->poll_checks = read_sysfs_ll("poll_checks");
	s->softirq_ticks = read_softirq_ticks();
}

static int sleeper_open(struct sleeper *s)
{
	struct agile_ctx_init init = { .nr_slots = 1, .task_reg_size = 64 };
	void *db;

	s->fd = open("/dev/agile", O_RDWR | O_CLOEXEC);
	if (s->fd < 0)
		return -errno;
	if (ioctl(s->fd, AGILE_IOC_CTX_INIT, &init))
		return -errno;
	db = mmap(NULL, init.doorbell_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		  s->fd, (off_t)init.doorbell_offset);
	if (db == MAP_FAILED)
		return -errno;
	s->db = db;
	s->db_bytes = init.doorbell_bytes;
	return 0;
}

static void sleeper_close(struct sleeper *s)
{
	if (s->db)
		munmap(s->db, s->db_bytes);
	if (s->fd >= 0)
		close(s->fd);
}

/* Sleep in the kernel until slot 0 of @fd holds 1: 0 or -errno. */
static int wait_slot0(int fd)
{
	struct agile_fence f = {
		.op = AGILE_FENCE_WAIT,
		.cmp = AGILE_CMP_EQ,
		.value = 1,
		.timeout_ns = SLEEP_TIMEOUT_NS,
	};

	return ioctl(fd, AGILE_IOC_FENCE, &f) ? -errno : 0;
}

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;

	s->ret = wait_slot0(s->fd);
	return NULL;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * The other user's context: the file opened as the caller (the device is
 * not world-writable), CTX_INIT as OTHER_UID so that the context is that
 * user's (its owner is the real uid of CTX_INIT's caller).  Before any
 * thread exists: setresuid() signals every thread of the process.
 */
static int other_open(struct other *o)
{
	struct agile_ctx_init init = { .nr_slots = 1, .task_reg_size = 64 };
	int err = 0;
	void *db;

	o->fd = open("/dev/agile", O_RDWR | O_CLOEXEC);
	if (o->fd < 0)
		return -errno;
	o->other_user = !geteuid() && !setresuid(OTHER_UID, OTHER_UID, 0);
	if (ioctl(o->fd, AGILE_IOC_CTX_INIT, &init))
		err = -errno;
	if (o->other_user && setresuid(0, 0, 0))
		return -errno;
	if (err)
		return err;
	db = mmap(NULL, init.doorbell_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		  o->fd, (off_t)init.doorbell_offset);
	if (db == MAP_FAILED)
		return -errno;
	o->db = db;
	o->db_bytes = init.doorbell_bytes;
	return 0;
}

static void *other_main(void *arg)
{
	struct other *o = arg;

	o->ret = wait_slot0(o->fd);
	o->woke_ms = bench_now_ms();
	return NULL;
}

/*
 * One wake of the other user's sleeper by a plain store, at a random
 * moment 2 to 3 ms after it went to sleep (past the module's spin, at any
 * phase of the poller's ticks); us from the store to its return, or -1.
 */
static double other_wake(struct other *o, unsigned int *seed)
{
	double start;

	__atomic_store_n(&o->db[0].value, 0, __ATOMIC_RELEASE);
	o->ret = 1;
	if (pthread_create(&o->thread, NULL, other_main, o))
		return -1;
	while (!__atomic_load_n(&o->db[0].sleepers, __ATOMIC_ACQUIRE))
		sleep_ms(1);
	{
		struct timespec ts = { 0, 2000000L + rand_r(seed) % 1000000L };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	start = bench_now_ms();
	__atomic_store_n(&o->db[0].value, 1, __ATOMIC_RELEASE);
	pthread_join(o->thread, NULL);
	return o->ret ? -1 : (o->woke_ms - start) * 1e3;
}

/* Put sleepers 0..nr-1 to sleep: every doorbell line counts its sleeper. */
static int sleepers_start(struct sleeper *s, int nr)
{
	pthread_attr_t attr;
	int err = 0, i;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	for (i = 0; i < nr && !err; i++) {
		__atomic_store_n(&s[i].db[0].value, 0, __ATOMIC_RELEASE);
		s[i].ret = 1;
		err = -pthread_create(&s[i].thread, &attr, sleeper_main, &s[i]);
	}
	pthread_attr_destroy(&attr);
	if (err) {
		/* Wake and join the ones started. */
		for (int k = 0; k < i - 1; k++)
			__atomic_store_n(&s[k].db[0].value, 1,
					 __ATOMIC_RELEASE);
		for (int k = 0; k < i - 1; k++)
			pthread_join(s[k].thread, NULL);
		return err;
	}
	for (i = 0; i < nr; i++)
		while (!__atomic_load_n(&s[i].db[0].sleepers, __ATOMIC_ACQUIRE))
			sleep_ms(1);
	/* Past the module's spin: asleep. */
	sleep_ms(SETTLE_MS);
	return 0;
}

/* Plain stores wake them (the poller does); ms until all returned. */
static double sleepers_wake(struct sleeper *s, int nr, int *failed)
{
	double start = bench_now_ms();

	for (int i = 0; i < nr; i++)
		__atomic_store_n(&s[i].db[0].value, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < nr; i++) {
		pthread_join(s[i].thread, NULL);
		if (s[i].ret)
			(*failed)++;
	}
	return bench_now_ms() - start;
}

/* One measurement with @nr sleepers asleep. */
static int measure(struct sleeper *s, int nr, int period_ms, struct other *o,
		   unsigned int *seed, struct samples *out)
{
	int nr_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN), failed = 0, err;
	struct busy *busy = calloc((size_t)nr_cpus, sizeof(*busy));
	struct snapshot a, b;
	_Atomic bool stop = false;
	double secs, wake;
	int k = out->nr;

	if (!busy)
		return -ENOMEM;
	err = sleepers_start(s, nr);
	if (err) {
		free(busy);
		return err;
	}
	for (int i = 0; i < nr_cpus; i++) {
		busy[i].cpu = i;
		busy[i].stop = &stop;
		pthread_create(&busy[i].thread, NULL, busy_main, &busy[i]);
	}
	sleep_ms(SETTLE_MS);
	snap(&a, busy, nr_cpus);
	sleep_ms(period_ms);
	snap(&b, busy, nr_cpus);
	atomic_store(&stop, true);
	for (int i = 0; i < nr_cpus; i++)
		pthread_join(busy[i].thread, NULL);
	free(busy);
	for (int w = 0; w < OTHER_WAKES; w++) {
		double us = other_wake(o, seed);

		if (us < 0)
			failed++;
		else
			out->other_us[out->nr_other++] = us;
	}
	wake = sleepers_wake(s, nr, &failed);
	if (failed) {
		fprintf(stderr, "pollcost: %d of %d sleepers failed\n", failed,
			nr);
		return -EIO;
	}

	secs = (b.ms - a.ms) / 1e3;
	out->have_poll = a.poll_ns >= 0 && b.poll_ns >= 0;
	if (out->have_poll) {
		long long ticks = b.poll_ticks - a.poll_ticks;

		out->poller[k] = (double)(b.poll_ns - a.poll_ns) / 1e6 / secs;
		out->ticks_per_s[k] = (double)ticks / secs;
		long long checks = b.poll_checks - a.poll_checks;

		out->checks_per_tick[k] =
			ticks ? (double)checks / (double)ticks : 0;
		out->ns_per_check[k] = 0;
		if (checks)
			out->ns_per_check[k] = (double)(b.poll_ns - a.poll_ns) /
					       (double)checks;
	}
	out->softirq[k] = (double)(b.softirq_ticks - a.softirq_ticks) * 1e3 /
			  (double)sysconf(_SC_CLK_TCK) / secs;
	out->busy[k] =
		b.iters > a.iters ?
			(b.ms - a.ms) / ((double)(b.iters - a.iters) / 1e8) :
			0;
	out->wake[k] = wake;
	out->nr++;
	return 0;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

/* min, median, max of @v (sorted in place). */
static void spread(double *v, int nr, double *min, double *med, double *max)
{
	qsort(v, (size_t)nr, sizeof(v[0]), cmp_double);
	*min = v[0];
	*max = v[nr - 1];
	*med = nr % 2 ? v[nr / 2] : (v[nr / 2 - 1] + v[nr / 2]) / 2;
}

static void add_row(const char *what, int n, double *v, int nr)
{
	char variant[32];
	struct timing t = bench_summarize(v, nr);

	snprintf(variant, sizeof(variant), "%s-%d", what, n);
	bench_row("pollcost", variant, 0, t);
}

static int parse_ns(const char *list, int *ns)
{
	char *copy = strdup(list), *save = NULL, *tok;
	int nr = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && nr < MAX_NS;
	     tok = strtok_r(NULL, ",", &save)) {
		ns[nr] = atoi(tok);
		if (ns[nr] < 0) {
			free(copy);
			return -EINVAL;
		}
		nr++;
	}
	free(copy);
	return nr ? nr : -EINVAL;
}

int bench_pollcost(const struct bench_opts *o)
{
	int ns[MAX_NS], nr_ns, max_n = 0, reps = o->reps, err = 0, nr_s = 0;
	static struct samples samples[MAX_NS];
	struct other other = { .fd = -1 };
	unsigned int seed = 1;
	struct sleeper *s = NULL;
	struct rlimit rl;

	if (access("/dev/agile", R_OK | W_OK)) {
		bench_row_na("pollcost", "poller", 0, "no /dev/agile");
		return 0;
	}
	nr_ns = parse_ns(o->sleepers ? o->sleepers : "0,100,1000,3000", ns);
	if (nr_ns < 0)
		return nr_ns;
	if (reps > MAX_REPS)
		reps = MAX_REPS;
	for (int i = 0; i < nr_ns; i++)
		max_n = ns[i] > max_n ? ns[i] : max_n;

	/* One file per context. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) &&
	    rl.rlim_cur < (rlim_t)max_n + 64) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	err = other_open(&other);
	if (err) {
		fprintf(stderr, "pollcost: the other user's context: %s\n",
			strerror(-err));
		goto out;
	}
	s = calloc((size_t)max_n + 1, sizeof(*s));
	if (!s) {
		err = -ENOMEM;
		goto out;
	}
	for (nr_s = 0; nr_s < max_n && !err; nr_s++) {
		s[nr_s].fd = -1;
		err = sleeper_open(&s[nr_s]);
	}
	if (err) {
		fprintf(stderr, "pollcost: context %d: %s\n", nr_s,
			strerror(-err));
		goto out;
	}
	memset(samples, 0, sizeof(samples));

	fprintf(stderr,
		"  pollcost: poll_interval_us %lld, poll_max_checks %lld, %ld CPUs, %d ms a period\n",
		read_sysfs_ll("poll_interval_us"),
		read_sysfs_ll("poll_max_checks"), sysconf(_SC_NPROCESSORS_ONLN),
		o->period_ms);
	for (int r = 0; r < reps && !err; r++) {
		for (int k = 0; k < nr_ns && !err; k++) {
			int i = r % 2 ? nr_ns - 1 - k : k;
			struct samples *sm = &samples[i];

			err = measure(s, ns[i], o->period_ms, &other, &seed,
				      sm);
			if (err)
				break;
			fprintf(stderr,
				"  pollcost %5d sleepers: poller %8.3f ms/s, softirq %8.3f ms/s, busy %8.3f ms/1e8, wake %8.3f ms, other user's wake (last) %8.1f us\n",
				ns[i],
				sm->have_poll ? sm->poller[sm->nr - 1] : -1.0,
				sm->softirq[sm->nr - 1], sm->busy[sm->nr - 1],
				sm->wake[sm->nr - 1],
				sm->other_us[sm->nr_other - 1]);
		}
	}
	if (err)
		goto out;

	printf("\npollcost: %d repetitions of %d ms; poll_interval_us %lld, poll_max_checks %lld, poll_cpu_permille %lld; min / median / max\n",
	       reps, o->period_ms, read_sysfs_ll("poll_interval_us"),
	       read_sysfs_ll("poll_max_checks"),
	       read_sysfs_ll("poll_cpu_permille"));
	printf("other user: %s, %d wakes per repetition; its wake us: median [p10-p90] (min-max)\n",
	       other.other_user ? "uid 65534" : "the same user (not root)",
	       OTHER_WAKES);
	printf("%9s %26s %26s %26s %11s %9s %9s %15s %30s\n", "sleepers",
	       "poller %CPU", "softirq %CPU", "busy loop slowdown",
	       "checks/tick", "ticks/s", "ns/check", "wake all ms",
	       "other user's wake us");
	for (int i = 0; i < nr_ns; i++) {
		struct samples *sm = &samples[i];
		double pmin = 0, pmed = 0, pmax = 0, smin, smed, smax;
		double bmin, bmed, bmax, base = 0, dummy;
		double cpt = 0, tps = 0, npc = 0;
		double wmin, wmed, wmax, busy[MAX_REPS];

		/* Against the median busy time with no sleeper, if measured. */
		for (int z = 0; z < nr_ns; z++) {
			if (ns[z] == 0) {
				memcpy(busy, samples[z].busy,
				       sizeof(double) * (size_t)samples[z].nr);
				spread(busy, samples[z].nr, &dummy, &base,
				       &dummy);
			}
		}
		memcpy(busy, sm->busy, sizeof(double) * (size_t)sm->nr);
		spread(busy, sm->nr, &bmin, &bmed, &bmax);
		if (sm->have_poll) {
			double c[MAX_REPS], t[MAX_REPS], n[MAX_REPS];

			memcpy(c, sm->checks_per_tick, sizeof(c));
			memcpy(t, sm->ticks_per_s, sizeof(t));
			memcpy(n, sm->ns_per_check, sizeof(n));
			spread(c, sm->nr, &dummy, &cpt, &dummy);
			spread(t, sm->nr, &dummy, &tps, &dummy);
			spread(n, sm->nr, &dummy, &npc, &dummy);
			add_row("poller", ns[i], sm->poller, sm->nr);
			spread(sm->poller, sm->nr, &pmin, &pmed, &pmax);
		}
		add_row("softirq", ns[i], sm->softirq, sm->nr);
		spread(sm->softirq, sm->nr, &smin, &smed, &smax);
		add_row("busy", ns[i], sm->busy, sm->nr);
		spread(sm->wake, sm->nr, &wmin, &wmed, &wmax);
		if (!base)
			base = bmed;
		printf("%9d", ns[i]);
		if (sm->have_poll)
			printf(" %8.3f %8.3f %8.3f", pmin / 10, pmed / 10,
			       pmax / 10);
		else
			printf(" %26s", "n/a");
		printf(" %8.3f %8.3f %8.3f", smin / 10, smed / 10, smax / 10);
		printf(" %8.3f %8.3f %8.3f", bmin / base, bmed / base,
		       bmax / base);
		if (sm->have_poll)
			printf(" %11.1f %9.0f %9.0f", cpt, tps, npc);
		else
			printf(" %11s %9s %9s", "n/a", "n/a", "n/a");
		printf(" %4.1f/%4.1f/%4.1f", wmin, wmed, wmax);
		if (sm->nr_other) {
			struct timing ot =
				bench_summarize(sm->other_us, sm->nr_other);

			printf(" %7.0f [%.0f-%.0f] (%.0f-%.0f)\n", ot.median_ms,
			       ot.p10_ms, ot.p90_ms, ot.min_ms, ot.max_ms);
			add_row("other-wake-us", ns[i], sm->other_us,
				sm->nr_other);
		} else {
			printf(" %30s\n", "n/a");
		}
		if (ns[i] && base) {
			char variant[32];

			snprintf(variant, sizeof(variant), "busy-%d", ns[i]);
			bench_compare("pollcost", variant, "busy-0", false,
				      NULL);
		}
	}
out:
	for (int i = 0; i < nr_s; i++)
		sleeper_close(&s[i]);
	free(s);
	if (other.db)
		munmap(other.db, other.db_bytes);
	if (other.fd >= 0)
		close(other.fd);
	return err;
}
