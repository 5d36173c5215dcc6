// SPDX-License-Identifier: MIT
/*
 * dev-doorbell - the dev layer's protocol on each backend: pages start zeroed
 * and IDLE; a hand-written execution unit (process 600b with its lanes,
 * on the dev calls alone) completes posted tasks, reports a failed lane's
 * error code and lane; a post that finds the slot IDLE sees the previous
 * task's results; a second post while busy is refused; waits time out
 * when nothing comes (spinning and sleeping), compare with every AGILE_CMP,
 * and wake only the sleepers whose condition holds; a signal enters the
 * kernel only when the line's sleeper count says someone sleeps.
 *
 * Backends: $AGILE_BACKEND alone when it is set (the guest runs the suite
 * once per backend), else user and, where /dev/agile exists, kmod (SKIP
 * without it).
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "testutil.h"

#define NR_SLOTS 4
#define REG_SIZE 256
#define LONG_NS (10ULL * 1000 * 1000 * 1000) /* a bug fails, never hangs */
#define OP_LANES (AGILE_OP_USER_BASE + 1)

static const char *be; /* the backend under test, for messages */

static int check(int err, const char *what)
{
	return tap_ok(err == 0, "%s: %s%s%s", be, what, err ? ": " : "",
		      err ? agile_strerror(err) : "");
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int open_dev(int backend, struct agile_dev **dev)
{
	struct agile_dev_opts o;

	agile_dev_opts_init(&o);
	o.nr_slots = NR_SLOTS;
	o.task_reg_size = REG_SIZE;
	o.backend = (uint32_t)backend;
	return agile_dev_open(&o, dev);
}

/* ---- a minimal EU on the dev layer: process 600b with lane parts ---- */

struct eu {
	struct agile_dev *dev;
	uint32_t slot;
	uint64_t spin_ns;
	long tasks;
	uint64_t *log; /* if set, task k stores k + 1 in log[k] */
	int err;
};

/*
 * args[0]: the lane that fails (>= nr_parts: none), args[1]: its error;
 * args[2 + lane] += lane + 1 for every lane that runs.
 */
static void *eu_main(void *arg)
{
	struct eu *eu = arg;
	struct agile_task_reg *reg;

	agile_dev_slot(eu->dev, eu->slot, NULL, &reg);
	for (;;) {
		uint64_t status = 0;

		/* Acquire of POSTED pairs with the release in agile_dev_post. */
		eu->err = agile_dev_wait_spin(eu->dev, eu->slot, AGILE_CMP_EQ,
					      AGILE_DOORBELL_POSTED,
					      eu->spin_ns, LONG_NS, NULL);
		if (eu->err)
			return NULL;
		if (reg->opcode == AGILE_OP_DISCONNECT)
			break;
		reg->error = 0;
		for (uint32_t lane = 0; lane < reg->nr_parts; lane++) {
			if (lane == reg->args[0]) {
				if (!reg->error) {
					reg->error = (int32_t)reg->args[1];
					reg->error_lane = lane;
				}
				continue;
			}
			reg->args[2 + lane] += lane + 1;
			status |= 1ULL << lane;
		}
		reg->status = status;
		if (eu->log)
			eu->log[eu->tasks] = (uint64_t)eu->tasks + 1;
		eu->tasks++;
		/* Release: the results before IDLE. */
		agile_dev_signal(eu->dev, eu->slot, AGILE_DOORBELL_IDLE);
	}
	agile_dev_signal(eu->dev, eu->slot, AGILE_DOORBELL_IDLE);
	return NULL;
}

static int start_eu(struct eu *eu, pthread_t *thread)
{
	return -pthread_create(thread, NULL, eu_main, eu);
}

static int stop_eu(struct eu *eu, pthread_t thread)
{
	struct agile_task_reg *reg;
	int err;

	agile_dev_slot(eu->dev, eu->slot, NULL, &reg);
	reg->opcode = AGILE_OP_DISCONNECT;
	err = agile_dev_post(eu->dev, eu->slot);
	if (!err)
		err = agile_dev_wait(eu->dev, eu->slot, AGILE_CMP_EQ,
				     AGILE_DOORBELL_IDLE, LONG_NS, NULL);
	pthread_join(thread, NULL);
	return err ? err : eu->err;
}

/* One task of @nr_parts lanes, lane @fail failing with @code. */
static int one_task(struct agile_dev *dev, uint32_t slot, uint32_t nr_parts,
		    uint32_t fail, int code, uint64_t spin_ns)
{
	struct agile_task_reg *reg;
	int err;

	agile_dev_slot(dev, slot, NULL, &reg);
	reg->opcode = OP_LANES;
	reg->nr_parts = nr_parts;
	reg->status = 0;
	reg->error = 0;
	reg->error_lane = 0;
	reg->args[0] = fail;
	reg->args[1] = (uint64_t)(int64_t)code;
	err = agile_dev_post(dev, slot);
	if (err)
		return err;
	/* Acquire of IDLE pairs with the EU's release. */
	return agile_dev_wait_spin(dev, slot, AGILE_CMP_EQ, AGILE_DOORBELL_IDLE,
				   spin_ns, LONG_NS, NULL);
}

static void test_post_complete(struct agile_dev *dev)
{
	struct eu eu = { .dev = dev, .slot = 1, .spin_ns = 100000 };
	struct agile_task_reg *reg;
	pthread_t thread;
	uint64_t expect[8] = { 0 };
	int err = 0, bad = 0, i;

	agile_dev_slot(dev, 1, NULL, &reg);
	memset(reg, 0, REG_SIZE);
	if (!check(start_eu(&eu, &thread), "start a dev-layer EU"))
		return;
	for (i = 0; i < 2000 && !err; i++) {
		/* Alternate: poster spins, poster sleeps at once. */
		err = one_task(dev, 1, 8, 99, 0, i % 2 ? 0 : 1000000);
		for (int lane = 0; lane < 8; lane++)
			expect[lane] += (uint64_t)lane + 1;
		if (!err && (reg->status != 0xff || reg->error))
			bad++;
	}
	for (int lane = 0; lane < 8; lane++)
		if (reg->args[2 + lane] != expect[lane])
			bad++;
	tap_ok(!err && !bad && eu.tasks == 2000,
	       "%s: 2000 tasks of 8 lanes posted and completed (%d wrong, %s)",
	       be, bad, agile_strerror(err));

	err = one_task(dev, 1, 8, 3, -EDOM, 1000000);
	tap_ok(!err && reg->error == -EDOM && reg->error_lane == 3 &&
		       reg->status == (0xffULL & ~(1ULL << 3)),
	       "%s: failed lane 3: error %d lane %u status 0x%llx", be,
	       reg->error, reg->error_lane, (unsigned long long)reg->status);
	err = one_task(dev, 1, 64, 63, -ENOSPC, 1000000);
	tap_ok(!err && reg->error == -ENOSPC && reg->error_lane == 63 &&
		       reg->status == ~0ULL >> 1,
	       "%s: 64 lanes, lane 63 failed: status 0x%llx", be,
	       (unsigned long long)reg->status);
	check(stop_eu(&eu, thread), "DISCONNECT ends the EU's loop");
}

/*
 * A post that succeeds found the doorbell IDLE with an acquire load: what
 * the EU wrote for the previous task (its log entry) is visible.  The
 * poster re-posts the same task as soon as the slot is free, writing
 * nothing, and reads the previous task's entry.  Only TSan can see a
 * relaxed load here (check-tsan); elsewhere this checks the entries.
 */
static void test_post_sees_results(struct agile_dev *dev)
{
	struct eu eu = { .dev = dev, .slot = 1, .spin_ns = LONG_NS };
	static uint64_t task_log[500];
	struct agile_task_reg *reg;
	pthread_t thread;
	int err = 0, bad = 0, i;

	agile_dev_slot(dev, 1, NULL, &reg);
	memset(reg, 0, REG_SIZE);
	reg->opcode = OP_LANES;
	reg->nr_parts = 4;
	reg->args[0] = 99;
	eu.log = task_log;
	if (!check(start_eu(&eu, &thread), "start a logging EU"))
		return;
	for (i = 0; i < 500 && !err; i++) {
		while ((err = agile_dev_post(dev, 1)) == -EBUSY)
			;
		if (!err && i && task_log[i - 1] != (uint64_t)i)
			bad++;
	}
	if (!err)
		err = agile_dev_wait(dev, 1, AGILE_CMP_EQ, AGILE_DOORBELL_IDLE,
				     LONG_NS, NULL);
	tap_ok(!err && !bad && eu.tasks == 500,
	       "%s: 500 posts as soon as the slot is IDLE: each sees the "
	       "previous task's results (%d missing, %s)",
	       be, bad, agile_strerror(err));
	check(stop_eu(&eu, thread), "stop the logging EU");
}

static void test_busy_and_timeouts(struct agile_dev *dev)
{
	struct agile_doorbell *db;
	uint32_t seen = 77;
	uint64_t t0;
	int err;

	agile_dev_slot(dev, 2, &db, NULL);
	err = agile_dev_wait(dev, 2, AGILE_CMP_EQ, AGILE_DOORBELL_POSTED, 0,
			     &seen);
	tap_ok(err == -ETIMEDOUT && seen == AGILE_DOORBELL_IDLE,
	       "%s: timeout 0 checks once: -ETIMEDOUT, observed %u", be, seen);
	t0 = now_ns();
	err = agile_dev_wait_spin(dev, 2, AGILE_CMP_NE, 0, 0, 20000000, NULL);
	tap_ok(err == -ETIMEDOUT && now_ns() - t0 >= 19000000,
	       "%s: sleeping wait times out after 20 ms: %s", be,
	       agile_strerror(err));
	t0 = now_ns();
	err = agile_dev_wait_spin(dev, 2, AGILE_CMP_NE, 0, LONG_NS, 5000000,
				  NULL);
	tap_ok(err == -ETIMEDOUT && now_ns() - t0 >= 4000000 &&
		       now_ns() - t0 < LONG_NS,
	       "%s: a spin longer than the timeout ends at the timeout", be);

	check(agile_dev_post(dev, 2), "post with nobody listening");
	tap_ok(agile_dev_post(dev, 2) == -EBUSY,
	       "%s: a second post before completion: -EBUSY", be);
	err = agile_dev_wait(dev, 2, AGILE_CMP_EQ, AGILE_DOORBELL_IDLE, 1000000,
			     &seen);
	tap_ok(err == -ETIMEDOUT && seen == AGILE_DOORBELL_POSTED,
	       "%s: nobody completes: -ETIMEDOUT, observed %u", be, seen);
	check(agile_dev_signal(dev, 2, AGILE_DOORBELL_IDLE), "signal IDLE");

	tap_ok(agile_dev_wait(dev, 2, AGILE_CMP_LE + 1, 0, 0, NULL) ==
			       -EINVAL &&
		       agile_dev_wait(dev, NR_SLOTS, AGILE_CMP_EQ, 0, 0,
				      NULL) == -EINVAL &&
		       agile_dev_post(dev, NR_SLOTS) == -EINVAL &&
		       agile_dev_signal(dev, NR_SLOTS, 1) == -EINVAL &&
		       agile_dev_slot(dev, NR_SLOTS, &db, NULL) == -EINVAL,
	       "%s: bad slot or comparison: -EINVAL", be);
}

struct waiter {
	struct agile_dev *dev;
	uint32_t cmp, value, seen;
	_Atomic int done;
	int err;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->err = agile_dev_wait_spin(w->dev, 3, w->cmp, w->value, 0, LONG_NS,
				     &w->seen);
	atomic_store(&w->done, 1);
	return NULL;
}

/* Until the line's sleeper count reaches @n (the waiters are asleep). */
static int await_sleepers(struct agile_doorbell *db, uint32_t n)
{
	for (int i = 0; i < 10000; i++) {
		if (__atomic_load_n(&db->sleepers, __ATOMIC_RELAXED) == n)
			return 0;
		usleep(500);
	}
	return -ETIMEDOUT;
}

static void test_sleepers(struct agile_dev *dev)
{
	struct waiter ge = { .dev = dev, .cmp = AGILE_CMP_GE, .value = 5 };
	struct waiter eq = { .dev = dev, .cmp = AGILE_CMP_EQ, .value = 3 };
	struct agile_dev_stats st0, st1, st2;
	struct agile_doorbell *db;
	pthread_t t1, t2;
	int err;

	agile_dev_slot(dev, 3, &db, NULL);
	agile_dev_stats(dev, &st0);
	for (int i = 0; i < 100; i++)
		agile_dev_signal(dev, 3, (uint32_t)i % 3);
	agile_dev_stats(dev, &st1);
	tap_ok(st1.wake_calls == st0.wake_calls &&
		       st1.kernel.signals == st0.kernel.signals,
	       "%s: 100 signals, nobody asleep: no system call", be);

	pthread_create(&t1, NULL, waiter_main, &ge);
	pthread_create(&t2, NULL, waiter_main, &eq);
	err = await_sleepers(db, 2);
	check(err, "two waiters asleep: the line counts 2 sleepers");
	agile_dev_signal(dev, 3, 3);
	pthread_join(t2, NULL);
	usleep(20000);
	agile_dev_stats(dev, &st2);
	tap_ok(!eq.err && eq.seen == 3 && !atomic_load(&ge.done) &&
		       st2.wake_calls == st1.wake_calls + 1,
	       "%s: signal 3 wakes EQ 3 (saw %u), GE 5 sleeps on", be, eq.seen);
	if (!err)
		err = await_sleepers(db, 1);
	agile_dev_signal(dev, 3, 7);
	pthread_join(t1, NULL);
	tap_ok(!err && !ge.err && ge.seen == 7,
	       "%s: signal 7 wakes GE 5 (saw %u)", be, ge.seen);
	tap_ok(__atomic_load_n(&db->sleepers, __ATOMIC_RELAXED) == 0,
	       "%s: no sleeper left on the line", be);
	agile_dev_signal(dev, 3, AGILE_DOORBELL_IDLE);
}

/* Round trips with both sides spinning, then both sleeping. */
static void test_syscall_skip(struct agile_dev *dev)
{
	struct eu eu = { .dev = dev, .slot = 0, .spin_ns = LONG_NS };
	struct agile_dev_stats st0, st1, st2;
	pthread_t thread;
	int err = 0, i;

	agile_dev_stats(dev, &st0);
	if (!check(start_eu(&eu, &thread), "start a spinning EU"))
		return;
	for (i = 0; i < 300 && !err; i++)
		err = one_task(dev, 0, 1, 99, 0, LONG_NS);
	agile_dev_stats(dev, &st1);
	tap_ok(!err && st1.wake_calls == st0.wake_calls &&
		       st1.sleeps == st0.sleeps &&
		       st1.kernel.signals == st0.kernel.signals,
	       "%s: 300 spinning round trips: %llu wake calls, %llu sleeps", be,
	       (unsigned long long)(st1.wake_calls - st0.wake_calls),
	       (unsigned long long)(st1.sleeps - st0.sleeps));
	check(stop_eu(&eu, thread), "stop the spinning EU");

	eu.spin_ns = 0;
	if (!check(start_eu(&eu, &thread), "start a sleeping EU"))
		return;
	for (i = 0; i < 300 && !err; i++) {
		/* Past the module's own spin (spin_ns): the EU is asleep. */
		usleep(100);
		err = one_task(dev, 0, 1, 99, 0, 0);
	}
	agile_dev_stats(dev, &st2);
	tap_ok(!err && st2.wake_calls > st1.wake_calls &&
		       st2.sleeps > st1.sleeps,
	       "%s: 300 sleeping round trips: %llu wake calls, %llu sleeps", be,
	       (unsigned long long)(st2.wake_calls - st1.wake_calls),
	       (unsigned long long)(st2.sleeps - st1.sleeps));
	if (agile_dev_backend(dev) == AGILE_BACKEND_KMOD)
		tap_ok(st2.kernel.wakeups_signal > st1.kernel.wakeups_signal &&
			       st2.kernel.signals > st1.kernel.signals,
		       "%s: the module woke them by SIGNAL (%llu signal, %llu poll wake-ups)",
		       be,
		       (unsigned long long)(st2.kernel.wakeups_signal -
					    st1.kernel.wakeups_signal),
		       (unsigned long long)(st2.kernel.wakeups_poll -
					    st1.kernel.wakeups_poll));
	check(stop_eu(&eu, thread), "stop the sleeping EU");
}

static void test_backend(int backend)
{
	struct agile_doorbell *db;
	struct agile_task_reg *reg;
	struct agile_dev *dev;
	int err, zero = 1;

	be = agile_dev_backend_name(backend);
	err = open_dev(backend, &dev);
	if (!check(err, "open 4 slots of 256-byte task registers"))
		return;
	tap_ok(agile_dev_backend(dev) == backend &&
		       agile_dev_nr_slots(dev) == NR_SLOTS &&
		       agile_dev_task_reg_size(dev) == REG_SIZE,
	       "%s: backend, slots and register size as asked", be);
	for (uint32_t s = 0; s < NR_SLOTS; s++) {
		agile_dev_slot(dev, s, &db, &reg);
		zero &= db->value == AGILE_DOORBELL_IDLE && !db->sleepers;
		for (int b = 0; b < REG_SIZE; b++)
			zero &= !((unsigned char *)reg)[b];
		if (s)
			zero &= (unsigned char *)reg - (unsigned char *)db != 0;
	}
	tap_ok(zero, "%s: doorbells IDLE, task registers zeroed", be);
	test_post_complete(dev);
	test_post_sees_results(dev);
	test_busy_and_timeouts(dev);
	test_sleepers(dev);
	test_syscall_skip(dev);
	check(agile_dev_close(dev), "close");
}

static void test_opts(void)
{
	struct agile_dev_opts o;
	struct agile_dev *dev;
	const char *env = getenv("AGILE_BACKEND");
	char *saved = env ? strdup(env) : NULL;

	agile_dev_opts_init(&o);
	o.backend = AGILE_BACKEND_KMOD;
	o.path = "/nonexistent/agile";
	tap_ok(agile_dev_open(&o, &dev) == -ENODEV,
	       "kmod forced, no device node: -ENODEV (%s)",
	       agile_strerror(-ENODEV));
	if (access("/dev/agile", F_OK)) {
		o.path = NULL;
		tap_ok(agile_dev_open(&o, &dev) == -ENODEV,
		       "kmod forced without /dev/agile: -ENODEV");
	}
	setenv("AGILE_BACKEND", "bogus", 1);
	tap_ok(agile_dev_open(NULL, &dev) == -EINVAL,
	       "AGILE_BACKEND=bogus: -EINVAL");
	setenv("AGILE_BACKEND", "user", 1);
	if (tap_ok(agile_dev_open(NULL, &dev) == 0 &&
			   agile_dev_backend(dev) == AGILE_BACKEND_USER,
		   "AGILE_BACKEND=user picks the user backend"))
		agile_dev_close(dev);
	if (saved)
		setenv("AGILE_BACKEND", saved, 1);
	else
		unsetenv("AGILE_BACKEND");
	free(saved);

	agile_dev_opts_init(&o);
	o.backend = AGILE_BACKEND_USER;
	o.task_reg_size = 96;
	tap_ok(agile_dev_open(&o, &dev) == -EINVAL,
	       "96-byte register: -EINVAL");
	o.task_reg_size = 8192;
	tap_ok(agile_dev_open(&o, &dev) == -EINVAL,
	       "8192-byte register: -EINVAL");
	o.task_reg_size = 64;
	o.nr_slots = 0;
	tap_ok(agile_dev_open(&o, &dev) == -EINVAL, "0 slots: -EINVAL");
	o.nr_slots = AGILE_DEV_USER_MAX_SLOTS + 1;
	tap_ok(agile_dev_open(&o, &dev) == -ENOSPC, "too many slots: -ENOSPC");
	o.nr_slots = 1;
	o.reserved[3] = 1;
	tap_ok(agile_dev_open(&o, &dev) == -EINVAL, "reserved field: -EINVAL");
	o.reserved[3] = 0;
	o.backend = 7;
	tap_ok(agile_dev_open(&o, &dev) == -EINVAL, "unknown backend: -EINVAL");
	tap_ok(agile_dev_open(NULL, NULL) == -EINVAL &&
		       agile_dev_close(NULL) == -EINVAL &&
		       agile_dev_opts_init(NULL) == -EINVAL,
	       "NULL arguments: -EINVAL");
	tap_ok(!strcmp(agile_strerror(-AGILE_E_OPCODE),
		       "No kernel registered for the task's opcode") &&
		       !strcmp(agile_strerror(-ETIMEDOUT),
			       "Connection timed out") &&
		       !strcmp(agile_strerror(0), "Success") &&
		       !strcmp(agile_strerror(-99999), "Unknown error"),
	       "agile_strerror: library codes, errnos, 0, unknown");
}

int main(void)
{
	test_opts();
	run_backends(test_backend);
	return tap_done();
}
