// SPDX-License-Identifier: MIT
/*
 * dev-group-members - members of one context shared by processes, on each
 * backend: a context outside a group is member 0 of 1; members get
 * indices in join order; a missing key without CREATE is -ENOENT,
 * CREATE|EXCL on a live key -EEXIST, other sizes -EINVAL, a full group
 * -ENOSPC; a doorbell stored and signalled in one process wakes a
 * sleeping wait in another; a member that closes ends the group: every
 * other member's wait, sleeping or new, fails with -EPIPE.
 */
#define _GNU_SOURCE

#include "tap.h"
#include "testutil.h"
#include "grouptest.h"

/* ---- join order, errors, a cross-process wake-up, close ends it ---- */

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
	       "%s: the key is free again: a new group of other sizes (%s)", be,
	       agile_strerror(err));
	if (!err)
		agile_dev_close(dev);
}

static void test(void)
{
	struct agile_dev_opts o;
	struct agile_dev *dev;

	agile_dev_opts_init(&o);
	o.backend = (uint32_t)backend;
	if (!agile_dev_open(&o, &dev)) {
		tap_ok(agile_dev_member(dev) == 0 &&
			       agile_dev_max_members(dev) == 1,
		       "%s: a context outside a group: member 0 of 1", be);
		agile_dev_close(dev);
	}
	test_members();
}

int main(void)
{
	return group_main(test);
}
