// SPDX-License-Identifier: GPL-2.0-only
/*
 * agile fences and waits: AGILE_IOC_FENCE (SIGNAL, WAIT, BARRIER) and
 * AGILE_IOC_WAIT_ANY.
 *
 * Sleeper count protocol (the futex trick)
 *
 * A waiter queues itself and raises its slots' sleeper counts under
 * ctx->lock, then issues a full barrier (set_current_state()) and
 * re-reads the doorbells before it sleeps.  A signaller stores the
 * doorbell, issues a full barrier (smp_mb()) and reads the slot's sleeper
 * count: if it reads zero, the waiter's re-check is ordered after the
 * store and sees it, so the signaller may skip the lock.  If it reads
 * non-zero, it takes ctx->lock, under which the waiter's queue entry is
 * visible.  The count is mirrored into agile_doorbell.sleepers in the
 * same critical section, so a userspace signaller that stores, fences
 * and reads the mirror may skip the system call by the same argument.
 *
 * Wake-ups
 *
 * A waker (SIGNAL, or the poller in poll.c) holds ctx->lock, dequeues
 * the waiter whole, records why and what it saw, and release-stores
 * @woken.  The first waker wins, as a dequeued waiter is on no list.  A
 * woken waiter leaves without the lock; any other takes it to dequeue
 * itself.
 *
 * Ended groups
 *
 * When a group ends (group.c), agile_ctx_end() sets ctx->ended and wakes
 * every queued waiter under ctx->lock; a waiter checks ctx->ended under
 * the same lock before it queues.  So a waiter either is queued when the
 * group ends and is woken, or sees the end and never sleeps: no wait
 * outlives the end.  The checks before and while spinning are only early
 * exits.
 */

#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/nospec.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "agile.h"
#include "trace.h"

static u32 agile_doorbell_read(const struct agile_slot *slot)
{
	/*
	 * Pairs with the release store of whoever wrote the doorbell:
	 * SIGNAL's smp_store_release() or the user's own, so that what the
	 * writer stored before (a task register, say) is visible after.
	 */
	return smp_load_acquire(&slot->doorbell->value);
}

static bool agile_cond_valid(const struct agile_ctx *ctx, u32 slot, u32 cmp)
{
	return slot < ctx->nr_slots && cmp <= AGILE_CMP_LE;
}

/**
 * agile_waiter_check - does any condition of a waiter hold now?
 * @ctx: the waiter's context.
 * @w: the waiter; only its immutable entries are read.
 * @index: the lowest entry that holds, or 0.
 * @observed: the value that made it hold, or the last value of entry 0.
 *
 * Called by the waiter and, under ctx->lock, by the poller.
 */
bool agile_waiter_check(const struct agile_ctx *ctx,
			const struct agile_waiter *w, u32 *index, u32 *observed)
{
	u32 i, value;

	for (i = 0; i < w->nr_entries; i++) {
		const struct agile_wait_entry *e = &w->entries[i];

		value = agile_doorbell_read(&ctx->slots[e->slot]);
		if (i == 0)
			*observed = value;
		if (agile_cmp_holds(e->cmp, value, e->value)) {
			*index = i;
			*observed = value;
			return true;
		}
	}
	*index = 0;
	return false;
}

/* The lowest entry of @w on @slot that holds for @value. */
static bool agile_waiter_check_slot(const struct agile_waiter *w, u32 slot,
				    u32 value, u32 *index)
{
	u32 i;

	for (i = 0; i < w->nr_entries; i++) {
		const struct agile_wait_entry *e = &w->entries[i];

		if (e->slot == slot &&
		    agile_cmp_holds(e->cmp, value, e->value)) {
			*index = i;
			return true;
		}
	}
	return false;
}

static void agile_slot_set_sleepers(struct agile_slot *slot,
				    unsigned int sleepers)
{
	/* Read without the lock by agile_fence_signal(). */
	WRITE_ONCE(slot->sleepers, sleepers);
	/* The advisory mirror for userspace signallers. */
	WRITE_ONCE(slot->doorbell->sleepers, sleepers);
}

/*
 * Queue @w, and have the poller watch its context before the caller
 * re-reads the doorbells; -EPIPE (and nothing queued) once the context
 * has ended.
 */
static int agile_waiter_enqueue(struct agile_ctx *ctx, struct agile_waiter *w)
{
	bool listed;
	u32 i;

	spin_lock_bh(&ctx->lock);
	/* Pairs with agile_ctx_end(): see "Ended groups" above. */
	if (ctx->ended) {
		spin_unlock_bh(&ctx->lock);
		return -EPIPE;
	}
	for (i = 0; i < w->nr_entries; i++) {
		struct agile_wait_entry *e = &w->entries[i];
		struct agile_slot *slot = &ctx->slots[e->slot];

		if (!e->linked)
			continue;
		list_add_tail(&e->node, &slot->waiters);
		agile_slot_set_sleepers(slot, slot->sleepers + 1);
	}
	list_add_tail(&w->node, &ctx->sleepers);
	ctx->nr_sleepers++;
	listed = ctx->poll_listed;
	spin_unlock_bh(&ctx->lock);
	/* The poller's lock is outside ctx->lock: see poll.c. */
	if (!listed)
		agile_poll_add(ctx);
	return 0;
}

static void agile_waiter_dequeue(struct agile_ctx *ctx, struct agile_waiter *w)
{
	u32 i;

	lockdep_assert_held(&ctx->lock);
	for (i = 0; i < w->nr_entries; i++) {
		struct agile_wait_entry *e = &w->entries[i];
		struct agile_slot *slot = &ctx->slots[e->slot];

		if (!e->linked)
			continue;
		list_del(&e->node);
		agile_slot_set_sleepers(slot, slot->sleepers - 1);
	}
	list_del(&w->node);
	ctx->nr_sleepers--;
}

/**
 * agile_waiter_wake - dequeue a waiter and wake it
 * @ctx: the waiter's context; ctx->lock is held.
 * @w: a queued waiter.
 * @reason: AGILE_WOKEN_SIGNAL, AGILE_WOKEN_POLL or AGILE_WOKEN_ENDED.
 * @index: the entry whose condition held.
 * @observed: the value that made it hold.
 */
void agile_waiter_wake(struct agile_ctx *ctx, struct agile_waiter *w,
		       enum agile_woken reason, u32 index, u32 observed)
{
	struct task_struct *task = w->task;

	agile_waiter_dequeue(ctx, w);
	w->index = index;
	w->observed = observed;
	/* Once @woken is set the waiter may return and even exit. */
	get_task_struct(task);
	/*
	 * Pairs with smp_load_acquire() in agile_wait_sleep(): the dequeue
	 * and the results are visible to a waiter that sees @woken.
	 */
	smp_store_release(&w->woken, reason);
	wake_up_process(task);
	put_task_struct(task);
}

/**
 * agile_ctx_end - end a group's context: every wait fails with EPIPE
 * @ctx: the context; not under ctx->lock.
 *
 * Sleeping waiters are woken with AGILE_WOKEN_ENDED; later ones see
 * ctx->ended (see "Ended groups" above).  SIGNAL and the other ioctls
 * keep working: only waits change.
 */
void agile_ctx_end(struct agile_ctx *ctx)
{
	struct agile_waiter *w, *tmp;

	spin_lock_bh(&ctx->lock);
	WRITE_ONCE(ctx->ended, true);
	list_for_each_entry_safe(w, tmp, &ctx->sleepers, node)
		agile_waiter_wake(ctx, w, AGILE_WOKEN_ENDED, 0, 0);
	spin_unlock_bh(&ctx->lock);
}

static int agile_fence_signal(struct agile_ctx *ctx,
			      const struct agile_fence *f)
{
	u32 slot_nr = array_index_nospec(f->slot, ctx->nr_slots);
	struct agile_slot *slot = &ctx->slots[slot_nr];
	struct agile_wait_entry *e, *tmp;
	unsigned int woken = 0;
	u32 value, index;

	if (!(f->flags & AGILE_SIGNAL_WAKE_ONLY)) {
		/*
		 * Pairs with smp_load_acquire() in agile_doorbell_read() and
		 * with the acquire loads of userspace doorbell readers.
		 */
		smp_store_release(&slot->doorbell->value, f->value);
	}
	/*
	 * Dekker with agile_wait_sleep(): store the doorbell, full barrier,
	 * read the sleeper count; the waiter raises the count, full barrier
	 * (set_current_state()), reads the doorbell.
	 */
	smp_mb();
	agile_count(ctx, AGILE_CNT_SIGNALS);
	if (!READ_ONCE(slot->sleepers))
		goto out;

	spin_lock_bh(&ctx->lock);
	value = agile_doorbell_read(slot);
	/* A waiter has one entry per slot on the list: @tmp stays valid. */
	list_for_each_entry_safe(e, tmp, &slot->waiters, node) {
		if (!agile_waiter_check_slot(e->waiter, slot_nr, value, &index))
			continue;
		agile_waiter_wake(ctx, e->waiter, AGILE_WOKEN_SIGNAL, index,
				  value);
		woken++;
	}
	spin_unlock_bh(&ctx->lock);
out:
	trace_agile_signal(ctx->id, slot_nr, f->value, f->flags, woken);
	return 0;
}

/* Spin for up to spin_ns (never past @expires) re-checking the waiter. */
static bool agile_wait_spin(const struct agile_ctx *ctx,
			    const struct agile_waiter *w,
			    const ktime_t *expires, u32 *index, u32 *observed)
{
	u32 spin_ns = READ_ONCE(agile_spin_ns);
	ktime_t end;

	if (!spin_ns)
		return false;
	end = ktime_add_ns(ktime_get(), spin_ns);
	if (expires && ktime_after(end, *expires))
		end = *expires;
	while (!need_resched() && !signal_pending(current) &&
	       !READ_ONCE(ctx->ended)) {
		cpu_relax();
		if (agile_waiter_check(ctx, w, index, observed))
			return true;
		if (ktime_after(ktime_get(), end))
			break;
	}
	return false;
}

/*
 * Queue the waiter and sleep until a waker dequeues it, a condition holds,
 * a signal arrives or @expires (CLOCK_MONOTONIC, NULL: never) passes.
 */
static int agile_wait_sleep(struct agile_ctx *ctx, struct agile_waiter *w,
			    ktime_t *expires, u32 *index, u32 *observed)
{
	bool holds = false, timed_out = false;
	int woken, ret = 0;

	w->task = current;
	w->woken = AGILE_WOKEN_NONE;
	if (agile_waiter_enqueue(ctx, w)) {
		agile_waiter_check(ctx, w, index, observed);
		return -EPIPE;
	}
	for (;;) {
		/* The waiter's full barrier of the sleeper count protocol. */
		set_current_state(TASK_INTERRUPTIBLE);
		if (READ_ONCE(w->woken))
			break;
		holds = agile_waiter_check(ctx, w, index, observed);
		if (holds)
			break;
		if (signal_pending(current)) {
			ret = -ERESTARTSYS;
			break;
		}
		if (timed_out) {
			ret = -ETIMEDOUT;
			break;
		}
		if (!schedule_hrtimeout_range(expires, current->timer_slack_ns,
					      HRTIMER_MODE_ABS))
			timed_out = true;
	}
	__set_current_state(TASK_RUNNING);

	/* Pairs with smp_store_release() in agile_waiter_wake(). */
	woken = smp_load_acquire(&w->woken);
	if (!woken) {
		spin_lock_bh(&ctx->lock);
		woken = w->woken;
		if (!woken)
			agile_waiter_dequeue(ctx, w);
		spin_unlock_bh(&ctx->lock);
	}

	if (woken == AGILE_WOKEN_SIGNAL)
		agile_count(ctx, AGILE_CNT_WAKEUPS_SIGNAL);
	else if (woken == AGILE_WOKEN_POLL)
		agile_count(ctx, AGILE_CNT_WAKEUPS_POLL);
	if (holds)
		return 0;
	if (woken == AGILE_WOKEN_ENDED) {
		agile_waiter_check(ctx, w, index, observed);
		return -EPIPE;
	}
	if (woken) {
		/* The condition held for the waker; report a current one. */
		if (!agile_waiter_check(ctx, w, index, observed)) {
			*index = w->index;
			*observed = w->observed;
		}
		return 0;
	}
	return ret;
}

/* EINVAL for a timeout beyond KTIME_MAX other than the infinite one. */
static int agile_timeout_check(u64 timeout_ns)
{
	if (timeout_ns == AGILE_TIMEOUT_INFINITE)
		return 0;
	return timeout_ns > KTIME_MAX ? -EINVAL : 0;
}

/* Nanoseconds until @expires; 0 once it passed (a restart checks once). */
static u64 agile_time_left(ktime_t expires)
{
	s64 left = ktime_to_ns(ktime_sub(expires, ktime_get()));

	return left > 0 ? left : 0;
}

/*
 * Wait for any condition of @w.  Returns 0, -ETIMEDOUT, -ERESTARTSYS or
 * -EPIPE (the context's group ended); on all four w->index and
 * w->observed are the results.
 *
 * -ERESTARTSYS: a signal arrived.  The system call is restarted where the
 * signal's disposition allows it (no handler, as for a stop signal, or a
 * handler with SA_RESTART) and fails with EINTR otherwise.  For a
 * relative timeout *@timeout_ns is then the time left, which the caller
 * writes back, so that a restart waits only for the remainder, as
 * select() does; an absolute deadline needs no rewrite.
 */
static int agile_wait(struct agile_ctx *ctx, struct agile_waiter *w,
		      u64 *timeout_ns, u32 flags)
{
	ktime_t deadline, *expires = NULL;
	u32 index, observed;
	int ret = 0;

	agile_count(ctx, AGILE_CNT_WAITS);
	trace_agile_wait_start(ctx->id, w->nr_entries, w->entries[0].slot,
			       w->entries[0].cmp, w->entries[0].value,
			       *timeout_ns, flags);

	/* agile_timeout_check() passed: at most KTIME_MAX, or infinite. */
	if (*timeout_ns != AGILE_TIMEOUT_INFINITE) {
		deadline = ns_to_ktime(*timeout_ns);
		if (!(flags & AGILE_WAIT_ABSTIME))
			deadline = ktime_add_safe(ktime_get(), deadline);
		expires = &deadline;
	}

	/* An ended group fails every wait, even one whose condition holds. */
	if (READ_ONCE(ctx->ended)) {
		agile_waiter_check(ctx, w, &index, &observed);
		ret = -EPIPE;
		goto out;
	}
	if (agile_waiter_check(ctx, w, &index, &observed)) {
		agile_count(ctx, AGILE_CNT_SPIN_HITS);
		goto out;
	}
	/* Zero, or a deadline already past: that was the one check. */
	if (!*timeout_ns ||
	    (expires && ktime_compare(ktime_get(), *expires) >= 0)) {
		ret = -ETIMEDOUT;
	} else if (agile_wait_spin(ctx, w, expires, &index, &observed)) {
		agile_count(ctx, AGILE_CNT_SPIN_HITS);
		goto out;
	} else {
		ret = agile_wait_sleep(ctx, w, expires, &index, &observed);
	}

	if (ret == -ETIMEDOUT) {
		agile_count(ctx, AGILE_CNT_TIMEOUTS);
	} else if (ret == -ERESTARTSYS) {
		agile_count(ctx, AGILE_CNT_INTERRUPTED);
		if (expires && !(flags & AGILE_WAIT_ABSTIME))
			*timeout_ns = agile_time_left(*expires);
	}
out:
	w->index = index;
	w->observed = observed;
	trace_agile_wait_end(ctx->id, ret, index, observed, w->woken);
	return ret;
}

static int agile_fence_check(const struct agile_ctx *ctx,
			     const struct agile_fence *f)
{
	if (f->reserved[0] || f->reserved[1])
		return -EINVAL;
	switch (f->op) {
	case AGILE_FENCE_SIGNAL:
		if (f->slot >= ctx->nr_slots || f->cmp || f->timeout_ns ||
		    f->flags & ~AGILE_SIGNAL_WAKE_ONLY)
			return -EINVAL;
		return 0;
	case AGILE_FENCE_WAIT:
		if (!agile_cond_valid(ctx, f->slot, f->cmp) ||
		    f->flags & ~AGILE_WAIT_ABSTIME)
			return -EINVAL;
		return agile_timeout_check(f->timeout_ns);
	case AGILE_FENCE_BARRIER:
		if (f->slot || f->value || f->cmp || f->flags || f->timeout_ns)
			return -EINVAL;
		return 0;
	}
	return -EINVAL;
}

static void agile_wait_entry_init(const struct agile_ctx *ctx,
				  struct agile_waiter *w, u32 i, u32 slot,
				  u32 cmp, u32 value)
{
	struct agile_wait_entry *e = &w->entries[i];
	u32 j;

	e->waiter = w;
	e->slot = array_index_nospec(slot, ctx->nr_slots);
	e->cmp = cmp;
	e->value = value;
	e->linked = true;
	for (j = 0; j < i; j++)
		if (w->entries[j].slot == e->slot)
			e->linked = false;
}

/* @writable: the file was opened for writing, as SIGNAL needs. */
int agile_fence_ioctl(struct agile_ctx *ctx, struct agile_fence __user *uarg,
		      bool writable)
{
	struct agile_wait_entry entry;
	struct agile_waiter w = { .entries = &entry, .nr_entries = 1 };
	struct agile_fence f;
	int ret;

	if (copy_from_user(&f, uarg, sizeof(f)))
		return -EFAULT;
	ret = agile_fence_check(ctx, &f);
	if (ret)
		return ret;

	switch (f.op) {
	case AGILE_FENCE_SIGNAL:
		/* A store: a read-only member may wait, not signal. */
		if (!writable)
			return -EBADF;
		return agile_fence_signal(ctx, &f);
	case AGILE_FENCE_BARRIER:
		/* The caller's full fence; it pairs with whatever it orders. */
		smp_mb();
		return 0;
	}

	agile_wait_entry_init(ctx, &w, 0, f.slot, f.cmp, f.value);
	ret = agile_wait(ctx, &w, &f.timeout_ns, f.flags);
	if (put_user(w.observed, &uarg->observed))
		return -EFAULT;
	/* The time left, for the restart or the caller (EINTR). */
	if (ret == -ERESTARTSYS && put_user(f.timeout_ns, &uarg->timeout_ns))
		return -EFAULT;
	return ret;
}

int agile_wait_any_ioctl(struct agile_ctx *ctx,
			 struct agile_wait_any __user *uarg)
{
	struct agile_waiter w = {};
	struct agile_wait_cond *conds;
	struct agile_wait_any args;
	u32 i;
	int ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (!args.nr_conds || args.nr_conds > AGILE_WAIT_ANY_MAX ||
	    args.flags & ~AGILE_WAIT_ABSTIME || args.reserved[0] ||
	    args.reserved[1])
		return -EINVAL;
	ret = agile_timeout_check(args.timeout_ns);
	if (ret)
		return ret;

	conds = memdup_user(u64_to_user_ptr(args.conds),
			    array_size(args.nr_conds, sizeof(*conds)));
	if (IS_ERR(conds))
		return PTR_ERR(conds);
	w.entries = kcalloc(args.nr_conds, sizeof(*w.entries), GFP_KERNEL);
	if (!w.entries) {
		ret = -ENOMEM;
		goto out_free_conds;
	}
	w.nr_entries = args.nr_conds;
	for (i = 0; i < args.nr_conds; i++) {
		if (conds[i].pad ||
		    !agile_cond_valid(ctx, conds[i].slot, conds[i].cmp)) {
			ret = -EINVAL;
			goto out_free_entries;
		}
		agile_wait_entry_init(ctx, &w, i, conds[i].slot, conds[i].cmp,
				      conds[i].value);
	}

	ret = agile_wait(ctx, &w, &args.timeout_ns, args.flags);
	if (put_user(w.index, &uarg->index) ||
	    put_user(w.observed, &uarg->observed))
		ret = -EFAULT;
	/* The time left, for the restart or the caller (EINTR). */
	else if (ret == -ERESTARTSYS &&
		 put_user(args.timeout_ns, &uarg->timeout_ns))
		ret = -EFAULT;
out_free_entries:
	kfree(w.entries);
out_free_conds:
	kfree(conds);
	return ret;
}
