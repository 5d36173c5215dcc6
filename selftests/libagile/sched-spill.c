// SPDX-License-Identifier: MIT
/*
 * sched-spill - more outstanding spawns than a worker's in-place frames: the rest
 * go to the private spill stack and everything still adds up, while
 * thieves may take the in-place frames (how many did is reported; that
 * steals happen at all is sched-steal-leap-wake's to show).
 */
#include <agile/sched.h>
#include <stdint.h>

#include "tap.h"
#define AGILE_TEST_FIB
#include "testutil.h"

/* Spawn @n children (each a fib(10)) before syncing any. */
AGILE_TASK(int64_t, wide, w, int, n)
{
	int64_t sum = 0;

	for (int i = 0; i < n; i++)
		AGILE_SPAWN(w, fib, 10);
	for (int i = 0; i < n; i++)
		sum += AGILE_SYNC(w, fib);
	return sum;
}

int main(void)
{
	static const uint32_t frames[] = { 2, 3, 8, 64 };
	struct agile_sched_opts opts;
	struct agile_sched_stats st;
	struct agile_sched *s;
	int64_t r;
	int err;

	for (size_t i = 0; i < sizeof(frames) / sizeof(frames[0]); i++) {
		for (uint32_t workers = 1; workers <= 3; workers += 2) {
			agile_sched_opts_init(&opts);
			opts.max_frames = frames[i];
			opts.nr_workers = workers;
			opts.flags = AGILE_SCHED_QUIET;
			err = agile_sched_create(&opts, &s);
			if (!tap_ok_call(err, "create"))
				continue;
			r = 0;
			err = AGILE_RUN(s, fib, 24, &r);
			tap_ok(err == 0 && r == fib_plain(24),
			       "%u frames, %u workers: fib(24)", frames[i],
			       workers);
			r = 0;
			err = AGILE_RUN(s, wide, 3000, &r);
			tap_ok(err == 0 && r == 3000 * 55,
			       "%u frames, %u workers: 3000 spawns outstanding",
			       frames[i], workers);
			agile_sched_stats(s, &st);
			tap_diag("%llu steals", (unsigned long long)st.steals);
			tap_ok_call(agile_sched_destroy(s), "destroy");
		}
	}
	return tap_done();
}
