// SPDX-License-Identifier: GPL-2.0-only
/*
 * agile - doorbell and task-register pages with kernel fences and waits.
 *
 * This file wires the misc device /dev/agile together: open/release,
 * the ioctl dispatcher, mmap, the module parameters and module init/exit.
 * The objects live in ctx.c (contexts, pages, mmap), fence.c (fences and
 * waits), poll.c (the poller), seg.c (data segments), group.c (groups),
 * dmabuf.c (the dma-buf exporter), sysfs.c (tunables and counters) and
 * fdinfo.c (a context in /proc/PID/fdinfo/FD).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitops.h>
#include <linux/compat.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "agile.h"
#include "agile_version.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

unsigned int agile_poll_interval_us = 100;
module_param_named(poll_interval_us, agile_poll_interval_us, uint, 0444);
MODULE_PARM_DESC(poll_interval_us,
		 "Poller period in microseconds, 10 to 1000000 (default 100)");

unsigned int agile_poll_max_checks = 256;
module_param_named(poll_max_checks, agile_poll_max_checks, uint, 0444);
MODULE_PARM_DESC(poll_max_checks,
		 "Most conditions the poller checks per tick, 64 to 65536 (default 256)");

unsigned int agile_poll_cpu_permille = 50;
module_param_named(poll_cpu_permille, agile_poll_cpu_permille, uint, 0444);
MODULE_PARM_DESC(poll_cpu_permille,
		 "Most of one CPU the poller takes, in thousandths, 1 to 1000 (1000: no cap; default 50)");

unsigned int agile_spin_ns = 2000;
module_param_named(spin_ns, agile_spin_ns, uint, 0444);
MODULE_PARM_DESC(spin_ns,
		 "Nanoseconds a waiter spins before it sleeps, up to 10000000 (default 2000)");

unsigned int agile_max_slots = 4096;
module_param_named(max_slots, agile_max_slots, uint, 0444);
MODULE_PARM_DESC(max_slots,
		 "Largest nr_slots of a context, 1 to 65536 (default 4096)");

unsigned int agile_max_segment_bytes = 256U << 20;
module_param_named(max_segment_bytes, agile_max_segment_bytes, uint, 0444);
MODULE_PARM_DESC(max_segment_bytes,
		 "Largest data segment in bytes, 4096 to 1073741824 (default 268435456)");

unsigned int agile_max_contexts_per_user = 1024;
module_param_named(max_contexts_per_user, agile_max_contexts_per_user, uint,
		   0444);
MODULE_PARM_DESC(max_contexts_per_user,
		 "Most contexts one user holds, 1 to 1048576 (default 1024)");

/*
 * The device node's mode.  0660 by default: the udev rule gives the node
 * group "agile", whose members may use it; 0600 (root only) and 0666
 * (everyone) by choice of the site.  Read-only once loaded.
 */
static unsigned int agile_dev_mode = 0660;

static int agile_dev_mode_set(const char *val, const struct kernel_param *kp)
{
	unsigned int mode;
	int ret;

	ret = kstrtouint(val, 8, &mode);
	if (ret)
		return ret;
	if (mode != 0600 && mode != 0660 && mode != 0666)
		return -EINVAL;
	*(unsigned int *)kp->arg = mode;
	return 0;
}

static int agile_dev_mode_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%04o\n", *(unsigned int *)kp->arg);
}

static const struct kernel_param_ops agile_dev_mode_ops = {
	.set = agile_dev_mode_set,
	.get = agile_dev_mode_get,
};

module_param_cb(dev_mode, &agile_dev_mode_ops, &agile_dev_mode, 0444);
MODULE_PARM_DESC(dev_mode,
		 "Mode of /dev/agile, in octal: 0600, 0660 (default; group agile by the udev rule) or 0666");

/* Bits of agile_file.flags */
enum {
	/*
	 * Set by the first CTX_INIT or GROUP_JOIN and kept once it
	 * succeeds: a concurrent or later one fails with EBUSY at once.
	 */
	AGILE_FILE_CLAIMED,
};

/**
 * struct agile_file - private data of an open /dev/agile
 * @flags: AGILE_FILE_CLAIMED.
 * @ctx: the file's context, NULL before CTX_INIT or GROUP_JOIN.  Set once,
 *	by the call that holds the claim, with smp_store_release(); read with
 *	smp_load_acquire() by agile_file_ctx().
 *
 * No lock: the claim bit makes CTX_INIT and GROUP_JOIN exclusive on the
 * file without one, so nobody ever sleeps behind another caller's page
 * allocation or slow user copy (a fault on a userfaultfd or FUSE page).
 */
struct agile_file {
	unsigned long flags;
	struct agile_ctx *ctx;
};

static struct agile_ctx *agile_file_ctx(struct agile_file *af)
{
	/* Pairs with smp_store_release() in agile_file_publish(). */
	return smp_load_acquire(&af->ctx);
}

/* EBUSY when the file has a context or another caller is making one. */
static int agile_file_claim(struct agile_file *af)
{
	return test_and_set_bit(AGILE_FILE_CLAIMED, &af->flags) ? -EBUSY : 0;
}

/* The claimed setup failed: the file may be set up again. */
static void agile_file_unclaim(struct agile_file *af)
{
	clear_bit(AGILE_FILE_CLAIMED, &af->flags);
}

/* The claimed setup succeeded: the claim stays, @ctx is the file's. */
static void agile_file_publish(struct agile_file *af, struct agile_ctx *ctx)
{
	/* Pairs with smp_load_acquire() in agile_file_ctx(). */
	smp_store_release(&af->ctx, ctx);
}

static int agile_open(struct inode *inode, struct file *file)
{
	struct agile_file *af;

	af = kzalloc(sizeof(*af), GFP_KERNEL_ACCOUNT);
	if (!af)
		return -ENOMEM;
	file->private_data = af;
	return nonseekable_open(inode, file);
}

static int agile_release(struct inode *inode, struct file *file)
{
	struct agile_file *af = file->private_data;

	/* The last reference to the file: no ioctl or mmap runs now. */
	if (af->ctx) {
		/* A member leaving ends its group: the others' waits fail. */
		agile_group_leave(af->ctx);
		agile_ctx_put(af->ctx);
	}
	kfree(af);
	return 0;
}

static int agile_info(struct agile_info __user *uarg)
{
	struct agile_info info = {
		.abi_version = AGILE_ABI_VERSION,
		.features = AGILE_FEAT_WAIT_ANY | AGILE_FEAT_POLL_WAKE |
			    AGILE_FEAT_SLEEPER_COUNT | AGILE_FEAT_SEGMENTS |
			    AGILE_FEAT_DMABUF | AGILE_FEAT_GROUPS |
			    AGILE_FEAT_GROUP_INFO | AGILE_FEAT_GROUP_ENDED,
		.max_slots = READ_ONCE(agile_max_slots),
		.doorbell_stride = AGILE_DOORBELL_STRIDE,
		.task_reg_min_size = AGILE_TASK_REG_MIN_SIZE,
		.task_reg_max_size = AGILE_TASK_REG_MAX_SIZE,
		.poll_interval_us = READ_ONCE(agile_poll_interval_us),
		.spin_ns = READ_ONCE(agile_spin_ns),
		.wait_any_max = AGILE_WAIT_ANY_MAX,
		.page_size = PAGE_SIZE,
		.max_segment_bytes = READ_ONCE(agile_max_segment_bytes),
	};

	return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
}

/*
 * The context is made and its offsets copied out with no lock held; only
 * then is it published, so a copy that faults slowly delays this caller
 * alone, and one that fails leaves the file as it was.
 */
static int agile_file_ctx_init(struct agile_file *af,
			       struct agile_ctx_init __user *uarg,
			       bool writable)
{
	struct agile_ctx_init args;
	struct agile_ctx *ctx;
	int ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	ret = agile_ctx_check_init(&args);
	if (ret)
		return ret;
	if (!writable)
		return -EBADF;

	ret = agile_file_claim(af);
	if (ret)
		return ret;
	ctx = agile_ctx_create(args.nr_slots, args.task_reg_size);
	if (IS_ERR(ctx)) {
		ret = PTR_ERR(ctx);
		goto err_unclaim;
	}
	agile_ctx_fill_init(ctx, &args);
	if (copy_to_user(uarg, &args, sizeof(args))) {
		ret = -EFAULT;
		goto err_put;
	}
	agile_file_publish(af, ctx);
	return 0;

err_put:
	agile_ctx_put(ctx);
err_unclaim:
	agile_file_unclaim(af);
	return ret;
}

static int agile_file_group_join(struct agile_file *af,
				 struct agile_group_join __user *uarg,
				 bool writable)
{
	struct agile_ctx *ctx;
	u32 flags;
	int ret;

	if (get_user(flags, &uarg->flags))
		return -EFAULT;
	/* A query joins nothing: any file may ask, set up or not. */
	if (flags & AGILE_GROUP_QUERY)
		return agile_group_query_ioctl(uarg);
	ret = agile_file_claim(af);
	if (ret)
		return ret;
	ctx = agile_group_join_ioctl(uarg, writable);
	if (IS_ERR(ctx)) {
		agile_file_unclaim(af);
		return PTR_ERR(ctx);
	}
	agile_file_publish(af, ctx);
	return 0;
}

static int agile_stats(struct agile_ctx *ctx, struct agile_stats __user *uarg)
{
	struct agile_stats stats = {};

	if (ctx)
		agile_ctx_stats(ctx, &stats);
	return copy_to_user(uarg, &stats, sizeof(stats)) ? -EFAULT : 0;
}

/*
 * What changes state needs a file opened for writing (EBADF otherwise):
 * CTX_INIT, creating a group, SIGNAL, SEG_CREATE and a writable
 * EXPORT_DMABUF; each checks its arguments first, so bad input is EINVAL
 * on any file.  A read-only file may join an existing group as a
 * read-only member, and then wait, map read-only and export read-only;
 * the VFS already refuses it a writable shared mapping.
 */
static long agile_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	bool writable = file->f_mode & FMODE_WRITE;
	struct agile_file *af = file->private_data;
	void __user *argp = (void __user *)arg;
	struct agile_ctx *ctx;

	switch (cmd) {
	case AGILE_IOC_INFO:
		return agile_info(argp);
	case AGILE_IOC_CTX_INIT:
		return agile_file_ctx_init(af, argp, writable);
	case AGILE_IOC_GROUP_JOIN:
		return agile_file_group_join(af, argp, writable);
	case AGILE_IOC_STATS:
		return agile_stats(agile_file_ctx(af), argp);
	case AGILE_IOC_FENCE:
	case AGILE_IOC_WAIT_ANY:
	case AGILE_IOC_SEG_CREATE:
	case AGILE_IOC_EXPORT_DMABUF:
		break;
	default:
		return -ENOTTY;
	}

	ctx = agile_file_ctx(af);
	if (!ctx)
		return -EBADFD;
	switch (cmd) {
	case AGILE_IOC_FENCE:
		return agile_fence_ioctl(ctx, argp, writable);
	case AGILE_IOC_WAIT_ANY:
		return agile_wait_any_ioctl(ctx, argp);
	case AGILE_IOC_SEG_CREATE:
		return agile_seg_create_ioctl(ctx, argp, writable);
	default:
		return agile_dmabuf_export_ioctl(ctx, argp, writable);
	}
}

static int agile_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct agile_ctx *ctx = agile_file_ctx(file->private_data);

	if (!ctx)
		return -EBADFD;
	return agile_ctx_mmap(ctx, vma);
}

/* /proc/PID/fdinfo/FD: procfs has checked that the reader may ptrace. */
static void agile_show_fdinfo(struct seq_file *m, struct file *file)
{
	agile_ctx_show_fdinfo(m, agile_file_ctx(file->private_data));
}

static const struct file_operations agile_fops = {
	.owner = THIS_MODULE,
	.open = agile_open,
	.release = agile_release,
	.unlocked_ioctl = agile_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = agile_mmap,
	.show_fdinfo = agile_show_fdinfo,
};

/*
 * /dev/agile's misc minor (major 10), fixed so that the module loads on
 * the first open of the node, as fuse's does: depmod writes the module,
 * the node's name and "c10:246" into modules.devname
 * (MODULE_ALIAS("devname:agile")), kmod static-nodes makes /dev/agile
 * from that line at boot before the module is loaded, and the first open
 * makes misc_open() request_module() "char-major-10-246", which
 * modules.alias maps to agile (MODULE_ALIAS_MISCDEV).
 *
 * 246 is in the misc minors Documentation/admin-guide/devices.txt keeps
 * for local use (243-254) and is assigned to no driver in
 * include/linux/miscdevice.h, in 6.1 or 6.12 (the highest there is
 * RFKILL_MINOR, 242).  misc_register() never hands it out to a
 * MISC_DYNAMIC_MINOR driver: dynamic minors come from 0-127 in 6.1 (a
 * 128-bit bitmap, counted down from 127) and from 0-127 then 256 and
 * up in 6.12 (an ida; newer kernels take 256 and up only).  Out-of-tree
 * modules use the local range too (OpenZFS's /dev/zfs is 249, so not
 * that): when another driver already has 246, agile_init() takes a
 * dynamic minor instead.
 */
#define AGILE_MISC_MINOR 246

static struct miscdevice agile_misc = {
	.minor = AGILE_MISC_MINOR,
	.name = "agile",
	.fops = &agile_fops,
	.groups = agile_groups,
	/* agile_dev_mode, set in agile_init() */
};

static int __init agile_init(void)
{
	int ret;

	BUILD_BUG_ON(sizeof(struct agile_doorbell) != AGILE_DOORBELL_STRIDE);

	ret = agile_sysfs_check_params();
	if (ret)
		return ret;
	agile_misc.mode = agile_dev_mode;
	agile_poll_init();
	ret = misc_register(&agile_misc);
	if (ret != -EBUSY)
		return ret;
	/*
	 * Another driver has the minor.  agile still works, but the node
	 * kmod static-nodes makes at boot (c 10:246) opens that driver, and
	 * the module no longer loads on first open: udev and devtmpfs make
	 * the right node once it is loaded, if no stale one is in the way.
	 */
	pr_warn("misc minor %d is taken by another driver: /dev/agile gets a dynamic minor; a /dev/agile made at boot from modules.devname (c 10:%d) is that driver's, remove it; load agile at boot (modules-load.d) rather than on first open\n",
		AGILE_MISC_MINOR, AGILE_MISC_MINOR);
	agile_misc.minor = MISC_DYNAMIC_MINOR;
	return misc_register(&agile_misc);
}

static void __exit agile_exit(void)
{
	/* fops->owner keeps the module while any file is open. */
	misc_deregister(&agile_misc);
	agile_poll_exit();
}

module_init(agile_init);
module_exit(agile_exit);

MODULE_DESCRIPTION("agile: doorbell and task-register pages with kernel fences and waits");
MODULE_AUTHOR("The agile authors");
MODULE_LICENSE("GPL");
/* modinfo -F version: the project's version (libagile/Makefile). */
MODULE_VERSION(AGILE_MODULE_VERSION);
/* Loaded on the first open of /dev/agile (see AGILE_MISC_MINOR). */
MODULE_ALIAS_MISCDEV(AGILE_MISC_MINOR);
MODULE_ALIAS("devname:agile");
