// SPDX-License-Identifier: GPL-2.0-only
/*
 * agile dma-buf exporter: the doorbell area, the task-register area or a
 * segment as a dma-buf, so that a GPU driver can import the very pages
 * that userspace maps from /dev/agile.
 *
 * The dma-buf holds a reference on the context, which owns the pages:
 * closing the agile file leaves the dma-buf usable, and closing the
 * dma-buf leaves the agile file alone.  The pages are ordinary cacheable
 * kernel pages; the CPU-access hooks sync the DMA mappings that exist.
 */

#include <linux/dma-buf.h>
#include <linux/dma-direction.h>
#include <linux/dma-mapping.h>
#include <linux/err.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "agile.h"
#include "compat.h"

AGILE_MODULE_IMPORT_NS_DMA_BUF;

/**
 * struct agile_dmabuf - an exported dma-buf's private data
 * @ctx: the context whose pages are exported; one reference held.
 * @pages: the exported pages, owned by @ctx.
 * @nr_pages: pages in @pages.
 * @lock: protects @mappings; see "Locking" in agile.h.
 * @mappings: the live DMA mappings (struct agile_dmabuf_map.node).
 */
struct agile_dmabuf {
	struct agile_ctx *ctx;
	struct page **pages;
	unsigned long nr_pages;
	struct mutex lock; /* protects @mappings */
	struct list_head mappings;
};

/**
 * struct agile_dmabuf_map - one attachment's DMA mapping
 * @sgt: the mapped table, returned to the importer.
 * @node: in agile_dmabuf.mappings.
 * @dev: the importer's device.
 * @dir: the direction it was mapped with, which every sync of it uses.
 */
struct agile_dmabuf_map {
	struct sg_table sgt;
	struct list_head node;
	struct device *dev;
	enum dma_data_direction dir;
};

static struct sg_table *agile_dmabuf_map(struct dma_buf_attachment *attach,
					 enum dma_data_direction dir)
{
	struct agile_dmabuf *ab = attach->dmabuf->priv;
	struct agile_dmabuf_map *map;
	int ret;

	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table_from_pages(&map->sgt, ab->pages, ab->nr_pages, 0,
					ab->nr_pages << PAGE_SHIFT, GFP_KERNEL);
	if (ret)
		goto err_free_map;
	ret = dma_map_sgtable(attach->dev, &map->sgt, dir, 0);
	if (ret)
		goto err_free_table;
	map->dev = attach->dev;
	map->dir = dir;
	mutex_lock(&ab->lock);
	list_add(&map->node, &ab->mappings);
	mutex_unlock(&ab->lock);
	return &map->sgt;

err_free_table:
	sg_free_table(&map->sgt);
err_free_map:
	kfree(map);
	return ERR_PTR(ret);
}

static void agile_dmabuf_unmap(struct dma_buf_attachment *attach,
			       struct sg_table *sgt,
			       enum dma_data_direction dir)
{
	struct agile_dmabuf *ab = attach->dmabuf->priv;
	struct agile_dmabuf_map *map =
		container_of(sgt, struct agile_dmabuf_map, sgt);

	mutex_lock(&ab->lock);
	list_del(&map->node);
	mutex_unlock(&ab->lock);
	dma_unmap_sgtable(attach->dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(map);
}

/*
 * The CPU-access hooks sync every mapping in the direction it was mapped
 * with: the DMA API requires a sync to use the mapping's direction, and
 * the caller's says only what the CPU is about to do.  Syncing a
 * DMA_TO_DEVICE mapping "from the device" would copy a bounce buffer's
 * stale bytes over the CPU's own stores.
 */
static int agile_dmabuf_begin_cpu_access(struct dma_buf *dmabuf,
					 enum dma_data_direction dir)
{
	struct agile_dmabuf *ab = dmabuf->priv;
	struct agile_dmabuf_map *map;

	mutex_lock(&ab->lock);
	list_for_each_entry(map, &ab->mappings, node)
		dma_sync_sgtable_for_cpu(map->dev, &map->sgt, map->dir);
	mutex_unlock(&ab->lock);
	return 0;
}

static int agile_dmabuf_end_cpu_access(struct dma_buf *dmabuf,
				       enum dma_data_direction dir)
{
	struct agile_dmabuf *ab = dmabuf->priv;
	struct agile_dmabuf_map *map;

	mutex_lock(&ab->lock);
	list_for_each_entry(map, &ab->mappings, node)
		dma_sync_sgtable_for_device(map->dev, &map->sgt, map->dir);
	mutex_unlock(&ab->lock);
	return 0;
}

static int agile_dmabuf_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	struct agile_dmabuf *ab = dmabuf->priv;

	if (vma->vm_pgoff)
		return -EINVAL;
	return agile_pages_mmap(vma, ab->pages, ab->nr_pages);
}

static int agile_dmabuf_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct agile_dmabuf *ab = dmabuf->priv;
	void *vaddr;

	vaddr = vm_map_ram(ab->pages, ab->nr_pages, NUMA_NO_NODE);
	if (!vaddr)
		return -ENOMEM;
	iosys_map_set_vaddr(map, vaddr);
	return 0;
}

static void agile_dmabuf_vunmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct agile_dmabuf *ab = dmabuf->priv;

	vm_unmap_ram(map->vaddr, ab->nr_pages);
}

static void agile_dmabuf_release(struct dma_buf *dmabuf)
{
	struct agile_dmabuf *ab = dmabuf->priv;

	/* Importers detached before the last reference went. */
	WARN_ON_ONCE(!list_empty(&ab->mappings));
	agile_ctx_put(ab->ctx);
	mutex_destroy(&ab->lock);
	kfree(ab);
}

static const struct dma_buf_ops agile_dmabuf_ops = {
	.map_dma_buf = agile_dmabuf_map,
	.unmap_dma_buf = agile_dmabuf_unmap,
	.begin_cpu_access = agile_dmabuf_begin_cpu_access,
	.end_cpu_access = agile_dmabuf_end_cpu_access,
	.mmap = agile_dmabuf_mmap,
	.vmap = agile_dmabuf_vmap,
	.vunmap = agile_dmabuf_vunmap,
	.release = agile_dmabuf_release,
};

static int agile_dmabuf_pages(struct agile_ctx *ctx,
			      const struct agile_export_dmabuf *args,
			      struct page ***pages, unsigned long *nr_pages)
{
	const struct agile_seg *seg;

	switch (args->what) {
	case AGILE_DMABUF_DOORBELLS:
		if (args->id)
			return -EINVAL;
		*pages = ctx->pages;
		*nr_pages = ctx->nr_doorbell_pages;
		return 0;
	case AGILE_DMABUF_TASK_REGS:
		if (args->id)
			return -EINVAL;
		*pages = ctx->pages + ctx->nr_doorbell_pages;
		*nr_pages = ctx->nr_pages - ctx->nr_doorbell_pages;
		return 0;
	case AGILE_DMABUF_SEGMENT:
		seg = agile_seg_get(ctx, args->id);
		if (!seg)
			return -EINVAL;
		*pages = seg->pages;
		*nr_pages = seg->nr_pages;
		return 0;
	default:
		return -EINVAL;
	}
}

/* @writable: the file was opened for writing, as an O_RDWR export needs. */
int agile_dmabuf_export_ioctl(struct agile_ctx *ctx,
			      struct agile_export_dmabuf __user *uarg,
			      bool writable)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp_info);
	struct agile_export_dmabuf args;
	unsigned long nr_pages;
	struct agile_dmabuf *ab;
	struct dma_buf *dmabuf;
	struct page **pages;
	int ret, fd;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags & ~(O_CLOEXEC | O_RDWR) ||
	    memchr_inv(args.reserved, 0, sizeof(args.reserved)))
		return -EINVAL;
	/* Valid while @ctx lives: segments are freed only with it. */
	ret = agile_dmabuf_pages(ctx, &args, &pages, &nr_pages);
	if (ret)
		return ret;
	/*
	 * A writable dma-buf of a read-only file would let it store; asked
	 * only once the arguments are known good, so bad input is EINVAL.
	 */
	if ((args.flags & O_ACCMODE) == O_RDWR && !writable)
		return -EBADF;

	ab = kzalloc(sizeof(*ab), GFP_KERNEL_ACCOUNT);
	if (!ab)
		return -ENOMEM;
	ab->pages = pages;
	ab->nr_pages = nr_pages;
	mutex_init(&ab->lock);
	INIT_LIST_HEAD(&ab->mappings);
	kref_get(&ctx->ref);
	ab->ctx = ctx;

	exp_info.ops = &agile_dmabuf_ops;
	exp_info.size = ab->nr_pages << PAGE_SHIFT;
	exp_info.flags = args.flags & O_ACCMODE;
	exp_info.priv = ab;
	dmabuf = dma_buf_export(&exp_info);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		goto err_put_ctx;
	}

	/* The fd is installed only once the caller has been told of it. */
	fd = get_unused_fd_flags(args.flags & O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_put_dmabuf;
	}
	args.fd = fd;
	if (copy_to_user(uarg, &args, sizeof(args))) {
		put_unused_fd(fd);
		ret = -EFAULT;
		goto err_put_dmabuf;
	}
	fd_install(fd, dmabuf->file);
	return 0;

err_put_dmabuf:
	/* Its release drops the context reference and frees @ab. */
	dma_buf_put(dmabuf);
	return ret;
err_put_ctx:
	agile_ctx_put(ctx);
	mutex_destroy(&ab->lock);
	kfree(ab);
	return ret;
}
