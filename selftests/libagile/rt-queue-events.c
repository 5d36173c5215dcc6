// SPDX-License-Identifier: MIT
/*
 * rt-queue-events - events: status and wait (a timeout while the entry
 * waits), completion callbacks (their status, their order, one added
 * after completion runs at once), and errors: a failed entry's event
 * carries its error; the entries that depend on it, by data flow or by
 * after-event, fail with -AGILE_E_DEPENDENCY without running, and so do
 * theirs; an unrelated entry runs; an entry that only overwrites the
 * failed output runs, and readers after it.  The counters say so.
 */
#include <agile/error.h>
#include <agile/runtime.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tap.h"
#include "rttest.h"

#define N 64

struct seen {
	int calls;
	int status[8];
	int order[8];
};

static int order_clock;

static void note(struct agile_rt_event *ev, int status, void *arg)
{
	struct seen *s = arg;

	(void)ev;
	if (s->calls < 8) {
		s->status[s->calls] = status;
		s->order[s->calls] =
			__atomic_fetch_add(&order_clock, 1, __ATOMIC_RELAXED);
	}
	s->calls++;
}

int main(void)
{
	struct agile_rt_buffer *flags, *a, *b, *c, *d;
	struct agile_rt_event *blk, *fail, *dep, *dep2, *free_ev, *late;
	struct seen s_fail = { 0 }, s_dep = { 0 }, s_late = { 0 };
	struct agile_rt_stats st;
	struct agile_rt_queue *q;
	struct rt_kernels k;
	agile_rt_ctx ctx;
	double *bh, *dh;
	char *text = NULL;
	size_t text_len = 0;
	FILE *mem;
	int err;

	err = rt_rig_open(&ctx, &k, &q, &flags);
	if (!err)
		err = agile_rt_buffer_create(ctx, N * 8, &a);
	if (!err)
		err = agile_rt_buffer_create(ctx, N * 8, &b);
	if (!err)
		err = agile_rt_buffer_create(ctx, N * 8, &c);
	if (!err)
		err = agile_rt_buffer_create(ctx, N * 8, &d);
	if (!tap_ok(!err, "a CPU context, one EU, a queue, buffers: %s",
		    agile_strerror(err)))
		return tap_done();
	agile_rt_buffer_host(b, (void **)&bh, NULL);
	agile_rt_buffer_host(d, (void **)&dh, NULL);

	err = rt_block(q, &k, flags, 0, &blk);
	{
		/* fail writes A; dep reads A, writes B; dep2 after dep. */
		struct agile_rt_arg fa[] = { rt_buf(a, AGILE_RT_WRITE) };
		struct agile_rt_arg da[] = { rt_buf(b, AGILE_RT_WRITE),
					     rt_val(rt_bits(9)), rt_val(N),
					     rt_buf(a, AGILE_RT_READ) };
		struct agile_rt_arg fr[] = { rt_buf(d, AGILE_RT_WRITE),
					     rt_val(rt_bits(4)), rt_val(N) };
		struct agile_rt_arg c2[] = { rt_buf(c, AGILE_RT_WRITE),
					     rt_val(rt_bits(1)), rt_val(N) };
		struct agile_rt_entry e = { .kernel = k.fill,
					    .threads = 2,
					    .groups = 1,
					    .nr_args = 3,
					    .args = c2,
					    .nr_after = 1 };

		if (!err)
			err = rt_run(q, k.fail, 3, 0, fa, 1, &fail);
		if (!err)
			err = rt_run(q, k.fill, 2, 0, da, 4, &dep);
		e.after = &dep;
		if (!err)
			err = agile_rt_enqueue(q, &e, &dep2);
		if (!err)
			err = rt_run(q, k.fill, 2, 0, fr, 3, &free_ev);
	}
	if (!tap_ok(!err, "four entries behind the blocker: %s",
		    agile_strerror(err)))
		return tap_done();
	tap_ok(agile_rt_event_status(fail) == AGILE_RT_PENDING &&
		       agile_rt_event_wait(dep2, 1000000) == -ETIMEDOUT,
	       "pending while blocked: status PENDING, a 1 ms wait "
	       "-ETIMEDOUT");
	tap_ok(!agile_rt_event_on_complete(fail, note, &s_fail) &&
		       !agile_rt_event_on_complete(dep, note, &s_dep) &&
		       !agile_rt_event_on_complete(fail, note, &s_fail),
	       "callbacks added: two on the failing entry, one on its "
	       "dependent");
	rt_unblock(flags);

	err = agile_rt_event_wait(fail, RT_WAIT_NS);
	tap_ok(err == -EDOM, "the failing entry: its lanes' error: %s",
	       agile_strerror(err));
	err = agile_rt_event_wait(dep, RT_WAIT_NS);
	tap_ok(err == -AGILE_E_DEPENDENCY && bh[0] == 0 && bh[N - 1] == 0,
	       "reading its output: -AGILE_E_DEPENDENCY, not run (B = %g): "
	       "%s",
	       bh[0], agile_strerror(err));
	err = agile_rt_event_wait(dep2, RT_WAIT_NS);
	tap_ok(err == -AGILE_E_DEPENDENCY,
	       "after the dependent's event: -AGILE_E_DEPENDENCY too: %s",
	       agile_strerror(err));
	err = agile_rt_event_wait(free_ev, RT_WAIT_NS);
	tap_ok(!err && dh[0] == 4 && dh[N - 1] == 4,
	       "an unrelated entry runs: D = %g: %s", dh[0],
	       agile_strerror(err));
	tap_ok(s_fail.calls == 2 && s_fail.status[0] == -EDOM &&
		       s_fail.status[1] == -EDOM &&
		       s_fail.order[0] < s_fail.order[1] && s_dep.calls == 1 &&
		       s_dep.status[0] == -AGILE_E_DEPENDENCY &&
		       s_dep.order[0] > s_fail.order[1],
	       "callbacks: each once, with the status, in order (%d, %d)",
	       s_fail.calls, s_dep.calls);
	tap_ok(!agile_rt_event_on_complete(free_ev, note, &s_late) &&
		       s_late.calls == 1 && s_late.status[0] == 0,
	       "a callback added after completion runs at once");

	/* A buffer written by a failed entry taints later readers too. */
	{
		struct agile_rt_arg ra[] = { rt_buf(d, AGILE_RT_WRITE),
					     rt_val(rt_bits(1)), rt_val(N),
					     rt_buf(a, AGILE_RT_READ) };

		err = rt_run(q, k.fill, 1, 0, ra, 4, &late);
		if (!err)
			err = agile_rt_event_wait(late, RT_WAIT_NS);
		tap_ok(err == -AGILE_E_DEPENDENCY && dh[0] == 4,
		       "a reader enqueued after the failure: "
		       "-AGILE_E_DEPENDENCY: %s",
		       agile_strerror(err));
	}

	/*
	 * Overwriting it (write only) orders after the failed writer and its
	 * failed readers but does not fail: readers after that run.
	 */
	{
		struct agile_rt_arg wa[] = { rt_buf(a, AGILE_RT_WRITE),
					     rt_val(rt_bits(6)), rt_val(N) };
		struct agile_rt_arg rb[] = { rt_buf(d, AGILE_RT_WRITE),
					     rt_val(rt_bits(8)), rt_val(N),
					     rt_buf(a, AGILE_RT_READ) };
		struct agile_rt_event *w_ev = NULL, *r_ev = NULL;

		err = rt_run(q, k.fill, 1, 0, wa, 3, &w_ev);
		if (!err)
			err = rt_run(q, k.fill, 1, 0, rb, 4, &r_ev);
		if (!err)
			err = agile_rt_event_wait(w_ev, RT_WAIT_NS);
		if (!err)
			err = agile_rt_event_wait(r_ev, RT_WAIT_NS);
		tap_ok(!err && dh[0] == 8,
		       "a write-only overwrite of the failed output runs, and "
		       "readers after it: %s",
		       agile_strerror(err));
		if (w_ev)
			agile_rt_event_release(w_ev);
		if (r_ev)
			agile_rt_event_release(r_ev);
	}

	err = agile_rt_stats(q, &st);
	tap_ok(!err && st.enqueued == 8 && st.completed == 8 &&
		       st.failed == 1 && st.dep_failed == 3 && !st.pending,
	       "stats: %llu enqueued, %llu completed, %llu failed, %llu by "
	       "dependency",
	       (unsigned long long)st.enqueued,
	       (unsigned long long)st.completed, (unsigned long long)st.failed,
	       (unsigned long long)st.dep_failed);
	mem = open_memstream(&text, &text_len);
	err = mem ? agile_rt_stats_print(q, mem) : -ENOMEM;
	if (mem)
		fclose(mem);
	tap_ok(!err && text && strstr(text, "8 enqueued") &&
		       strstr(text, "1 failed") && strstr(text, "fallback"),
	       "the printed table says so");
	for (char *line = text ? strtok(text, "\n") : NULL; line;
	     line = strtok(NULL, "\n"))
		tap_diag("%s", line);
	free(text);

	agile_rt_event_release(blk);
	agile_rt_event_release(fail);
	agile_rt_event_release(dep);
	agile_rt_event_release(dep2);
	agile_rt_event_release(free_ev);
	agile_rt_event_release(late);
	agile_rt_buffer_release(flags);
	agile_rt_buffer_release(a);
	agile_rt_buffer_release(b);
	agile_rt_buffer_release(c);
	agile_rt_buffer_release(d);
	tap_ok_call(agile_rt_queue_destroy(q), "queue destroy");
	tap_ok_call(agile_rt_ctx_release(ctx), "context release");
	return tap_done();
}
