// SPDX-License-Identifier: GPL-2.0-only
/*
 * agile poller: wakes sleepers whose doorbell was written by someone who
 * never enters the kernel (a GPU kernel, a CPU thread's plain store).
 *
 * One poller for the module
 *
 * One soft hrtimer serves every context.  It runs while any context is on
 * its list of contexts with sleepers, and each tick checks sleepers'
 * conditions (one doorbell read each) round-robin: contexts in list
 * order, and inside a context its waiters from the head of
 * agile_ctx.sleepers, each checked waiter moved to the tail.  A context
 * stays at the head of the poller's list until every waiter it had when
 * its round began has been checked (agile_ctx.poll_round_left), then goes
 * to the tail; a tick visits each listed context at most once.
 *
 * The bound
 *
 * A tick checks at most poll_max_checks conditions (a context found with
 * no sleeper left, which the tick drops from the list, costs one check
 * too), and there is one tick per poll_interval_us: the poller's work per
 * interval is bounded however many contexts sleep.  A tick stops before a
 * waiter whose conditions do not fit in what is left of the budget, and
 * the next tick resumes there.  So with N conditions polled (and emptied
 * contexts dropped) meanwhile, each sleeper is checked within
 * ceil(N / poll_max_checks) ticks of being queued when each waits on one
 * condition (FENCE WAIT); a WAIT_ANY of up to AGILE_WAIT_ANY_MAX
 * conditions may leave up to AGILE_WAIT_ANY_MAX - 1 of a tick's budget
 * unused, which divides by poll_max_checks - (AGILE_WAIT_ANY_MAX - 1)
 * instead.  The budget is never below AGILE_WAIT_ANY_MAX, so every tick
 * makes progress.  With N <= poll_max_checks every sleeper is checked on
 * every tick: a plain store is seen within one interval.
 *
 * Accounting
 *
 * The ticks, the checks and the time spent in ticks (ktime_get() around
 * each) are summed here and shown in sysfs (poll_ticks, poll_checks,
 * poll_ns, poll_contexts): the poller runs in softirq context, charged
 * to whichever task it interrupts, so these counters are where its cost
 * can be read.
 *
 * Locking and lost wake-ups
 *
 * agile_poller.lock is outside every agile_ctx.lock (see agile.h).  The
 * timer callback runs in softirq context (soft mode) and takes both with
 * spin_lock(); process context takes the poller's lock with
 * spin_lock_bh() and then a context's with spin_lock().  A waiter queues
 * itself under ctx->lock and reads agile_ctx.poll_listed there; only if
 * it is clear does it call agile_poll_add() after dropping ctx->lock,
 * never the other way round.  No wake-up is lost:
 *  - poll_listed is written only with both locks held.  A waiter that
 *    reads it set under ctx->lock is queued before the poller can next
 *    look at the context, and the poller drops a context only when it
 *    finds no sleeper under ctx->lock, so it keeps polling the waiter.
 *  - A waiter that reads it clear lists the context (and arms the timer)
 *    in agile_poll_add(), which rechecks under both locks, before it
 *    re-reads its doorbells and sleeps (fence.c).  A store before that
 *    re-read is seen by the waiter itself; a store after it is seen by a
 *    later tick, because the context stays listed, and the timer armed,
 *    while the waiter is queued.
 * The timer lapses on the first tick that finds the list empty, which
 * clears @armed under the poller's lock; agile_poll_add() restarts it
 * under the same lock, even while that tick's callback is returning.
 */

#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/minmax.h>
#include <linux/spinlock.h>

#include "agile.h"
#include "compat.h"

/**
 * struct agile_poller - the module's poller
 * @lock: protects the rest; outside every agile_ctx.lock.
 * @ctxs: contexts with sleepers (agile_ctx.poll_node), in round-robin
 *	order: a tick starts at the head.
 * @nr_ctxs: contexts on @ctxs.
 * @armed: @timer is queued or its callback will restart it; set whenever
 *	@ctxs is not empty.
 * @timer: the tick, soft mode (softirq context).
 * @ticks: ticks run since the module was loaded.
 * @checks: conditions checked (and emptied contexts dropped) by them.
 * @ns: nanoseconds spent in them.
 */
struct agile_poller {
	spinlock_t lock; /* see above */
	struct list_head ctxs;
	unsigned int nr_ctxs;
	bool armed;
	struct hrtimer timer;
	u64 ticks;
	u64 checks;
	u64 ns;
};

static struct agile_poller agile_poller = {
	.lock = __SPIN_LOCK_UNLOCKED(agile_poller.lock),
	.ctxs = LIST_HEAD_INIT(agile_poller.ctxs),
};

static ktime_t agile_poll_interval(void)
{
	return ns_to_ktime((u64)READ_ONCE(agile_poll_interval_us) *
			   NSEC_PER_USEC);
}

/* Take @ctx off the list; both locks held. */
static void agile_poll_del(struct agile_ctx *ctx)
{
	lockdep_assert_held(&agile_poller.lock);
	lockdep_assert_held(&ctx->lock);
	list_del(&ctx->poll_node);
	ctx->poll_listed = false;
	ctx->poll_round_left = 0;
	agile_poller.nr_ctxs--;
}

/*
 * Check @ctx's waiters, the rest of its round, within @budget conditions
 * (*@checks counts them).  Returns false when the budget ran out first:
 * @ctx then stays at the head for the next tick.  Otherwise @ctx goes to
 * the tail, or off the list when no waiter is left.
 */
static bool agile_poll_visit(struct agile_ctx *ctx, u32 budget, u32 *checks)
{
	struct agile_waiter *w;
	u32 index, observed;
	bool done = true;

	spin_lock(&ctx->lock);
	if (list_empty(&ctx->sleepers)) {
		if (*checks >= budget) {
			done = false;
			goto out;
		}
		(*checks)++;
		agile_poll_del(ctx);
		goto out;
	}
	/* A new round, or fewer waiters left than the round counted. */
	if (!ctx->poll_round_left || ctx->poll_round_left > ctx->nr_sleepers)
		ctx->poll_round_left = ctx->nr_sleepers;
	while (ctx->poll_round_left && !list_empty(&ctx->sleepers)) {
		w = list_first_entry(&ctx->sleepers, struct agile_waiter, node);
		if (w->nr_entries > budget - *checks) {
			done = false;
			goto out;
		}
		*checks += w->nr_entries;
		ctx->poll_round_left--;
		if (agile_waiter_check(ctx, w, &index, &observed))
			agile_waiter_wake(ctx, w, AGILE_WOKEN_POLL, index,
					  observed);
		else
			list_move_tail(&w->node, &ctx->sleepers);
	}
	ctx->poll_round_left = 0;
	if (list_empty(&ctx->sleepers))
		agile_poll_del(ctx);
	else
		list_move_tail(&ctx->poll_node, &agile_poller.ctxs);
out:
	spin_unlock(&ctx->lock);
	return done;
}

static enum hrtimer_restart agile_poll_tick(struct hrtimer *timer)
{
	/* Never below the largest waiter: each tick makes progress. */
	u32 budget = max_t(u32, READ_ONCE(agile_poll_max_checks),
			   AGILE_WAIT_ANY_MAX);
	enum hrtimer_restart restart = HRTIMER_NORESTART;
	ktime_t start = ktime_get();
	unsigned int visits;
	u32 checks = 0;

	spin_lock(&agile_poller.lock);
	/* Each visit takes the head off it, unless the budget ran out. */
	for (visits = agile_poller.nr_ctxs; visits; visits--) {
		struct agile_ctx *ctx;

		if (list_empty(&agile_poller.ctxs))
			break;
		ctx = list_first_entry(&agile_poller.ctxs, struct agile_ctx,
				       poll_node);
		if (!agile_poll_visit(ctx, budget, &checks))
			break;
	}
	if (list_empty(&agile_poller.ctxs)) {
		agile_poller.armed = false;
	} else {
		hrtimer_forward_now(timer, agile_poll_interval());
		restart = HRTIMER_RESTART;
	}
	agile_poller.ticks++;
	agile_poller.checks += checks;
	agile_poller.ns += ktime_to_ns(ktime_sub(ktime_get(), start));
	spin_unlock(&agile_poller.lock);
	return restart;
}

/**
 * agile_poll_add - put a context with sleepers on the poller's list
 * @ctx: a context on which a waiter was queued and found
 *	agile_ctx.poll_listed clear; not under ctx->lock.
 *
 * Arms the timer if it was idle.  Returns before the waiter re-reads its
 * doorbells (see "Locking and lost wake-ups" above).
 */
void agile_poll_add(struct agile_ctx *ctx)
{
	spin_lock_bh(&agile_poller.lock);
	spin_lock(&ctx->lock);
	if (!ctx->poll_listed && !list_empty(&ctx->sleepers)) {
		ctx->poll_listed = true;
		ctx->poll_round_left = 0;
		list_add_tail(&ctx->poll_node, &agile_poller.ctxs);
		agile_poller.nr_ctxs++;
	}
	spin_unlock(&ctx->lock);
	if (!agile_poller.armed && agile_poller.nr_ctxs) {
		agile_poller.armed = true;
		hrtimer_start(&agile_poller.timer, agile_poll_interval(),
			      HRTIMER_MODE_REL_SOFT);
	}
	spin_unlock_bh(&agile_poller.lock);
}

/**
 * agile_poll_ctx_release - take a dying context off the poller's list
 * @ctx: a context nobody else references: no waiter is queued, but the
 *	poller may not have dropped it yet.
 *
 * After it returns no tick touches @ctx.
 */
void agile_poll_ctx_release(struct agile_ctx *ctx)
{
	spin_lock_bh(&agile_poller.lock);
	if (ctx->poll_listed) {
		spin_lock(&ctx->lock);
		agile_poll_del(ctx);
		spin_unlock(&ctx->lock);
	}
	spin_unlock_bh(&agile_poller.lock);
}

/* The counters shown in sysfs. */
void agile_poll_read_stats(struct agile_poll_stats *stats)
{
	spin_lock_bh(&agile_poller.lock);
	stats->ticks = agile_poller.ticks;
	stats->checks = agile_poller.checks;
	stats->ns = agile_poller.ns;
	stats->contexts = agile_poller.nr_ctxs;
	spin_unlock_bh(&agile_poller.lock);
}

void agile_poll_init(void)
{
	agile_hrtimer_setup(&agile_poller.timer, agile_poll_tick,
			    CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT);
}

/* Module exit: no file is open, so no context is left to poll. */
void agile_poll_exit(void)
{
	hrtimer_cancel(&agile_poller.timer);
	WARN_ON_ONCE(!list_empty(&agile_poller.ctxs));
}
