// SPDX-License-Identifier: GPL-2.0-only
/*
 * agile_pin_test - test-only misc device that proves a user range can be
 * pinned with FOLL_LONGTERM, as hipHostRegister()/cudaHostRegister() do.
 * See agile_pin_test.h for the ioctl.  Never part of a product build.
 */

#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "agile_pin_test.h"

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

static long agile_pin_test_ioctl(struct file *file, unsigned int cmd,
				 unsigned long arg)
{
	struct agile_pin_test_args args;

	if (cmd != AGILE_PIN_TEST_IOC_PIN)
		return -ENOTTY;
	if (copy_from_user(&args, (void __user *)arg, sizeof(args)))
		return -EFAULT;
	return agile_pin_test_pin(&args);
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

module_misc_device(agile_pin_test_misc);

MODULE_DESCRIPTION("agile test only: pin a user range with FOLL_LONGTERM");
MODULE_AUTHOR("The agile authors");
MODULE_LICENSE("GPL");
