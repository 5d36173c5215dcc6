// SPDX-License-Identifier: MIT
/*
 * rt-queue-deps - dependencies from data flow and after-events, proved by
 * values: every entry is enqueued while the one EU is held by a blocker,
 * later entries at higher priority, so that without the dependencies the
 * queue would run them backwards and the values would come out wrong.
 *
 *  chain:   b[i] = 2 b[i-1] + 0 for i = 1..6, b[0] = 1: b[6] = 64
 *           (read after write)
 *  diamond: X = 1; Y = 2 X; Z = 3 X; W = Y + Z = 5; then X = 100
 *           (write after read: Y and Z must have read 1) and W = 7 again
 *           written after W's reader V = W + 0 (V = 5)
 *  after:   two log entries with no buffer in common, the second after the
 *           first's event: logged in that order despite priorities
 *  groups:  4 groups of 8 lanes, each writes its group index's values
 */
#include <agile/error.h>
#include <agile/runtime.h>
#include <errno.h>
#include <stdint.h>

#include "tap.h"
#include "rttest.h"

#define N 256
#define CHAIN 7

static struct agile_rt_queue *q;
static struct rt_kernels k;
static agile_rt_ctx ctx;

static struct agile_rt_buffer *vec(double v)
{
	struct agile_rt_buffer *b;
	double *h;

	if (agile_rt_buffer_create(ctx, N * sizeof(double), &b))
		return NULL;
	agile_rt_buffer_host(b, (void **)&h, NULL);
	for (int i = 0; i < N; i++)
		h[i] = v;
	return b;
}

static double at(struct agile_rt_buffer *b, int i)
{
	double *h;

	agile_rt_buffer_host(b, (void **)&h, NULL);
	return h[i];
}

/* out = a x + y, at @prio. */
static int lin(struct agile_rt_buffer *out, double a, struct agile_rt_buffer *x,
	       struct agile_rt_buffer *y, int32_t prio,
	       struct agile_rt_event **ev)
{
	struct agile_rt_arg args[] = {
		rt_buf(out, AGILE_RT_WRITE),
		rt_val(rt_bits(a)),
		rt_buf(x, AGILE_RT_READ),
		rt_buf(y, AGILE_RT_READ),
		rt_val(N),
	};

	return rt_run(q, k.lin, 4, prio, args, 5, ev);
}

static int fill(struct agile_rt_buffer *out, double v, int32_t prio,
		struct agile_rt_event **ev)
{
	struct agile_rt_arg args[] = { rt_buf(out, AGILE_RT_WRITE),
				       rt_val(rt_bits(v)), rt_val(N) };

	return rt_run(q, k.fill, 3, prio, args, 3, ev);
}

static int all_equal(struct agile_rt_buffer *b, double v)
{
	for (int i = 0; i < N; i++)
		if (at(b, i) != v)
			return 0;
	return 1;
}

static void test_chain(struct agile_rt_buffer *flags)
{
	struct agile_rt_buffer *b[CHAIN], *zero = vec(0);
	struct agile_rt_event *blk, *last = NULL;
	int err = 0;

	for (int i = 0; i < CHAIN; i++)
		b[i] = vec(i ? 0 : 1);
	err = rt_block(q, &k, flags, 1000, &blk);
	for (int i = 1; i < CHAIN && !err; i++) {
		if (last)
			agile_rt_event_release(last);
		last = NULL;
		err = lin(b[i], 2, b[i - 1], zero, i, &last);
	}
	tap_ok(!err, "chain enqueued behind the blocker: %s",
	       agile_strerror(err));
	rt_unblock(flags);
	err = last ? agile_rt_event_wait(last, RT_WAIT_NS) : -EINVAL;
	tap_ok(!err && all_equal(b[CHAIN - 1], 64) && all_equal(b[3], 8),
	       "chain: b[6] = 64, b[3] = 8 (%g, %g): %s", at(b[CHAIN - 1], 0),
	       at(b[3], 0), agile_strerror(err));
	agile_rt_event_wait(blk, RT_WAIT_NS);
	agile_rt_event_release(blk);
	agile_rt_event_release(last);
	for (int i = 0; i < CHAIN; i++)
		agile_rt_buffer_release(b[i]);
	agile_rt_buffer_release(zero);
}

static void test_diamond(struct agile_rt_buffer *flags)
{
	struct agile_rt_buffer *x = vec(0), *y = vec(0), *z = vec(0),
			       *w = vec(0), *v = vec(0), *zero = vec(0);
	struct agile_rt_event *blk, *ev[7] = { 0 };
	int err;

	/* Clear the flags of the chain's blocker. */
	uint64_t *f;

	agile_rt_buffer_host(flags, (void **)&f, NULL);
	f[0] = f[1] = 0;
	err = rt_block(q, &k, flags, 1000, &blk);
	if (!err)
		err = fill(x, 1, 1, &ev[0]);
	if (!err)
		err = lin(y, 2, x, zero, 2, &ev[1]);
	if (!err)
		err = lin(z, 3, x, zero, 3, &ev[2]);
	if (!err)
		err = lin(w, 1, y, z, 4, &ev[3]);
	if (!err) /* write after read: Y and Z have read X */
		err = fill(x, 100, 5, &ev[4]);
	if (!err) /* reads W ... */
		err = lin(v, 1, w, zero, 6, &ev[5]);
	if (!err) /* ... before it is overwritten */
		err = fill(w, 7, 7, &ev[6]);
	tap_ok(!err, "diamond enqueued behind the blocker: %s",
	       agile_strerror(err));
	rt_unblock(flags);
	for (int i = 0; i < 7 && !err; i++)
		err = agile_rt_event_wait(ev[i], RT_WAIT_NS);
	tap_ok(!err && all_equal(y, 2) && all_equal(z, 3),
	       "diamond: Y = 2 X, Z = 3 X read X = 1 (%g, %g): %s", at(y, 0),
	       at(z, 0), agile_strerror(err));
	tap_ok(!err && all_equal(v, 5),
	       "diamond: W = Y + Z = 5, as its reader V saw (%g)", at(v, 0));
	tap_ok(!err && all_equal(x, 100) && all_equal(w, 7),
	       "write after read and write after write: X = 100, W = 7 last "
	       "(%g, %g)",
	       at(x, 0), at(w, 0));
	agile_rt_event_wait(blk, RT_WAIT_NS);
	agile_rt_event_release(blk);
	for (int i = 0; i < 7; i++)
		if (ev[i])
			agile_rt_event_release(ev[i]);
	agile_rt_buffer_release(x);
	agile_rt_buffer_release(y);
	agile_rt_buffer_release(z);
	agile_rt_buffer_release(w);
	agile_rt_buffer_release(v);
	agile_rt_buffer_release(zero);
}

static void test_after(struct agile_rt_buffer *flags)
{
	struct agile_rt_event *blk, *first = NULL, *second = NULL;
	struct agile_rt_buffer *log;
	uint64_t *f, *l;
	int err;

	agile_rt_buffer_host(flags, (void **)&f, NULL);
	f[0] = f[1] = 0;
	err = agile_rt_buffer_create(ctx, 64, &log);
	if (!tap_ok(!err, "a log"))
		return;
	agile_rt_buffer_host(log, (void **)&l, NULL);
	err = rt_block(q, &k, flags, 1000, &blk);
	{
		/*
		 * The log by its address as a plain value, not as a buffer:
		 * no data flow between the two, only the after-event.  (A
		 * CPU EU's address is the host's.)
		 */
		struct agile_rt_arg a1[] = { rt_val((uintptr_t)l), rt_val(1) };
		struct agile_rt_arg a2[] = { rt_val((uintptr_t)l), rt_val(2) };
		struct agile_rt_entry e = { .kernel = k.log,
					    .threads = 1,
					    .groups = 1,
					    .priority = 1,
					    .nr_args = 2,
					    .args = a1 };

		if (!err)
			err = agile_rt_enqueue(q, &e, &first);
		e.priority = 9;
		e.args = a2;
		e.nr_after = 1;
		e.after = &first;
		if (!err)
			err = agile_rt_enqueue(q, &e, &second);
	}
	rt_unblock(flags);
	if (!err)
		err = agile_rt_event_wait(second, RT_WAIT_NS);
	tap_ok(!err && l[0] == 2 && l[1] == 1 && l[2] == 2,
	       "after-event: the first ran first despite priority 1 < 9 "
	       "(log %llu: %llu %llu): %s",
	       (unsigned long long)l[0], (unsigned long long)l[1],
	       (unsigned long long)l[2], agile_strerror(err));
	agile_rt_event_wait(blk, RT_WAIT_NS);
	agile_rt_event_release(blk);
	if (first)
		agile_rt_event_release(first);
	if (second)
		agile_rt_event_release(second);
	agile_rt_buffer_release(log);
}

static void test_groups(void)
{
	struct agile_rt_buffer *out = vec(-1);
	struct agile_rt_arg args[] = {
		rt_buf(out, AGILE_RT_WRITE),
		{ .kind = AGILE_RT_ARG_GROUP },
	};
	struct agile_rt_entry e = { .kernel = k.group,
				    .threads = 8,
				    .groups = 4,
				    .nr_args = 2,
				    .args = args };
	struct agile_rt_event *ev;
	int err, bad = 0;

	err = agile_rt_enqueue(q, &e, &ev);
	if (!err)
		err = agile_rt_event_wait(ev, RT_WAIT_NS);
	for (int g = 0; g < 4 && !err; g++)
		for (int l = 0; l < 8; l++)
			bad += at(out, g * 8 + l) != 100.0 * g + l;
	tap_ok(!err && !bad && at(out, 32) == -1,
	       "4 groups of 8 lanes: each wrote its own values, %d wrong: %s",
	       bad, agile_strerror(err));
	if (!err)
		agile_rt_event_release(ev);
	agile_rt_buffer_release(out);
}

int main(void)
{
	struct agile_rt_buffer *flags;
	int err;

	err = rt_rig_open(&ctx, &k, &q, &flags);
	if (!tap_ok(!err, "a CPU context, one EU, a queue: %s",
		    agile_strerror(err)))
		return tap_done();
	test_chain(flags);
	test_diamond(flags);
	test_after(flags);
	test_groups();
	agile_rt_buffer_release(flags);
	tap_ok_call(agile_rt_queue_destroy(q), "queue destroy");
	tap_ok_call(agile_rt_ctx_release(ctx), "context release");
	return tap_done();
}
