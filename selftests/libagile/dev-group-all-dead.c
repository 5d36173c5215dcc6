// SPDX-License-Identifier: MIT
/*
 * dev-group-all-dead - a group whose members all died is gone, on each
 * backend: its key is -ENOENT without CREATE and free for CREATE|EXCL.
 */
#define _GNU_SOURCE

#include "tap.h"
#include "testutil.h"
#include "grouptest.h"

/* ---- every member dead ---- */

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

int main(void)
{
	return group_main(test_all_dead);
}
