// SPDX-License-Identifier: MIT
/*
 * dev-group-mode - the group's mode, on each backend: as root, a 0600
 * group refuses another user (-EACCES) and a 0666 one lets it in.  Skipped
 * when not root.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <sys/stat.h>

#include "tap.h"
#include "testutil.h"
#include "grouptest.h"

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

int main(void)
{
	return group_main(test_mode);
}
