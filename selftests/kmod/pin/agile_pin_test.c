// SPDX-License-Identifier: GPL-2.0-only
/*
 * agile_pin_test - test-only misc device that proves a user range can be
 * pinned with FOLL_LONGTERM, as hipHostRegister()/cudaHostRegister() do,
 * and that a device driver importing agile's dma-bufs reaches the pages
 * that userspace maps.  See agile_pin_test.h for the ioctls.  Never part
 * of a product build.
 */

#include <linux/dma-buf.h>
#include <linux/dma-direction.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/iosys-map.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "agile_pin_test.h"
#include "compat.h"

AGILE_MODULE_IMPORT_NS_DMA_BUF;

/* Enough for the largest agile area (65536 slots of 4 KiB). */
#define AGILE_PIN_TEST_MAX_PAGES 65536UL

static int agile_pin_test_markers(struct page **pages, unsigned long nr_pages,
				  u32 marker)
{
	unsigned long i;
	int ret = 0;

	for (i = 0; i < nr_pages && !ret; i++) {
		u32 *word = kmap_local_page(pages[i]);

		WRITE_ONCE(*word, marker + (u32)i);
		if (READ_ONCE(*word) != marker + (u32)i)
			ret = -EIO;
		kunmap_local(word);
	}
	return ret;
}

static long agile_pin_test_pin(const struct agile_pin_test_args *args)
{
	bool write = args->flags & AGILE_PIN_TEST_WRITE;
	unsigned long nr_pages;
	struct page **pages;
	long pinned;
	int ret;

	if (args->flags & ~AGILE_PIN_TEST_WRITE || !args->length ||
	    !PAGE_ALIGNED(args->addr) || !PAGE_ALIGNED(args->length) ||
	    args->length / PAGE_SIZE > AGILE_PIN_TEST_MAX_PAGES)
		return -EINVAL;
	nr_pages = args->length / PAGE_SIZE;

	pages = kvcalloc(nr_pages, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	pinned = pin_user_pages_fast(args->addr, nr_pages,
				     FOLL_LONGTERM | FOLL_WRITE, pages);
	if (pinned < 0) {
		ret = pinned;
		goto out_free;
	}
	if (pinned != nr_pages) {
		ret = -EFAULT;
		goto out_unpin;
	}
	ret = write ? agile_pin_test_markers(pages, nr_pages, args->marker) : 0;

out_unpin:
	unpin_user_pages_dirty_lock(pages, pinned, write);
out_free:
	kvfree(pages);
	return ret ? ret : pinned;
}

static struct miscdevice agile_pin_test_misc;

/* Read the word into @args->seen, then store @args->marker there. */
static void agile_pin_test_swap(u32 *word, struct agile_pin_test_dmabuf *args)
{
	args->seen = READ_ONCE(*word);
	WRITE_ONCE(*word, args->marker);
}

/* The word through a kernel mapping of the scatterlist's page. */
static int agile_pin_test_sg(struct dma_buf_attachment *attach,
			     struct agile_pin_test_dmabuf *args)
{
	struct dma_buf *dmabuf = attach->dmabuf;
	unsigned long dma_bytes = 0;
	struct sg_dma_page_iter dma_iter;
	struct sg_page_iter iter;
	struct page *page = NULL;
	bool to_device = args->flags & AGILE_PIN_TEST_DMABUF_TO_DEVICE;
	enum dma_data_direction dir = to_device ? DMA_TO_DEVICE :
						  DMA_BIDIRECTIONAL;
	struct sg_table *sgt;
	u32 *vaddr;
	int ret;

	sgt = dma_buf_map_attachment_unlocked(attach, dir);
	if (IS_ERR(sgt))
		return PTR_ERR(sgt);
	args->bounced = dma_need_sync(attach->dev, sg_dma_address(sgt->sgl));
	/* The device's view covers the whole buffer... */
	for_each_sgtable_dma_page(sgt, &dma_iter, 0)
		dma_bytes += PAGE_SIZE;
	/* ...and the CPU reaches the page that holds the word. */
	for_each_sgtable_page(sgt, &iter, args->offset >> PAGE_SHIFT) {
		page = sg_page_iter_page(&iter);
		break;
	}
	if (dma_bytes < dmabuf->size || !page) {
		ret = -EIO;
		goto out_unmap;
	}

	vaddr = kmap_local_page(page);
	if (to_device) {
		/* The store the exporter's sync for the CPU must not undo. */
		agile_pin_test_swap(vaddr + offset_in_page(args->offset) / 4,
				    args);
		ret = dma_buf_begin_cpu_access(dmabuf, DMA_FROM_DEVICE);
		args->after =
			READ_ONCE(vaddr[offset_in_page(args->offset) / 4]);
		if (!ret)
			ret = dma_buf_end_cpu_access(dmabuf, DMA_FROM_DEVICE);
		goto out_kunmap;
	}
	ret = dma_buf_begin_cpu_access(dmabuf, DMA_BIDIRECTIONAL);
	if (ret)
		goto out_kunmap;
	agile_pin_test_swap(vaddr + offset_in_page(args->offset) / 4, args);
	ret = dma_buf_end_cpu_access(dmabuf, DMA_BIDIRECTIONAL);

out_kunmap:
	kunmap_local(vaddr);
out_unmap:
	dma_buf_unmap_attachment_unlocked(attach, sgt, dir);
	return ret;
}

/*
 * The word through dma_buf_vmap().  Up to 6.1 it takes the dma-buf's own
 * lock, from 6.2 the caller holds the reservation lock: holding it works
 * with both.
 */
static int agile_pin_test_vmap(struct dma_buf *dmabuf,
			       struct agile_pin_test_dmabuf *args)
{
	struct iosys_map map;
	int ret;

	dma_resv_lock(dmabuf->resv, NULL);
	ret = dma_buf_vmap(dmabuf, &map);
	dma_resv_unlock(dmabuf->resv);
	if (ret)
		return ret;
	if (map.is_iomem) {
		ret = -EIO;
		goto out_vunmap;
	}

	ret = dma_buf_begin_cpu_access(dmabuf, DMA_BIDIRECTIONAL);
	if (ret)
		goto out_vunmap;
	agile_pin_test_swap((u32 *)map.vaddr + args->offset / 4, args);
	ret = dma_buf_end_cpu_access(dmabuf, DMA_BIDIRECTIONAL);

out_vunmap:
	dma_resv_lock(dmabuf->resv, NULL);
	dma_buf_vunmap(dmabuf, &map);
	dma_resv_unlock(dmabuf->resv);
	return ret;
}

static long agile_pin_test_dmabuf(struct agile_pin_test_dmabuf __user *uarg)
{
	struct dma_buf_attachment *attach;
	struct agile_pin_test_dmabuf args;
	struct dma_buf *dmabuf;
	int ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags & ~(AGILE_PIN_TEST_DMABUF_VMAP |
			   AGILE_PIN_TEST_DMABUF_TO_DEVICE) ||
	    (args.flags & AGILE_PIN_TEST_DMABUF_VMAP &&
	     args.flags & AGILE_PIN_TEST_DMABUF_TO_DEVICE) ||
	    memchr_inv(args.reserved, 0, sizeof(args.reserved)) ||
	    !IS_ALIGNED(args.offset, sizeof(u32)))
		return -EINVAL;
	args.after = 0;
	args.bounced = 0;

	dmabuf = dma_buf_get(args.fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	if (dmabuf->size < sizeof(u32) ||
	    args.offset > dmabuf->size - sizeof(u32)) {
		ret = -EINVAL;
		goto out_put;
	}
	attach = dma_buf_attach(dmabuf, agile_pin_test_misc.this_device);
	if (IS_ERR(attach)) {
		ret = PTR_ERR(attach);
		goto out_put;
	}

	if (args.flags & AGILE_PIN_TEST_DMABUF_VMAP)
		ret = agile_pin_test_vmap(dmabuf, &args);
	else
		ret = agile_pin_test_sg(attach, &args);
	if (!ret && copy_to_user(uarg, &args, sizeof(args)))
		ret = -EFAULT;

	dma_buf_detach(dmabuf, attach);
out_put:
	dma_buf_put(dmabuf);
	return ret;
}

static long agile_pin_test_ioctl(struct file *file, unsigned int cmd,
				 unsigned long arg)
{
	struct agile_pin_test_args args;

	switch (cmd) {
	case AGILE_PIN_TEST_IOC_PIN:
		if (copy_from_user(&args, (void __user *)arg, sizeof(args)))
			return -EFAULT;
		return agile_pin_test_pin(&args);
	case AGILE_PIN_TEST_IOC_DMABUF:
		return agile_pin_test_dmabuf((void __user *)arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations agile_pin_test_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = agile_pin_test_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice agile_pin_test_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "agile_pin_test",
	.fops = &agile_pin_test_fops,
	.mode = 0666,
};

/*
 * minor=N registers the device with misc minor N instead of a dynamic one:
 * the autoload test takes agile's fixed minor with it first, to see agile
 * fall back to a dynamic minor (selftests/kmod/autoload.sh).
 */
static int minor = MISC_DYNAMIC_MINOR;
module_param(minor, int, 0444);
MODULE_PARM_DESC(minor, "misc minor to register (default: a dynamic one)");

static int __init agile_pin_test_init(void)
{
	int ret;

	if (minor < 0 || minor > MISC_DYNAMIC_MINOR)
		return -EINVAL;
	agile_pin_test_misc.minor = minor;
	ret = misc_register(&agile_pin_test_misc);
	if (ret)
		return ret;
	/*
	 * The dma-buf importer maps attachments for the misc device, as a
	 * GPU driver does for its PCI device: give it a DMA mask.
	 */
	ret = dma_coerce_mask_and_coherent(agile_pin_test_misc.this_device,
					   DMA_BIT_MASK(64));
	if (ret)
		goto err_deregister;
	return 0;

err_deregister:
	misc_deregister(&agile_pin_test_misc);
	return ret;
}
module_init(agile_pin_test_init);

static void __exit agile_pin_test_exit(void)
{
	misc_deregister(&agile_pin_test_misc);
}
module_exit(agile_pin_test_exit);

MODULE_DESCRIPTION("agile test only: pin a user range, import a dma-buf");
MODULE_AUTHOR("The agile authors");
MODULE_LICENSE("GPL");
