// SPDX-License-Identifier: GPL-2.0-only
/*
 * agile data segments: zeroed order-0 pages, charged to the creating
 * member's RLIMIT_MEMLOCK, VmPin and memory cgroup (limits.c), that tasks
 * use as data buffers, mapped like the areas at their own offsets and
 * exportable as dma-bufs.  A context holds at most AGILE_MAX_SEGMENTS of
 * them, each at most max_segment_bytes; they live as long as the context.
 * Ids are the lowest free: an id is missing below a higher one only while
 * its SEG_CREATE runs (or after it failed, until the next one takes it).
 */

#include <linux/bitmap.h>
#include <linux/err.h>
#include <linux/mm.h>
#include <linux/nospec.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "agile.h"

static u64 agile_seg_offset(u32 id)
{
	return AGILE_MMAP_SEGMENTS + ((u64)id << AGILE_MMAP_SEGMENT_SHIFT);
}

static int agile_seg_check(const struct agile_seg_create *args)
{
	if (args->flags || args->pad ||
	    memchr_inv(args->reserved, 0, sizeof(args->reserved)))
		return -EINVAL;
	if (!args->bytes)
		return -EINVAL;
	if (args->bytes > READ_ONCE(agile_max_segment_bytes))
		return -ENOSPC;
	return 0;
}

/* The lowest free segment id of @ctx, now reserved; or -ENOSPC. */
static int agile_seg_reserve(struct agile_ctx *ctx)
{
	unsigned long id;

	spin_lock(&ctx->seg_lock);
	id = find_first_zero_bit(ctx->seg_ids, AGILE_MAX_SEGMENTS);
	if (id < AGILE_MAX_SEGMENTS)
		__set_bit(id, ctx->seg_ids);
	spin_unlock(&ctx->seg_lock);
	return id < AGILE_MAX_SEGMENTS ? id : -ENOSPC;
}

/* Give back a reserved id whose segment was never published. */
static void agile_seg_unreserve(struct agile_ctx *ctx, u32 id)
{
	spin_lock(&ctx->seg_lock);
	__clear_bit(id, ctx->seg_ids);
	spin_unlock(&ctx->seg_lock);
}

/*
 * The id is reserved under the short ctx->seg_lock; the pages are
 * allocated and the result copied out with no lock held, then the segment
 * is published.  So a member of a group whose copy faults slowly, or
 * whose allocation is large, delays no other member's SEG_CREATE, and a
 * failure returns its id.
 */
/* @writable: the file was opened for writing, as a new segment needs. */
int agile_seg_create_ioctl(struct agile_ctx *ctx,
			   struct agile_seg_create __user *uarg, bool writable)
{
	struct agile_seg_create args;
	struct agile_seg *seg;
	int ret, id;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	ret = agile_seg_check(&args);
	if (ret)
		return ret;
	/* Bad input is EINVAL (or ENOSPC) on any file; only then the mode. */
	if (!writable)
		return -EBADF;

	id = agile_seg_reserve(ctx);
	if (id < 0)
		return id;
	seg = kzalloc(sizeof(*seg), GFP_KERNEL_ACCOUNT);
	if (!seg) {
		ret = -ENOMEM;
		goto err_unreserve;
	}
	/* bytes <= max_segment_bytes (at most 1 GiB): no overflow. */
	seg->nr_pages = PAGE_ALIGN(args.bytes) >> PAGE_SHIFT;
	/* ENOMEM over the caller's RLIMIT_MEMLOCK. */
	ret = agile_charge(&seg->charge, seg->nr_pages);
	if (ret)
		goto err_free_seg;
	seg->pages = agile_pages_alloc(seg->nr_pages);
	if (!seg->pages) {
		ret = -ENOMEM;
		goto err_uncharge;
	}

	args.id = id;
	args.pad2 = 0;
	args.mmap_offset = agile_seg_offset(id);
	args.mmap_bytes = (u64)seg->nr_pages << PAGE_SHIFT;
	if (copy_to_user(uarg, &args, sizeof(args))) {
		ret = -EFAULT;
		goto err_free_pages;
	}
	/* Pairs with smp_load_acquire() in agile_seg_get(). */
	smp_store_release(&ctx->segs[id], seg);
	return 0;

err_free_pages:
	agile_pages_free(seg->pages, seg->nr_pages);
err_uncharge:
	agile_uncharge(&seg->charge);
err_free_seg:
	kfree(seg);
err_unreserve:
	agile_seg_unreserve(ctx, id);
	return ret;
}

/* The published segment @id, or NULL.  Valid while @ctx lives. */
const struct agile_seg *agile_seg_get(struct agile_ctx *ctx, u32 id)
{
	if (id >= AGILE_MAX_SEGMENTS)
		return NULL;
	id = array_index_nospec(id, AGILE_MAX_SEGMENTS);
	/* Pairs with smp_store_release() in agile_seg_create_ioctl(). */
	return smp_load_acquire(&ctx->segs[id]);
}

/* The segment mapped at page offset @pgoff; called under mmap_lock. */
int agile_seg_find_mmap(struct agile_ctx *ctx, unsigned long pgoff,
			struct page ***pages, unsigned long *nr_pages)
{
	const struct agile_seg *seg;
	u64 offset = (u64)pgoff << PAGE_SHIFT;
	u64 rel;

	if (offset >> PAGE_SHIFT != pgoff || offset < AGILE_MMAP_SEGMENTS)
		return -EINVAL;
	rel = offset - AGILE_MMAP_SEGMENTS;
	if (rel & (BIT_ULL(AGILE_MMAP_SEGMENT_SHIFT) - 1) ||
	    rel >> AGILE_MMAP_SEGMENT_SHIFT >= AGILE_MAX_SEGMENTS)
		return -EINVAL;
	seg = agile_seg_get(ctx, rel >> AGILE_MMAP_SEGMENT_SHIFT);
	if (!seg)
		return -EINVAL;
	*pages = seg->pages;
	*nr_pages = seg->nr_pages;
	return 0;
}

/* From the context's release: no ioctl, mmap or dma-buf uses it now. */
void agile_seg_free_all(struct agile_ctx *ctx)
{
	u32 i;

	for (i = 0; i < AGILE_MAX_SEGMENTS; i++) {
		if (!ctx->segs[i])
			continue;
		agile_pages_free(ctx->segs[i]->pages, ctx->segs[i]->nr_pages);
		agile_uncharge(&ctx->segs[i]->charge);
		kfree(ctx->segs[i]);
	}
}
