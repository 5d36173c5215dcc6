/* SPDX-License-Identifier: MIT */
/*
 * grouptest.h - what the dev-group-* selftests share (one context shared
 * by processes, agile_dev_group_join): joining, child processes whose
 * result is their exit code, waiting until members sleep, and group_main,
 * which runs a program's test on each backend ($AGILE_BACKEND alone when
 * it is set, else user and, where /dev/agile exists, kmod; a module
 * without groups gives a SKIP) with keys of this run only.  Every process
 * has an alarm: a bug fails the test, never hangs it.  Include tap.h and
 * testutil.h first.
 */
#ifndef AGILE_GROUPTEST_H
#define AGILE_GROUPTEST_H

#include <agile/dev.h>
#include <agile/error.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NR_SLOTS 4
#define REG_SIZE 128
#define LONG_NS (20ULL * 1000 * 1000 * 1000) /* a bug fails, never hangs */
#define ALARM_S 60

static const char *be;
static int backend;
static uint64_t next_key;

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline int join(uint64_t key, uint32_t nr_slots, uint32_t max_members,
		       uint32_t mode, uint32_t flags, struct agile_dev **dev)
{
	struct agile_dev_group_opts o;

	agile_dev_group_opts_init(&o);
	o.dev.nr_slots = nr_slots;
	o.dev.task_reg_size = REG_SIZE;
	o.dev.backend = (uint32_t)backend;
	o.key = key;
	o.max_members = max_members;
	o.mode = mode;
	o.flags = flags;
	return agile_dev_group_join(&o, dev);
}

/* Run @fn in a child process; its result (0 or -errno) is its exit code. */
static inline pid_t child(int (*fn)(void *), void *arg)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		alarm(ALARM_S);
		_exit(-fn(arg) & 0xff);
	}
	return pid;
}

/* A child's result: 0, a positive errno, or 1000 + the killing signal. */
static inline int reap(pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status))
		return 1000 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* Until slot @slot's line counts @n sleepers (they are asleep). */
static inline int await_sleepers(struct agile_dev *dev, uint32_t slot,
				 uint32_t n)
{
	struct agile_doorbell *db;

	agile_dev_slot(dev, slot, &db, NULL);
	for (int i = 0; i < 20000; i++) {
		if (__atomic_load_n(&db->sleepers, __ATOMIC_RELAXED) == n)
			return 0;
		usleep(500);
	}
	return -ETIMEDOUT;
}

struct member_arg {
	uint64_t key;
	int report; /* pipe: the member index goes here */
};

struct waiter {
	struct agile_dev *dev;
	uint32_t slot, value;
	int err;
};

static inline void *waiter_main(void *p)
{
	struct waiter *w = p;

	w->err = agile_dev_wait_spin(w->dev, w->slot, AGILE_CMP_EQ, w->value, 0,
				     LONG_NS, NULL);
	return NULL;
}

/* Creates its group, reports on @report, then waits until killed. */
static inline int lone_main(void *p)
{
	struct member_arg *a = p;
	struct agile_dev *dev;
	int err, one = 1;

	err = join(a->key, NR_SLOTS, 2, 0600, AGILE_DEV_GROUP_CREATE, &dev);
	if (write(a->report, &one, sizeof(one)) != sizeof(one) || err)
		return err ? err : -EIO;
	pause(); /* until killed */
	return -EPROTO;
}

static void (*group_test)(void);

static inline void group_backend(int which)
{
	backend = which;
	be = agile_dev_backend_name(which);
	if (which == AGILE_BACKEND_KMOD) {
		struct agile_dev *dev;
		int err = join(next_key++, 1, 1, 0600, AGILE_DEV_GROUP_CREATE,
			       &dev);

		if (err == -EOPNOTSUPP) {
			tap_skip(
				"kmod groups",
				"the module does not report AGILE_FEAT_GROUPS");
			return;
		}
		if (!err)
			agile_dev_close(dev);
	}
	group_test();
}

/* main() of a dev-group-* program: @test on each backend. */
static inline int group_main(void (*test)(void))
{
	alarm(4 * ALARM_S);
	/* Keys of this run: another run's groups are never ours. */
	next_key = 0xa91e000000000000ULL ^ ((uint64_t)getpid() << 16) ^
		   (now_ns() & 0xffff);
	group_test = test;
	run_backends(group_backend);
	return tap_done();
}

#endif /* AGILE_GROUPTEST_H */
