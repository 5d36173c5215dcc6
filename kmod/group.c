// SPDX-License-Identifier: GPL-2.0-only
/*
 * agile groups: one context shared by the processes that join it with the
 * same 64-bit key (AGILE_IOC_GROUP_JOIN).
 *
 * The registry holds the live groups by key.  A group is published there
 * from its creation until the first member's file is released; that
 * release ends it (agile_group_leave()): the key is unpublished, so a new
 * group may take it at once, and every wait of every member fails with
 * EPIPE from then on, so that no member hangs on a dead peer.  The
 * context, and the group with it, is freed by its last reference, as any
 * context.
 *
 * Who may join: the creator's effective uid and gid, recorded at
 * creation, and its mode decide, as for a file: the owner class (same
 * euid), else the group class (the creator's gid is the caller's egid or
 * one of its supplementary groups), else others; the caller needs both
 * the read and the write bit of its class.  No capability overrides the
 * mode: a group is a rendezvous between cooperating processes, not a
 * file an administrator manages, and a mode of 0600 means "only this
 * user" even for root.
 */

#include <linux/cred.h>
#include <linux/err.h>
#include <linux/hashtable.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "agile.h"

#define AGILE_GROUP_HASH_BITS 6

/*
 * The registry of live groups.  agile_group_lock: see "Locking" in
 * agile.h; it guards the table and every group's @published and
 * @nr_members.
 */
static DEFINE_MUTEX(agile_group_lock);
static DEFINE_HASHTABLE(agile_group_table, AGILE_GROUP_HASH_BITS);

/* Groups published now: the sysfs counter "groups". */
atomic_t agile_nr_groups = ATOMIC_INIT(0);

static int agile_group_check(const struct agile_group_join *args)
{
	u32 flags = args->flags;

	if (flags & ~(AGILE_GROUP_CREATE | AGILE_GROUP_EXCL))
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

static struct agile_group *agile_group_find(u64 key)
{
	struct agile_group *group;

	lockdep_assert_held(&agile_group_lock);
	hash_for_each_possible(agile_group_table, group, node, key)
		if (group->key == key)
			return group;
	return NULL;
}

static void agile_group_unpublish(struct agile_group *group)
{
	lockdep_assert_held(&agile_group_lock);
	hash_del(&group->node);
	group->published = false;
	atomic_dec(&agile_nr_groups);
}

/* 0 when the caller may join @group: rw in its class of @group->mode. */
static int agile_group_permission(const struct agile_group *group)
{
	u32 mode = group->mode;

	if (uid_eq(current_euid(), group->uid))
		mode >>= 6;
	else if (in_egroup_p(group->gid))
		mode >>= 3;
	return (mode & 06) == 06 ? 0 : -EACCES;
}

/* A new group and its context, the creator being member 0. */
static struct agile_ctx *agile_group_create(const struct agile_group_join *args)
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
	if (IS_ERR(ctx))
		goto err_free_group;
	group->key = args->key;
	group->uid = current_euid();
	group->gid = current_egid();
	group->mode = args->mode;
	group->max_members = args->max_members;
	group->nr_members = 1;
	group->published = true;
	group->ctx = ctx;
	/* From here the context frees the group. */
	ctx->group = group;
	hash_add(agile_group_table, &group->node, group->key);
	atomic_inc(&agile_nr_groups);
	return ctx;

err_free_group:
	kfree(group);
	return ctx;
}

/* Join the existing @group: a new reference on its context. */
static struct agile_ctx *agile_group_add(struct agile_group *group,
					 const struct agile_group_join *args)
{
	struct agile_ctx *ctx = group->ctx;
	int ret;

	if (args->flags & AGILE_GROUP_EXCL)
		return ERR_PTR(-EEXIST);
	ret = agile_group_permission(group);
	if (ret)
		return ERR_PTR(ret);
	if (args->nr_slots != ctx->nr_slots ||
	    args->task_reg_size != ctx->task_reg_size ||
	    args->max_members != group->max_members)
		return ERR_PTR(-EINVAL);
	if (group->nr_members >= group->max_members)
		return ERR_PTR(-ENOSPC);
	/* Published: no member has left, so a member's reference lives. */
	kref_get(&ctx->ref);
	group->nr_members++;
	return ctx;
}

/* Undo a join whose result could not be copied out. */
static void agile_group_unjoin(struct agile_ctx *ctx)
{
	struct agile_group *group = ctx->group;

	lockdep_assert_held(&agile_group_lock);
	/* Still under the lock of the join: it was the last, and published. */
	if (!--group->nr_members)
		agile_group_unpublish(group);
	agile_ctx_put(ctx);
}

/**
 * agile_group_join_ioctl - AGILE_IOC_GROUP_JOIN on a file without context
 * @uarg: the caller's struct agile_group_join.
 *
 * Called under the file's init_lock.  Returns the group's context with a
 * reference for the file, or an ERR_PTR(); on error the registry is as it
 * was.
 */
struct agile_ctx *agile_group_join_ioctl(struct agile_group_join __user *uarg)
{
	struct agile_ctx_init init = {};
	struct agile_group_join args;
	struct agile_group *group;
	struct agile_ctx *ctx;
	u32 member = 0;
	int ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return ERR_PTR(-EFAULT);
	ret = agile_group_check(&args);
	if (ret)
		return ERR_PTR(ret);

	mutex_lock(&agile_group_lock);
	group = agile_group_find(args.key);
	if (group) {
		member = group->nr_members;
		ctx = agile_group_add(group, &args);
	} else if (args.flags & AGILE_GROUP_CREATE) {
		ctx = agile_group_create(&args);
	} else {
		ctx = ERR_PTR(-ENOENT);
	}
	if (IS_ERR(ctx))
		goto out_unlock;

	agile_ctx_fill_init(ctx, &init);
	args.member = member;
	args.doorbell_offset = init.doorbell_offset;
	args.doorbell_bytes = init.doorbell_bytes;
	args.task_reg_offset = init.task_reg_offset;
	args.task_reg_bytes = init.task_reg_bytes;
	if (copy_to_user(uarg, &args, sizeof(args))) {
		agile_group_unjoin(ctx);
		ctx = ERR_PTR(-EFAULT);
	}
out_unlock:
	mutex_unlock(&agile_group_lock);
	return ctx;
}

/**
 * agile_group_leave - a member's file is released: end its group
 * @ctx: the file's context; the caller still holds the file's reference.
 *
 * Does nothing for a context outside groups.  The first member to leave
 * unpublishes the key and ends the context; later ones find it ended.
 */
void agile_group_leave(struct agile_ctx *ctx)
{
	struct agile_group *group = ctx->group;

	if (!group)
		return;
	mutex_lock(&agile_group_lock);
	if (group->published)
		agile_group_unpublish(group);
	mutex_unlock(&agile_group_lock);
	agile_ctx_end(ctx);
}
