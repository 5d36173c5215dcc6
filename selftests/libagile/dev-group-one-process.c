// SPDX-License-Identifier: MIT
/*
 * dev-group-one-process - one process that joins a group twice, on each
 * backend.
 */
#define _GNU_SOURCE

#include "tap.h"
#include "testutil.h"
#include "grouptest.h"

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

int main(void)
{
	return group_main(test_one_process);
}
