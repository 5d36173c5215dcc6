// SPDX-License-Identifier: MIT
/*
 * rt-queue-priority - among ready entries the highest priority runs
 * first, ties in enqueue order: one EU held by a blocker, six log entries
 * enqueued at priorities 1 5 3 5 -2 3, the blocker let go, and the log
 * must read ids 1 3 2 5 0 4.
 */
#include <agile/error.h>
#include <agile/runtime.h>
#include <errno.h>
#include <stdint.h>

#include "tap.h"
#include "rttest.h"

#define NR 6

int main(void)
{
	static const int32_t prio[NR] = { 1, 5, 3, 5, -2, 3 };
	static const uint64_t want[NR] = { 1, 3, 2, 5, 0, 4 };
	struct agile_rt_event *blk, *ev[NR] = { 0 };
	struct agile_rt_buffer *flags, *logb;
	struct agile_rt_queue *q;
	struct rt_kernels k;
	agile_rt_ctx ctx;
	uint64_t *log;
	int err, bad = 0;

	err = rt_rig_open(&ctx, &k, &q, &flags);
	if (!err)
		err = agile_rt_buffer_create(ctx, 4096, &logb);
	if (!tap_ok(!err, "a CPU context, one EU, a queue: %s",
		    agile_strerror(err)))
		return tap_done();
	agile_rt_buffer_host(logb, (void **)&log, NULL);

	err = rt_block(q, &k, flags, 0, &blk);
	for (int i = 0; i < NR && !err; i++) {
		/* The log by address: no data flow among the entries. */
		struct agile_rt_arg a[] = { rt_val((uintptr_t)log),
					    rt_val((uint64_t)i) };

		err = rt_run(q, k.log, 1, prio[i], a, 2, &ev[i]);
	}
	tap_ok(!err, "six entries behind the blocker: %s", agile_strerror(err));
	rt_unblock(flags);
	for (int i = 0; i < NR && !err; i++)
		err = agile_rt_event_wait(ev[i], RT_WAIT_NS);
	for (int i = 0; i < NR; i++)
		bad += log[1 + i] != want[i];
	tap_ok(!err && log[0] == NR && !bad,
	       "dispatch order %llu %llu %llu %llu %llu %llu, want 1 3 2 5 0 "
	       "4",
	       (unsigned long long)log[1], (unsigned long long)log[2],
	       (unsigned long long)log[3], (unsigned long long)log[4],
	       (unsigned long long)log[5], (unsigned long long)log[6]);
	for (int i = 0; i < NR; i++)
		if (ev[i])
			agile_rt_event_release(ev[i]);
	agile_rt_event_wait(blk, RT_WAIT_NS);
	agile_rt_event_release(blk);

	agile_rt_buffer_release(flags);
	agile_rt_buffer_release(logb);
	tap_ok_call(agile_rt_queue_destroy(q), "queue destroy");
	tap_ok_call(agile_rt_ctx_release(ctx), "context release");
	return tap_done();
}
