// SPDX-License-Identifier: GPL-2.0-only
/*
 * AGILE_IOC_WAIT_ANY: the lowest index that holds, timeouts, wakes by
 * SIGNAL and by the poller, signals (EINTR or a restart with the time
 * left), and every bad input.
 */
#include "agile_test.h"

#define NR_SLOTS AGILE_WAIT_ANY_MAX

FIXTURE(ctx)
{
	int fd;
	struct agile_ctx_init init;
	struct agile_doorbell *db;
};

FIXTURE_SETUP(ctx)
{
	agile_db_fixture_setup(_metadata, &self->fd, NR_SLOTS, &self->init,
			       &self->db);
}

FIXTURE_TEARDOWN(ctx)
{
	agile_db_fixture_teardown(self->fd, &self->init, self->db);
}

static struct agile_wait_cond cond(__u32 slot, __u32 cmp, __u32 value)
{
	struct agile_wait_cond c = { .slot = slot, .cmp = cmp, .value = value };

	return c;
}

TEST_F(ctx, lowest_index)
{
	struct agile_wait_cond conds[4];
	__u32 index, observed;

	ASSERT_EQ(0, agile_signal(self->fd, 2, 1));
	ASSERT_EQ(0, agile_signal(self->fd, 5, 1));
	conds[0] = cond(0, AGILE_CMP_EQ, 1);
	conds[1] = cond(5, AGILE_CMP_EQ, 1);
	conds[2] = cond(2, AGILE_CMP_EQ, 1);
	conds[3] = cond(7, AGILE_CMP_NE, 0);
	/* Index in the array, not slot number: 5 comes before 2 here. */
	ASSERT_EQ(0,
		  agile_wait_any(self->fd, conds, 4, 0, 0, &index, &observed));
	ASSERT_EQ(1U, index);
	ASSERT_EQ(1U, observed);

	conds[0] = cond(0, AGILE_CMP_EQ, 0);
	ASSERT_EQ(0, agile_wait_any(self->fd, conds, 4, 0,
				    AGILE_TIMEOUT_INFINITE, &index, &observed));
	ASSERT_EQ(0U, index);
	ASSERT_EQ(0U, observed);
}

TEST_F(ctx, observed_value)
{
	struct agile_wait_cond conds[2];
	__u32 index, observed;

	ASSERT_EQ(0, agile_signal(self->fd, 9, 42));
	conds[0] = cond(8, AGILE_CMP_GT, 0);
	conds[1] = cond(9, AGILE_CMP_GE, 40);
	ASSERT_EQ(0, agile_wait_any(self->fd, conds, 2, 0, NSEC_PER_SEC, &index,
				    &observed));
	ASSERT_EQ(1U, index);
	ASSERT_EQ(42U, observed);
}

/* All AGILE_WAIT_ANY_MAX conditions are looked at. */
TEST_F(ctx, max_conds)
{
	struct agile_wait_cond conds[AGILE_WAIT_ANY_MAX];
	__u32 i, index, observed;

	for (i = 0; i < AGILE_WAIT_ANY_MAX; i++)
		conds[i] = cond(i, AGILE_CMP_EQ, i + 1);
	ASSERT_EQ(-ETIMEDOUT,
		  agile_wait_any(self->fd, conds, AGILE_WAIT_ANY_MAX, 0, 0,
				 &index, &observed));
	ASSERT_EQ(0, agile_signal(self->fd, AGILE_WAIT_ANY_MAX - 1,
				  AGILE_WAIT_ANY_MAX));
	ASSERT_EQ(0, agile_wait_any(self->fd, conds, AGILE_WAIT_ANY_MAX, 0, 0,
				    &index, &observed));
	ASSERT_EQ((__u32)AGILE_WAIT_ANY_MAX - 1, index);
	ASSERT_EQ((__u32)AGILE_WAIT_ANY_MAX, observed);
}

TEST_F(ctx, timeout_zero)
{
	struct agile_wait_cond conds[2] = {
		cond(1, AGILE_CMP_EQ, 1),
		cond(2, AGILE_CMP_GT, 0),
	};
	struct agile_stats st;

	ASSERT_EQ(-ETIMEDOUT,
		  agile_wait_any(self->fd, conds, 2, 0, 0, NULL, NULL));
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(1ULL, st.waits);
	ASSERT_EQ(1ULL, st.timeouts);
}

TEST_F(ctx, timeout_relative)
{
	const __u64 timeout = 200 * NSEC_PER_MSEC;
	struct agile_wait_cond conds[3] = {
		cond(1, AGILE_CMP_EQ, 1),
		cond(2, AGILE_CMP_GT, 0),
		cond(3, AGILE_CMP_LT, 0),
	};
	struct agile_stats st;
	__u64 start, elapsed;

	start = agile_now_ns();
	ASSERT_EQ(-ETIMEDOUT,
		  agile_wait_any(self->fd, conds, 3, 0, timeout, NULL, NULL));
	elapsed = agile_now_ns() - start;
	ASSERT_LE(timeout, elapsed);
	ASSERT_GT(20 * NSEC_PER_SEC, elapsed);
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 1));
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 2));
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 3));
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(1ULL, st.timeouts);
}

TEST_F(ctx, timeout_absolute)
{
	struct agile_wait_cond conds[1] = { cond(4, AGILE_CMP_NE, 0) };
	__u64 deadline, end;

	deadline = agile_now_ns() + 200 * NSEC_PER_MSEC;
	ASSERT_EQ(-ETIMEDOUT,
		  agile_wait_any(self->fd, conds, 1, AGILE_WAIT_ABSTIME,
				 deadline, NULL, NULL));
	end = agile_now_ns();
	ASSERT_LE(deadline, end);
	/* Read as relative, the deadline would sleep about the uptime. */
	ASSERT_GT(deadline + deadline / 2 + NSEC_PER_SEC, end);

	/* In the past: one check. */
	ASSERT_EQ(-ETIMEDOUT,
		  agile_wait_any(self->fd, conds, 1, AGILE_WAIT_ABSTIME, 1,
				 NULL, NULL));
	conds[0].cmp = AGILE_CMP_EQ;
	ASSERT_EQ(0, agile_wait_any(self->fd, conds, 1, AGILE_WAIT_ABSTIME, 1,
				    NULL, NULL));
}

TEST_F(ctx, bad_nr_conds)
{
	struct agile_wait_cond conds[AGILE_WAIT_ANY_MAX + 1];
	static const __u32 bad[] = { 0, AGILE_WAIT_ANY_MAX + 1, 1000,
				     0x80000000, 0xffffffff };
	unsigned int i;

	/* Conditions that hold at once: only nr_conds is wrong. */
	for (i = 0; i < ARRAY_SIZE(conds); i++)
		conds[i] = cond(0, AGILE_CMP_EQ, 0);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		ASSERT_EQ(-EINVAL, agile_wait_any(self->fd, conds, bad[i], 0, 0,
						  NULL, NULL))
		{
			TH_LOG("nr_conds %u", bad[i]);
		}
}

TEST_F(ctx, bad_flags)
{
	struct agile_wait_cond conds[1] = { cond(0, AGILE_CMP_EQ, 0) };
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		if ((1U << bit) == AGILE_WAIT_ABSTIME)
			continue;
		ASSERT_EQ(-EINVAL, agile_wait_any(self->fd, conds, 1, 1U << bit,
						  0, NULL, NULL))
		{
			TH_LOG("flags %#x", 1U << bit);
		}
	}
}

TEST_F(ctx, bad_reserved)
{
	struct agile_wait_cond conds[1] = { cond(0, AGILE_CMP_EQ, 0) };
	struct agile_wait_any any;
	unsigned int r;

	for (r = 0; r < ARRAY_SIZE(any.reserved); r++) {
		memset(&any, 0, sizeof(any));
		any.conds = (__u64)(uintptr_t)conds;
		any.nr_conds = 1;
		any.reserved[r] = 1;
		ASSERT_EQ(-EINVAL,
			  agile_ioctl(self->fd, AGILE_IOC_WAIT_ANY, &any));
	}
}

/* One bad condition anywhere fails the call, even after one that holds. */
static void check_bad_cond(struct __test_metadata *_metadata, int fd,
			   struct agile_wait_cond bad)
{
	struct agile_wait_cond conds[AGILE_WAIT_ANY_MAX];
	unsigned int i;

	conds[0] = bad;
	ASSERT_EQ(-EINVAL, agile_wait_any(fd, conds, 1, 0, 0, NULL, NULL));
	for (i = 0; i < AGILE_WAIT_ANY_MAX; i++)
		conds[i] = cond(i, AGILE_CMP_EQ, 0);
	conds[AGILE_WAIT_ANY_MAX - 1] = bad;
	ASSERT_EQ(-EINVAL, agile_wait_any(fd, conds, AGILE_WAIT_ANY_MAX, 0, 0,
					  NULL, NULL))
	{
		TH_LOG("slot %u cmp %u pad %u", bad.slot, bad.cmp, bad.pad);
	}
	conds[1] = bad;
	ASSERT_EQ(-EINVAL, agile_wait_any(fd, conds, 2, 0,
					  AGILE_TIMEOUT_INFINITE, NULL, NULL));
}

TEST_F(ctx, bad_cond_pad)
{
	struct agile_wait_cond bad = cond(0, AGILE_CMP_EQ, 0);

	bad.pad = 1;
	check_bad_cond(_metadata, self->fd, bad);
	bad.pad = 0x80000000;
	check_bad_cond(_metadata, self->fd, bad);
}

TEST_F(ctx, bad_cond_slot)
{
	check_bad_cond(_metadata, self->fd, cond(NR_SLOTS, AGILE_CMP_EQ, 0));
	check_bad_cond(_metadata, self->fd, cond(0xffffffff, AGILE_CMP_EQ, 0));
}

TEST_F(ctx, bad_cond_cmp)
{
	check_bad_cond(_metadata, self->fd, cond(0, AGILE_CMP_LE + 1, 0));
	check_bad_cond(_metadata, self->fd, cond(0, 0xffffffff, 0));
}

TEST_F(ctx, efault)
{
	long page = sysconf(_SC_PAGESIZE);
	struct agile_wait_cond *conds;
	unsigned char *map;
	unsigned int i;

	ASSERT_EQ(-EFAULT, agile_wait_any(self->fd, NULL, 1, 0, 0, NULL, NULL));
	ASSERT_EQ(-EFAULT, agile_ioctl(self->fd, AGILE_IOC_WAIT_ANY, NULL));

	/* Two pages, the second inaccessible. */
	map = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, mprotect(map + page, (size_t)page, PROT_NONE));

	/* Wholly inaccessible. */
	conds = (struct agile_wait_cond *)(map + page);
	ASSERT_EQ(-EFAULT,
		  agile_wait_any(self->fd, conds, 1, 0, 0, NULL, NULL));

	/* The array runs into the inaccessible page; the first cond holds. */
	conds = (struct agile_wait_cond *)(map + page) - 2;
	for (i = 0; i < 2; i++)
		conds[i] = cond(i, AGILE_CMP_EQ, 0);
	ASSERT_EQ(0, agile_wait_any(self->fd, conds, 2, 0, 0, NULL, NULL));
	ASSERT_EQ(-EFAULT,
		  agile_wait_any(self->fd, conds, 3, 0, 0, NULL, NULL));
	ASSERT_EQ(-EFAULT, agile_wait_any(self->fd, conds, AGILE_WAIT_ANY_MAX,
					  0, 0, NULL, NULL));
	munmap(map, 2 * (size_t)page);
}

/* A thread sleeping in WAIT_ANY. */
struct any_thread {
	pthread_t thread;
	int fd;
	struct agile_wait_cond conds[AGILE_WAIT_ANY_MAX];
	__u32 nr_conds;
	__u64 timeout_ns;
	__u32 index, observed;
	struct agile_sleep_probe probe;
	int ret;
};

static void *any_thread_fn(void *arg)
{
	struct any_thread *t = arg;

	agile_probe_arm(&t->probe);
	t->ret = agile_wait_any(t->fd, t->conds, t->nr_conds, 0, t->timeout_ns,
				&t->index, &t->observed);
	return NULL;
}

/* Wait until @slot's sleeper count is not 0. */
static int wait_sleepers_nonzero(struct agile_doorbell *db, __u32 slot)
{
	__u64 deadline = agile_now_ns() + AGILE_TEST_WAIT_MS * NSEC_PER_MSEC;

	while (!agile_db_sleepers(db, slot)) {
		if (agile_now_ns() > deadline)
			return -ETIMEDOUT;
		agile_sleep_ms(1);
	}
	return 0;
}

TEST_F(ctx, signal_wakes)
{
	struct any_thread t = {
		.fd = self->fd,
		.nr_conds = 3,
		.timeout_ns = AGILE_TIMEOUT_INFINITE,
		.conds = { cond(3, AGILE_CMP_EQ, 1), cond(6, AGILE_CMP_EQ, 1),
			   cond(9, AGILE_CMP_GE, 5) },
	};
	struct agile_stats st;

	ASSERT_EQ(0, pthread_create(&t.thread, NULL, any_thread_fn, &t));
	/* Asleep, and counted on every slot it watches. */
	ASSERT_EQ(0, agile_wait_asleep(&t.probe, self->db, 3, 1,
				       AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0,
		  agile_db_wait_sleepers(self->db, 6, 1, AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0,
		  agile_db_wait_sleepers(self->db, 9, 1, AGILE_TEST_WAIT_MS));
	/* Not a match for slot 9's condition. */
	ASSERT_EQ(0, agile_signal(self->fd, 9, 4));
	ASSERT_EQ(0, agile_signal(self->fd, 6, 1));
	ASSERT_EQ(0, pthread_join(t.thread, NULL));
	ASSERT_EQ(0, t.ret);
	ASSERT_EQ(1U, t.index);
	ASSERT_EQ(1U, t.observed);
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 3));
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 6));
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 9));
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(1ULL, st.waits);
	ASSERT_EQ(1ULL, st.wakeups_signal + st.wakeups_poll);
}

TEST_F(ctx, plain_store_wakes)
{
	struct any_thread t = {
		.fd = self->fd,
		.nr_conds = 2,
		.timeout_ns = 20 * NSEC_PER_SEC,
		.conds = { cond(10, AGILE_CMP_EQ, 1),
			   cond(11, AGILE_CMP_NE, 0) },
	};
	struct agile_stats st;
	__u64 stored;

	ASSERT_EQ(0, pthread_create(&t.thread, NULL, any_thread_fn, &t));
	ASSERT_EQ(0, agile_wait_asleep(&t.probe, self->db, 11, 1,
				       AGILE_TEST_WAIT_MS));
	stored = agile_now_ns();
	agile_db_store(self->db, 11, 3);
	ASSERT_EQ(0, pthread_join(t.thread, NULL));
	ASSERT_EQ(0, t.ret) TH_LOG("the poller never woke the sleeper");
	ASSERT_GT(5 * NSEC_PER_SEC, agile_now_ns() - stored);
	ASSERT_EQ(1U, t.index);
	ASSERT_EQ(3U, t.observed);
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 10));
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 11));
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(1ULL, st.wakeups_poll);
}

/* Two conditions on one slot: the one the new value meets is reported. */
TEST_F(ctx, duplicate_slots)
{
	struct any_thread t = {
		.fd = self->fd,
		.nr_conds = 2,
		.timeout_ns = AGILE_TIMEOUT_INFINITE,
		.conds = { cond(1, AGILE_CMP_EQ, 5), cond(1, AGILE_CMP_EQ, 7) },
	};

	ASSERT_EQ(0, pthread_create(&t.thread, NULL, any_thread_fn, &t));
	ASSERT_EQ(0, wait_sleepers_nonzero(self->db, 1));
	ASSERT_EQ(0, agile_signal(self->fd, 1, 7));
	ASSERT_EQ(0, pthread_join(t.thread, NULL));
	ASSERT_EQ(0, t.ret);
	ASSERT_EQ(1U, t.index);
	ASSERT_EQ(7U, t.observed);
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 1));
}

/* WAIT_ANY sleepers and FENCE WAIT sleepers on one slot all wake. */
TEST_F(ctx, mixed_with_fence_wait)
{
	struct any_thread t = {
		.fd = self->fd,
		.nr_conds = 2,
		.timeout_ns = AGILE_TIMEOUT_INFINITE,
		.conds = { cond(20, AGILE_CMP_EQ, 1),
			   cond(21, AGILE_CMP_EQ, 1) },
	};
	struct agile_fence_thread ft;

	ASSERT_EQ(0, pthread_create(&t.thread, NULL, any_thread_fn, &t));
	ASSERT_EQ(0,
		  agile_db_wait_sleepers(self->db, 21, 1, AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0, agile_fence_thread_start(&ft, self->fd, 21, AGILE_CMP_GE,
					      1, AGILE_TIMEOUT_INFINITE));
	ASSERT_EQ(0,
		  agile_db_wait_sleepers(self->db, 21, 2, AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0, agile_signal(self->fd, 21, 1));
	ASSERT_EQ(0, pthread_join(t.thread, NULL));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, t.ret);
	ASSERT_EQ(1U, t.index);
	ASSERT_EQ(0, ft.ret);
	ASSERT_EQ(1U, ft.fence.observed);
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 20));
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 21));
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	alarms++;
}

/*
 * Interrupted by a handler: EINTR and the time left written back without
 * SA_RESTART; restarted, and ended by its condition, with it.
 */
static void check_interrupted(struct __test_metadata *_metadata,
			      FIXTURE_DATA(ctx) * self, int sa_flags)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = sa_flags };
	struct agile_wait_cond conds[2] = {
		cond(30, AGILE_CMP_EQ, 1),
		cond(31, AGILE_CMP_EQ, 1),
	};
	const __u64 timeout = 60 * NSEC_PER_SEC;
	struct agile_wait_any any = {
		.conds = (__u64)(uintptr_t)conds,
		.nr_conds = 2,
		.timeout_ns = timeout,
	};
	bool restart = sa_flags & SA_RESTART;
	struct agile_interrupter in;
	struct agile_stats st;
	int ret;

	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, agile_interrupter_start(&in, self->fd, self->db, 31,
					     restart, 1));
	ret = agile_ioctl(self->fd, AGILE_IOC_WAIT_ANY, &any);
	ASSERT_EQ(0, agile_interrupter_stop(&in));
	ASSERT_EQ(0, in.found) TH_LOG("the waiter never slept");
	ASSERT_LE(1, alarms);
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 30));
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 31));
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(1ULL, st.interrupted);
	ASSERT_GT(timeout, any.timeout_ns);
	ASSERT_LT(0ULL, any.timeout_ns);
	if (restart) {
		ASSERT_EQ(0, in.restarted) TH_LOG("not restarted");
		ASSERT_EQ(0, ret);
		ASSERT_EQ(1U, any.index);
		ASSERT_EQ(2ULL, st.waits);
	} else {
		ASSERT_EQ(-EINTR, ret);
		ASSERT_EQ(1ULL, st.waits);
	}
}

TEST_F(ctx, interrupted_eintr)
{
	check_interrupted(_metadata, self, 0);
}

TEST_F(ctx, interrupted_sa_restart)
{
	check_interrupted(_metadata, self, SA_RESTART);
}

/* Timeouts above KTIME_MAX other than AGILE_TIMEOUT_INFINITE: EINVAL. */
TEST_F(ctx, bad_timeout)
{
	static const __u64 bad[] = { 1ULL << 63, (1ULL << 63) + 1,
				     AGILE_TIMEOUT_INFINITE - 1 };
	struct agile_wait_cond conds[1] = { cond(0, AGILE_CMP_EQ, 0) };
	struct agile_stats st;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		ASSERT_EQ(-EINVAL, agile_wait_any(self->fd, conds, 1, 0, bad[i],
						  NULL, NULL));
		ASSERT_EQ(-EINVAL,
			  agile_wait_any(self->fd, conds, 1, AGILE_WAIT_ABSTIME,
					 bad[i], NULL, NULL));
	}
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(0ULL, st.waits);
	ASSERT_EQ(0, agile_wait_any(self->fd, conds, 1, 0, (1ULL << 63) - 1,
				    NULL, NULL));
	ASSERT_EQ(0, agile_wait_any(self->fd, conds, 1, AGILE_WAIT_ABSTIME,
				    AGILE_TIMEOUT_INFINITE, NULL, NULL));
}

TEST_HARNESS_MAIN
