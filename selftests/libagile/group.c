// SPDX-License-Identifier: MIT
/*
 * group - one context shared by processes (agile_dev_group_join), on each
 * backend: members get indices in join order; a missing key without
 * CREATE is -ENOENT, CREATE|EXCL on a live key -EEXIST, other sizes
 * -EINVAL, a full group -ENOSPC; a doorbell stored and signalled in one
 * process wakes a sleeping wait in another; a member killed with SIGKILL
 * while it waits, and a member that closes, end the group: every other
 * member's wait, sleeping or new, fails with -EPIPE and the key is free
 * at once; a group whose members all died is gone too, and (user
 * backend) creating any group removes its file but no live group's; as
 * root, a 0600
 * group refuses another user (-EACCES) and a 0666 one lets it in.
 *
 * Every process has an alarm: a bug fails the test, never hangs it.
 * Backends: $AGILE_BACKEND alone when it is set, else user and, where
 * /dev/agile exists, kmod.  A module without groups gives a SKIP.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <errno.h>
#include <grp.h>
#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "testutil.h"

#define NR_SLOTS 4
#define REG_SIZE 128
#define LONG_NS (20ULL * 1000 * 1000 * 1000) /* a bug fails, never hangs */
#define ALARM_S 60

static const char *be;
static int backend;
static uint64_t next_key;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int join(uint64_t key, uint32_t nr_slots, uint32_t max_members,
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
static pid_t child(int (*fn)(void *), void *arg)
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
static int reap(pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status))
		return 1000 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* Until slot @slot's line counts @n sleepers (they are asleep). */
static int await_sleepers(struct agile_dev *dev, uint32_t slot, uint32_t n)
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

/* ---- join order, errors, a cross-process wake-up, close ends it ---- */

struct member_arg {
	uint64_t key;
	int report; /* pipe: the member index goes here */
};

/*
 * Member 1 takes a task on slot 1 and answers on slot 2, then closes
 * when slot 3 says so; members 2 and 3 sleep on slot 0 until the group
 * ends.
 */
static int member_main(void *p)
{
	struct member_arg *a = p;
	struct agile_task_reg *reg;
	struct agile_dev *dev;
	int err, index;

	err = join(a->key, NR_SLOTS, 4, 0600, 0, &dev);
	index = err ? -1 : agile_dev_member(dev);
	if (write(a->report, &index, sizeof(index)) != sizeof(index) || err)
		return err ? err : -EIO;
	if (index != 1) {
		err = agile_dev_wait_spin(dev, 0, AGILE_CMP_EQ, 999, 0,
					  AGILE_TIMEOUT_INFINITE, NULL);
		agile_dev_close(dev);
		return err == -EPIPE ? 0 : err ? err : -EPROTO;
	}
	agile_dev_slot(dev, 1, NULL, &reg);
	/* Acquire of 42 pairs with the parent's release in agile_dev_signal. */
	err = agile_dev_wait_spin(dev, 1, AGILE_CMP_EQ, 42, 0, LONG_NS, NULL);
	if (!err && reg->args[0] != 0xfeedULL)
		err = -EBADMSG;
	if (!err) {
		reg->args[1] = 0xbeefULL;
		err = agile_dev_signal(dev, 2, 43);
	}
	if (!err)
		err = agile_dev_wait_spin(dev, 3, AGILE_CMP_EQ, 7, 0, LONG_NS,
					  NULL);
	agile_dev_close(dev);
	return err;
}

static void test_members(void)
{
	struct agile_dev *dev, *extra;
	struct agile_task_reg *reg;
	struct member_arg arg;
	pid_t pids[4] = { 0 };
	int fds[2], err, bad = 0;
	uint64_t t0;

	arg.key = next_key++;
	err = join(arg.key, NR_SLOTS, 4, 0600,
		   AGILE_DEV_GROUP_CREATE | AGILE_DEV_GROUP_EXCL, &dev);
	if (err == -EOPNOTSUPP || err == -ENOTTY) {
		tap_skip("groups", "%s: the module has no GROUP_JOIN", be);
		return;
	}
	if (!tap_ok(!err, "%s: create a group of 4: %s", be,
		    agile_strerror(err)))
		return;
	tap_ok(agile_dev_member(dev) == 0 && agile_dev_max_members(dev) == 4 &&
		       agile_dev_nr_slots(dev) == NR_SLOTS,
	       "%s: the creator is member 0 of 4", be);
	if (pipe(fds))
		return;
	arg.report = fds[1];
	for (int i = 1; i <= 3; i++) {
		int index = -1;

		/* One at a time: the join order is the fork order. */
		pids[i] = child(member_main, &arg);
		if (read(fds[0], &index, sizeof(index)) != sizeof(index) ||
		    index != i)
			bad++;
	}
	close(fds[0]);
	close(fds[1]);
	tap_ok(!bad, "%s: three processes join as members 1, 2, 3", be);

	tap_ok(join(arg.key, NR_SLOTS, 4, 0600, 0, &extra) == -ENOSPC,
	       "%s: a fifth member: -ENOSPC", be);
	tap_ok(join(arg.key, NR_SLOTS * 2, 4, 0600, 0, &extra) == -EINVAL &&
		       join(arg.key, NR_SLOTS, 3, 0600, 0, &extra) == -EINVAL,
	       "%s: other nr_slots or max_members: -EINVAL", be);
	tap_ok(join(arg.key, NR_SLOTS, 4, 0600,
		    AGILE_DEV_GROUP_CREATE | AGILE_DEV_GROUP_EXCL,
		    &extra) == -EEXIST,
	       "%s: CREATE|EXCL on a live key: -EEXIST", be);
	tap_ok(join(next_key++, NR_SLOTS, 4, 0600, 0, &extra) == -ENOENT,
	       "%s: join a missing key without CREATE: -ENOENT", be);

	/* Member 1 asleep, so the signal must wake another process. */
	agile_dev_slot(dev, 1, NULL, &reg);
	reg->args[0] = 0xfeedULL;
	err = await_sleepers(dev, 1, 1);
	if (!err)
		err = agile_dev_signal(dev, 1, 42);
	if (!err)
		err = agile_dev_wait_spin(dev, 2, AGILE_CMP_EQ, 43, 0, LONG_NS,
					  NULL);
	/* Acquire of 43 pairs with member 1's release: its answer is here. */
	tap_ok(!err && reg->args[1] == 0xbeefULL,
	       "%s: signal in one process wakes a sleeping wait in another, and back: %s",
	       be, agile_strerror(err));

	/* Members 2 and 3 asleep; member 1 closes: the group ends. */
	err = await_sleepers(dev, 0, 2);
	tap_ok(!err, "%s: members 2 and 3 asleep on slot 0: %s", be,
	       agile_strerror(err));
	agile_dev_signal(dev, 3, 7);
	t0 = now_ns();
	err = agile_dev_wait_spin(dev, 0, AGILE_CMP_EQ, 999, 0, LONG_NS, NULL);
	tap_ok(err == -EPIPE && now_ns() - t0 < LONG_NS,
	       "%s: member 1 closes: our sleeping wait fails with -EPIPE (%s)",
	       be, agile_strerror(err));
	err = reap(pids[1]);
	tap_ok(err == 0, "%s: member 1 saw the task and closed (%d)", be, err);
	err = reap(pids[2]) | reap(pids[3]);
	tap_ok(err == 0, "%s: members 2 and 3: -EPIPE in their waits too (%d)",
	       be, err);
	err = agile_dev_wait_spin(dev, 0, AGILE_CMP_EQ, 999, 0, 1000000000ULL,
				  NULL);
	tap_ok(err == -EPIPE, "%s: a new wait in the ended group: -EPIPE (%s)",
	       be, agile_strerror(err));
	err = join(arg.key, 2, 1, 0600, AGILE_DEV_GROUP_CREATE, &extra);
	tap_ok(err == -EPIPE,
	       "%s: members 1-3 gone, we still hold the ended group: a join of its key: -EPIPE (%s)",
	       be, agile_strerror(err));
	if (!err)
		agile_dev_close(extra);
	tap_ok(agile_dev_close(dev) == 0, "%s: close the ended group", be);

	err = join(arg.key, 2, 1, 0600,
		   AGILE_DEV_GROUP_CREATE | AGILE_DEV_GROUP_EXCL, &dev);
	tap_ok(!err && agile_dev_member(dev) == 0 &&
		       agile_dev_max_members(dev) == 1,
	       "%s: the key is free again: a new group of other sizes (%s)",
	       be, agile_strerror(err));
	if (!err)
		agile_dev_close(dev);
}

/* ---- a member killed while it waits ---- */

static int sleeper_main(void *p)
{
	struct member_arg *a = p;
	struct agile_dev *dev;
	int err;

	err = join(a->key, NR_SLOTS, 2, 0600, 0, &dev);
	if (err)
		return err;
	/* Until killed. */
	agile_dev_wait_spin(dev, 1, AGILE_CMP_EQ, 5, 0, AGILE_TIMEOUT_INFINITE,
			    NULL);
	return -EPROTO;
}

static int killer_main(void *p)
{
	pid_t victim = *(pid_t *)p;

	usleep(100000);
	return kill(victim, SIGKILL) ? -errno : 0;
}

struct waiter {
	struct agile_dev *dev;
	uint32_t slot, value;
	int err;
};

static void *waiter_main(void *p)
{
	struct waiter *w = p;

	w->err = agile_dev_wait_spin(w->dev, w->slot, AGILE_CMP_EQ, w->value,
				     0, LONG_NS, NULL);
	return NULL;
}

static void test_killed(void)
{
	struct member_arg arg = { .key = next_key++ };
	struct agile_dev *dev, *again;
	struct waiter w = { .slot = 2, .value = 5 };
	pthread_t thread;
	pid_t pid, killer;
	uint64_t t0;
	int err, status, started;

	err = join(arg.key, NR_SLOTS, 2, 0600, AGILE_DEV_GROUP_CREATE, &dev);
	if (!tap_ok(!err, "%s: create a group of 2: %s", be,
		    agile_strerror(err)))
		return;
	pid = child(sleeper_main, &arg);
	err = await_sleepers(dev, 1, 1);
	tap_ok(!err, "%s: member 1 joined and sleeps", be);
	/* Two of our threads are asleep when the member dies. */
	killer = child(killer_main, &pid);
	w.dev = dev;
	started = !pthread_create(&thread, NULL, waiter_main, &w);
	t0 = now_ns();
	err = agile_dev_wait_spin(dev, 0, AGILE_CMP_EQ, 5, 0, LONG_NS, NULL);
	if (started)
		pthread_join(thread, NULL);
	else
		w.err = -EAGAIN;
	tap_ok(err == -EPIPE && w.err == -EPIPE && now_ns() - t0 < LONG_NS,
	       "%s: member 1 killed mid-wait: our two sleeping waits fail with -EPIPE (%s, %s)",
	       be, agile_strerror(err), agile_strerror(w.err));
	status = reap(pid);
	tap_ok(status == 1000 + SIGKILL && reap(killer) == 0,
	       "%s: member 1 died of SIGKILL (%d)", be, status);
	tap_ok(agile_dev_wait_spin(dev, 0, AGILE_CMP_EQ, 5, 0, 1000000000ULL,
				   NULL) == -EPIPE,
	       "%s: a new wait after the death: -EPIPE", be);
	t0 = now_ns();
	err = join(arg.key, NR_SLOTS, 2, 0600,
		   AGILE_DEV_GROUP_CREATE | AGILE_DEV_GROUP_EXCL, &again);
	tap_ok(err == -EPIPE && now_ns() - t0 < LONG_NS,
	       "%s: a late joiner, while we still hold the ended group: -EPIPE at once, CREATE|EXCL or not (%s)",
	       be, agile_strerror(err));
	if (!err)
		agile_dev_close(again);
	err = join(arg.key, NR_SLOTS, 2, 0600, 0, &again);
	tap_ok(err == -EPIPE, "%s: ... and a plain join: -EPIPE (%s)", be,
	       agile_strerror(err));
	if (!err)
		agile_dev_close(again);
	agile_dev_close(dev);
	err = join(arg.key, NR_SLOTS, 2, 0600,
		   AGILE_DEV_GROUP_CREATE | AGILE_DEV_GROUP_EXCL, &again);
	tap_ok(!err && agile_dev_member(again) == 0,
	       "%s: once the last member has closed, the key is free (%s)",
	       be, agile_strerror(err));
	if (!err)
		agile_dev_close(again);
}

/* ---- two members in one process ---- */

static void test_one_process(void)
{
	uint64_t key = next_key++;
	struct waiter w = { .slot = 1, .value = 9 };
	struct agile_dev *a, *b;
	pthread_t thread;
	int err;

	err = join(key, NR_SLOTS, 2, 0600, AGILE_DEV_GROUP_CREATE, &a);
	if (!err) {
		err = join(key, NR_SLOTS, 2, 0600, 0, &b);
		if (err)
			agile_dev_close(a);
	}
	if (!tap_ok(!err && agile_dev_member(b) == 1,
		    "%s: one process joins twice: members 0 and 1 (%s)", be,
		    agile_strerror(err)))
		return;
	w.dev = b;
	err = pthread_create(&thread, NULL, waiter_main, &w) ? -EAGAIN : 0;
	if (!err)
		err = await_sleepers(a, 1, 1);
	if (!err)
		err = agile_dev_signal(a, 1, 9);
	if (!err) {
		pthread_join(thread, NULL);
		err = w.err;
	}
	tap_ok(!err, "%s: a signal through member 0 wakes member 1's wait: %s",
	       be, agile_strerror(err));
	agile_dev_close(a);
	err = agile_dev_wait_spin(b, 1, AGILE_CMP_EQ, 10, 0, LONG_NS, NULL);
	tap_ok(err == -EPIPE, "%s: member 0 closes: member 1's wait: -EPIPE",
	       be);
	agile_dev_close(b);
}

/* ---- every member dead ---- */

static int lone_main(void *p)
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

static void test_all_dead(void)
{
	struct member_arg arg = { .key = next_key++ };
	struct agile_dev *dev;
	int fds[2], one = 0, err;
	pid_t pid;

	if (pipe(fds))
		return;
	arg.report = fds[1];
	pid = child(lone_main, &arg);
	if (read(fds[0], &one, sizeof(one)) != sizeof(one))
		one = 0;
	kill(pid, SIGKILL);
	err = reap(pid);
	close(fds[0]);
	close(fds[1]);
	tap_ok(one == 1 && err == 1000 + SIGKILL,
	       "%s: the only member of a group killed", be);
	tap_ok(join(arg.key, NR_SLOTS, 2, 0600, 0, &dev) == -ENOENT,
	       "%s: its key: -ENOENT without CREATE", be);
	err = join(arg.key, NR_SLOTS, 2, 0600,
		   AGILE_DEV_GROUP_CREATE | AGILE_DEV_GROUP_EXCL, &dev);
	tap_ok(!err && agile_dev_member(dev) == 0,
	       "%s: and a new group with CREATE|EXCL (%s)", be,
	       agile_strerror(err));
	if (!err)
		agile_dev_close(dev);
}

/*
 * User backend: creating any group removes the files of our groups whose
 * members all died (their segments live in them), and no live group's.
 */
static bool shm_name_exists(uint64_t key)
{
	char name[64];

	snprintf(name, sizeof(name), "/dev/shm/agile-%u-%016llx",
		 (unsigned int)geteuid(), (unsigned long long)key);
	return access(name, F_OK) == 0;
}

static void test_sweep(void)
{
	struct member_arg arg = { .key = next_key++ };
	uint64_t live_key = next_key++, new_key = next_key++;
	struct agile_dev *live, *again, *fresh;
	int fds[2], one = 0, err;
	pid_t pid;

	if (backend != AGILE_BACKEND_USER || pipe(fds))
		return;
	err = join(live_key, NR_SLOTS, 2, 0600, AGILE_DEV_GROUP_CREATE, &live);
	if (!tap_ok(!err, "%s: a live group to keep%s%s", be, err ? ": " : "",
		    err ? agile_strerror(err) : ""))
		return;
	arg.report = fds[1];
	pid = child(lone_main, &arg); /* creates its group: a sweep */
	if (read(fds[0], &one, sizeof(one)) != sizeof(one))
		one = 0;
	kill(pid, SIGKILL);
	reap(pid);
	close(fds[0]);
	close(fds[1]);
	tap_ok(one == 1 && shm_name_exists(arg.key) &&
		       shm_name_exists(live_key),
	       "%s: a dead group's file stays until a sweep, the live one too",
	       be);
	err = join(new_key, NR_SLOTS, 1, 0600, AGILE_DEV_GROUP_CREATE, &fresh);
	tap_ok(!err && !shm_name_exists(arg.key),
	       "%s: creating another group removes the dead group's file", be);
	if (!err)
		agile_dev_close(fresh);
	err = join(live_key, NR_SLOTS, 2, 0600, 0, &again);
	tap_ok(shm_name_exists(live_key) && !err &&
		       agile_dev_member(again) == 1,
	       "%s: and leaves the live group, which still takes members", be);
	if (!err)
		agile_dev_close(again);
	agile_dev_close(live);
}

/* ---- the mode, as root ---- */

static int stranger_main(void *p)
{
	struct member_arg *a = p;
	struct agile_dev *dev;
	struct stat st;
	gid_t gid;
	int err;

	/*
	 * Another user who may open /dev/agile (a member of its group, as
	 * the udev rule makes it): only the group's mode keeps it out.
	 */
	gid = stat("/dev/agile", &st) ? 65534 : st.st_gid;
	if (setgroups(1, &gid) || setgid(65534) || setuid(65534))
		return -EPERM;
	err = join(a->key, NR_SLOTS, 2, 0600, 0, &dev);
	if (!err)
		agile_dev_close(dev);
	return err;
}

static void test_mode(void)
{
	struct member_arg arg = { .key = next_key++ };
	struct agile_dev *dev;
	struct stat st;
	int err;

	if (geteuid()) {
		tap_skip("group mode", "%s: needs root (to be another user)",
			 be);
		return;
	}
	if (backend == AGILE_BACKEND_KMOD &&
	    (stat("/dev/agile", &st) || (st.st_mode & 0060) != 0060)) {
		tap_skip("group mode",
			 "%s: /dev/agile is not writable by its group", be);
		return;
	}
	err = join(arg.key, NR_SLOTS, 2, 0600, AGILE_DEV_GROUP_CREATE, &dev);
	if (!tap_ok(!err, "%s: root creates a 0600 group", be))
		return;
	err = reap(child(stranger_main, &arg));
	tap_ok(err == EACCES, "%s: another user joins: -EACCES (%d)", be, err);
	agile_dev_close(dev);

	arg.key = next_key++;
	err = join(arg.key, NR_SLOTS, 2, 0666, AGILE_DEV_GROUP_CREATE, &dev);
	if (!tap_ok(!err, "%s: root creates a 0666 group", be))
		return;
	err = reap(child(stranger_main, &arg));
	tap_ok(err == 0, "%s: another user joins it (%d)", be, err);
	agile_dev_close(dev);
}

static void test_args(void)
{
	struct agile_dev_group_opts o;
	struct agile_dev *dev;

	agile_dev_group_opts_init(&o);
	tap_ok(o.max_members == 1 && o.mode == 0600 &&
		       o.flags == AGILE_DEV_GROUP_CREATE && o.key == 0 &&
		       o.dev.nr_slots == 1,
	       "group defaults: 1 member, 0600, CREATE");
	o.dev.backend = (uint32_t)backend;
	o.max_members = 0;
	tap_ok(agile_dev_group_join(&o, &dev) == -EINVAL, "0 members: -EINVAL");
	o.max_members = AGILE_GROUP_MAX_MEMBERS + 1;
	tap_ok(agile_dev_group_join(&o, &dev) == -EINVAL,
	       "too many members: -EINVAL");
	o.max_members = 2;
	o.mode = 01600;
	tap_ok(agile_dev_group_join(&o, &dev) == -EINVAL,
	       "mode outside 0666: -EINVAL");
	o.mode = 0600;
	o.flags = 1U << 7;
	tap_ok(agile_dev_group_join(&o, &dev) == -EINVAL,
	       "unknown flag: -EINVAL");
	o.flags = AGILE_DEV_GROUP_EXCL;
	tap_ok(agile_dev_group_join(&o, &dev) == -EINVAL,
	       "EXCL without CREATE: -EINVAL");
	o.flags = AGILE_DEV_GROUP_CREATE;
	o.reserved[2] = 1;
	tap_ok(agile_dev_group_join(&o, &dev) == -EINVAL,
	       "reserved field: -EINVAL");
	tap_ok(agile_dev_group_join(NULL, &dev) == -EINVAL &&
		       agile_dev_group_join(&o, NULL) == -EINVAL &&
		       agile_dev_group_opts_init(NULL) == -EINVAL &&
		       agile_dev_member(NULL) == -EINVAL &&
		       agile_dev_max_members(NULL) == -EINVAL,
	       "NULL arguments: -EINVAL");
}

static void test_backend(int which)
{
	struct agile_dev_opts o;
	struct agile_dev *dev;

	backend = which;
	be = agile_dev_backend_name(which);
	if (which == AGILE_BACKEND_KMOD) {
		int err = join(next_key++, 1, 1, 0600, AGILE_DEV_GROUP_CREATE,
			       &dev);

		if (err == -EOPNOTSUPP) {
			tap_skip("kmod groups",
				 "the module does not report AGILE_FEAT_GROUPS");
			return;
		}
		if (!err)
			agile_dev_close(dev);
	}
	agile_dev_opts_init(&o);
	o.backend = (uint32_t)which;
	if (!agile_dev_open(&o, &dev)) {
		tap_ok(agile_dev_member(dev) == 0 &&
			       agile_dev_max_members(dev) == 1,
		       "%s: a context outside a group: member 0 of 1", be);
		agile_dev_close(dev);
	}
	test_members();
	test_one_process();
	test_killed();
	test_all_dead();
	test_sweep();
	test_mode();
}

int main(void)
{
	alarm(4 * ALARM_S);
	/* Keys of this run: another run's groups are never ours. */
	next_key = 0xa91e000000000000ULL ^ ((uint64_t)getpid() << 16) ^
		   (now_ns() & 0xffff);
	backend = AGILE_BACKEND_USER;
	test_args();
	run_backends(test_backend);
	return tap_done();
}
