// SPDX-License-Identifier: GPL-2.0-only
/*
 * AGILE_IOC_FENCE: SIGNAL stores and wakes, WAIT compares, times out, is
 * interrupted (EINTR, or restarted with the time left) and woken by
 * SIGNAL or by the poller, the sleeper count, WAKE_ONLY and BARRIER, and
 * every bad input of each op.
 */
#include "agile_test.h"

#define NR_SLOTS 8

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

static void check_values(struct __test_metadata *_metadata,
			 struct agile_doorbell *db, const __u32 *want)
{
	__u32 slot;

	for (slot = 0; slot < NR_SLOTS; slot++)
		ASSERT_EQ(want[slot], agile_db_value(db, slot))
		{
			TH_LOG("slot %u", slot);
		}
}

TEST_F(ctx, signal_store)
{
	__u32 want[NR_SLOTS] = { 0 };

	self->db[3].user[0] = 0x1234;
	ASSERT_EQ(0, agile_signal(self->fd, 3, 42));
	want[3] = 42;
	check_values(_metadata, self->db, want);
	/* Only the value word is the kernel's to store. */
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 3));
	ASSERT_EQ(0x1234U, self->db[3].user[0]);
	/* A later SIGNAL overwrites: it is a store, not a maximum. */
	ASSERT_EQ(0, agile_signal(self->fd, 3, 7));
	want[3] = 7;
	check_values(_metadata, self->db, want);
	ASSERT_EQ(0, agile_signal(self->fd, 3, 0xffffffff));
	want[3] = 0xffffffff;
	check_values(_metadata, self->db, want);
}

/* Slot k's doorbell word is at byte k * AGILE_DOORBELL_STRIDE. */
TEST_F(ctx, signal_layout)
{
	const unsigned char *bytes = (const unsigned char *)self->db;
	__u32 slot, word;

	for (slot = 0; slot < NR_SLOTS; slot++)
		ASSERT_EQ(0, agile_signal(self->fd, slot, 0x100 + slot));
	for (slot = 0; slot < NR_SLOTS; slot++) {
		memcpy(&word, bytes + slot * AGILE_DOORBELL_STRIDE,
		       sizeof(word));
		ASSERT_EQ(0x100 + slot, word);
	}
}

static void check_fence_rejected(struct __test_metadata *_metadata, int fd,
				 struct agile_doorbell *db,
				 const struct agile_fence *bad)
{
	static const __u32 zero[NR_SLOTS];
	struct agile_fence fence = *bad;

	ASSERT_EQ(-EINVAL, agile_fence(fd, &fence))
	{
		TH_LOG("op %u slot %u value %u cmp %u flags %#x timeout %llu reserved %llx %llx",
		       bad->op, bad->slot, bad->value, bad->cmp, bad->flags,
		       (unsigned long long)bad->timeout_ns,
		       (unsigned long long)bad->reserved[0],
		       (unsigned long long)bad->reserved[1]);
	}
	/* Nothing was stored. */
	check_values(_metadata, db, zero);
}

TEST_F(ctx, signal_bad_slot)
{
	struct agile_fence f = { .op = AGILE_FENCE_SIGNAL, .value = 1 };

	f.slot = NR_SLOTS;
	check_fence_rejected(_metadata, self->fd, self->db, &f);
	f.slot = 4096;
	check_fence_rejected(_metadata, self->fd, self->db, &f);
	f.slot = 0xffffffff;
	check_fence_rejected(_metadata, self->fd, self->db, &f);
	f.slot = 0x80000000;
	check_fence_rejected(_metadata, self->fd, self->db, &f);
}

TEST_F(ctx, signal_bad_cmp)
{
	struct agile_fence f = { .op = AGILE_FENCE_SIGNAL, .value = 1 };

	f.cmp = AGILE_CMP_NE;
	check_fence_rejected(_metadata, self->fd, self->db, &f);
	f.cmp = AGILE_CMP_LE;
	check_fence_rejected(_metadata, self->fd, self->db, &f);
	f.cmp = 0xffffffff;
	check_fence_rejected(_metadata, self->fd, self->db, &f);
}

TEST_F(ctx, signal_bad_timeout)
{
	struct agile_fence f = { .op = AGILE_FENCE_SIGNAL, .value = 1 };

	f.timeout_ns = 1;
	check_fence_rejected(_metadata, self->fd, self->db, &f);
	f.timeout_ns = AGILE_TIMEOUT_INFINITE;
	check_fence_rejected(_metadata, self->fd, self->db, &f);
}

TEST_F(ctx, signal_bad_flags)
{
	struct agile_fence f = { .op = AGILE_FENCE_SIGNAL, .value = 1 };
	unsigned int bit;

	/* ABSTIME is a wait flag; every other bit but WAKE_ONLY is unknown. */
	for (bit = 1; bit < 32; bit++) {
		f.flags = 1U << bit;
		check_fence_rejected(_metadata, self->fd, self->db, &f);
	}
	f.flags = AGILE_SIGNAL_WAKE_ONLY | AGILE_WAIT_ABSTIME;
	check_fence_rejected(_metadata, self->fd, self->db, &f);
}

TEST_F(ctx, bad_op)
{
	static const __u32 ops[] = { AGILE_FENCE_BARRIER + 1, 4, 0x100,
				     0x80000000, 0xffffffff };
	struct agile_fence f = { .slot = 0, .value = 1 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		f.op = ops[i];
		check_fence_rejected(_metadata, self->fd, self->db, &f);
	}
}

TEST_F(ctx, bad_reserved)
{
	static const __u32 ops[] = { AGILE_FENCE_SIGNAL, AGILE_FENCE_WAIT,
				     AGILE_FENCE_BARRIER };
	struct agile_fence f;
	unsigned int i, r;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		for (r = 0; r < ARRAY_SIZE(f.reserved); r++) {
			memset(&f, 0, sizeof(f));
			f.op = ops[i];
			/*
			 * Valid but for the reserved word: the WAIT would
			 * succeed at once (slot 0 EQ 0), the SIGNAL store 1.
			 */
			if (f.op == AGILE_FENCE_SIGNAL)
				f.value = 1;
			f.reserved[r] = 1;
			check_fence_rejected(_metadata, self->fd, self->db, &f);
		}
	}
}

TEST_F(ctx, wait_bad_slot)
{
	struct agile_fence f = { .op = AGILE_FENCE_WAIT, .cmp = AGILE_CMP_EQ };

	f.slot = NR_SLOTS;
	check_fence_rejected(_metadata, self->fd, self->db, &f);
	f.slot = 0xffffffff;
	check_fence_rejected(_metadata, self->fd, self->db, &f);
	f.timeout_ns = NSEC_PER_SEC;
	f.slot = NR_SLOTS + 1;
	check_fence_rejected(_metadata, self->fd, self->db, &f);
}

TEST_F(ctx, wait_bad_cmp)
{
	static const __u32 cmps[] = { AGILE_CMP_LE + 1, 7, 0x100, 0xffffffff };
	struct agile_fence f = { .op = AGILE_FENCE_WAIT };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cmps); i++) {
		f.cmp = cmps[i];
		check_fence_rejected(_metadata, self->fd, self->db, &f);
	}
}

TEST_F(ctx, wait_bad_flags)
{
	struct agile_fence f = { .op = AGILE_FENCE_WAIT, .cmp = AGILE_CMP_EQ };
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		if ((1U << bit) == AGILE_WAIT_ABSTIME)
			continue;
		f.flags = 1U << bit;
		check_fence_rejected(_metadata, self->fd, self->db, &f);
		f.flags |= AGILE_WAIT_ABSTIME;
		check_fence_rejected(_metadata, self->fd, self->db, &f);
	}
}

TEST_F(ctx, barrier)
{
	struct agile_stats st;

	ASSERT_EQ(0, agile_barrier(self->fd));
	ASSERT_EQ(0, agile_barrier(self->fd));
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(0ULL, st.signals);
	ASSERT_EQ(0ULL, st.waits);
}

TEST_F(ctx, barrier_bad_fields)
{
	struct agile_fence f;
	unsigned int i;

	for (i = 0; i < 6; i++) {
		memset(&f, 0, sizeof(f));
		f.op = AGILE_FENCE_BARRIER;
		switch (i) {
		case 0:
			f.slot = 1;
			break;
		case 1:
			f.value = 1;
			break;
		case 2:
			f.cmp = AGILE_CMP_NE;
			break;
		case 3:
			f.flags = AGILE_SIGNAL_WAKE_ONLY;
			break;
		case 4:
			f.flags = AGILE_WAIT_ABSTIME;
			break;
		case 5:
			f.timeout_ns = 1;
			break;
		}
		check_fence_rejected(_metadata, self->fd, self->db, &f);
	}
}

/* Every comparison, unsigned, against values below, equal and above. */
TEST_F(ctx, wait_comparisons)
{
	static const struct {
		__u32 db, cmp, value;
		bool holds;
	} cases[] = {
		{ 5, AGILE_CMP_EQ, 5, true },
		{ 5, AGILE_CMP_EQ, 4, false },
		{ 5, AGILE_CMP_EQ, 6, false },
		{ 5, AGILE_CMP_NE, 5, false },
		{ 5, AGILE_CMP_NE, 4, true },
		{ 5, AGILE_CMP_NE, 6, true },
		{ 5, AGILE_CMP_GE, 4, true },
		{ 5, AGILE_CMP_GE, 5, true },
		{ 5, AGILE_CMP_GE, 6, false },
		{ 5, AGILE_CMP_LT, 4, false },
		{ 5, AGILE_CMP_LT, 5, false },
		{ 5, AGILE_CMP_LT, 6, true },
		{ 5, AGILE_CMP_GT, 4, true },
		{ 5, AGILE_CMP_GT, 5, false },
		{ 5, AGILE_CMP_GT, 6, false },
		{ 5, AGILE_CMP_LE, 4, false },
		{ 5, AGILE_CMP_LE, 5, true },
		{ 5, AGILE_CMP_LE, 6, true },
		/* Unsigned: 0x80000000 and 0xffffffff are large, not negative. */
		{ 0x80000000, AGILE_CMP_GT, 1, true },
		{ 0x80000000, AGILE_CMP_LT, 1, false },
		{ 0xffffffff, AGILE_CMP_GE, 0x7fffffff, true },
		{ 0xffffffff, AGILE_CMP_LE, 0, false },
		{ 0, AGILE_CMP_LT, 0xffffffff, true },
		{ 0, AGILE_CMP_GE, 0x80000000, false },
		{ 0, AGILE_CMP_LE, 0, true },
		{ 0xffffffff, AGILE_CMP_EQ, 0xffffffff, true },
	};
	struct agile_stats st;
	unsigned int i;
	__u32 observed;
	int ret;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		ASSERT_EQ(0, agile_signal(self->fd, 1, cases[i].db));
		ret = agile_wait(self->fd, 1, cases[i].cmp, cases[i].value, 0,
				 &observed);
		ASSERT_EQ(cases[i].holds ? 0 : -ETIMEDOUT, ret)
		{
			TH_LOG("case %u: %#x cmp %u %#x", i, cases[i].db,
			       cases[i].cmp, cases[i].value);
		}
		/* observed is copied back on success and on ETIMEDOUT. */
		ASSERT_EQ(cases[i].db, observed) TH_LOG("case %u", i);
	}
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ((__u64)ARRAY_SIZE(cases), st.waits);
	ASSERT_EQ((__u64)ARRAY_SIZE(cases), st.signals);
}

/* A plain store before the ioctl is seen at the first check. */
TEST_F(ctx, store_before_wait)
{
	struct agile_stats st;
	__u32 observed;

	agile_db_store(self->db, 6, 3);
	ASSERT_EQ(0, agile_wait(self->fd, 6, AGILE_CMP_GE, 2,
				AGILE_TIMEOUT_INFINITE, &observed));
	ASSERT_EQ(3U, observed);
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(1ULL, st.waits);
	ASSERT_EQ(1ULL, st.spin_hits);
	ASSERT_EQ(0ULL, st.timeouts);
}

TEST_F(ctx, timeout_zero)
{
	struct agile_stats st;
	__u32 observed;

	agile_db_store(self->db, 0, 9);
	ASSERT_EQ(-ETIMEDOUT,
		  agile_wait(self->fd, 0, AGILE_CMP_EQ, 10, 0, &observed));
	ASSERT_EQ(9U, observed);
	ASSERT_EQ(0, agile_wait(self->fd, 0, AGILE_CMP_EQ, 9, 0, &observed));
	ASSERT_EQ(9U, observed);
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(2ULL, st.waits);
	ASSERT_EQ(1ULL, st.timeouts);
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 0));
}

TEST_F(ctx, timeout_relative)
{
	const __u64 timeout = 200 * NSEC_PER_MSEC;
	struct agile_stats st;
	__u64 start, elapsed;
	__u32 observed;

	agile_db_store(self->db, 2, 1);
	start = agile_now_ns();
	ASSERT_EQ(-ETIMEDOUT,
		  agile_wait(self->fd, 2, AGILE_CMP_EQ, 2, timeout, &observed));
	elapsed = agile_now_ns() - start;
	ASSERT_EQ(1U, observed);
	/* Never early; late only by a bound no working guest reaches. */
	ASSERT_LE(timeout, elapsed);
	ASSERT_GT(20 * NSEC_PER_SEC, elapsed);
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(1ULL, st.timeouts);
	ASSERT_EQ(0ULL, st.wakeups_signal);
	ASSERT_EQ(0ULL, st.wakeups_poll);
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 2));
}

TEST_F(ctx, timeout_absolute)
{
	struct agile_stats st;
	__u64 deadline, end;
	__u32 observed;

	deadline = agile_now_ns() + 200 * NSEC_PER_MSEC;
	ASSERT_EQ(-ETIMEDOUT,
		  agile_wait_flags(self->fd, 4, AGILE_CMP_NE, 0, deadline,
				   AGILE_WAIT_ABSTIME, &observed));
	end = agile_now_ns();
	ASSERT_EQ(0U, observed);
	ASSERT_LE(deadline, end);
	/*
	 * Read as relative, the deadline would sleep about the uptime: far
	 * longer than this bound once the guest has run a few seconds.
	 */
	ASSERT_GT(deadline + deadline / 2 + NSEC_PER_SEC, end);
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(1ULL, st.timeouts);
}

/* ABSTIME in the past checks once: ETIMEDOUT, or 0 when it holds. */
TEST_F(ctx, timeout_absolute_past)
{
	__u64 past[] = { 0, 1, agile_now_ns() - NSEC_PER_MSEC };
	__u64 start, now;
	unsigned int i;
	__u32 observed;

	for (i = 0; i < ARRAY_SIZE(past); i++) {
		start = agile_now_ns();
		ASSERT_EQ(-ETIMEDOUT,
			  agile_wait_flags(self->fd, 5, AGILE_CMP_EQ, 1,
					   past[i], AGILE_WAIT_ABSTIME,
					   &observed));
		/* At once; read as relative, "now - 1 ms" sleeps ~uptime. */
		now = agile_now_ns();
		ASSERT_GT(start / 2 + NSEC_PER_SEC, now - start);
		ASSERT_EQ(0U, observed);
		ASSERT_EQ(0, agile_wait_flags(self->fd, 5, AGILE_CMP_EQ, 0,
					      past[i], AGILE_WAIT_ABSTIME,
					      &observed));
	}
}

/*
 * Start a waiter thread on @slot and return once it sleeps, with the
 * mirrored sleeper count of @slot reading @sleepers.
 */
static void start_sleeper(struct __test_metadata *_metadata,
			  FIXTURE_DATA(ctx) * self,
			  struct agile_fence_thread *ft, __u32 slot, __u32 cmp,
			  __u32 value, __u64 timeout_ns, __u32 sleepers)
{
	ASSERT_EQ(0, agile_fence_thread_start(ft, self->fd, slot, cmp, value,
					      timeout_ns));
	ASSERT_EQ(0, agile_wait_asleep(&ft->probe, self->db, slot, sleepers,
				       AGILE_TEST_WAIT_MS))
	{
		TH_LOG("slot %u: sleepers %u, waiter ret %d", slot,
		       agile_db_sleepers(self->db, slot), ft->ret);
	}
}

TEST_F(ctx, signal_wakes_sleeper)
{
	struct agile_fence_thread ft;
	struct agile_stats st;

	start_sleeper(_metadata, self, &ft, 3, AGILE_CMP_EQ, 1,
		      AGILE_TIMEOUT_INFINITE, 1);
	ASSERT_EQ(0, agile_signal(self->fd, 3, 1));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, ft.ret);
	ASSERT_EQ(1U, ft.fence.observed);
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 3));

	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(1ULL, st.signals);
	ASSERT_EQ(1ULL, st.waits);
	/* The SIGNAL wakes at once, though the poller may win the race. */
	ASSERT_EQ(1ULL, st.wakeups_signal + st.wakeups_poll);
	ASSERT_EQ(0ULL, st.spin_hits);
	ASSERT_EQ(0ULL, st.timeouts);
	ASSERT_EQ(0ULL, st.interrupted);
}

/*
 * SIGNAL itself wakes the sleeper: with the poller slowed to one tick a
 * second, the wake-up is counted as SIGNAL's, not the poller's.
 */
TEST_F(ctx, signal_wakes_sleeper_not_poller)
{
	/* static: the harness's setjmp() would clobber an automatic. */
	static unsigned long long interval;
	struct agile_fence_thread ft;
	struct agile_stats st;

	if (access(AGILE_SYSFS_DIR, F_OK))
		SKIP(return, "%s missing", AGILE_SYSFS_DIR);
	ASSERT_EQ(0, agile_sysfs_read("poll_interval_us", &interval));
	ASSERT_EQ(0, agile_sysfs_write_u64("poll_interval_us", 1000000));
	start_sleeper(_metadata, self, &ft, 4, AGILE_CMP_EQ, 1,
		      30 * NSEC_PER_SEC, 1);
	ASSERT_EQ(0, agile_signal(self->fd, 4, 1));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	EXPECT_EQ(0, agile_sysfs_write_u64("poll_interval_us", interval));
	ASSERT_EQ(0, ft.ret);
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(1ULL, st.wakeups_signal)
	{
		TH_LOG("poll %llu", (unsigned long long)st.wakeups_poll);
	}
	ASSERT_EQ(0ULL, st.wakeups_poll);
}

/* A plain store, no system call: the poller wakes the sleeper. */
TEST_F(ctx, plain_store_wakes_sleeper)
{
	struct agile_fence_thread ft;
	struct agile_stats st;
	__u64 stored;

	start_sleeper(_metadata, self, &ft, 2, AGILE_CMP_GE, 5,
		      20 * NSEC_PER_SEC, 1);
	stored = agile_now_ns();
	agile_db_store(self->db, 2, 6);
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, ft.ret) TH_LOG("the poller never woke the sleeper");
	ASSERT_EQ(6U, ft.fence.observed);
	/* About poll_interval_us; seconds only on a very slow guest. */
	ASSERT_GT(5 * NSEC_PER_SEC, agile_now_ns() - stored);
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 2));

	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(0ULL, st.signals);
	ASSERT_EQ(1ULL, st.wakeups_poll);
	ASSERT_EQ(0ULL, st.wakeups_signal);
}

/* A SIGNAL whose value does not satisfy the waiter leaves it asleep. */
TEST_F(ctx, signal_not_matching_keeps_sleeping)
{
	struct agile_fence_thread ft;

	start_sleeper(_metadata, self, &ft, 1, AGILE_CMP_EQ, 5,
		      AGILE_TIMEOUT_INFINITE, 1);
	ASSERT_EQ(0, agile_signal(self->fd, 1, 4));
	ASSERT_EQ(0, agile_signal(self->fd, 1, 6));
	agile_sleep_ms(100);
	ASSERT_EQ(EBUSY, pthread_tryjoin_np(ft.thread, NULL));
	ASSERT_EQ(1U, agile_db_sleepers(self->db, 1));
	ASSERT_EQ(0, agile_signal(self->fd, 1, 5));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, ft.ret);
	ASSERT_EQ(5U, ft.fence.observed);
}

/* NE waits for a change: storing the same value does not count. */
TEST_F(ctx, wait_ne_wakes_on_change)
{
	struct agile_fence_thread ft;

	ASSERT_EQ(0, agile_signal(self->fd, 0, 8));
	start_sleeper(_metadata, self, &ft, 0, AGILE_CMP_NE, 8,
		      AGILE_TIMEOUT_INFINITE, 1);
	ASSERT_EQ(0, agile_signal(self->fd, 0, 8));
	agile_sleep_ms(50);
	ASSERT_EQ(EBUSY, pthread_tryjoin_np(ft.thread, NULL));
	ASSERT_EQ(0, agile_signal(self->fd, 0, 9));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, ft.ret);
	ASSERT_EQ(9U, ft.fence.observed);
}

/* A SIGNAL on one slot wakes that slot's sleepers only. */
TEST_F(ctx, signal_wakes_only_its_slot)
{
	struct agile_fence_thread a, b;

	start_sleeper(_metadata, self, &a, 1, AGILE_CMP_EQ, 1,
		      AGILE_TIMEOUT_INFINITE, 1);
	start_sleeper(_metadata, self, &b, 2, AGILE_CMP_EQ, 1,
		      AGILE_TIMEOUT_INFINITE, 1);
	ASSERT_EQ(0, agile_signal(self->fd, 1, 1));
	ASSERT_EQ(0, agile_fence_thread_join(&a));
	ASSERT_EQ(0, a.ret);
	ASSERT_EQ(EBUSY, pthread_tryjoin_np(b.thread, NULL));
	ASSERT_EQ(1U, agile_db_sleepers(self->db, 2));
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 1));
	ASSERT_EQ(0, agile_signal(self->fd, 2, 1));
	ASSERT_EQ(0, agile_fence_thread_join(&b));
	ASSERT_EQ(0, b.ret);
}

/* The sleeper count counts every sleeper of its slot, and only them. */
TEST_F(ctx, sleeper_count)
{
	struct agile_fence_thread a, b, c;
	__u32 slot;

	for (slot = 0; slot < NR_SLOTS; slot++)
		ASSERT_EQ(0U, agile_db_sleepers(self->db, slot));
	start_sleeper(_metadata, self, &a, 2, AGILE_CMP_EQ, 1,
		      AGILE_TIMEOUT_INFINITE, 1);
	start_sleeper(_metadata, self, &b, 2, AGILE_CMP_GE, 1,
		      AGILE_TIMEOUT_INFINITE, 2);
	start_sleeper(_metadata, self, &c, 5, AGILE_CMP_EQ, 1,
		      AGILE_TIMEOUT_INFINITE, 1);
	for (slot = 0; slot < NR_SLOTS; slot++)
		if (slot != 2 && slot != 5)
			ASSERT_EQ(0U, agile_db_sleepers(self->db, slot));

	ASSERT_EQ(0, agile_signal(self->fd, 2, 1));
	ASSERT_EQ(0, agile_fence_thread_join(&a));
	ASSERT_EQ(0, agile_fence_thread_join(&b));
	ASSERT_EQ(0, a.ret);
	ASSERT_EQ(0, b.ret);
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 2));
	ASSERT_EQ(1U, agile_db_sleepers(self->db, 5));

	ASSERT_EQ(0, agile_signal(self->fd, 5, 1));
	ASSERT_EQ(0, agile_fence_thread_join(&c));
	ASSERT_EQ(0, c.ret);
	for (slot = 0; slot < NR_SLOTS; slot++)
		ASSERT_EQ(0U, agile_db_sleepers(self->db, slot));
}

/* A sleeper that times out leaves the count too. */
TEST_F(ctx, sleeper_count_after_timeout)
{
	struct agile_fence_thread ft;
	struct agile_stats st;

	start_sleeper(_metadata, self, &ft, 4, AGILE_CMP_EQ, 1,
		      2 * NSEC_PER_SEC, 1);
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(-ETIMEDOUT, ft.ret);
	ASSERT_EQ(0U, ft.fence.observed);
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 4));
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(1ULL, st.timeouts);
}

/*
 * The kernel never trusts @sleepers: garbage stored there changes nothing,
 * and the kernel's own count overwrites it.
 */
TEST_F(ctx, sleeper_count_untrusted)
{
	struct agile_fence_thread ft;

	__atomic_store_n(&self->db[3].sleepers, 0xdead, __ATOMIC_RELEASE);
	ASSERT_EQ(0, agile_signal(self->fd, 3, 1));
	ASSERT_EQ(0, agile_wait(self->fd, 3, AGILE_CMP_EQ, 1, 0, NULL));
	start_sleeper(_metadata, self, &ft, 3, AGILE_CMP_EQ, 2,
		      AGILE_TIMEOUT_INFINITE, 1);
	__atomic_store_n(&self->db[3].sleepers, 0, __ATOMIC_RELEASE);
	ASSERT_EQ(0, agile_signal(self->fd, 3, 2));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, ft.ret);
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 3));
}

/* WAKE_ONLY stores nothing. */
TEST_F(ctx, wake_only_no_store)
{
	struct agile_stats st;

	ASSERT_EQ(0, agile_signal(self->fd, 1, 5));
	ASSERT_EQ(0,
		  agile_signal_flags(self->fd, 1, 99, AGILE_SIGNAL_WAKE_ONLY));
	ASSERT_EQ(0,
		  agile_signal_flags(self->fd, 2, 99, AGILE_SIGNAL_WAKE_ONLY));
	ASSERT_EQ(5U, agile_db_value(self->db, 1));
	ASSERT_EQ(0U, agile_db_value(self->db, 2));
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(3ULL, st.signals);
}

/* The "futex trick": store without the kernel, then WAKE_ONLY. */
TEST_F(ctx, wake_only_wakes_sleeper)
{
	struct agile_fence_thread ft;
	struct agile_stats st;

	start_sleeper(_metadata, self, &ft, 6, AGILE_CMP_EQ, 1,
		      AGILE_TIMEOUT_INFINITE, 1);
	agile_db_store(self->db, 6, 1);
	ASSERT_EQ(0,
		  agile_signal_flags(self->fd, 6, 77, AGILE_SIGNAL_WAKE_ONLY));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, ft.ret);
	ASSERT_EQ(1U, ft.fence.observed);
	ASSERT_EQ(1U, agile_db_value(self->db, 6));
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(1ULL, st.wakeups_signal + st.wakeups_poll);
}

/* WAKE_ONLY wakes only sleepers whose condition holds. */
TEST_F(ctx, wake_only_condition_false)
{
	struct agile_fence_thread ft;

	start_sleeper(_metadata, self, &ft, 7, AGILE_CMP_EQ, 5, NSEC_PER_SEC,
		      1);
	ASSERT_EQ(0,
		  agile_signal_flags(self->fd, 7, 5, AGILE_SIGNAL_WAKE_ONLY));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(-ETIMEDOUT, ft.ret);
	ASSERT_EQ(0U, ft.fence.observed);
	ASSERT_EQ(0U, agile_db_value(self->db, 7));
}

/* Data written before a SIGNAL is visible to the woken waiter. */
struct handoff {
	int fd;
	struct agile_task_reg *reg;
	__u64 seen;
	int ret;
};

static void *handoff_waiter(void *arg)
{
	struct handoff *h = arg;

	h->ret = agile_wait(h->fd, 0, AGILE_CMP_EQ, AGILE_DOORBELL_POSTED,
			    AGILE_TIMEOUT_INFINITE, NULL);
	h->seen = h->reg->args[0];
	return NULL;
}

TEST_F(ctx, signal_publishes_task_register)
{
	struct handoff h = { .fd = self->fd };
	pthread_t thread;

	h.reg = agile_map_rw(self->fd, self->init.task_reg_offset,
			     self->init.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, h.reg);
	ASSERT_EQ(0, pthread_create(&thread, NULL, handoff_waiter, &h));
	ASSERT_EQ(0,
		  agile_db_wait_sleepers(self->db, 0, 1, AGILE_TEST_WAIT_MS));
	h.reg->opcode = AGILE_OP_USER_BASE;
	h.reg->args[0] = 0x0123456789abcdefULL;
	ASSERT_EQ(0, agile_signal(self->fd, 0, AGILE_DOORBELL_POSTED));
	ASSERT_EQ(0, pthread_join(thread, NULL));
	ASSERT_EQ(0, h.ret);
	ASSERT_EQ(0x0123456789abcdefULL, h.seen);
	munmap(h.reg, self->init.task_reg_bytes);
}

/*
 * The kernel writes only the value (SIGNAL) and sleepers words of the
 * doorbell lines, and never a task register: no kernel pointer or other
 * state ever lands in shared pages.
 */
TEST_F(ctx, kernel_writes_only_doorbell_words)
{
	struct agile_fence_thread ft;
	unsigned char *reg;
	__u32 slot, i;
	__u64 b;

	reg = agile_map_rw(self->fd, self->init.task_reg_offset,
			   self->init.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, reg);
	memset(reg, 0xa5, self->init.task_reg_bytes);
	memset(self->db, 0x5a, self->init.doorbell_bytes);
	for (slot = 0; slot < NR_SLOTS; slot++) {
		agile_db_store(self->db, slot, 0);
		__atomic_store_n(&self->db[slot].sleepers, 0, __ATOMIC_RELEASE);
	}

	for (slot = 0; slot < NR_SLOTS; slot++) {
		start_sleeper(_metadata, self, &ft, slot, AGILE_CMP_EQ, 1,
			      AGILE_TIMEOUT_INFINITE, 1);
		ASSERT_EQ(0, agile_signal(self->fd, slot, 1));
		ASSERT_EQ(0, agile_fence_thread_join(&ft));
		ASSERT_EQ(0, ft.ret);
		ASSERT_EQ(-ETIMEDOUT, agile_wait(self->fd, slot, AGILE_CMP_EQ,
						 2, 1000, NULL));
	}

	for (slot = 0; slot < NR_SLOTS; slot++)
		for (i = 0; i < ARRAY_SIZE(self->db[slot].user); i++)
			ASSERT_EQ(0x5a5a5a5aU, self->db[slot].user[i])
			{
				TH_LOG("slot %u user[%u]", slot, i);
			}
	/* The padding of the last page, past the last doorbell line. */
	for (b = NR_SLOTS * sizeof(struct agile_doorbell);
	     b < self->init.doorbell_bytes; b++)
		ASSERT_EQ(0x5a, ((unsigned char *)self->db)[b]);
	for (b = 0; b < self->init.task_reg_bytes; b++)
		ASSERT_EQ(0xa5, reg[b])
		{
			TH_LOG("task register byte %llu",
			       (unsigned long long)b);
		}
	munmap(reg, self->init.task_reg_bytes);
}

/* Active hrtimers that run the poller, from /proc/timer_list; or -errno. */
static int poller_timers(void)
{
	char line[512];
	int count = 0;
	FILE *f;

	f = fopen("/proc/timer_list", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "agile_poll_tick"))
			count++;
	fclose(f);
	return count;
}

/*
 * The poller runs only while someone sleeps: its hrtimer is queued while
 * a waiter sleeps and lapses (by the next tick) once none does.
 */
TEST_F(ctx, poller_only_while_sleeping)
{
	struct agile_fence_thread ft;
	int timers, tries;

	timers = poller_timers();
	if (timers < 0)
		SKIP(return, "/proc/timer_list: %s", strerror(-timers));
	ASSERT_EQ(0, timers);

	start_sleeper(_metadata, self, &ft, 1, AGILE_CMP_EQ, 1,
		      AGILE_TIMEOUT_INFINITE, 1);
	ASSERT_EQ(1, poller_timers());
	ASSERT_EQ(0, agile_signal(self->fd, 1, 1));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, ft.ret);

	/* poll_interval_us is at most a second: give it a few. */
	for (tries = 0; tries < 500 && poller_timers(); tries++)
		agile_sleep_ms(10);
	ASSERT_EQ(0, poller_timers());

	/* Waits that end without sleeping leave it alone. */
	ASSERT_EQ(0, agile_wait(self->fd, 1, AGILE_CMP_EQ, 1,
				AGILE_TIMEOUT_INFINITE, NULL));
	ASSERT_EQ(-ETIMEDOUT,
		  agile_wait(self->fd, 2, AGILE_CMP_EQ, 1, 0, NULL));
	ASSERT_EQ(0, poller_timers());
}

/*
 * Signals: a wait interrupted by a handler without SA_RESTART fails with
 * EINTR and writes the time left of a relative timeout back; under
 * SA_RESTART it is restarted and ends by its condition, having waited
 * only for the remainder.  Absolute deadlines are never rewritten.
 */
static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	alarms++;
}

FIXTURE(intr)
{
	int fd;
	struct agile_ctx_init init;
	struct agile_doorbell *db;
};

FIXTURE_VARIANT(intr)
{
	int sa_flags;
	__u32 wait_flags;
};

FIXTURE_VARIANT_ADD(intr, no_restart)
{
	.sa_flags = 0,
};

FIXTURE_VARIANT_ADD(intr, no_restart_abstime)
{
	.sa_flags = 0,
	.wait_flags = AGILE_WAIT_ABSTIME,
};

FIXTURE_VARIANT_ADD(intr, sa_restart)
{
	.sa_flags = SA_RESTART,
};

FIXTURE_VARIANT_ADD(intr, sa_restart_abstime)
{
	.sa_flags = SA_RESTART,
	.wait_flags = AGILE_WAIT_ABSTIME,
};

FIXTURE_SETUP(intr)
{
	struct sigaction sa = { .sa_handler = on_alarm };

	sa.sa_flags = variant->sa_flags;
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	agile_db_fixture_setup(_metadata, &self->fd, 2, &self->init, &self->db);
}

FIXTURE_TEARDOWN(intr)
{
	agile_db_fixture_teardown(self->fd, &self->init, self->db);
}

#define INTR_TIMEOUT_NS (60 * NSEC_PER_SEC)

TEST_F(intr, wait_interrupted)
{
	bool restart = variant->sa_flags & SA_RESTART;
	bool abstime = variant->wait_flags & AGILE_WAIT_ABSTIME;
	struct agile_fence f = {
		.op = AGILE_FENCE_WAIT,
		.slot = 1,
		.cmp = AGILE_CMP_EQ,
		.value = 8,
		.flags = variant->wait_flags,
		.timeout_ns = INTR_TIMEOUT_NS,
	};
	struct agile_interrupter in;
	struct agile_stats st;
	__u64 start;
	int ret;

	start = agile_now_ns();
	if (abstime)
		f.timeout_ns += start;
	ASSERT_EQ(0, agile_signal(self->fd, 1, 7));
	ASSERT_EQ(0, agile_interrupter_start(&in, self->fd, self->db, 1,
					     restart, 8));
	ret = agile_fence(self->fd, &f);
	ASSERT_EQ(0, agile_interrupter_stop(&in));
	ASSERT_EQ(0, in.found) TH_LOG("the waiter never slept");
	ASSERT_LE(1, alarms);
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 1));
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_EQ(1ULL, st.interrupted);
	ASSERT_EQ(0ULL, st.timeouts);
	if (restart) {
		/* Restarted, asleep again, then woken by the condition. */
		ASSERT_EQ(0, in.restarted) TH_LOG("not restarted");
		ASSERT_EQ(0, ret);
		ASSERT_EQ(8U, f.observed);
		ASSERT_EQ(2ULL, st.waits);
	} else {
		ASSERT_EQ(-EINTR, ret);
		ASSERT_EQ(7U, f.observed);
		ASSERT_EQ(1ULL, st.waits);
	}
	if (abstime) {
		ASSERT_EQ(start + INTR_TIMEOUT_NS, f.timeout_ns);
	} else {
		/* The time left, written back before the restart or EINTR. */
		ASSERT_GT(INTR_TIMEOUT_NS, f.timeout_ns);
		ASSERT_LT(INTR_TIMEOUT_NS - (agile_now_ns() - start) -
				  NSEC_PER_SEC,
			  f.timeout_ns);
	}
}

/*
 * A stop signal and SIGCONT (job control, a debugger attaching) do not
 * end a wait: it is restarted, ends by its condition or its timeout, and
 * a relative timeout is not stretched by the restart: the restart waits
 * for what was left when the stop came (the short time spent stopped is
 * not counted, as with select()).  The waiter is a forked child sharing
 * the context (a stop signal stops every thread of a process); its exit
 * code names the check that failed.
 */
struct stop_child_arg {
	int fd;
	__u64 timeout_ns;
	__u32 value; /* what the wait waits for */
	int want; /* its expected result */
};

/*
 * The stop comes 2 s into the wait; the slack allowed past a relative
 * deadline (the stop itself, wake-up latency) is well below that, which
 * a restart with the whole timeout again would add.
 */
#define STOP_AFTER_NS (2 * NSEC_PER_SEC)
#define STOP_SLACK_NS NSEC_PER_SEC

static int stop_child(void *p)
{
	struct stop_child_arg *a = p;
	struct agile_fence f = {
		.op = AGILE_FENCE_WAIT,
		.slot = 1,
		.cmp = AGILE_CMP_EQ,
		.value = a->value,
		.timeout_ns = a->timeout_ns,
	};
	__u64 start = agile_now_ns(), elapsed;
	int ret;

	ret = agile_fence(a->fd, &f);
	elapsed = agile_now_ns() - start;
	if (ret != a->want)
		return ret == -EINTR ? 21 : 20;
	if (a->timeout_ns == AGILE_TIMEOUT_INFINITE)
		return f.timeout_ns == AGILE_TIMEOUT_INFINITE ? 0 : 22;
	/* The restart's remainder was written back. */
	if (f.timeout_ns >= a->timeout_ns)
		return 23;
	/* Not stretched past the original deadline (plus slack). */
	if (elapsed > a->timeout_ns + STOP_SLACK_NS)
		return 24;
	return 0;
}

static void stop_and_continue(struct __test_metadata *_metadata,
			      FIXTURE_DATA(ctx) * self,
			      struct stop_child_arg *arg, bool wake)
{
	int status;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(stop_child(arg));
	ASSERT_EQ(0,
		  agile_db_wait_sleepers(self->db, 1, 1, AGILE_TEST_WAIT_MS));
	agile_sleep_ms(STOP_AFTER_NS / NSEC_PER_MSEC);
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	ASSERT_EQ(0, agile_wait_proc_state(pid, 'T', AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0, kill(pid, SIGCONT));
	if (wake) {
		/* Back in the wait: a restart, not a new call of the child. */
		ASSERT_EQ(0, agile_db_wait_sleepers(self->db, 1, 1,
						    AGILE_TEST_WAIT_MS));
		ASSERT_EQ(0, agile_signal(self->fd, 1, arg->value));
	}
	status = agile_reap_within(pid, 4 * AGILE_TEST_WAIT_MS);
	if (status == -ETIMEDOUT) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		ASSERT_TRUE(false) TH_LOG("the waiter did not end");
	}
	ASSERT_TRUE(WIFEXITED(status));
	/* The exit code names the check: see stop_child(). */
	ASSERT_EQ(0, WEXITSTATUS(status));
}

/* Stopped and continued, an infinite wait still ends by its condition. */
TEST_F(ctx, stop_signal_restarts_wait)
{
	struct stop_child_arg arg = {
		.fd = self->fd,
		.timeout_ns = AGILE_TIMEOUT_INFINITE,
		.value = 5,
		.want = 0,
	};
	struct agile_stats st;

	stop_and_continue(_metadata, self, &arg, true);
	ASSERT_EQ(0, agile_stats(self->fd, &st));
	ASSERT_LE(1ULL, st.interrupted);
	ASSERT_EQ(0U, agile_db_sleepers(self->db, 1));
}

/*
 * A relative timeout of 4 s, stopped and continued 2 s in: the wait
 * times out about 4 s after it began, not 2 s + 4 s.
 */
TEST_F(ctx, stop_signal_keeps_deadline)
{
	struct stop_child_arg arg = {
		.fd = self->fd,
		.timeout_ns = 4 * NSEC_PER_SEC,
		.value = 5,
		.want = -ETIMEDOUT,
	};

	stop_and_continue(_metadata, self, &arg, false);
}

/* Timeouts above KTIME_MAX other than AGILE_TIMEOUT_INFINITE: EINVAL. */
TEST_F(ctx, wait_bad_timeout)
{
	static const __u64 bad[] = { 1ULL << 63, (1ULL << 63) + 1,
				     AGILE_TIMEOUT_INFINITE - 1 };
	struct agile_fence f = { .op = AGILE_FENCE_WAIT,
				 .slot = 1,
				 .cmp = AGILE_CMP_EQ };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		/* The condition holds: only the timeout is wrong. */
		f.timeout_ns = bad[i];
		f.flags = 0;
		check_fence_rejected(_metadata, self->fd, self->db, &f);
		f.flags = AGILE_WAIT_ABSTIME;
		check_fence_rejected(_metadata, self->fd, self->db, &f);
	}
	/* KTIME_MAX itself and INFINITE, relative or absolute, are valid. */
	ASSERT_EQ(0, agile_wait(self->fd, 1, AGILE_CMP_EQ, 0, (1ULL << 63) - 1,
				NULL));
	ASSERT_EQ(0,
		  agile_wait_flags(self->fd, 1, AGILE_CMP_EQ, 0,
				   (1ULL << 63) - 1, AGILE_WAIT_ABSTIME, NULL));
	ASSERT_EQ(0, agile_wait_flags(self->fd, 1, AGILE_CMP_EQ, 0,
				      AGILE_TIMEOUT_INFINITE,
				      AGILE_WAIT_ABSTIME, NULL));
}

TEST_HARNESS_MAIN
