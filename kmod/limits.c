// SPDX-License-Identifier: GPL-2.0-only
/*
 * agile limits: what a user may hold.
 *
 * Pages: every page of a context or a segment is charged, as io_uring's
 * registered buffers are, to the RLIMIT_MEMLOCK of the user that made it
 * (user_struct.locked_vm, shared by all of the user's processes and by
 * io_uring, perf and BPF), unless it has CAP_IPC_LOCK; to the pinned_vm of
 * its process's mm, so that VmPin in /proc/<pid>/status shows them; and,
 * by GFP_KERNEL_ACCOUNT, to its memory cgroup.  The pages are locked in
 * memory for as long as the context (or segment) lives, and that is what
 * RLIMIT_MEMLOCK bounds.  They are uncharged when they are freed.  Over
 * the limit an allocation fails with ENOMEM before any page is taken.
 *
 * Contexts: each user (real uid) holds at most max_contexts_per_user of
 * them (CAP_SYS_RESOURCE exempt); over it, ENOSPC.  A context counts for
 * the user that made it (the creator, for a group's) until it is freed.
 */

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/err.h>
#include <linux/hashtable.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/user_namespace.h>

#include "agile.h"

/* Pages held by every context and segment: the sysfs counter "pages". */
atomic_long_t agile_nr_pages = ATOMIC_LONG_INIT(0);

/**
 * agile_charge - charge @nr_pages new pages to the calling task
 * @charge: filled with what was charged, for agile_uncharge().
 * @nr_pages: the pages about to be allocated.
 *
 * Returns 0, or -ENOMEM when they would take the caller's user over its
 * RLIMIT_MEMLOCK (nothing charged then).
 */
int agile_charge(struct agile_charge *charge, unsigned long nr_pages)
{
	struct user_struct *user = NULL;
	unsigned long limit, cur, new;

	if (!capable(CAP_IPC_LOCK)) {
		user = get_uid(current_user());
		limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
		cur = atomic_long_read(&user->locked_vm);
		do {
			if (check_add_overflow(cur, nr_pages, &new) ||
			    new > limit) {
				free_uid(user);
				return -ENOMEM;
			}
		} while (!atomic_long_try_cmpxchg(&user->locked_vm, &cur, new));
	}
	charge->user = user;
	/* Only for VmPin: a reference on the mm_struct, not on its pages. */
	charge->mm = current->mm;
	if (charge->mm) {
		mmgrab(charge->mm);
		atomic64_add(nr_pages, &charge->mm->pinned_vm);
	}
	charge->nr_pages = nr_pages;
	return 0;
}

/* Undo agile_charge(): the pages are gone. */
void agile_uncharge(struct agile_charge *charge)
{
	if (charge->user) {
		atomic_long_sub(charge->nr_pages, &charge->user->locked_vm);
		free_uid(charge->user);
	}
	if (charge->mm) {
		atomic64_sub(charge->nr_pages, &charge->mm->pinned_vm);
		mmdrop(charge->mm);
	}
	charge->user = NULL;
	charge->mm = NULL;
	charge->nr_pages = 0;
}

#define AGILE_USERS_HASH_BITS 6

/*
 * The users that hold contexts.  agile_users_lock (spinlock): the table
 * and every record's @nr_contexts; held for a lookup and a count, never
 * across an allocation.  Process context only; nothing nests inside it.
 */
static DEFINE_SPINLOCK(agile_users_lock);
static DEFINE_HASHTABLE(agile_users, AGILE_USERS_HASH_BITS);

static struct agile_user *agile_user_find(kuid_t uid)
{
	struct agile_user *user;

	lockdep_assert_held(&agile_users_lock);
	hash_for_each_possible(agile_users, user, node, __kuid_val(uid))
		if (uid_eq(user->uid, uid))
			return user;
	return NULL;
}

/**
 * agile_user_get - count a new context for the calling task's user
 *
 * Returns the user's record, to be given to agile_user_put() when the
 * context is freed; ERR_PTR(-ENOSPC) when the user holds
 * max_contexts_per_user contexts already (and has no CAP_SYS_RESOURCE),
 * ERR_PTR(-ENOMEM).
 */
struct agile_user *agile_user_get(void)
{
	struct agile_user *user, *spare;
	kuid_t uid = current_uid();
	/* No audit record: most callers are not exempt, and need not be. */
	bool exempt = ns_capable_noaudit(&init_user_ns, CAP_SYS_RESOURCE);

	/* Allocated before the lock is taken; freed if the user has one. */
	spare = kzalloc(sizeof(*spare), GFP_KERNEL_ACCOUNT);
	if (!spare)
		return ERR_PTR(-ENOMEM);
	spin_lock(&agile_users_lock);
	user = agile_user_find(uid);
	if (!user) {
		user = spare;
		spare = NULL;
		user->uid = uid;
		INIT_LIST_HEAD(&user->poll.ctxs);
		hash_add(agile_users, &user->node, __kuid_val(uid));
	}
	if (user->nr_contexts >= READ_ONCE(agile_max_contexts_per_user) &&
	    !exempt) {
		/* Not kept without a context (the cap is at least 1, though). */
		if (!user->nr_contexts) {
			hash_del(&user->node);
			spare = user;
		}
		user = ERR_PTR(-ENOSPC);
	} else {
		user->nr_contexts++;
	}
	spin_unlock(&agile_users_lock);
	kfree(spare);
	return user;
}

/* A context of @user is freed. */
void agile_user_put(struct agile_user *user)
{
	spin_lock(&agile_users_lock);
	if (--user->nr_contexts)
		user = NULL;
	else
		hash_del(&user->node);
	spin_unlock(&agile_users_lock);
	kfree(user);
}
