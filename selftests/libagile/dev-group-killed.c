// SPDX-License-Identifier: MIT
/*
 * dev-group-killed - a member killed with SIGKILL while it waits ends the
 * group, on each backend: every other member's wait, sleeping or new,
 * fails with -EPIPE and the key is free at once.
 */
#define _GNU_SOURCE

#include "tap.h"
#include "testutil.h"
#include "grouptest.h"

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
	       "%s: once the last member has closed, the key is free (%s)", be,
	       agile_strerror(err));
	if (!err)
		agile_dev_close(again);
}

int main(void)
{
	return group_main(test_killed);
}
