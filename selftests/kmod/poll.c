// SPDX-License-Identifier: GPL-2.0-only
/*
 * The module's one poller (kmod/poll.c): many contexts, each with one
 * thread asleep on a plain-store condition, are all woken by it, none
 * lost, while each tick checks exactly min(sleepers, poll_max_checks)
 * conditions, at the default budget, the smallest and a large one (skipped
 * where the default is already above the sleepers: a debug kernel); a
 * WAIT_ANY as large as the smallest budget is still polled; the timer
 * stops once nobody sleeps; contexts closed around the poller while
 * others sleep are safe; the budget is shared fairly between users (one
 * user's many sleepers do not delay another user's one); the CPU cap
 * (poll_cpu_permille) bounds the poller's time.  The tests but the cap's
 * run with the cap lifted (1000), so that a tick checks its whole budget.
 * Every test restores the tunables it changes.
 */
#include "agile_test.h"

#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>

/*
 * 512 contexts, each with a sleeping thread; 128 on a debug kernel
 * (KASAN, lockdep, kmemleak under TCG), where this program took six
 * minutes of make check's forty with 512 (3.5 with 128), and 128 still
 * outnumber the smallest budget.
 */
#define NR_CTXS_FULL 512
#define NR_CTXS_DEBUG 128
static unsigned int nr_ctxs = NR_CTXS_FULL;
#define NR_CTXS nr_ctxs

__attribute__((constructor)) static void scale_to_kernel(void)
{
	struct utsname u;

	if (!uname(&u) && strstr(u.release, "debug"))
		nr_ctxs = NR_CTXS_DEBUG;
}
#define NR_CHURN_SLEEPERS 64
#define CHURN_ROUNDS 100
/*
 * Long enough for 512 threads to start and sleep on the debug guest (TCG,
 * KASAN, kmemleak), late in a full run, where that alone took about a
 * minute and the first sleepers timed out before they were counted: a
 * lost wake-up still ends here, within the test's timeout.
 */
#define SLEEP_NS (300 * NSEC_PER_SEC)
#define POLL_TIMEOUT_S 600
#define THREAD_STACK (64 * 1024)

static const char *const tunables[] = { "poll_max_checks", "poll_interval_us",
					"poll_cpu_permille" };

/* The other user of fair_between_users. */
#define NOBODY 65534
#define FDINFO_MAX 65536
/* Ticks over which fair_between_users counts the other user's checks. */
#define FAIR_TICKS 16
/* The cap cpu_cap sets, thousandths of one CPU, and what it measures. */
#define CAP_PERMILLE 10
#define CAP_PERIOD_MS 2000
/*
 * What the poller may take beyond its share of the period: the credit it
 * saved before, and the tick that overdraws it (stretched by the host's
 * scheduling of the emulated CPU).  Uncapped, the poller took 120-160 ms
 * a second with 1000 sleepers in the 6.1 guest (docs/poller.md); the
 * test's poll_budget check catches it too.
 */
#define CAP_SLACK_NS (100 * NSEC_PER_MSEC)

/* One context of one slot (or more), mapped, with one sleeping thread. */
struct sleeper {
	int fd;
	struct agile_ctx_init init;
	struct agile_doorbell *db;
	struct agile_fence_thread ft;
	bool started;
};

/* The poller's sysfs counters. */
struct poll_stats {
	unsigned long long ticks, checks, ns, contexts;
};

/*
 * Sysfs reads one file at a time: read poll_ticks again after the others
 * and retry until no tick came in between.  poll_checks and poll_ns
 * change only in a tick, under the lock it counts itself under.
 */
static int read_poll(struct poll_stats *p)
{
	unsigned long long ticks = 0;
	int ret, tries;

	for (tries = 0; tries < 10000; tries++) {
		ret = agile_sysfs_read("poll_ticks", &p->ticks)		      ?:
			      agile_sysfs_read("poll_checks", &p->checks)     ?:
			      agile_sysfs_read("poll_ns", &p->ns)	      ?:
			      agile_sysfs_read("poll_contexts", &p->contexts) ?:
			      agile_sysfs_read("poll_ticks", &ticks);
		if (ret || ticks == p->ticks)
			return ret;
	}
	return -EAGAIN;
}

/* Wait until sysfs file @name reads @want; 0 or -ETIMEDOUT. */
static int wait_sysfs(const char *name, unsigned long long want)
{
	__u64 deadline = agile_now_ns() + AGILE_TEST_WAIT_MS * NSEC_PER_MSEC;
	unsigned long long val;

	for (;;) {
		if (!agile_sysfs_read(name, &val) && val == want)
			return 0;
		if (agile_now_ns() > deadline)
			return -ETIMEDOUT;
		agile_sleep_ms(1);
	}
}

static void sleeper_open(struct __test_metadata *_metadata, struct sleeper *s,
			 __u32 nr_slots)
{
	AGILE_OPEN(s->fd);
	ASSERT_EQ(0, agile_ctx_init(s->fd, nr_slots, 64, &s->init));
	s->db = agile_map_rw(s->fd, s->init.doorbell_offset,
			     s->init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, s->db);
}

static void sleeper_close(struct sleeper *s)
{
	if (s->db && s->db != MAP_FAILED)
		munmap(s->db, s->init.doorbell_bytes);
	s->db = NULL;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

/* Start a thread waiting for slot 0 == 1; small stacks: hundreds run. */
static int sleeper_start(struct sleeper *s)
{
	struct agile_fence_thread *ft = &s->ft;
	pthread_attr_t attr;
	int ret;

	memset(ft, 0, sizeof(*ft));
	ft->fd = s->fd;
	ft->ret = 1;
	ft->fence.op = AGILE_FENCE_WAIT;
	ft->fence.cmp = AGILE_CMP_EQ;
	ft->fence.value = 1;
	ft->fence.timeout_ns = SLEEP_NS;
	ft->fence.observed = 0xdeadbeef;
	ret = pthread_attr_init(&attr)				     ?:
		      pthread_attr_setstacksize(&attr, THREAD_STACK) ?:
		      pthread_create(&ft->thread, &attr, agile_fence_thread_fn,
				     ft);
	pthread_attr_destroy(&attr);
	s->started = !ret;
	return -ret;
}

static int sleeper_join(struct sleeper *s)
{
	if (!s->started)
		return -ESRCH;
	s->started = false;
	return agile_fence_thread_join(&s->ft);
}

/* Wait until every sleeper of @s is queued and asleep; 0 or -ETIMEDOUT. */
static int wait_all_asleep(struct sleeper *s, unsigned int nr)
{
	__u64 deadline =
		agile_now_ns() + 24 * AGILE_TEST_WAIT_MS * NSEC_PER_MSEC;
	unsigned int i = 0;

	while (i < nr) {
		if (agile_db_sleepers(s[i].db, 0) == 1 &&
		    agile_probe_asleep(&s[i].ft.probe)) {
			i++;
			continue;
		}
		if (agile_now_ns() > deadline)
			return -ETIMEDOUT;
		agile_sleep_ms(1);
	}
	return 0;
}

FIXTURE(poller)
{
	struct sleeper *s;
	unsigned int nr;
	/*
	 * Why setup skipped the test, or NULL: 6.1's harness runs the test
	 * body after a SKIP in setup, so each body checks this first.
	 */
	const char *skip;
	bool saved;
	unsigned long long saved_values[ARRAY_SIZE(tunables)];
};

FIXTURE_VARIANT(poller)
{
	/* poll_max_checks for the test, 0: the module's default. */
	unsigned int max_checks;
};

FIXTURE_VARIANT_ADD(poller, default_budget)
{
	.max_checks = 0,
};

FIXTURE_VARIANT_ADD(poller, smallest_budget)
{
	.max_checks = AGILE_WAIT_ANY_MAX,
};

FIXTURE_VARIANT_ADD(poller, budget_above_sleepers)
{
	.max_checks = 4 * NR_CTXS_FULL,
};

FIXTURE_SETUP(poller)
{
	struct rlimit rl;
	unsigned int i;

	if (access(AGILE_SYSFS_DIR, F_OK))
		SKIP(_exit(AGILE_SKIP_EXIT), "%s missing", AGILE_SYSFS_DIR);
	for (i = 0; i < ARRAY_SIZE(tunables); i++)
		ASSERT_EQ(0, agile_sysfs_read(tunables[i],
					      &self->saved_values[i]));
	self->saved = true;

	/* One file per context, and a few more. */
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_cur < NR_CTXS + 64) {
		rl.rlim_cur = rl.rlim_max;
		ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	}
	ASSERT_LE((rlim_t)NR_CTXS + 64, rl.rlim_cur);

	self->s = calloc(NR_CTXS, sizeof(*self->s));
	ASSERT_NE(NULL, self->s);
	for (i = 0; i < NR_CTXS; i++)
		self->s[i].fd = -1;
	if (geteuid()) {
		self->skip = "needs root to set poll_cpu_permille";
		return;
	}
	ASSERT_EQ(0, agile_sysfs_write_u64("poll_cpu_permille", 1000));
	if (variant->max_checks) {
		/*
		 * A budget above the sleepers is what the default budget
		 * already is when there are fewer sleepers than it (a debug
		 * kernel's 128 against 256): the same test twice there.
		 */
		if (variant->max_checks > NR_CTXS &&
		    self->saved_values[0] >= NR_CTXS) {
			self->skip =
				"the default budget is above the sleepers too";
			return;
		}
		ASSERT_EQ(0, agile_sysfs_write_u64("poll_max_checks",
						   variant->max_checks));
	}
}

FIXTURE_TEARDOWN(poller)
{
	unsigned long long now;
	unsigned int i;

	if (self->s) {
		/* Wake whoever a failed test left asleep, then close. */
		for (i = 0; i < NR_CTXS; i++)
			if (self->s[i].db)
				agile_db_store(self->s[i].db, 0, 1);
		for (i = 0; i < NR_CTXS; i++) {
			if (self->s[i].started)
				sleeper_join(&self->s[i]);
			sleeper_close(&self->s[i]);
		}
		free(self->s);
	}
	if (!self->saved)
		return;
	for (i = 0; i < ARRAY_SIZE(tunables); i++) {
		if (!agile_sysfs_read(tunables[i], &now) &&
		    now == self->saved_values[i])
			continue;
		EXPECT_EQ(0, agile_sysfs_write_u64(tunables[i],
						   self->saved_values[i]))
		{
			TH_LOG("could not restore %s", tunables[i]);
		}
	}
}

/* Store 1 to the doorbells of sleepers @first, @first + 2, ...; join them. */
static void wake_every_other(struct __test_metadata *_metadata,
			     struct sleeper *s, unsigned int first)
{
	struct agile_stats st;
	unsigned int i;

	for (i = first; i < NR_CTXS; i += 2)
		agile_db_store(s[i].db, 0, 1);
	for (i = first; i < NR_CTXS; i += 2) {
		ASSERT_EQ(0, sleeper_join(&s[i]));
		ASSERT_EQ(0, s[i].ft.ret) TH_LOG("sleeper %u", i);
		ASSERT_EQ(1U, s[i].ft.fence.observed);
		ASSERT_EQ(0, agile_stats(s[i].fd, &st));
		ASSERT_EQ(1ULL, st.wakeups_poll) TH_LOG("sleeper %u", i);
		ASSERT_EQ(0ULL, st.wakeups_signal);
	}
}

/*
 * NR_CTXS contexts with one sleeper each, on a condition only a plain
 * store makes true.  While all sleep, every tick checks exactly
 * min(sleepers, budget) conditions.  After stores to every other
 * doorbell those sleepers return 0, woken by the poller (their context's
 * wakeups_poll is 1), although the others, which went to sleep first
 * and so come first in the poller's order, still sleep: the poller goes
 * round; then the others are woken too.
 */
TEST_F_TIMEOUT(poller, all_woken_within_budget, POLL_TIMEOUT_S)
{
	unsigned long long budget = 0, wakeups_before = 0, wakeups_after = 0;
	struct poll_stats a, b;
	unsigned int i;

	if (self->skip)
		SKIP(return, "%s", self->skip);

	for (i = 0; i < NR_CTXS; i++)
		sleeper_open(_metadata, &self->s[i], 1);
	/* Even sleepers first: they are listed first. */
	for (i = 0; i < NR_CTXS; i += 2)
		ASSERT_EQ(0, sleeper_start(&self->s[i])) TH_LOG("thread %u", i);
	for (i = 0; i < NR_CTXS; i += 2)
		ASSERT_EQ(0, agile_db_wait_sleepers(self->s[i].db, 0, 1,
						    AGILE_TEST_WAIT_MS));
	for (i = 1; i < NR_CTXS; i += 2)
		ASSERT_EQ(0, sleeper_start(&self->s[i])) TH_LOG("thread %u", i);
	ASSERT_EQ(0, wait_all_asleep(self->s, NR_CTXS));

	ASSERT_EQ(0, agile_sysfs_read("poll_max_checks", &budget));
	ASSERT_EQ(0, read_poll(&a));
	ASSERT_EQ(0, agile_wait_poll_ticks(4));
	ASSERT_EQ(0, read_poll(&b));
	ASSERT_EQ((unsigned long long)NR_CTXS, b.contexts);
	ASSERT_LT(a.ticks, b.ticks);
	ASSERT_LE(a.ns, b.ns);
	/* Full ticks, none over the budget. */
	ASSERT_EQ((b.ticks - a.ticks) * (budget < NR_CTXS ? budget : NR_CTXS),
		  b.checks - a.checks)
	{
		TH_LOG("%llu checks in %llu ticks, budget %llu",
		       b.checks - a.checks, b.ticks - a.ticks, budget);
	}

	ASSERT_EQ(0, agile_sysfs_read("wakeups_poll", &wakeups_before));
	wake_every_other(_metadata, self->s, 1);
	for (i = 0; i < NR_CTXS; i += 2) {
		ASSERT_EQ(1U, agile_db_sleepers(self->s[i].db, 0));
		ASSERT_EQ(1, self->s[i].ft.ret) TH_LOG("sleeper %u", i);
	}
	wake_every_other(_metadata, self->s, 0);
	ASSERT_EQ(0, agile_sysfs_read("wakeups_poll", &wakeups_after));
	ASSERT_LE(wakeups_before + NR_CTXS, wakeups_after);
	/* Nobody sleeps: the poller drops every context. */
	ASSERT_EQ(0, wait_sysfs("poll_contexts", 0));
}

/* A waiter with the most conditions still fits the smallest budget. */
struct any_thread {
	pthread_t thread;
	int fd;
	struct agile_wait_cond conds[AGILE_WAIT_ANY_MAX];
	__u32 index, observed;
	int ret;
};

static void *any_thread_fn(void *arg)
{
	struct any_thread *t = arg;

	t->ret = agile_wait_any(t->fd, t->conds, AGILE_WAIT_ANY_MAX, 0,
				SLEEP_NS, &t->index, &t->observed);
	return NULL;
}

TEST_F_TIMEOUT(poller, wait_any_within_budget, POLL_TIMEOUT_S)
{
	const unsigned int nr_single = 100, last = AGILE_WAIT_ANY_MAX - 1;
	struct sleeper *any = &self->s[NR_CTXS - 1];
	unsigned long long budget = 0;
	struct any_thread t = {};
	struct poll_stats a, b;
	struct agile_stats st;
	unsigned int i;

	if (self->skip)
		SKIP(return, "%s", self->skip);

	for (i = 0; i < nr_single; i++)
		sleeper_open(_metadata, &self->s[i], 1);
	sleeper_open(_metadata, any, AGILE_WAIT_ANY_MAX);
	for (i = 0; i < AGILE_WAIT_ANY_MAX; i++)
		t.conds[i] = (struct agile_wait_cond){ .slot = i,
						       .cmp = AGILE_CMP_EQ,
						       .value = 1 };
	t.fd = any->fd;
	t.ret = 1;
	for (i = 0; i < nr_single / 2; i++)
		ASSERT_EQ(0, sleeper_start(&self->s[i]));
	ASSERT_EQ(0, -pthread_create(&t.thread, NULL, any_thread_fn, &t));
	for (; i < nr_single; i++)
		ASSERT_EQ(0, sleeper_start(&self->s[i]));
	ASSERT_EQ(0, wait_all_asleep(self->s, nr_single));
	ASSERT_EQ(0,
		  agile_db_wait_sleepers(any->db, last, 1, AGILE_TEST_WAIT_MS));

	ASSERT_EQ(0, agile_sysfs_read("poll_max_checks", &budget));
	ASSERT_EQ(0, read_poll(&a));
	ASSERT_EQ(0, agile_wait_poll_ticks(4));
	ASSERT_EQ(0, read_poll(&b));
	/* And what an earlier tick left to the WAIT_ANY (deficit). */
	ASSERT_GE((b.ticks - a.ticks) * budget + AGILE_WAIT_ANY_MAX - 1,
		  b.checks - a.checks);
	ASSERT_LT(0ULL, b.checks - a.checks);

	agile_db_store(any->db, last, 1);
	ASSERT_EQ(0, -pthread_join(t.thread, NULL));
	ASSERT_EQ(0, t.ret);
	ASSERT_EQ(last, t.index);
	ASSERT_EQ(1U, t.observed);
	ASSERT_EQ(0, agile_stats(any->fd, &st));
	/* The poller or, storing just before it slept, the waiter itself. */
	ASSERT_EQ(0ULL, st.wakeups_signal);
	for (i = 0; i < nr_single; i++)
		agile_db_store(self->s[i].db, 0, 1);
	for (i = 0; i < nr_single; i++) {
		ASSERT_EQ(0, sleeper_join(&self->s[i]));
		ASSERT_EQ(0, self->s[i].ft.ret) TH_LOG("sleeper %u", i);
	}
}

/*
 * The timer runs while someone sleeps and stops once nobody does: the
 * tick that finds no context left is the last.
 */
TEST_F_TIMEOUT(poller, timer_stops_when_nobody_sleeps, POLL_TIMEOUT_S)
{
	struct sleeper *s = &self->s[0];
	struct poll_stats a, b;

	if (self->skip)
		SKIP(return, "%s", self->skip);

	sleeper_open(_metadata, s, 1);
	ASSERT_EQ(0, sleeper_start(s));
	ASSERT_EQ(0, wait_all_asleep(s, 1));
	ASSERT_EQ(0, read_poll(&a));
	ASSERT_LE(1ULL, a.contexts);
	ASSERT_EQ(0, agile_wait_poll_ticks(3));

	ASSERT_EQ(0, agile_signal(s->fd, 0, 1));
	ASSERT_EQ(0, sleeper_join(s));
	ASSERT_EQ(0, s->ft.ret);
	ASSERT_EQ(0, wait_sysfs("poll_contexts", 0));
	ASSERT_EQ(0, read_poll(&a));
	/* Many intervals, even at the slowest poll_interval_us a test sets. */
	agile_sleep_ms(300);
	ASSERT_EQ(0, read_poll(&b));
	ASSERT_EQ(a.ticks, b.ticks);
	ASSERT_EQ(a.checks, b.checks);
	ASSERT_EQ(0ULL, b.contexts);

	/* And starts again for the next sleeper. */
	ASSERT_EQ(0, agile_signal(s->fd, 0, 0));
	ASSERT_EQ(0, sleeper_start(s));
	ASSERT_EQ(0, wait_all_asleep(s, 1));
	ASSERT_EQ(0, agile_wait_poll_ticks(3));
	agile_db_store(s->db, 0, 1);
	ASSERT_EQ(0, sleeper_join(s));
	ASSERT_EQ(0, s->ft.ret);
	ASSERT_EQ(0, wait_sysfs("poll_contexts", 0));
}

/*
 * poll_ticks, and the poll_checks of @fd's context with no tick between
 * (both change only in a tick, under the poller's lock): read poll_ticks
 * again after the fdinfo and retry until no tick came in between.
 */
static int read_ctx_checks(int fd, char *buf, unsigned long long *ticks,
			   unsigned long long *checks)
{
	unsigned long long again;
	int tries;

	for (tries = 0; tries < 10000; tries++) {
		if (agile_sysfs_read("poll_ticks", ticks) ||
		    agile_fdinfo_read(getpid(), fd, buf, FDINFO_MAX) <= 0 ||
		    agile_sysfs_read("poll_ticks", &again))
			return -EIO;
		*checks = agile_fdinfo_u64(buf, "poll_checks");
		if (again == *ticks)
			return 0;
	}
	return -EAGAIN;
}

/*
 * Fair between users (kmod/poll.c, "Fair between users"): NR_CTXS - 1
 * contexts of root's sleep, and after them one context of another user
 * (nobody: CTX_INIT as uid 65534), with one sleeper too.  Each tick gives
 * each user an equal part of its budget, so the other user's context is
 * checked on every tick: its fdinfo poll_checks grows as poll_ticks does
 * (read with no tick between; one less, to be safe), and that user's
 * plain store is seen
 * within one interval.  A poller that walked the contexts in list order
 * with one budget for all would check it once every
 * ceil(NR_CTXS / budget) ticks (every 8th at the smallest budget), and
 * one that let the first user of a tick take the whole budget every
 * other tick.  Each user's owner counters show its own share.
 */
TEST_F_TIMEOUT(poller, fair_between_users, POLL_TIMEOUT_S)
{
	unsigned long long ticks_a = 0, ticks_b = 0, checks_a, checks_b;
	unsigned long long root_checks, other_checks;
	struct sleeper *other = &self->s[NR_CTXS - 1];
	struct agile_stats st;
	unsigned int i;
	char *buf;

	if (self->skip)
		SKIP(return, "%s", self->skip);
	buf = malloc(FDINFO_MAX);
	ASSERT_NE(NULL, buf);

	for (i = 0; i < NR_CTXS - 1; i++)
		sleeper_open(_metadata, &self->s[i], 1);
	AGILE_OPEN(other->fd);
	/* Before any thread: see agile_ctx_init_as(). */
	ASSERT_EQ(0, agile_ctx_init_as(other->fd, NOBODY, 1, 64, &other->init));
	other->db = agile_map_rw(other->fd, other->init.doorbell_offset,
				 other->init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, other->db);
	for (i = 0; i < NR_CTXS - 1; i++)
		ASSERT_EQ(0, sleeper_start(&self->s[i])) TH_LOG("thread %u", i);
	ASSERT_EQ(0, wait_all_asleep(self->s, NR_CTXS - 1));
	ASSERT_EQ(0, sleeper_start(other));
	ASSERT_EQ(0, wait_all_asleep(other, 1));
	ASSERT_LT(0, agile_fdinfo_read(getpid(), other->fd, buf, FDINFO_MAX));
	ASSERT_EQ((unsigned long long)NOBODY,
		  agile_fdinfo_u64(buf, "poll_owner_uid"));

	ASSERT_EQ(0, read_ctx_checks(other->fd, buf, &ticks_a, &checks_a));
	ASSERT_EQ(0, agile_wait_poll_ticks(FAIR_TICKS));
	ASSERT_EQ(0, read_ctx_checks(other->fd, buf, &ticks_b, &checks_b));
	other_checks = agile_fdinfo_u64(buf, "poll_owner_checks");
	ASSERT_GT(~0ULL, checks_b);
	ASSERT_LE(ticks_b - ticks_a, checks_b - checks_a + 1)
	{
		TH_LOG("the other user's context checked %llu times in %llu ticks",
		       checks_b - checks_a, ticks_b - ticks_a);
	}
	ASSERT_LT(0,
		  agile_fdinfo_read(getpid(), self->s[0].fd, buf, FDINFO_MAX));
	root_checks = agile_fdinfo_u64(buf, "poll_owner_checks");
	ASSERT_EQ(0ULL, agile_fdinfo_u64(buf, "poll_owner_uid"));
	ASSERT_EQ((unsigned long long)NR_CTXS - 1,
		  agile_fdinfo_u64(buf, "poll_owner_contexts"));
	ASSERT_LT(other_checks, root_checks);
	ASSERT_GT(~0ULL, root_checks);

	agile_db_store(other->db, 0, 1);
	ASSERT_EQ(0, sleeper_join(other));
	ASSERT_EQ(0, other->ft.ret);
	ASSERT_EQ(0, agile_stats(other->fd, &st));
	ASSERT_EQ(1ULL, st.wakeups_poll);
	free(buf);
}

/*
 * The CPU cap: at CAP_PERMILLE thousandths of one CPU, the poller with
 * NR_CTXS sleepers takes no more than that share of CAP_PERIOD_MS (and
 * CAP_SLACK_NS), checks fewer conditions a tick than poll_max_checks
 * (poll_budget shows the lower budget), and still wakes every sleeper.
 * Not a timing: the bound is the module's own accounting (poll_ns)
 * against the time that passed, which a slow machine only lengthens.
 */
TEST_F_TIMEOUT(poller, cpu_cap, POLL_TIMEOUT_S)
{
	unsigned long long max_checks = 0, budget = 0;
	struct poll_stats a, b;
	__u64 start, elapsed;
	unsigned int i;

	if (self->skip)
		SKIP(return, "%s", self->skip);
	if (variant->max_checks)
		SKIP(return, "the default budget's test");
	ASSERT_EQ(0, agile_sysfs_write_u64("poll_cpu_permille", CAP_PERMILLE));

	for (i = 0; i < NR_CTXS; i++)
		sleeper_open(_metadata, &self->s[i], 1);
	for (i = 0; i < NR_CTXS; i++)
		ASSERT_EQ(0, sleeper_start(&self->s[i])) TH_LOG("thread %u", i);
	ASSERT_EQ(0, wait_all_asleep(self->s, NR_CTXS));
	ASSERT_EQ(0, agile_wait_poll_ticks(4));

	ASSERT_EQ(0, read_poll(&a));
	start = agile_now_ns();
	agile_sleep_ms(CAP_PERIOD_MS);
	ASSERT_EQ(0, read_poll(&b));
	elapsed = agile_now_ns() - start;
	ASSERT_LT(a.ticks, b.ticks);
	ASSERT_GE(elapsed / 1000 * CAP_PERMILLE + CAP_SLACK_NS, b.ns - a.ns)
	{
		TH_LOG("%llu ns in ticks of %llu ns", b.ns - a.ns,
		       (unsigned long long)elapsed);
	}
	ASSERT_EQ(0, agile_sysfs_read("poll_max_checks", &max_checks));
	ASSERT_EQ(0, agile_sysfs_read("poll_budget", &budget));
	ASSERT_GT(max_checks, budget);
	ASSERT_GT((b.ticks - a.ticks) * max_checks, b.checks - a.checks);

	for (i = 0; i < NR_CTXS; i++)
		agile_db_store(self->s[i].db, 0, 1);
	for (i = 0; i < NR_CTXS; i++) {
		ASSERT_EQ(0, sleeper_join(&self->s[i]));
		ASSERT_EQ(0, self->s[i].ft.ret) TH_LOG("sleeper %u", i);
	}
}

/*
 * Contexts that the poller may still have on its list are released
 * while others sleep: closed right after their sleeper was woken by
 * SIGNAL, or closed while their sleeper sleeps (the file is released
 * when the poller's wake-up returns).  The others are all woken after.
 */
TEST_F_TIMEOUT(poller, contexts_closed_while_others_sleep, POLL_TIMEOUT_S)
{
	const unsigned int first_churn = NR_CTXS - 2;
	unsigned long long contexts = 0, base = 0;
	unsigned int i, round;
	struct sleeper *c;

	if (self->skip)
		SKIP(return, "%s", self->skip);

	ASSERT_EQ(0, agile_sysfs_read("contexts", &base));
	for (i = 0; i < NR_CHURN_SLEEPERS; i++)
		sleeper_open(_metadata, &self->s[i], 1);
	for (i = 0; i < NR_CHURN_SLEEPERS; i++)
		ASSERT_EQ(0, sleeper_start(&self->s[i]));
	ASSERT_EQ(0, wait_all_asleep(self->s, NR_CHURN_SLEEPERS));

	for (round = 0; round < CHURN_ROUNDS; round++) {
		c = &self->s[first_churn + round % 2];
		sleeper_open(_metadata, c, 1);
		ASSERT_EQ(0, sleeper_start(c));
		ASSERT_EQ(0, agile_db_wait_sleepers(c->db, 0, 1,
						    AGILE_TEST_WAIT_MS));
		if (round % 2) {
			/* Released by the sleeper's thread as it returns. */
			close(c->fd);
			c->fd = -1;
			agile_db_store(c->db, 0, 1);
		} else {
			ASSERT_EQ(0, agile_signal(c->fd, 0, 1));
		}
		ASSERT_EQ(0, sleeper_join(c));
		ASSERT_EQ(0, c->ft.ret) TH_LOG("round %u", round);
		sleeper_close(c);
	}

	for (i = 0; i < NR_CHURN_SLEEPERS; i++)
		agile_db_store(self->s[i].db, 0, 1);
	for (i = 0; i < NR_CHURN_SLEEPERS; i++) {
		ASSERT_EQ(0, sleeper_join(&self->s[i]));
		ASSERT_EQ(0, self->s[i].ft.ret) TH_LOG("sleeper %u", i);
		sleeper_close(&self->s[i]);
	}
	ASSERT_EQ(0, wait_sysfs("poll_contexts", 0));
	ASSERT_EQ(0, agile_sysfs_read("contexts", &contexts));
	ASSERT_EQ(base, contexts);
}

TEST_HARNESS_MAIN
