// SPDX-License-Identifier: GPL-2.0-only
/*
 * agile poller: wakes sleepers whose doorbell was written by someone who
 * never enters the kernel (a GPU kernel, a CPU thread's plain store).
 *
 * One hrtimer per context, in soft mode so that its callback runs in
 * softirq context and takes ctx->lock with spin_lock() (process context
 * takes it with spin_lock_bh()).  The first waiter to queue arms it; a
 * tick that finds no waiter queued lets it lapse.  Lapsing lazily keeps
 * hrtimer_start() out of the sleep path of a steady ping-pong.
 */

#include <linux/hrtimer.h>
#include <linux/ktime.h>

#include "agile.h"
#include "compat.h"

static ktime_t agile_poll_interval(void)
{
	return ns_to_ktime((u64)READ_ONCE(agile_poll_interval_us) * NSEC_PER_USEC);
}

static enum hrtimer_restart agile_poll_tick(struct hrtimer *timer)
{
	struct agile_ctx *ctx = container_of(timer, struct agile_ctx,
					     poll_timer);
	enum hrtimer_restart restart = HRTIMER_NORESTART;
	struct agile_waiter *w, *tmp;
	u32 index, observed;

	spin_lock(&ctx->lock);
	list_for_each_entry_safe(w, tmp, &ctx->sleepers, node) {
		if (agile_waiter_check(ctx, w, &index, &observed))
			agile_waiter_wake(ctx, w, AGILE_WOKEN_POLL, index,
					  observed);
	}
	if (list_empty(&ctx->sleepers)) {
		ctx->poll_armed = false;
	} else {
		hrtimer_forward_now(timer, agile_poll_interval());
		restart = HRTIMER_RESTART;
	}
	spin_unlock(&ctx->lock);
	return restart;
}

void agile_poll_init(struct agile_ctx *ctx)
{
	agile_hrtimer_setup(&ctx->poll_timer, agile_poll_tick, CLOCK_MONOTONIC,
			    HRTIMER_MODE_REL_SOFT);
}

/*
 * Called with ctx->lock held after a waiter was queued.  A tick that
 * lapsed cleared @poll_armed under the lock, so restarting the timer
 * here, even while that tick's callback is still returning, is safe.
 */
void agile_poll_arm(struct agile_ctx *ctx)
{
	lockdep_assert_held(&ctx->lock);
	if (ctx->poll_armed)
		return;
	ctx->poll_armed = true;
	hrtimer_start(&ctx->poll_timer, agile_poll_interval(),
		      HRTIMER_MODE_REL_SOFT);
}

/* The context is dying: no waiter is queued.  Not under ctx->lock. */
void agile_poll_stop(struct agile_ctx *ctx)
{
	hrtimer_cancel(&ctx->poll_timer);
}
