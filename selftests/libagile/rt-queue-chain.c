// SPDX-License-Identifier: MIT
/*
 * rt-queue-chain - long chains and graphs through the ready list: every
 * entry is enqueued behind a blocker on the one EU, at priorities that
 * would run them in another order without their dependencies.
 *
 *  adds:    1000 entries B = B + 1 by data flow through B, priorities
 *           rising (backwards without the chain); a reader after the
 *           500th copies B to C at the highest priority: C = 500, B = 1000
 *  order:   1000 entries logging their index through one log buffer (read
 *           and write), priorities interleaved: logged 0 .. 999
 *  fan:     X = 1; eight readers Y[j] = (j + 1) X logging j, priorities
 *           interleaved with a tie (the log: by priority, the tie in
 *           enqueue order); a fan-in after all eight (after-events) logs
 *           99 last; Z = Y[0] + Y[7] = 9
 *  failure: 1000 entries B = B + 1 but entry 500 (rt.fail) fails: 501
 *           .. 999 fail with -AGILE_E_DEPENDENCY and do not run (B = 500),
 *           an unrelated entry still runs, and so does one that only
 *           overwrites a failing entry's buffer; the counters say so
 *  foreign: on a context of two EUs, entries after events of a second
 *           context's queue: a chain of 10 whose first waits for the
 *           other queue's blocker (still pending while it runs, 10 after);
 *           an entry linked to a pending entry of its own queue and after
 *           an event of the other queue that fails: it fails at once
 *           while that entry still waits, and so does its dependent; the
 *           entry then runs and frees it (ASan)
 *
 *  late:    after the failure, an entry after the failed event and one
 *           reading its buffer: both -AGILE_E_DEPENDENCY at once
 *
 * Every wait is bounded (RT_WAIT_NS): a ready list that loses entries
 * fails here, and then the queues are not destroyed (destroy would wait
 * for those entries for ever).
 */
#include <agile/error.h>
#include <agile/runtime.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "tap.h"
#include "rttest.h"

#define N 64
#define LONG 1000
#define FAN 8

static struct agile_rt_queue *q;
static struct rt_kernels k;
static agile_rt_ctx ctx;
static struct agile_rt_buffer *flags;
/* A wait timed out: entries are lost, destroy would hang. */
static bool stuck;

/*
 * agile_rt_event_wait bounded by RT_WAIT_NS, noting a timeout; after one,
 * no more waiting (the test fails within one RT_WAIT_NS).
 */
static int wait_ev(struct agile_rt_event *ev)
{
	int err = stuck ? -ETIMEDOUT : agile_rt_event_wait(ev, RT_WAIT_NS);

	stuck |= err == -ETIMEDOUT;
	return err;
}

static struct agile_rt_buffer *vec(agile_rt_ctx c, size_t bytes, double v)
{
	struct agile_rt_buffer *b;
	double *h;

	if (agile_rt_buffer_create(c, bytes, &b))
		return NULL;
	agile_rt_buffer_host(b, (void **)&h, NULL);
	for (size_t i = 0; i < bytes / sizeof(double); i++)
		h[i] = v;
	return b;
}

static double *host(struct agile_rt_buffer *b)
{
	double *h;

	agile_rt_buffer_host(b, (void **)&h, NULL);
	return h;
}

static int all_equal(struct agile_rt_buffer *b, double v)
{
	for (int i = 0; i < N; i++)
		if (host(b)[i] != v)
			return 0;
	return 1;
}

/* out = a x + y on queue @on with kernels @kk, at @prio. */
static int lin_on(struct agile_rt_queue *on, struct rt_kernels *kk,
		  struct agile_rt_buffer *out, double a,
		  struct agile_rt_buffer *x, struct agile_rt_buffer *y,
		  int32_t prio, struct agile_rt_event **ev)
{
	struct agile_rt_arg args[] = {
		rt_buf(out, AGILE_RT_WRITE),
		rt_val(rt_bits(a)),
		rt_buf(x, AGILE_RT_READ),
		rt_buf(y, AGILE_RT_READ),
		rt_val(N),
	};

	return rt_run(on, kk->lin, 2, prio, args, 5, ev);
}

static void block(struct agile_rt_event **blk)
{
	uint64_t *f;

	agile_rt_buffer_host(flags, (void **)&f, NULL);
	f[0] = f[1] = 0;
	if (rt_block(q, &k, flags, 1000, blk))
		*blk = NULL;
}

static void unblock(struct agile_rt_event *blk)
{
	rt_unblock(flags);
	if (blk) {
		wait_ev(blk);
		agile_rt_event_release(blk);
	}
}

static void test_adds(void)
{
	struct agile_rt_buffer *b = vec(ctx, N * 8, 0), *c = vec(ctx, N * 8, 0),
			       *one = vec(ctx, N * 8, 1),
			       *zero = vec(ctx, N * 8, 0);
	struct agile_rt_event *blk, *last = NULL, *snap = NULL;
	int err = 0;

	block(&blk);
	for (int i = 0; i < LONG && !err; i++) {
		if (last)
			agile_rt_event_release(last);
		last = NULL;
		err = lin_on(q, &k, b, 1, b, one, i, &last);
		if (!err && i == LONG / 2 - 1)
			err = lin_on(q, &k, c, 1, b, zero, 100000, &snap);
	}
	tap_ok(!err, "1000 adds enqueued behind the blocker: %s",
	       agile_strerror(err));
	unblock(blk);
	err = last ? wait_ev(last) : -EINVAL;
	if (!err)
		err = wait_ev(snap);
	tap_ok(!err && all_equal(b, LONG) && all_equal(c, LONG / 2),
	       "adds: B = 1000, the reader after the 500th saw C = 500 "
	       "(%g, %g): %s",
	       host(b)[0], host(c)[0], agile_strerror(err));
	if (last)
		agile_rt_event_release(last);
	if (snap)
		agile_rt_event_release(snap);
	agile_rt_buffer_release(b);
	agile_rt_buffer_release(c);
	agile_rt_buffer_release(one);
	agile_rt_buffer_release(zero);
}

static void test_order(void)
{
	struct agile_rt_buffer *logb = vec(ctx, (LONG + 1) * 8, 0);
	struct agile_rt_event *blk, *last = NULL;
	uint64_t *log = (uint64_t *)host(logb);
	int err = 0, bad = 0;

	block(&blk);
	for (int i = 0; i < LONG && !err; i++) {
		struct agile_rt_arg a[] = {
			rt_buf(logb, AGILE_RT_READ | AGILE_RT_WRITE),
			rt_val((uint64_t)i)
		};

		if (last)
			agile_rt_event_release(last);
		last = NULL;
		err = rt_run(q, k.log, 1, (i * 7) % 11 - 5, a, 2, &last);
	}
	unblock(blk);
	if (!err)
		err = wait_ev(last);
	for (int i = 0; i < LONG && !err; i++)
		bad += log[1 + i] != (uint64_t)i;
	tap_ok(!err && log[0] == LONG && !bad,
	       "order: 1000 logged in enqueue order despite priorities "
	       "(%llu logged, %d out of place): %s",
	       (unsigned long long)log[0], bad, agile_strerror(err));
	if (last)
		agile_rt_event_release(last);
	agile_rt_buffer_release(logb);
}

static void test_fan(void)
{
	/* Distinct priorities but for a tie (3, at j = 2 and 5). */
	static const int32_t prio[FAN] = { 1, 7, 3, -4, 9, 3, 0, 5 };
	static const uint64_t want[FAN + 1] = { 4, 1, 7, 2, 5, 0, 6, 3, 99 };
	struct agile_rt_buffer *x = vec(ctx, N * 8, 0), *y[FAN],
			       *zero = vec(ctx, N * 8, 0),
			       *z = vec(ctx, N * 8, 0),
			       *logb = vec(ctx, 64 * 8, 0);
	struct agile_rt_event *blk, *fill_ev = NULL, *ev[FAN] = { 0 },
				    *fanin = NULL, *zev = NULL;
	uint64_t *log = (uint64_t *)host(logb);
	int err = 0, bad = 0;

	for (int j = 0; j < FAN; j++)
		y[j] = vec(ctx, N * 8, 0);
	block(&blk);
	{
		struct agile_rt_arg a[] = { rt_buf(x, AGILE_RT_WRITE),
					    rt_val(rt_bits(1)), rt_val(N) };

		err = rt_run(q, k.fill, 1, -100, a, 3, &fill_ev);
	}
	for (int j = 0; j < FAN && !err; j++) {
		/* Y[j] by data flow from X, then a log after it. */
		struct agile_rt_arg a[] = { rt_val((uintptr_t)log),
					    rt_val((uint64_t)j) };
		struct agile_rt_event *yev = NULL;
		struct agile_rt_entry e = { .kernel = k.log,
					    .threads = 1,
					    .groups = 1,
					    .priority = prio[j],
					    .nr_args = 2,
					    .args = a,
					    .nr_after = 1,
					    .after = &fill_ev };

		err = lin_on(q, &k, y[j], j + 1, x, zero, 50, &yev);
		if (!err)
			err = agile_rt_enqueue(q, &e, &ev[j]);
		if (yev)
			agile_rt_event_release(yev);
	}
	if (!err) {
		struct agile_rt_arg a[] = { rt_val((uintptr_t)log),
					    rt_val(99) };
		struct agile_rt_entry e = { .kernel = k.log,
					    .threads = 1,
					    .groups = 1,
					    .priority = 1000,
					    .nr_args = 2,
					    .args = a,
					    .nr_after = FAN,
					    .after = ev };

		err = agile_rt_enqueue(q, &e, &fanin);
	}
	if (!err)
		err = lin_on(q, &k, z, 1, y[0], y[FAN - 1], 1000, &zev);
	tap_ok(!err, "fan-out and fan-in enqueued: %s", agile_strerror(err));
	unblock(blk);
	if (!err)
		err = wait_ev(fanin);
	if (!err)
		err = wait_ev(zev);
	for (int i = 0; i < FAN + 1; i++)
		bad += log[1 + i] != want[i];
	tap_ok(!err && log[0] == FAN + 1 && !bad,
	       "fan: logged %llu %llu %llu %llu %llu %llu %llu %llu %llu, "
	       "want 4 1 7 2 5 0 6 3 99: %s",
	       (unsigned long long)log[1], (unsigned long long)log[2],
	       (unsigned long long)log[3], (unsigned long long)log[4],
	       (unsigned long long)log[5], (unsigned long long)log[6],
	       (unsigned long long)log[7], (unsigned long long)log[8],
	       (unsigned long long)log[9], agile_strerror(err));
	tap_ok(!err && all_equal(z, 1 + FAN) && all_equal(y[3], 4),
	       "fan: Z = Y[0] + Y[7] = 9, Y[3] = 4 (%g, %g)", host(z)[0],
	       host(y[3])[0]);
	if (fill_ev)
		agile_rt_event_release(fill_ev);
	for (int j = 0; j < FAN; j++) {
		if (ev[j])
			agile_rt_event_release(ev[j]);
		agile_rt_buffer_release(y[j]);
	}
	if (fanin)
		agile_rt_event_release(fanin);
	if (zev)
		agile_rt_event_release(zev);
	agile_rt_buffer_release(x);
	agile_rt_buffer_release(z);
	agile_rt_buffer_release(zero);
	agile_rt_buffer_release(logb);
}

static void test_failure(void)
{
	struct agile_rt_buffer *b = vec(ctx, N * 8, 0),
			       *one = vec(ctx, N * 8, 1),
			       *other = vec(ctx, N * 8, 0),
			       *w = vec(ctx, N * 8, 0),
			       *logb = vec(ctx, 64 * 8, 0);
	struct agile_rt_event **ev = calloc(LONG, sizeof(*ev)), *blk,
			      *free_ev = NULL, *w_fail = NULL, *w_over = NULL;
	struct agile_rt_stats before, after;
	int err = 0, wrong = 0;

	if (!tap_ok(ev != NULL, "events"))
		return;
	agile_rt_stats(q, &before);
	block(&blk);
	for (int i = 0; i < LONG && !err; i++) {
		struct agile_rt_arg a[] = {
			rt_buf(b, AGILE_RT_READ | AGILE_RT_WRITE),
		};

		err = i == LONG / 2 ? rt_run(q, k.fail, 1, i, a, 1, &ev[i]) :
				      lin_on(q, &k, b, 1, b, one, i, &ev[i]);
	}
	if (!err) {
		struct agile_rt_arg a[] = { rt_buf(other, AGILE_RT_WRITE),
					    rt_val(rt_bits(7)), rt_val(N) };

		err = rt_run(q, k.fill, 1, -1, a, 3, &free_ev);
	}
	if (!err) {
		/* Only overwriting what failed: ordered, not failed. */
		struct agile_rt_arg f[] = { rt_buf(w, AGILE_RT_WRITE) };
		struct agile_rt_arg o[] = { rt_buf(w, AGILE_RT_WRITE),
					    rt_val(rt_bits(5)), rt_val(N) };

		err = rt_run(q, k.fail, 1, 0, f, 1, &w_fail);
		if (!err)
			err = rt_run(q, k.fill, 1, 0, o, 3, &w_over);
	}
	tap_ok(!err, "1000 entries, the 500th failing, enqueued: %s",
	       agile_strerror(err));
	unblock(blk);
	for (int i = 0; i < LONG && !err; i++) {
		int s = wait_ev(ev[i]);
		int want = i < LONG / 2	 ? 0 :
			   i == LONG / 2 ? -EDOM :
					   -AGILE_E_DEPENDENCY;

		wrong += s != want;
	}
	if (!err)
		err = wait_ev(free_ev);
	if (!err)
		err = wait_ev(w_fail) == -EDOM ? wait_ev(w_over) : -EPROTO;
	agile_rt_stats(q, &after);
	tap_ok(!err && !wrong && all_equal(b, LONG / 2),
	       "failure: 0..499 ran (B = %g), 500 failed, 501..999 "
	       "-AGILE_E_DEPENDENCY (%d events wrong): %s",
	       host(b)[0], wrong, agile_strerror(err));
	tap_ok(!err && all_equal(other, 7) && all_equal(w, 5),
	       "failure: an unrelated entry ran (%g), and one only overwriting "
	       "a failed entry's buffer (%g)",
	       host(other)[0], host(w)[0]);
	tap_ok(after.dep_failed - before.dep_failed == LONG / 2 - 1 &&
		       after.failed - before.failed == 2 && !after.pending,
	       "failure: counted: %llu dependency-failed, %llu failed, %llu "
	       "pending",
	       (unsigned long long)(after.dep_failed - before.dep_failed),
	       (unsigned long long)(after.failed - before.failed),
	       (unsigned long long)after.pending);
	if (!err) {
		struct agile_rt_arg a[] = { rt_val((uintptr_t)host(logb)),
					    rt_val(5) };
		struct agile_rt_entry e = { .kernel = k.log,
					    .threads = 1,
					    .groups = 1,
					    .nr_args = 2,
					    .args = a,
					    .nr_after = 1,
					    .after = &ev[LONG / 2] };
		struct agile_rt_event *late = NULL, *reader = NULL;
		int s1, s2;

		err = agile_rt_enqueue(q, &e, &late);
		if (!err)
			err = lin_on(q, &k, other, 1, b, one, 0, &reader);
		s1 = err ? err : wait_ev(late);
		s2 = err ? err : wait_ev(reader);
		tap_ok(s1 == -AGILE_E_DEPENDENCY && s2 == -AGILE_E_DEPENDENCY &&
			       all_equal(other, 7) && !host(logb)[0],
		       "late: after the failed event %d, reading its "
		       "dependent's buffer %d: -AGILE_E_DEPENDENCY, not run",
		       s1, s2);
		if (late)
			agile_rt_event_release(late);
		if (reader)
			agile_rt_event_release(reader);
	}
	for (int i = 0; i < LONG; i++)
		if (ev[i])
			agile_rt_event_release(ev[i]);
	free(ev);
	if (free_ev)
		agile_rt_event_release(free_ev);
	if (w_fail)
		agile_rt_event_release(w_fail);
	if (w_over)
		agile_rt_event_release(w_over);
	agile_rt_buffer_release(w);
	agile_rt_buffer_release(logb);
	agile_rt_buffer_release(b);
	agile_rt_buffer_release(one);
	agile_rt_buffer_release(other);
}

/* A context of @eus CPU EUs with the kernels, a queue, a flags buffer. */
static int side_open(uint32_t eus, agile_rt_ctx *c, struct rt_kernels *kk,
		     struct agile_rt_queue **qq, struct agile_rt_buffer **fl)
{
	int err = rt_cpu_ctx(eus, c);

	if (!err)
		err = rt_register_all(*c, kk);
	if (!err)
		err = agile_rt_queue_create(*c, NULL, qq);
	if (!err)
		err = agile_rt_buffer_create(*c, 64, fl);
	return err;
}

static void side_close(agile_rt_ctx c, struct agile_rt_queue *qq,
		       struct agile_rt_buffer *fl)
{
	agile_rt_buffer_release(fl);
	agile_rt_queue_destroy(qq);
	agile_rt_ctx_release(c);
}

static void test_foreign(void)
{
	struct agile_rt_buffer *fl2, *fl3, *b, *one, *a3;
	struct agile_rt_event *blk2 = NULL, *blk3 = NULL, *last = NULL,
			      *first = NULL, *up = NULL, *fail2 = NULL,
			      *linked = NULL, *below = NULL;
	struct agile_rt_queue *q2, *q3;
	struct rt_kernels k2, k3;
	agile_rt_ctx c2, c3;
	int err;

	/* The other queue: a context of one EU. */
	err = side_open(1, &c2, &k2, &q2, &fl2);
	/* This one: two EUs, so that one looks again while one is held. */
	if (!err)
		err = side_open(2, &c3, &k3, &q3, &fl3);
	if (!tap_ok(!err, "two more contexts and queues: %s",
		    agile_strerror(err)))
		return;
	b = vec(c3, N * 8, 0);
	one = vec(c3, N * 8, 1);
	a3 = vec(c3, N * 8, 0);

	/* A chain of 10 on q3, the first after q2's blocker. */
	err = rt_block(q2, &k2, fl2, 0, &blk2);
	for (int i = 0; i < 10 && !err; i++) {
		struct agile_rt_arg args[] = {
			rt_buf(b, AGILE_RT_WRITE),
			rt_val(rt_bits(1)),
			rt_buf(b, AGILE_RT_READ),
			rt_buf(one, AGILE_RT_READ),
			rt_val(N),
		};
		struct agile_rt_entry e = { .kernel = k3.lin,
					    .threads = 2,
					    .groups = 1,
					    .priority = i,
					    .nr_args = 5,
					    .args = args,
					    .nr_after = i ? 0 : 1,
					    .after = &blk2 };

		if (last && last != first)
			agile_rt_event_release(last);
		last = NULL;
		err = agile_rt_enqueue(q3, &e, &last);
		if (!err && !i)
			first = last;
	}
	tap_ok(!err && agile_rt_event_wait(last, 2000000) == -ETIMEDOUT &&
		       agile_rt_event_status(first) == AGILE_RT_PENDING,
	       "foreign: the chain waits for the other queue's blocker: %s",
	       agile_strerror(err));
	rt_unblock(fl2);
	if (!err)
		err = wait_ev(last);
	tap_ok(!err && all_equal(b, 10),
	       "foreign: then it runs: B = 10 (%g): %s", host(b)[0],
	       agile_strerror(err));
	wait_ev(blk2);
	agile_rt_event_release(blk2);
	blk2 = NULL;

	/*
	 * q3: a blocker on one EU, "up" after it (linked to the blocker);
	 * "linked" reads up's output and waits for q2's failing entry;
	 * "below" reads linked's output.  q2's entry fails while up waits.
	 */
	{
		uint64_t *f;

		agile_rt_buffer_host(fl2, (void **)&f, NULL);
		f[0] = f[1] = 0;
	}
	if (!err)
		err = rt_block(q2, &k2, fl2, 0, &blk2);
	if (!err)
		err = rt_run(q2, k2.fail, 1, 0, NULL, 0, &fail2);
	if (!err)
		err = rt_block(q3, &k3, fl3, 0, &blk3);
	if (!err) {
		struct agile_rt_arg args[] = { rt_buf(a3, AGILE_RT_WRITE),
					       rt_val(rt_bits(3)), rt_val(N) };
		struct agile_rt_entry e = { .kernel = k3.fill,
					    .threads = 1,
					    .groups = 1,
					    .nr_args = 3,
					    .args = args,
					    .nr_after = 1,
					    .after = &blk3 };

		err = agile_rt_enqueue(q3, &e, &up);
	}
	if (!err) {
		struct agile_rt_arg args[] = {
			rt_buf(b, AGILE_RT_WRITE),
			rt_val(rt_bits(1)),
			rt_buf(a3, AGILE_RT_READ),
			rt_buf(one, AGILE_RT_READ),
			rt_val(N),
		};
		struct agile_rt_entry e = { .kernel = k3.lin,
					    .threads = 2,
					    .groups = 1,
					    .nr_args = 5,
					    .args = args,
					    .nr_after = 1,
					    .after = &fail2 };

		err = agile_rt_enqueue(q3, &e, &linked);
	}
	if (!err)
		err = lin_on(q3, &k3, one, 1, b, b, 0, &below);
	tap_ok(!err, "foreign: a failing entry there, linked ones here: %s",
	       agile_strerror(err));
	rt_unblock(fl2);
	if (!err)
		err = wait_ev(fail2) == -EDOM ? 0 : -EPROTO;
	tap_ok(!err && wait_ev(linked) == -AGILE_E_DEPENDENCY &&
		       wait_ev(below) == -AGILE_E_DEPENDENCY &&
		       agile_rt_event_status(up) == AGILE_RT_PENDING,
	       "foreign: the other queue's failure fails the linked entry and "
	       "its dependent while the entry they wait for still waits: %s",
	       agile_strerror(err));
	rt_unblock(fl3);
	err = wait_ev(up);
	tap_ok(!err && all_equal(a3, 3) && all_equal(b, 10) &&
		       all_equal(one, 1),
	       "foreign: that entry runs after (A = %g), nothing ran that "
	       "failed (B = %g, ONE = %g)",
	       host(a3)[0], host(b)[0], host(one)[0]);
	if (blk2) {
		wait_ev(blk2);
		agile_rt_event_release(blk2);
	}
	if (blk3) {
		wait_ev(blk3);
		agile_rt_event_release(blk3);
	}
	{
		struct agile_rt_event *evs[] = { first, last,	up,
						 fail2, linked, below };

		for (int i = 0; i < 6; i++)
			if (evs[i])
				agile_rt_event_release(evs[i]);
	}
	agile_rt_buffer_release(b);
	agile_rt_buffer_release(one);
	agile_rt_buffer_release(a3);
	if (stuck)
		return; /* destroy would wait for the lost entries */
	side_close(c3, q3, fl3);
	side_close(c2, q2, fl2);
}

int main(void)
{
	int err;

	err = rt_rig_open(&ctx, &k, &q, &flags);
	if (!tap_ok(!err, "a CPU context, one EU, a queue: %s",
		    agile_strerror(err)))
		return tap_done();
	test_adds();
	test_order();
	test_fan();
	test_failure();
	test_foreign();
	if (!tap_ok(!stuck, "no wait timed out"))
		return tap_done(); /* destroy would wait for ever */
	agile_rt_buffer_release(flags);
	tap_ok_call(agile_rt_queue_destroy(q), "queue destroy");
	tap_ok_call(agile_rt_ctx_release(ctx), "context release");
	return tap_done();
}
