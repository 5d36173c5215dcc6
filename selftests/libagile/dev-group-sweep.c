// SPDX-License-Identifier: MIT
/*
 * dev-group-sweep - user backend: creating any group removes the files
 * of our groups whose members all died, and no live group's (a SKIP on
 * kmod).
 */
#define _GNU_SOURCE

#include "tap.h"
#include "testutil.h"
#include "grouptest.h"

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

	if (backend != AGILE_BACKEND_USER) {
		tap_skip("group file sweep", "%s: the user backend's files",
			 be);
		return;
	}
	if (pipe(fds)) {
		tap_ok(0, "%s: pipe: %s", be, strerror(errno));
		return;
	}
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

int main(void)
{
	return group_main(test_sweep);
}
