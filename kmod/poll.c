// SPDX-License-Identifier: GPL-2.0-only
/*
 * agile poller: wakes sleepers whose doorbell was written by someone who
 * never enters the kernel (a GPU kernel, a CPU thread's plain store).
 *
 * One poller for the module
 *
 * One soft hrtimer serves every context.  It runs while any context is
 * listed, that is has sleepers, and each tick checks sleepers' conditions
 * (one doorbell read each).  Listed contexts are grouped by their owner
 * (agile_ctx.owner, the user that made them): the poller keeps a list of
 * users with listed contexts, and each user (agile_user.poll) a list of
 * its listed contexts.
 *
 * Fair between users
 *
 * A tick gives each listed user a turn, users in list order, and each
 * user goes to the tail of the list once its turn is over.  The next tick
 * starts with the first user this one left without a turn or, when every
 * user had one, with this tick's second user: the first place goes round,
 * and no user is always last.  A turn's quantum is an equal part of
 * what is left of the tick's budget: (budget - checks so far) divided by
 * the users still to come, rounded up; what a user with few sleepers does
 * not use is left to the users after it.  So one user's many sleepers take
 * at most an equal part of the budget from another user's few: while the
 * budget is at least the number of users, every user's first waiter is
 * checked on every tick, and with one waiter a user's plain store is seen
 * within one interval however many sleepers other users have.
 *
 * Inside a turn the user's contexts are visited round-robin: contexts in
 * list order, and inside a context its waiters from the head of
 * agile_ctx.sleepers, each checked waiter moved to the tail.  A context
 * stays at the head of its user's list until every waiter it had when its
 * round began has been checked (agile_ctx.poll_round_left), then goes to
 * the tail; a turn visits each of the user's contexts at most once.  A
 * turn stops before a waiter whose conditions do not fit in what is left
 * of it; that rest, the user's deficit (below AGILE_WAIT_ANY_MAX), is
 * added to its next quantum (deficit round robin), so a WAIT_ANY larger
 * than a user's quantum is still checked, a later turn.
 *
 * The bound
 *
 * A tick checks at most budget conditions plus the users' deficits
 * carried into it (a context found with no sleeper left, which the turn
 * drops from the list, costs one check too); over any run of ticks the
 * checks exceed ticks * budget by less than AGILE_WAIT_ANY_MAX per user,
 * what earlier ticks left unused.  The budget is poll_max_checks unless
 * the CPU cap lowers it (below), and there is one tick per
 * poll_interval_us unless the cap stretches it: the poller's work is
 * bounded however many contexts sleep.  With N conditions of one user
 * polled, each of its sleepers is checked within about
 * ceil(N / quantum) of its turns.
 *
 * The CPU cap
 *
 * The poller may take poll_cpu_permille thousandths of one CPU (1000: no
 * cap).  It earns that share of the wall-clock time between the starts of
 * its ticks as credit, in nanoseconds (at most AGILE_POLL_CREDIT_TICKS
 * times what the last gap between ticks, or one interval, earned), and
 * each tick spends what it took.  A tick's budget is what the credit pays
 * for at the measured cost of a check (a running average of each tick's
 * time per check, which includes the tick's fixed cost), no more than
 * poll_max_checks and no less than one check per listed user.  When even
 * that leaves the credit negative, the next tick comes when the share has
 * repaid it, later than poll_interval_us (poll_stretched counts those
 * ticks).  With nobody asleep there is no tick at all.
 *
 * Accounting
 *
 * The ticks, the checks and the time spent in ticks (ktime_get() around
 * each) are summed here and shown in sysfs (poll_ticks, poll_checks,
 * poll_ns, poll_contexts, poll_users, poll_budget, poll_stretched); each
 * user's turns, checks and time (ktime_get() between turns), and each
 * context's checks, are shown in the fdinfo of its files.  The poller
 * runs in softirq context, charged to whichever task it interrupts: it
 * cannot be charged to the user's cgroup (the CPU controller charges
 * tasks, and a module can neither make a task in the user's cgroup, as
 * io_uring's SQPOLL thread is, nor move a kernel thread into one), so
 * these counters are where its cost can be read, and the cap and the
 * per-user quantum are what bound it.
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
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/spinlock.h>

#include "agile.h"
#include "compat.h"

/* The most credit the poller saves up, in ticks' worth of its share. */
#define AGILE_POLL_CREDIT_TICKS 2

/* The longest gap between ticks that earns credit: no overflow. */
#define AGILE_POLL_MAX_EARN_NS (10 * NSEC_PER_SEC)

/**
 * struct agile_poller - the module's poller
 * @lock: protects the rest; outside every agile_ctx.lock.
 * @users: users with listed contexts (agile_poll_share.node), in
 *	round-robin order: a tick starts at the head.
 * @nr_users: users on @users.
 * @nr_ctxs: contexts listed, all users together.
 * @armed: @timer is queued or its callback will restart it; set whenever
 *	@users is not empty.
 * @timer: the tick, soft mode (softirq context).
 * @last_start: when the last tick started.
 * @credit: nanoseconds of CPU the poller may still spend (the CPU cap);
 *	negative: owed, and the next tick waits until it is repaid.
 * @ns_per_check: running average of a tick's nanoseconds per check; 0
 *	before the first tick that checked anything.
 * @budget: the last tick's budget, in conditions.
 * @ticks: ticks run since the module was loaded.
 * @checks: conditions checked (and emptied contexts dropped) by them.
 * @ns: nanoseconds spent in them.
 * @stretched: ticks the CPU cap put off past poll_interval_us.
 */
struct agile_poller {
	spinlock_t lock; /* see above */
	struct list_head users;
	unsigned int nr_users;
	unsigned int nr_ctxs;
	bool armed;
	struct hrtimer timer;
	ktime_t last_start;
	s64 credit;
	u32 ns_per_check;
	u32 budget;
	u64 ticks;
	u64 checks;
	u64 ns;
	u64 stretched;
};

static struct agile_poller agile_poller = {
	.lock = __SPIN_LOCK_UNLOCKED(agile_poller.lock),
	.users = LIST_HEAD_INIT(agile_poller.users),
};

static u64 agile_poll_interval_ns(void)
{
	return (u64)READ_ONCE(agile_poll_interval_us) * NSEC_PER_USEC;
}

static struct agile_poll_share *agile_poll_share_of(struct agile_ctx *ctx)
{
	return &ctx->owner->poll;
}

/* Take @ctx off the list, and its owner once it has no context left. */
static void agile_poll_del(struct agile_ctx *ctx)
{
	struct agile_poll_share *share = agile_poll_share_of(ctx);

	lockdep_assert_held(&agile_poller.lock);
	lockdep_assert_held(&ctx->lock);
	list_del(&ctx->poll_node);
	ctx->poll_listed = false;
	ctx->poll_round_left = 0;
	agile_poller.nr_ctxs--;
	if (!--share->nr_ctxs) {
		list_del(&share->node);
		share->listed = false;
		share->deficit = 0;
		agile_poller.nr_users--;
	}
}

/*
 * Check @ctx's waiters, the rest of its round, within *@left conditions,
 * which it lowers by what it checks.  Returns false when a waiter did not
 * fit: @ctx then stays at the head of its owner's list for the next turn.
 * Otherwise @ctx goes to the tail, or off the list when no waiter is left.
 */
static bool agile_poll_visit(struct agile_ctx *ctx, u32 *left)
{
	struct agile_waiter *w;
	u32 index, observed;
	bool done = true;

	spin_lock(&ctx->lock);
	if (list_empty(&ctx->sleepers)) {
		if (!*left) {
			done = false;
			goto out;
		}
		(*left)--;
		ctx->poll_checks++;
		agile_poll_del(ctx);
		goto out;
	}
	/* A new round, or fewer waiters left than the round counted. */
	if (!ctx->poll_round_left || ctx->poll_round_left > ctx->nr_sleepers)
		ctx->poll_round_left = ctx->nr_sleepers;
	while (ctx->poll_round_left && !list_empty(&ctx->sleepers)) {
		w = list_first_entry(&ctx->sleepers, struct agile_waiter, node);
		if (w->nr_entries > *left) {
			done = false;
			goto out;
		}
		*left -= w->nr_entries;
		ctx->poll_checks += w->nr_entries;
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
		list_move_tail(&ctx->poll_node,
			       &agile_poll_share_of(ctx)->ctxs);
out:
	spin_unlock(&ctx->lock);
	return done;
}

/*
 * One user's turn: its contexts, round-robin, within @quantum conditions
 * and its deficit.  Returns the conditions checked.
 */
static u32 agile_poll_turn(struct agile_poll_share *share, u32 quantum)
{
	u32 allowed = share->deficit + quantum, left = allowed;
	unsigned int visits;
	bool blocked = false;

	for (visits = share->nr_ctxs; visits && share->listed; visits--) {
		struct agile_ctx *ctx;

		ctx = list_first_entry(&share->ctxs, struct agile_ctx,
				       poll_node);
		if (!agile_poll_visit(ctx, &left)) {
			blocked = true;
			break;
		}
	}
	/* Only a waiter too large for the rest keeps it, for the next turn. */
	share->deficit = blocked && share->listed ? left : 0;
	share->turns++;
	share->checks += allowed - left;
	return allowed - left;
}

/* The CPU cap in thousandths of one CPU, or 0 where it is lifted (1000). */
static u32 agile_poll_cap(void)
{
	u32 permille = READ_ONCE(agile_poll_cpu_permille);

	return permille < 1000 ? permille : 0;
}

/*
 * The budget of a tick starting at @start: what the credit pays for (see
 * "The CPU cap" above), between one check per user and poll_max_checks.
 */
static u32 agile_poll_budget(ktime_t start)
{
	u32 max_checks = READ_ONCE(agile_poll_max_checks);
	u32 permille = agile_poll_cap();
	u32 least = min(agile_poller.nr_users, max_checks);
	s64 elapsed, earned, credit_max;
	u64 checks;

	least = max(least, 1U);
	elapsed = ktime_to_ns(ktime_sub(start, agile_poller.last_start));
	agile_poller.last_start = start;
	if (!permille)
		return max_checks;
	elapsed = clamp_t(s64, elapsed, 0, AGILE_POLL_MAX_EARN_NS);
	earned = div_u64((u64)elapsed * permille, 1000);
	/* What a few gaps like this one earn: an idle spell buys no burst. */
	credit_max = max_t(s64, earned,
			   div_u64(agile_poll_interval_ns() * permille, 1000)) *
		     AGILE_POLL_CREDIT_TICKS;
	agile_poller.credit =
		min_t(s64, agile_poller.credit + earned, credit_max);
	if (!agile_poller.ns_per_check)
		return max_checks;
	if (agile_poller.credit <= 0)
		return least;
	checks = div_u64((u64)agile_poller.credit, agile_poller.ns_per_check);
	return clamp_t(u64, checks, least, max_checks);
}

/*
 * Spend @ns of a tick that made @checks checks; returns when the next tick
 * is due: poll_interval_us, or later while the credit is owed.
 */
static ktime_t agile_poll_spend(u64 ns, u32 checks)
{
	u32 permille = agile_poll_cap();
	u64 interval = agile_poll_interval_ns(), wait;

	if (checks) {
		u64 sample = clamp_t(u64, div_u64(ns, checks), 1, U32_MAX);
		u64 average = agile_poller.ns_per_check;

		/* 3/4 of the old average, 1/4 of this tick; below U32_MAX. */
		agile_poller.ns_per_check =
			average ? (3 * average + sample) / 4 : sample;
	}
	if (!permille)
		return ns_to_ktime(interval);
	agile_poller.credit -= min_t(u64, ns, AGILE_POLL_MAX_EARN_NS);
	if (agile_poller.credit >= 0)
		return ns_to_ktime(interval);
	wait = div_u64((u64)-agile_poller.credit * 1000, permille);
	if (wait <= interval)
		return ns_to_ktime(interval);
	agile_poller.stretched++;
	return ns_to_ktime(min_t(u64, wait, AGILE_POLL_MAX_EARN_NS));
}

static enum hrtimer_restart agile_poll_tick(struct hrtimer *timer)
{
	enum hrtimer_restart restart = HRTIMER_NORESTART;
	ktime_t start = ktime_get(), turn_start, now;
	unsigned int turns;
	u32 budget, checks = 0;
	u64 ns;

	spin_lock(&agile_poller.lock);
	budget = agile_poll_budget(start);
	turn_start = start;
	/* Each turn takes the head user to the tail, or off the list. */
	for (turns = agile_poller.nr_users; turns && checks < budget; turns--) {
		struct agile_poll_share *share;
		u32 quantum;

		if (list_empty(&agile_poller.users))
			break;
		share = list_first_entry(&agile_poller.users,
					 struct agile_poll_share, node);
		/* An equal part of what is left: see "Fair between users". */
		quantum = DIV_ROUND_UP(budget - checks, turns);
		checks += agile_poll_turn(share, quantum);
		if (share->listed)
			list_move_tail(&share->node, &agile_poller.users);
		now = ktime_get();
		share->ns += ktime_to_ns(ktime_sub(now, turn_start));
		turn_start = now;
	}
	/* Every user had a turn: the next tick starts with this one's second. */
	if (!turns && !list_empty(&agile_poller.users))
		list_rotate_left(&agile_poller.users);
	ns = ktime_to_ns(ktime_sub(ktime_get(), start));
	agile_poller.ticks++;
	agile_poller.checks += checks;
	agile_poller.ns += ns;
	agile_poller.budget = budget;
	if (list_empty(&agile_poller.users)) {
		agile_poller.armed = false;
	} else {
		hrtimer_forward_now(timer, agile_poll_spend(ns, checks));
		restart = HRTIMER_RESTART;
	}
	spin_unlock(&agile_poller.lock);
	return restart;
}

/**
 * agile_poll_add - put a context with sleepers on the poller's list
 * @ctx: a context on which a waiter was queued and found
 *	agile_ctx.poll_listed clear; not under ctx->lock.
 *
 * Lists its owner too if it was not, and arms the timer if it was idle.
 * Returns before the waiter re-reads its doorbells (see "Locking and lost
 * wake-ups" above).
 */
void agile_poll_add(struct agile_ctx *ctx)
{
	struct agile_poll_share *share = agile_poll_share_of(ctx);

	spin_lock_bh(&agile_poller.lock);
	spin_lock(&ctx->lock);
	if (!ctx->poll_listed && !list_empty(&ctx->sleepers)) {
		ctx->poll_listed = true;
		ctx->poll_round_left = 0;
		list_add_tail(&ctx->poll_node, &share->ctxs);
		share->nr_ctxs++;
		agile_poller.nr_ctxs++;
		if (!share->listed) {
			share->listed = true;
			list_add_tail(&share->node, &agile_poller.users);
			agile_poller.nr_users++;
		}
	}
	spin_unlock(&ctx->lock);
	if (!agile_poller.armed && agile_poller.nr_users) {
		agile_poller.armed = true;
		hrtimer_start(&agile_poller.timer,
			      ns_to_ktime(agile_poll_interval_ns()),
			      HRTIMER_MODE_REL_SOFT);
	}
	spin_unlock_bh(&agile_poller.lock);
}

/**
 * agile_poll_ctx_release - take a dying context off the poller's list
 * @ctx: a context nobody else references: no waiter is queued, but the
 *	poller may not have dropped it yet.
 *
 * After it returns no tick touches @ctx, nor its owner's share for it:
 * the caller may then put the owner.
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
	stats->stretched = agile_poller.stretched;
	stats->contexts = agile_poller.nr_ctxs;
	stats->users = agile_poller.nr_users;
	stats->budget = agile_poller.budget;
	spin_unlock_bh(&agile_poller.lock);
}

/**
 * agile_poll_read_ctx_stats - a context's poll counters and its owner's
 * @ctx: a context its caller holds a reference on (so its owner too).
 * @stats: filled in, for fdinfo to print after the lock is dropped.
 */
void agile_poll_read_ctx_stats(const struct agile_ctx *ctx,
			       struct agile_poll_ctx_stats *stats)
{
	const struct agile_poll_share *share = &ctx->owner->poll;

	spin_lock_bh(&agile_poller.lock);
	stats->checks = ctx->poll_checks;
	stats->owner_turns = share->turns;
	stats->owner_checks = share->checks;
	stats->owner_ns = share->ns;
	stats->owner_contexts = share->nr_ctxs;
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
	WARN_ON_ONCE(!list_empty(&agile_poller.users));
}
