// SPDX-License-Identifier: GPL-2.0-only
/*
 * agile groups: one context shared by the processes that join it with the
 * same 64-bit key (AGILE_IOC_GROUP_JOIN).
 *
 * The registry holds the groups by key.  A group is published there from
 * its creation until the last member's file is released.  The first
 * release ends it (agile_group_leave()): every wait of every member fails
 * with EPIPE from then on, so that no member hangs on a dead peer, and a
 * join that finds the key fails with EPIPE at once, so that a late
 * joiner does not wait for members that will never come; the last
 * release unpublishes the key, which a new group may then take.  The
 * context, and the group with it, is freed by its last reference, as any
 * context.
 *
 * Keys are scoped to the creator's user namespace and IPC namespace, as
 * SysV IPC keys are to the IPC namespace: only a caller in both finds the
 * group, and a caller elsewhere may make its own group with the same key.
 * The user namespace is held by reference.  The IPC namespace is not
 * (put_ipc_ns() is not exported): the group keeps its address and its
 * ns.inum, and a caller matches when both are equal to its own.  That is
 * safe enough: after the creator's IPC namespace dies, a new one would
 * have to reuse both its address and its inode number to be taken for
 * it, and making (or entering) an IPC namespace needs CAP_SYS_ADMIN over
 * its user namespace, which must also be the group's, held by our
 * reference: only someone already as powerful as the creator's namespace
 * could arrange it, and the group is still the creator's, its mode still
 * applies.
 *
 * Who may join: the creator's effective uid and gid, recorded at
 * creation, and its mode decide, as for a file: the owner class (same
 * euid), else the group class (the creator's gid is the caller's egid or
 * one of its supplementary groups), else others; the caller needs both
 * the read and the write bit of its class, or only the read bit to join
 * with a file opened read-only (a read-only member, which can wait and
 * map but not store: see main.c).  No capability overrides the
 * mode: a group is a rendezvous between cooperating processes, not a
 * file an administrator manages, and a mode of 0600 means "only this
 * user" even for root.  Every join reports the owner (as the joiner's
 * user namespace sees it), the mode and the member count, and
 * AGILE_GROUP_QUERY reports them without joining, so that a caller can
 * see who made a group before it trusts it; AGILE_GROUP_EXCL makes a
 * creator fail with EEXIST rather than join a group someone else made
 * first.
 */

#include <linux/cred.h>
#include <linux/err.h>
#include <linux/hashtable.h>
#include <linux/ipc_namespace.h>
#include <linux/nsproxy.h>
#include <linux/pagemap.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>

#include "agile.h"

#define AGILE_GROUP_HASH_BITS 6

/*
 * The registry of groups.  agile_group_lock: see "Locking" in agile.h;
 * it guards the table and every group's @published, @nr_members,
 * @nr_open and @ended, and is held only for a lookup, a few checks, a
 * non-faulting copy and a publication: never across a page allocation,
 * a fault or a sleep.
 */
static DEFINE_SPINLOCK(agile_group_lock);
static DEFINE_HASHTABLE(agile_group_table, AGILE_GROUP_HASH_BITS);

/* Groups published now (ended ones with members open included): sysfs "groups". */
atomic_t agile_nr_groups = ATOMIC_INIT(0);

/*
 * EINVAL for a bad join (@query false) or query (true): a query's fields
 * are checked as a join's, though only @key is used.
 */
static int agile_group_check(const struct agile_group_join *args, bool query)
{
	u32 flags = args->flags;

	if (query ? flags != AGILE_GROUP_QUERY :
		    flags & ~(AGILE_GROUP_CREATE | AGILE_GROUP_EXCL))
		return -EINVAL;
	if ((flags & AGILE_GROUP_EXCL) && !(flags & AGILE_GROUP_CREATE))
		return -EINVAL;
	if (args->mode & ~AGILE_GROUP_MODE_MASK)
		return -EINVAL;
	if (!args->max_members || args->max_members > AGILE_GROUP_MAX_MEMBERS)
		return -EINVAL;
	if (memchr_inv(args->reserved, 0, sizeof(args->reserved)))
		return -EINVAL;
	return agile_ctx_check_sizes(args->nr_slots, args->task_reg_size);
}

/* The caller's IPC namespace: groups are found only from it. */
static struct ipc_namespace *agile_current_ipc_ns(void)
{
	return current->nsproxy->ipc_ns;
}

/* The group with @key in the caller's namespaces, or NULL. */
static struct agile_group *agile_group_find(u64 key)
{
	struct ipc_namespace *ipc_ns = agile_current_ipc_ns();
	struct user_namespace *user_ns = current_user_ns();
	struct agile_group *group;

	lockdep_assert_held(&agile_group_lock);
	hash_for_each_possible(agile_group_table, group, node, key)
		if (group->key == key && group->user_ns == user_ns &&
		    group->ipc_ns == ipc_ns &&
		    group->ipc_ns_inum == ipc_ns->ns.inum)
			return group;
	return NULL;
}

static void agile_group_publish(struct agile_group *group)
{
	lockdep_assert_held(&agile_group_lock);
	hash_add(agile_group_table, &group->node, group->key);
	group->published = true;
	atomic_inc(&agile_nr_groups);
}

static void agile_group_unpublish(struct agile_group *group)
{
	lockdep_assert_held(&agile_group_lock);
	hash_del(&group->node);
	group->published = false;
	atomic_dec(&agile_nr_groups);
}

/*
 * 0 when the caller may join @group: the read and the write bit of its
 * class of @group->mode, or the read bit alone for a read-only member
 * (a file opened without write access).
 */
static int agile_group_permission(const struct agile_group *group,
				  bool writable)
{
	u32 need = writable ? 06 : 04;
	u32 mode = group->mode;

	if (uid_eq(current_euid(), group->uid))
		mode >>= 6;
	else if (in_egroup_p(group->gid))
		mode >>= 3;
	return (mode & need) == need ? 0 : -EACCES;
}

/*
 * A would-be group and its context, the caller being member 0; not
 * published.  Made with no lock held; freed with its context
 * (agile_ctx_put()) when the key turns out to be taken.
 */
static struct agile_ctx *agile_group_spare(const struct agile_group_join *args)
{
	struct agile_group *group;
	struct agile_ctx *ctx;
	int ret;

	ret = agile_ctx_check_limit(args->nr_slots);
	if (ret)
		return ERR_PTR(ret);
	group = kzalloc(sizeof(*group), GFP_KERNEL_ACCOUNT);
	if (!group)
		return ERR_PTR(-ENOMEM);
	ctx = agile_ctx_create(args->nr_slots, args->task_reg_size);
	if (IS_ERR(ctx)) {
		kfree(group);
		return ctx;
	}
	group->key = args->key;
	group->user_ns = get_user_ns(current_user_ns());
	group->ipc_ns = agile_current_ipc_ns();
	group->ipc_ns_inum = group->ipc_ns->ns.inum;
	group->uid = current_euid();
	group->gid = current_egid();
	group->mode = args->mode;
	group->max_members = args->max_members;
	group->nr_members = 1;
	group->ctx = ctx;
	/* From here the context frees the group. */
	ctx->group = group;
	return ctx;
}

/* The caller's member index in @group, or an error: may it join? */
static int agile_group_admit(const struct agile_group *group,
			     const struct agile_group_join *args, bool writable)
{
	const struct agile_ctx *ctx = group->ctx;
	int ret;

	if (args->flags & AGILE_GROUP_EXCL)
		return -EEXIST;
	ret = agile_group_permission(group, writable);
	if (ret)
		return ret;
	if (args->nr_slots != ctx->nr_slots ||
	    args->task_reg_size != ctx->task_reg_size ||
	    args->max_members != group->max_members)
		return -EINVAL;
	if (group->nr_members >= group->max_members)
		return -ENOSPC;
	return 0;
}

/*
 * What a join or a query reports of @group, into the caller's copy of the
 * arguments: @member is the caller's index, @nr_members the count with
 * it.  The owner is given as the caller's user namespace sees it (the
 * group's, since only its callers find the group).
 */
static void agile_group_fill(const struct agile_group *group, u32 member,
			     u32 nr_members, struct agile_group_join *args)
{
	struct user_namespace *user_ns = current_user_ns();
	struct agile_ctx_init init = {};

	agile_ctx_fill_init(group->ctx, &init);
	args->member = member;
	args->doorbell_offset = init.doorbell_offset;
	args->doorbell_bytes = init.doorbell_bytes;
	args->task_reg_offset = init.task_reg_offset;
	args->task_reg_bytes = init.task_reg_bytes;
	args->owner_uid = from_kuid_munged(user_ns, group->uid);
	args->owner_gid = from_kgid_munged(user_ns, group->gid);
	args->group_mode = group->mode;
	args->nr_members = nr_members;
}

/*
 * One attempt at a join, under agile_group_lock.  It commits (a member
 * index taken and a context reference for the file, or @spare
 * published) only after its result is in userspace, copied without
 * faulting (page faults are disabled under the spinlock); so it either
 * commits with its result copied, or leaves no trace.  Returns 0 with
 * *@ctx the file's context (and *@spare NULL if it was used), -EAGAIN
 * when the key is free and there is no @spare to create the group with,
 * -EFAULT when the copy would have faulted, or the join's error.
 */
static int agile_group_join_locked(struct agile_group_join *args,
				   struct agile_group_join __user *uarg,
				   bool writable, struct agile_ctx **spare,
				   struct agile_ctx **ctx)
{
	struct agile_group *group;
	int ret;

	lockdep_assert_held(&agile_group_lock);
	group = agile_group_find(args->key);
	/* The key's group has ended, its members still hold it: not free. */
	if (group && group->ended)
		return -EPIPE;
	if (group) {
		ret = agile_group_admit(group, args, writable);
		if (ret)
			return ret;
		agile_group_fill(group, group->nr_members,
				 group->nr_members + 1, args);
		if (copy_to_user_nofault(uarg, args, sizeof(*args)))
			return -EFAULT;
		/* Published: no member has left, so a member's ref lives. */
		kref_get(&group->ctx->ref);
		group->nr_members++;
		group->nr_open++;
		*ctx = group->ctx;
		return 0;
	}
	if (!(args->flags & AGILE_GROUP_CREATE))
		return -ENOENT;
	if (!*spare)
		return -EAGAIN;
	agile_group_fill((*spare)->group, 0, 1, args);
	if (copy_to_user_nofault(uarg, args, sizeof(*args)))
		return -EFAULT;
	(*spare)->group->nr_open = 1;
	agile_group_publish((*spare)->group);
	*ctx = *spare;
	*spare = NULL;
	return 0;
}

/**
 * agile_group_join_ioctl - AGILE_IOC_GROUP_JOIN on a file without context
 * @uarg: the caller's struct agile_group_join.
 * @writable: the file was opened for writing.  A read-only file joins as
 *	a read-only member (the read bit of its class suffices) and may not
 *	create a group: EBADF.
 *
 * Called by the file's claim holder.  Returns the group's context with a
 * reference for the file, or an ERR_PTR(); on error the registry is as it
 * was.  Whatever may sleep happens with no lock held: the context of a
 * new group is made before the registry is locked (and dropped if the
 * key turns out to be taken), and a result page that the non-faulting
 * copy cannot reach is faulted in after the lock is dropped, then the
 * whole join is tried again.  So agile_group_lock, which every member's
 * release takes, is never held while a user's page faults (slowly, if
 * it is a userfaultfd or FUSE page).
 */
struct agile_ctx *agile_group_join_ioctl(struct agile_group_join __user *uarg,
					 bool writable)
{
	struct agile_ctx *ctx = NULL, *spare = NULL;
	struct agile_group_join args;
	int ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return ERR_PTR(-EFAULT);
	ret = agile_group_check(&args, false);
	if (ret)
		return ERR_PTR(ret);
	if ((args.flags & AGILE_GROUP_CREATE) && !writable)
		return ERR_PTR(-EBADF);

	for (;;) {
		spin_lock(&agile_group_lock);
		ret = agile_group_join_locked(&args, uarg, writable, &spare,
					      &ctx);
		spin_unlock(&agile_group_lock);
		if (ret == -EAGAIN) {
			spare = agile_group_spare(&args);
			if (IS_ERR(spare)) {
				ret = PTR_ERR(spare);
				spare = NULL;
				break;
			}
		} else if (ret == -EFAULT) {
			/*
			 * Nothing was committed: fault the page in for
			 * writing (without writing, unlike
			 * fault_in_writeable(), so a join that fails after
			 * all leaves the caller's struct alone), then try
			 * again.
			 */
			if (fault_in_safe_writeable((const char __user *)uarg,
						    sizeof(*uarg))) {
				/* Unwritable, or a signal cut the fault. */
				if (signal_pending(current))
					ret = -ERESTARTSYS;
				break;
			}
		} else {
			break;
		}
		/* A signal (one that stopped a slow fault, say) ends it. */
		if (signal_pending(current)) {
			ret = -ERESTARTSYS;
			break;
		}
		cond_resched();
	}
	/* A would-be group that was not needed, never published. */
	if (spare)
		agile_ctx_put(spare);
	return ret ? ERR_PTR(ret) : ctx;
}

/**
 * agile_group_query_ioctl - AGILE_IOC_GROUP_JOIN with AGILE_GROUP_QUERY
 * @uarg: the caller's struct agile_group_join.
 *
 * Reports the group with the key in the caller's namespaces (owner, mode,
 * sizes, member count) without joining it; on any file.  The report is
 * taken under agile_group_lock and copied out after it is dropped.
 */
int agile_group_query_ioctl(struct agile_group_join __user *uarg)
{
	struct agile_group_join args;
	struct agile_group *group;
	int ret = 0;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	ret = agile_group_check(&args, true);
	if (ret)
		return ret;

	spin_lock(&agile_group_lock);
	group = agile_group_find(args.key);
	if (group && group->ended) {
		ret = -EPIPE;
	} else if (group) {
		agile_group_fill(group, 0, group->nr_members, &args);
		args.nr_slots = group->ctx->nr_slots;
		args.task_reg_size = group->ctx->task_reg_size;
		args.max_members = group->max_members;
	} else {
		ret = -ENOENT;
	}
	spin_unlock(&agile_group_lock);
	if (ret)
		return ret;
	return copy_to_user(uarg, &args, sizeof(args)) ? -EFAULT : 0;
}

/*
 * From the context's release: the group is unpublished (its last member's
 * file is released), or never was.
 */
void agile_group_free(struct agile_group *group)
{
	if (!group)
		return;
	put_user_ns(group->user_ns);
	kfree(group);
}

/**
 * agile_group_show_fdinfo - a member's fdinfo lines about its group
 * @m: the fdinfo seq_file.
 * @group: the context's group, or NULL outside groups.
 *
 * The facts are copied under agile_group_lock and printed after it is
 * dropped; the owner's ids as the reader's user namespace sees them.
 */
void agile_group_show_fdinfo(struct seq_file *m,
			     const struct agile_group *group)
{
	struct user_namespace *ns = seq_user_ns(m);
	u32 nr_members, nr_open;
	bool ended;

	if (!group) {
		seq_puts(m, "group:\tnone\n");
		return;
	}
	spin_lock(&agile_group_lock);
	nr_members = group->nr_members;
	nr_open = group->nr_open;
	ended = group->ended;
	spin_unlock(&agile_group_lock);
	/* The others are set before the group is published. */
	seq_printf(m, "group:\t%#llx\n", group->key);
	seq_printf(m, "group_owner_uid:\t%u\n",
		   from_kuid_munged(ns, group->uid));
	seq_printf(m, "group_owner_gid:\t%u\n",
		   from_kgid_munged(ns, group->gid));
	seq_printf(m, "group_mode:\t%04o\n", group->mode);
	seq_printf(m, "group_max_members:\t%u\n", group->max_members);
	seq_printf(m, "group_members:\t%u\n", nr_members);
	seq_printf(m, "group_open:\t%u\n", nr_open);
	seq_printf(m, "group_ended:\t%d\n", ended);
}

/**
 * agile_group_leave - a member's file is released: end its group
 * @ctx: the file's context; the caller still holds the file's reference.
 *
 * Does nothing for a context outside groups.  The first member to leave
 * ends the group (joins fail with EPIPE) and the context; the last one
 * unpublishes the key.  Takes only spinlocks, held for a few
 * instructions: a release never waits behind another caller's fault.
 */
void agile_group_leave(struct agile_ctx *ctx)
{
	struct agile_group *group = ctx->group;

	if (!group)
		return;
	spin_lock(&agile_group_lock);
	group->ended = true;
	if (!WARN_ON_ONCE(!group->nr_open))
		group->nr_open--;
	if (!group->nr_open && group->published)
		agile_group_unpublish(group);
	spin_unlock(&agile_group_lock);
	agile_ctx_end(ctx);
}
