// SPDX-License-Identifier: MIT
/*
 * rt-queue-destroy - nothing is lost at a queue's destroy: with the EUs
 * held by blockers and entries queued behind them (some depending on
 * others), destroy waits until every entry ran, every event completed
 * and every callback returned; the application's event references stay
 * valid after it; the context then goes with its last release.
 */
#include <agile/error.h>
#include <agile/runtime.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "tap.h"
#include "rttest.h"

#define NR 20

static int callbacks;

static void count(struct agile_rt_event *ev, int status, void *arg)
{
	(void)ev;
	(void)arg;
	if (!status)
		__atomic_fetch_add(&callbacks, 1, __ATOMIC_RELAXED);
}

/* Lets the blockers go a little after destroy has started waiting. */
static void *unblock_later(void *arg)
{
	struct timespec t = { 0, 50 * 1000 * 1000 };

	nanosleep(&t, NULL);
	rt_unblock(arg);
	return NULL;
}

int main(void)
{
	struct agile_rt_event *blk, *ev[NR] = { 0 };
	struct agile_rt_buffer *flags, *logb;
	struct agile_rt_queue *q;
	struct rt_kernels k;
	pthread_t th;
	agile_rt_ctx ctx;
	uint64_t *log;
	int err, done = 0;

	err = rt_rig_open(&ctx, &k, &q, &flags);
	if (!err)
		err = agile_rt_buffer_create(ctx, 4096, &logb);
	if (!tap_ok(!err, "a CPU context, one EU, a queue: %s",
		    agile_strerror(err)))
		return tap_done();
	agile_rt_buffer_host(logb, (void **)&log, NULL);

	err = rt_block(q, &k, flags, 100, &blk);
	for (int i = 0; i < NR && !err; i++) {
		/* Every other one writes the log buffer: a chain of those. */
		struct agile_rt_arg a[] = {
			i % 2 ? rt_buf(logb, AGILE_RT_WRITE) :
				rt_val((uintptr_t)log),
			rt_val((uint64_t)i),
		};

		err = rt_run(q, k.log, 1, i % 3, a, 2, &ev[i]);
		if (!err)
			err = agile_rt_event_on_complete(ev[i], count, NULL);
	}
	tap_ok(!err, "%d entries queued behind the blocker: %s", NR,
	       agile_strerror(err));
	{
		struct agile_rt_stats st;

		tap_ok(!agile_rt_stats(q, &st) && st.pending == NR + 1,
		       "before destroy: %llu entries pending",
		       (unsigned long long)st.pending);
	}
	agile_rt_buffer_release(logb); /* the entries hold it */
	pthread_create(&th, NULL, unblock_later, flags);
	err = agile_rt_queue_destroy(q);
	tap_ok(!err, "destroy with entries pending: %s", agile_strerror(err));
	for (int i = 0; i < NR; i++)
		done += ev[i] && agile_rt_event_status(ev[i]) == 0;
	tap_ok(done == NR && log[0] == NR &&
		       __atomic_load_n(&callbacks, __ATOMIC_RELAXED) == NR,
	       "after destroy: %d of %d events completed, %llu logged, %d "
	       "callbacks",
	       done, NR, (unsigned long long)log[0], callbacks);
	pthread_join(th, NULL);
	tap_ok(agile_rt_event_status(blk) == 0, "the blocker's event too");
	for (int i = 0; i < NR; i++)
		if (ev[i])
			agile_rt_event_release(ev[i]);
	agile_rt_event_release(blk);
	agile_rt_buffer_release(flags);
	tap_ok_call(agile_rt_ctx_release(ctx),
		    "the context's last release after the queue's destroy");
	tap_ok(agile_rt_ctx_retain(ctx) == -AGILE_E_INVALID_CONTEXT,
	       "and it is gone");
	return tap_done();
}
