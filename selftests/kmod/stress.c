// SPDX-License-Identifier: GPL-2.0-only
/*
 * Many threads waiting and signalling at once on many slots, ping-pong
 * round trips, WAIT_ANY under load, concurrent timeouts and context churn.
 * Every wait must end the way the protocol says; no wake may be lost.
 * Sizes are small enough for a TCG guest with two vCPUs.
 */
#include "agile_test.h"

#define NR_SLOTS 16
#define NR_WAITERS 24 /* waiter w sleeps on slot w % NR_SLOTS */
#define NR_SIGNALLERS 4 /* signaller s owns slots s, s + 4, ... */
#define ROUNDS 30
#define PING_PONG_ROUNDS 1000
#define STRESS_TIMEOUT_S 180

/* One context with both areas mapped. */
struct stress_ctx {
	int fd;
	struct agile_ctx_init init;
	struct agile_doorbell *db;
	struct agile_task_reg *regs;
};

static void stress_ctx_open(struct __test_metadata *_metadata,
			    struct stress_ctx *c)
{
	AGILE_OPEN(c->fd);
	ASSERT_EQ(0, agile_ctx_init(c->fd, NR_SLOTS, 64, &c->init));
	c->db = agile_map_rw(c->fd, c->init.doorbell_offset,
			     c->init.doorbell_bytes);
	ASSERT_NE(MAP_FAILED, c->db);
	c->regs = agile_map_rw(c->fd, c->init.task_reg_offset,
			       c->init.task_reg_bytes);
	ASSERT_NE(MAP_FAILED, c->regs);
}

static void stress_ctx_close(struct stress_ctx *c)
{
	if (c->db && c->db != MAP_FAILED)
		munmap(c->db, c->init.doorbell_bytes);
	if (c->regs && c->regs != MAP_FAILED)
		munmap(c->regs, c->init.task_reg_bytes);
	if (c->fd > 0)
		close(c->fd);
}

FIXTURE(ctx)
{
	struct stress_ctx c;
};

FIXTURE_SETUP(ctx)
{
	stress_ctx_open(_metadata, &self->c);
}

FIXTURE_TEARDOWN(ctx)
{
	stress_ctx_close(&self->c);
}

/*
 * The same with the poller slowed to one tick a second, restored after,
 * to expose lost wakeups that the fast poller would hide: a SIGNAL (or a
 * WAKE_ONLY after the sleeper-count check) that misses a sleeper leaves
 * it asleep until the next tick, whose wakeup counts as a poll wakeup, so
 * frequent lost wakeups show as dozens of poll wakeups (and seconds of
 * stalls).  A tick may also legitimately win the race against a SIGNAL
 * that has stored but not yet taken the lock; under TCG, with vCPUs
 * preempted on the host for milliseconds, up to two such wakeups per test
 * were seen.  Hence a bound of a handful rather than zero.
 */
#define MAX_POLL_WAKEUPS 8ULL

FIXTURE(slow_poller)
{
	struct stress_ctx c;
	unsigned long long saved_interval;
	bool saved;
};

FIXTURE_SETUP(slow_poller)
{
	if (geteuid())
		SKIP(_exit(AGILE_SKIP_EXIT), "needs root to slow the poller");
	stress_ctx_open(_metadata, &self->c);
	ASSERT_EQ(0,
		  agile_sysfs_read("poll_interval_us", &self->saved_interval));
	self->saved = true;
	ASSERT_EQ(0, agile_sysfs_write("poll_interval_us", "1000000\n"));
}

FIXTURE_TEARDOWN(slow_poller)
{
	if (self->saved)
		EXPECT_EQ(0, agile_sysfs_write_u64("poll_interval_us",
						   self->saved_interval));
	stress_ctx_close(&self->c);
}

static struct agile_task_reg *task_reg(struct agile_task_reg *regs, __u32 slot,
				       __u32 size)
{
	return (struct agile_task_reg *)((char *)regs + (size_t)slot * size);
}

static void check_no_sleepers(struct __test_metadata *_metadata,
			      struct agile_doorbell *db)
{
	__u32 slot;

	for (slot = 0; slot < NR_SLOTS; slot++)
		ASSERT_EQ(0U, agile_db_sleepers(db, slot))
		{
			TH_LOG("slot %u", slot);
		}
}

/*
 * Rounds 1..ROUNDS: every waiter waits for its slot to equal the round
 * number while the signallers store it, by SIGNAL or by a plain store
 * that only the poller sees.  Two barriers per round keep round r + 1's
 * stores away from round r's waiters, so each wait has exactly one value
 * that may end it.
 */
struct crowd {
	int fd;
	struct agile_doorbell *db;
	bool plain_stores;
	pthread_barrier_t barrier;
	int wait_ok[NR_WAITERS];
	int wait_bad; /* waits that did not end with the round */
	int signal_bad;
	int first_ret; /* the first bad wait's result, for the log */
	__u32 first_observed;
};

struct crowd_member {
	struct crowd *crowd;
	unsigned int id;
	pthread_t thread;
};

static void crowd_fail(struct crowd *c, int *counter, int ret, __u32 observed)
{
	if (__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED) == 0) {
		c->first_ret = ret;
		c->first_observed = observed;
	}
}

static void *crowd_waiter(void *arg)
{
	struct crowd_member *m = arg;
	struct crowd *c = m->crowd;
	__u32 slot = m->id % NR_SLOTS, observed;
	__u32 round;
	int ret;

	for (round = 1; round <= ROUNDS; round++) {
		pthread_barrier_wait(&c->barrier);
		ret = agile_wait(c->fd, slot, AGILE_CMP_EQ, round,
				 AGILE_TEST_WAIT_MS * NSEC_PER_MSEC, &observed);
		if (ret == 0 && observed == round)
			c->wait_ok[m->id]++;
		else
			crowd_fail(c, &c->wait_bad, ret, observed);
		pthread_barrier_wait(&c->barrier);
	}
	return NULL;
}

static void *crowd_signaller(void *arg)
{
	struct crowd_member *m = arg;
	struct crowd *c = m->crowd;
	__u32 round, slot;

	for (round = 1; round <= ROUNDS; round++) {
		pthread_barrier_wait(&c->barrier);
		for (slot = m->id; slot < NR_SLOTS; slot += NR_SIGNALLERS) {
			if (c->plain_stores)
				agile_db_store(c->db, slot, round);
			else if (agile_signal(c->fd, slot, round))
				crowd_fail(c, &c->signal_bad, -1, slot);
		}
		pthread_barrier_wait(&c->barrier);
	}
	return NULL;
}

static void run_crowd(struct __test_metadata *_metadata, struct stress_ctx *sc,
		      bool plain_stores, bool slow_poller)
{
	struct crowd_member waiters[NR_WAITERS], signallers[NR_SIGNALLERS];
	struct crowd c = { .fd = sc->fd,
			   .db = sc->db,
			   .plain_stores = plain_stores };
	struct agile_stats st;
	unsigned int i;

	ASSERT_EQ(0, pthread_barrier_init(&c.barrier, NULL,
					  NR_WAITERS + NR_SIGNALLERS));
	for (i = 0; i < NR_WAITERS; i++) {
		waiters[i].crowd = &c;
		waiters[i].id = i;
		ASSERT_EQ(0, pthread_create(&waiters[i].thread, NULL,
					    crowd_waiter, &waiters[i]));
	}
	for (i = 0; i < NR_SIGNALLERS; i++) {
		signallers[i].crowd = &c;
		signallers[i].id = i;
		ASSERT_EQ(0, pthread_create(&signallers[i].thread, NULL,
					    crowd_signaller, &signallers[i]));
	}
	for (i = 0; i < NR_WAITERS; i++)
		ASSERT_EQ(0, pthread_join(waiters[i].thread, NULL));
	for (i = 0; i < NR_SIGNALLERS; i++)
		ASSERT_EQ(0, pthread_join(signallers[i].thread, NULL));
	pthread_barrier_destroy(&c.barrier);

	ASSERT_EQ(0, c.wait_bad)
	{
		TH_LOG("first bad wait: ret %d observed %u", c.first_ret,
		       c.first_observed);
	}
	ASSERT_EQ(0, c.signal_bad);
	for (i = 0; i < NR_WAITERS; i++)
		ASSERT_EQ(ROUNDS, c.wait_ok[i]) TH_LOG("waiter %u", i);
	check_no_sleepers(_metadata, sc->db);

	ASSERT_EQ(0, agile_stats(sc->fd, &st));
	TH_LOG("waits %llu spin_hits %llu wakeups_signal %llu wakeups_poll %llu",
	       (unsigned long long)st.waits, (unsigned long long)st.spin_hits,
	       (unsigned long long)st.wakeups_signal,
	       (unsigned long long)st.wakeups_poll);
	ASSERT_EQ((__u64)NR_WAITERS * ROUNDS, st.waits);
	ASSERT_EQ(plain_stores ? 0 : (__u64)NR_SLOTS * ROUNDS, st.signals);
	ASSERT_EQ(0ULL, st.timeouts);
	ASSERT_EQ(0ULL, st.interrupted);
	/* Each wait ended once: at most one hit or wakeup per wait. */
	ASSERT_GE(st.waits, st.spin_hits + st.wakeups_signal + st.wakeups_poll);
	if (plain_stores)
		ASSERT_EQ(0ULL, st.wakeups_signal);
	if (slow_poller)
		ASSERT_GE(MAX_POLL_WAKEUPS, st.wakeups_poll)
		{
			TH_LOG("lost wakeups");
		}
}

TEST_F_TIMEOUT(ctx, many_waiters_signal, STRESS_TIMEOUT_S)
{
	run_crowd(_metadata, &self->c, false, false);
}

TEST_F_TIMEOUT(ctx, many_waiters_plain_store, STRESS_TIMEOUT_S)
{
	run_crowd(_metadata, &self->c, true, false);
}

/*
 * Ping-pong: the pinger posts round i in slot 0 with a payload in task
 * register 0; the ponger waits for exactly i, checks the payload, answers
 * in slot 1 and register 1.  A lost value or wake shows as a wait that
 * does not observe i.
 */
struct ping_pong {
	int fd;
	struct agile_doorbell *db;
	struct agile_task_reg *ping_reg, *pong_reg;
	bool sleeper_trick;
	unsigned int rounds;
	int bad;
	unsigned int bad_round;
	int bad_ret;
	unsigned long syscalls_skipped;
};

/*
 * Publish @value in @slot.  With the sleeper trick, store it in user space
 * and enter the kernel only when the full fence is followed by a non-zero
 * sleeper count (pairs with the waiter's raise of the count, full fence and
 * re-read of the value in the kernel).
 */
static int pp_post(struct ping_pong *pp, __u32 slot, __u32 value)
{
	if (!pp->sleeper_trick)
		return agile_signal(pp->fd, slot, value);
	agile_db_store(pp->db, slot, value);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!agile_db_sleepers(pp->db, slot)) {
		pp->syscalls_skipped++;
		return 0;
	}
	return agile_signal_flags(pp->fd, slot, 0, AGILE_SIGNAL_WAKE_ONLY);
}

static void pp_fail(struct ping_pong *pp, unsigned int round, int ret)
{
	if (__atomic_fetch_add(&pp->bad, 1, __ATOMIC_RELAXED) == 0) {
		pp->bad_round = round;
		pp->bad_ret = ret;
	}
}

static void *ponger(void *arg)
{
	struct ping_pong *pp = arg;
	unsigned int i;
	__u32 observed;
	int ret;

	for (i = 1; i <= pp->rounds; i++) {
		ret = agile_wait(pp->fd, 0, AGILE_CMP_EQ, i,
				 AGILE_TEST_WAIT_MS * NSEC_PER_MSEC, &observed);
		if (ret || observed != i) {
			pp_fail(pp, i, ret);
			return NULL;
		}
		/* Acquire by the kernel's wait; the pinger's SIGNAL released. */
		if (pp->ping_reg->args[0] != (__u64)i * 7) {
			pp_fail(pp, i, -EBADMSG);
			return NULL;
		}
		pp->pong_reg->args[0] = (__u64)i * 11;
		ret = pp_post(pp, 1, i);
		if (ret) {
			pp_fail(pp, i, ret);
			return NULL;
		}
	}
	return NULL;
}

static void run_ping_pong(struct __test_metadata *_metadata,
			  struct stress_ctx *sc, bool sleeper_trick,
			  bool slow_poller)
{
	struct ping_pong pp = {
		.fd = sc->fd,
		.db = sc->db,
		.ping_reg = task_reg(sc->regs, 0, 64),
		.pong_reg = task_reg(sc->regs, 1, 64),
		.sleeper_trick = sleeper_trick,
		.rounds = PING_PONG_ROUNDS,
	};
	struct agile_stats st;
	pthread_t thread;
	__u64 start, round_start, round_ns, elapsed_ns, slowest_ns = 0;
	__u32 observed = 0;
	unsigned int i;
	int ret = 0;

	ASSERT_EQ(0, pthread_create(&thread, NULL, ponger, &pp));
	start = agile_now_ns();
	for (i = 1; i <= pp.rounds; i++) {
		round_start = agile_now_ns();
		pp.ping_reg->args[0] = (__u64)i * 7;
		ret = pp_post(&pp, 0, i);
		if (ret)
			break;
		ret = agile_wait(sc->fd, 1, AGILE_CMP_EQ, i,
				 AGILE_TEST_WAIT_MS * NSEC_PER_MSEC, &observed);
		if (ret || observed != i)
			break;
		if (pp.pong_reg->args[0] != (__u64)i * 11) {
			ret = -EBADMSG;
			break;
		}
		round_ns = agile_now_ns() - round_start;
		if (round_ns > slowest_ns)
			slowest_ns = round_ns;
	}
	elapsed_ns = agile_now_ns() - start;
	/* After a failure the ponger's own wait times out: join is bounded. */
	ASSERT_EQ(0, pthread_join(thread, NULL));
	ASSERT_EQ(0, pp.bad)
	{
		TH_LOG("ponger failed round %u with %d", pp.bad_round,
		       pp.bad_ret);
	}
	ASSERT_EQ(pp.rounds + 1, i)
	{
		TH_LOG("pinger failed round %u: ret %d observed %u", i, ret,
		       observed);
	}
	ASSERT_EQ(pp.rounds, agile_db_value(sc->db, 0));
	ASSERT_EQ(pp.rounds, agile_db_value(sc->db, 1));
	check_no_sleepers(_metadata, sc->db);

	ASSERT_EQ(0, agile_stats(sc->fd, &st));
	TH_LOG("waits %llu spin_hits %llu wakeups_signal %llu wakeups_poll %llu skipped %lu; %llu ms, slowest round %llu us",
	       (unsigned long long)st.waits, (unsigned long long)st.spin_hits,
	       (unsigned long long)st.wakeups_signal,
	       (unsigned long long)st.wakeups_poll, pp.syscalls_skipped,
	       elapsed_ns / NSEC_PER_MSEC, slowest_ns / 1000);
	ASSERT_EQ(2ULL * pp.rounds, st.waits);
	ASSERT_EQ(0ULL, st.timeouts);
	if (!sleeper_trick)
		ASSERT_EQ(2ULL * pp.rounds, st.signals);
	if (slow_poller)
		ASSERT_GE(MAX_POLL_WAKEUPS, st.wakeups_poll)
		{
			TH_LOG("lost wakeups");
		}
}

TEST_F_TIMEOUT(ctx, ping_pong_signal, STRESS_TIMEOUT_S)
{
	run_ping_pong(_metadata, &self->c, false, false);
}

TEST_F_TIMEOUT(ctx, ping_pong_sleeper_count, STRESS_TIMEOUT_S)
{
	run_ping_pong(_metadata, &self->c, true, false);
}

TEST_F_TIMEOUT(slow_poller, many_waiters_signal, STRESS_TIMEOUT_S)
{
	run_crowd(_metadata, &self->c, false, true);
}

TEST_F_TIMEOUT(slow_poller, ping_pong_signal, STRESS_TIMEOUT_S)
{
	run_ping_pong(_metadata, &self->c, false, true);
}

TEST_F_TIMEOUT(slow_poller, ping_pong_sleeper_count, STRESS_TIMEOUT_S)
{
	run_ping_pong(_metadata, &self->c, true, true);
}

/*
 * WAIT_ANY under load: waiter w watches slots w, w + 4, w + 8, w + 12 for
 * the round number; each round the signaller stores it in one of them,
 * chosen per waiter, and the waiter must report that index.
 */
#define ANY_WAITERS 4
#define ANY_CONDS (NR_SLOTS / ANY_WAITERS)

struct any_crowd {
	int fd;
	pthread_barrier_t barrier;
	int ok[ANY_WAITERS];
	int bad;
	int bad_ret;
	__u32 bad_index, bad_observed;
};

struct any_member {
	struct any_crowd *crowd;
	unsigned int id;
	pthread_t thread;
};

static __u32 any_choice(unsigned int waiter, __u32 round)
{
	return (round + waiter) % ANY_CONDS;
}

static void *any_waiter(void *arg)
{
	struct any_member *m = arg;
	struct any_crowd *c = m->crowd;
	struct agile_wait_cond conds[ANY_CONDS];
	__u32 round, index, observed;
	unsigned int k;
	int ret;

	for (round = 1; round <= ROUNDS; round++) {
		for (k = 0; k < ANY_CONDS; k++) {
			conds[k].slot = m->id + k * ANY_WAITERS;
			conds[k].cmp = AGILE_CMP_EQ;
			conds[k].value = round;
			conds[k].pad = 0;
		}
		pthread_barrier_wait(&c->barrier);
		ret = agile_wait_any(c->fd, conds, ANY_CONDS, 0,
				     AGILE_TEST_WAIT_MS * NSEC_PER_MSEC, &index,
				     &observed);
		if (!ret && index == any_choice(m->id, round) &&
		    observed == round) {
			c->ok[m->id]++;
		} else if (__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED) ==
			   0) {
			c->bad_ret = ret;
			c->bad_index = index;
			c->bad_observed = observed;
		}
		pthread_barrier_wait(&c->barrier);
	}
	return NULL;
}

TEST_F_TIMEOUT(ctx, wait_any_many, STRESS_TIMEOUT_S)
{
	struct any_member members[ANY_WAITERS];
	struct any_crowd c = { .fd = self->c.fd };
	struct agile_stats st;
	unsigned int i;
	__u32 round, slot;

	ASSERT_EQ(0, pthread_barrier_init(&c.barrier, NULL, ANY_WAITERS + 1));
	for (i = 0; i < ANY_WAITERS; i++) {
		members[i].crowd = &c;
		members[i].id = i;
		ASSERT_EQ(0, pthread_create(&members[i].thread, NULL,
					    any_waiter, &members[i]));
	}
	for (round = 1; round <= ROUNDS; round++) {
		pthread_barrier_wait(&c.barrier);
		for (i = 0; i < ANY_WAITERS; i++) {
			slot = i + any_choice(i, round) * ANY_WAITERS;
			ASSERT_EQ(0, agile_signal(self->c.fd, slot, round));
		}
		pthread_barrier_wait(&c.barrier);
	}
	for (i = 0; i < ANY_WAITERS; i++)
		ASSERT_EQ(0, pthread_join(members[i].thread, NULL));
	pthread_barrier_destroy(&c.barrier);
	ASSERT_EQ(0, c.bad)
	{
		TH_LOG("first bad: ret %d index %u observed %u", c.bad_ret,
		       c.bad_index, c.bad_observed);
	}
	for (i = 0; i < ANY_WAITERS; i++)
		ASSERT_EQ(ROUNDS, c.ok[i]);
	check_no_sleepers(_metadata, self->c.db);
	ASSERT_EQ(0, agile_stats(self->c.fd, &st));
	ASSERT_EQ((__u64)ANY_WAITERS * ROUNDS, st.waits);
	ASSERT_EQ(0ULL, st.timeouts);
}

/* Many short timeouts at once: every one ends in ETIMEDOUT, none lost. */
#define TIMEOUT_THREADS 16
#define TIMEOUT_REPEAT 3

struct timeout_thread {
	pthread_t thread;
	int fd;
	__u32 slot;
	int timed_out;
};

static void *timeout_fn(void *arg)
{
	struct timeout_thread *t = arg;
	int i;

	for (i = 0; i < TIMEOUT_REPEAT; i++)
		if (agile_wait(t->fd, t->slot, AGILE_CMP_EQ, 1,
			       50 * NSEC_PER_MSEC, NULL) == -ETIMEDOUT)
			t->timed_out++;
	return NULL;
}

TEST_F_TIMEOUT(ctx, concurrent_timeouts, STRESS_TIMEOUT_S)
{
	struct timeout_thread threads[TIMEOUT_THREADS];
	struct agile_stats st;
	unsigned int i;

	for (i = 0; i < TIMEOUT_THREADS; i++) {
		threads[i].fd = self->c.fd;
		threads[i].slot = i % 5;
		threads[i].timed_out = 0;
		ASSERT_EQ(0, pthread_create(&threads[i].thread, NULL,
					    timeout_fn, &threads[i]));
	}
	for (i = 0; i < TIMEOUT_THREADS; i++) {
		ASSERT_EQ(0, pthread_join(threads[i].thread, NULL));
		ASSERT_EQ(TIMEOUT_REPEAT, threads[i].timed_out);
	}
	check_no_sleepers(_metadata, self->c.db);
	ASSERT_EQ(0, agile_stats(self->c.fd, &st));
	ASSERT_EQ((__u64)TIMEOUT_THREADS * TIMEOUT_REPEAT, st.timeouts);
	ASSERT_EQ((__u64)TIMEOUT_THREADS * TIMEOUT_REPEAT, st.waits);
}

/* Sleepers on a slot that gets a SIGNAL while others time out nearby. */
TEST_F_TIMEOUT(ctx, signal_amid_timeouts, STRESS_TIMEOUT_S)
{
	struct timeout_thread threads[TIMEOUT_THREADS];
	struct agile_fence_thread ft;
	unsigned int i;

	for (i = 0; i < TIMEOUT_THREADS; i++) {
		threads[i].fd = self->c.fd;
		threads[i].slot = 1 + i % 4;
		threads[i].timed_out = 0;
		ASSERT_EQ(0, pthread_create(&threads[i].thread, NULL,
					    timeout_fn, &threads[i]));
	}
	ASSERT_EQ(0, agile_fence_thread_start(&ft, self->c.fd, 0, AGILE_CMP_EQ,
					      1, AGILE_TIMEOUT_INFINITE));
	ASSERT_EQ(0,
		  agile_db_wait_sleepers(self->c.db, 0, 1, AGILE_TEST_WAIT_MS));
	ASSERT_EQ(0, agile_signal(self->c.fd, 0, 1));
	ASSERT_EQ(0, agile_fence_thread_join(&ft));
	ASSERT_EQ(0, ft.ret);
	for (i = 0; i < TIMEOUT_THREADS; i++) {
		ASSERT_EQ(0, pthread_join(threads[i].thread, NULL));
		ASSERT_EQ(TIMEOUT_REPEAT, threads[i].timed_out);
	}
	check_no_sleepers(_metadata, self->c.db);
}

/*
 * Context churn: open, set up, map, use and close many files, some closed
 * before their mappings go; the module-wide context count comes back.
 */
#define CHURN 50

TEST_F_TIMEOUT(ctx, context_churn, STRESS_TIMEOUT_S)
{
	unsigned long long before = 0, after = 0;
	struct agile_ctx_init init;
	struct agile_doorbell *db;
	unsigned char *reg;
	unsigned int i;
	__u32 slots, size;
	int fd;

	ASSERT_EQ(0, agile_sysfs_read("contexts", &before));
	for (i = 0; i < CHURN; i++) {
		slots = 1 + (i * 37) % 300;
		size = AGILE_TASK_REG_MIN_SIZE << (i % 7);
		fd = open(AGILE_DEV_PATH, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, agile_ctx_init(fd, slots, size, &init));
		db = agile_map_rw(fd, init.doorbell_offset,
				  init.doorbell_bytes);
		ASSERT_NE(MAP_FAILED, db);
		reg = agile_map_rw(fd, init.task_reg_offset,
				   init.task_reg_bytes);
		ASSERT_NE(MAP_FAILED, reg);
		ASSERT_EQ(0, agile_signal(fd, slots - 1, i));
		ASSERT_EQ(i, agile_db_value(db, slots - 1));
		reg[init.task_reg_bytes - 1] = (unsigned char)i;
		ASSERT_EQ(0,
			  agile_wait(fd, slots - 1, AGILE_CMP_EQ, i, 0, NULL));
		if (i % 2) {
			close(fd);
			ASSERT_EQ((unsigned char)i,
				  reg[init.task_reg_bytes - 1]);
			munmap(db, init.doorbell_bytes);
			munmap(reg, init.task_reg_bytes);
		} else {
			munmap(db, init.doorbell_bytes);
			munmap(reg, init.task_reg_bytes);
			close(fd);
		}
	}
	ASSERT_EQ(0, agile_sysfs_read("contexts", &after));
	ASSERT_EQ(before, after);
}

TEST_HARNESS_MAIN
