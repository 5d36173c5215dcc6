// SPDX-License-Identifier: MIT
/*
 * sched-create-destroy - pools made and torn down many times, with and without
 * work and pinning (no leaks: run it under ASan); an idle pool goes to
 * sleep; destroy refuses to run from a worker.
 */
#include <agile/sched.h>
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "tap.h"
#define AGILE_TEST_FIB
#include "testutil.h"

static int destroy_self(struct agile_worker *w, void *arg)
{
	(void)w;
	return agile_sched_destroy(arg) == -EDEADLK ? 0 : -EPROTO;
}

int main(void)
{
	struct agile_sched_opts opts;
	struct agile_sched_stats st;
	struct agile_sched *s;
	int64_t r;
	int err = 0, cycles = 0;

	for (int i = 0; i < 60 && !err; i++, cycles++) {
		agile_sched_opts_init(&opts);
		opts.nr_workers = 1 + i % 5;
		opts.flags = AGILE_SCHED_QUIET |
			     (i % 3 ? 0 : AGILE_SCHED_NO_PIN);
		opts.max_frames = i % 2 ? 8 : 0;
		err = agile_sched_create(&opts, &s);
		if (err)
			break;
		if (i % 4) {
			r = 0;
			err = AGILE_RUN(s, fib, 15 + i % 7, &r);
			if (!err &&
			    r != (int64_t[]){ 610, 987, 1597, 2584, 4181, 6765,
					      10946 }[i % 7])
				err = -EPROTO;
		}
		if (!err)
			err = agile_sched_destroy(s);
		else
			agile_sched_destroy(s);
	}
	tap_ok(err == 0, "%d create / run / destroy cycles", cycles);

	err = agile_sched_create(NULL, &s);
	tap_ok_call(err, "create the default pool");
	if (err)
		return tap_done();
	tap_ok(agile_sched_run(s, destroy_self, s) == 0,
	       "destroy from a worker: -EDEADLK");
	/* An idle pool sleeps: wait (a condition, not a timing) for it. */
	for (int i = 0; i < 3000; i++) {
		struct timespec ten_ms = { .tv_nsec = 10000000 };

		agile_sched_stats(s, &st);
		if (st.sleeping == st.nr_threads)
			break;
		nanosleep(&ten_ms, NULL);
	}
	tap_ok(st.sleeping == st.nr_threads && st.sleeps >= st.nr_threads,
	       "idle workers went to sleep, all %u of them (%llu sleeps)",
	       st.sleeping, (unsigned long long)st.sleeps);
	r = 0;
	err = AGILE_RUN(s, fib, 20, &r);
	tap_ok(err == 0 && r == 6765,
	       "a sleeping pool wakes for a run (only a wake-up can start it)");
	tap_ok_call(agile_sched_destroy(s), "destroy");
	tap_ok(agile_sched_destroy(NULL) == -EINVAL, "destroy(NULL): -EINVAL");
	tap_ok(agile_sched_nr_workers(NULL) == -EINVAL &&
		       agile_sched_stats(NULL, &st) == -EINVAL,
	       "NULL pool: -EINVAL");
	return tap_done();
}
