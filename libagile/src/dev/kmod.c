// SPDX-License-Identifier: MIT
/*
 * dev/kmod.c - the kmod backend of the doorbell layer: a context of
 * /dev/agile, its two areas mapped, waits in AGILE_FENCE_WAIT and wake-ups
 * through AGILE_FENCE_SIGNAL.  The module keeps agile_doorbell.sleepers.
 * A group is AGILE_IOC_GROUP_JOIN instead of CTX_INIT, with the same
 * mapping; segments are AGILE_IOC_SEG_CREATE, mapped at their offset.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <agile/error.h>

#include "dev/dev_impl.h"

/*
 * Open the node and check the module's INFO: the ABI, and @feature
 * (0 for none; -EOPNOTSUPP if the module lacks it).  On failure nothing
 * is left open.
 */
static int kmod_open_node(struct agile_dev *dev, const char *path,
			  uint32_t feature)
{
	struct agile_info info;
	int err;

	dev->fd = open(path ? path : "/dev/agile", O_RDWR | O_CLOEXEC);
	if (dev->fd < 0) {
		err = errno;
		/* No node, or a node without the module behind it. */
		return err == ENOENT || err == ENXIO ? -ENODEV : -err;
	}
	memset(&info, 0, sizeof(info));
	if (ioctl(dev->fd, AGILE_IOC_INFO, &info) < 0) {
		err = errno == ENOTTY ? -ENODEV : -errno;
		goto fail;
	}
	err = -AGILE_E_ABI;
	if (info.abi_version != AGILE_ABI_VERSION ||
	    info.doorbell_stride != AGILE_DOORBELL_STRIDE)
		goto fail;
	err = -EOPNOTSUPP;
	if ((info.features & feature) != feature)
		goto fail;
	dev->sleeper_count = info.features & AGILE_FEAT_SLEEPER_COUNT;
	return 0;
fail:
	agile_dev_unmap_close(dev);
	return err;
}

/* Map both areas where CTX_INIT or GROUP_JOIN said; on failure close. */
static int kmod_map_areas(struct agile_dev *dev, uint64_t doorbell_offset,
			  uint64_t doorbell_bytes, uint64_t task_reg_offset,
			  uint64_t task_reg_bytes)
{
	int err;

	dev->doorbell_bytes = doorbell_bytes;
	dev->task_reg_bytes = task_reg_bytes;
	err = agile_dev_map_area(dev, doorbell_bytes, doorbell_offset,
				 &dev->doorbells);
	if (!err)
		err = agile_dev_map_area(dev, task_reg_bytes, task_reg_offset,
					 &dev->task_regs);
	if (err)
		agile_dev_unmap_close(dev);
	return err;
}

static int kmod_open(struct agile_dev *dev, const struct agile_dev_opts *opts)
{
	struct agile_ctx_init init;
	int err;

	err = kmod_open_node(dev, opts->path, 0);
	if (err)
		return err;
	memset(&init, 0, sizeof(init));
	init.nr_slots = dev->nr_slots;
	init.task_reg_size = dev->task_reg_size;
	if (ioctl(dev->fd, AGILE_IOC_CTX_INIT, &init) < 0) {
		err = -errno;
		agile_dev_unmap_close(dev);
		return err;
	}
	return kmod_map_areas(dev, init.doorbell_offset, init.doorbell_bytes,
			      init.task_reg_offset, init.task_reg_bytes);
}

static int kmod_group_join(struct agile_dev *dev,
			   const struct agile_dev_group_opts *opts)
{
	struct agile_group_join join;
	int err;

	err = kmod_open_node(dev, opts->dev.path, AGILE_FEAT_GROUPS);
	if (err)
		return err;
	memset(&join, 0, sizeof(join));
	join.key = opts->key;
	join.nr_slots = dev->nr_slots;
	join.task_reg_size = dev->task_reg_size;
	join.max_members = opts->max_members;
	join.mode = opts->mode;
	join.flags = opts->flags;
	if (ioctl(dev->fd, AGILE_IOC_GROUP_JOIN, &join) < 0) {
		err = -errno;
		agile_dev_unmap_close(dev);
		return err;
	}
	dev->member = join.member;
	dev->max_members = opts->max_members;
	return kmod_map_areas(dev, join.doorbell_offset, join.doorbell_bytes,
			      join.task_reg_offset, join.task_reg_bytes);
}

static int kmod_seg_create(struct agile_dev *dev, size_t bytes, uint32_t *id,
			   uint64_t *offset, size_t *map_bytes)
{
	struct agile_seg_create seg;

	memset(&seg, 0, sizeof(seg));
	seg.bytes = bytes;
	if (ioctl(dev->fd, AGILE_IOC_SEG_CREATE, &seg) < 0)
		return errno == ENOTTY ? -EOPNOTSUPP : -errno;
	*id = seg.id;
	*offset = seg.mmap_offset;
	*map_bytes = (size_t)seg.mmap_bytes;
	return 0;
}

/*
 * Where segment @id is mapped: the module knows it, and checks the length
 * (in pages) and the id when we mmap; an unknown id or another number of
 * pages fails there with -EINVAL.
 */
static int kmod_seg_find(struct agile_dev *dev, uint32_t id, size_t bytes,
			 uint64_t *offset, size_t *map_bytes)
{
	(void)dev;
	*map_bytes = agile_dev_page_round(bytes);
	if (!*map_bytes)
		return -EINVAL;
	*offset = AGILE_MMAP_SEGMENTS +
		  ((uint64_t)id << AGILE_MMAP_SEGMENT_SHIFT);
	return 0;
}

static int kmod_wake(struct agile_dev *dev, uint32_t slot)
{
	/* The value is stored already (release, in dev.c): only wake. */
	struct agile_fence f = {
		.op = AGILE_FENCE_SIGNAL,
		.slot = slot,
		.flags = AGILE_SIGNAL_WAKE_ONLY,
	};

	return ioctl(dev->fd, AGILE_IOC_FENCE, &f) < 0 ? -errno : 0;
}

/* In a group that ended, the module fails the wait with EPIPE. */
static int kmod_sleep(struct agile_dev *dev, uint32_t slot, uint32_t cmp,
		      uint32_t value, uint64_t deadline_ns)
{
	struct agile_fence f = {
		.op = AGILE_FENCE_WAIT,
		.slot = slot,
		.cmp = cmp,
		.value = value,
		.flags = deadline_ns ? AGILE_WAIT_ABSTIME : 0,
		.timeout_ns = deadline_ns ? deadline_ns :
					    AGILE_TIMEOUT_INFINITE,
	};

	/*
	 * The module raises the slot's sleeper count, fences and re-checks
	 * before it sleeps; its acquire load of the doorbell is not one the
	 * compiler or TSan sees, so dev.c re-reads the doorbell with acquire
	 * after we return.
	 */
	return ioctl(dev->fd, AGILE_IOC_FENCE, &f) < 0 ? -errno : 0;
}

static int kmod_kernel_stats(struct agile_dev *dev, struct agile_stats *st)
{
	return ioctl(dev->fd, AGILE_IOC_STATS, st) < 0 ? -errno : 0;
}

const struct dev_backend agile_dev_kmod = {
	.name = "kmod",
	.open = kmod_open,
	.group_join = kmod_group_join,
	.close = agile_dev_unmap_close,
	.wake = kmod_wake,
	.sleep = kmod_sleep,
	.kernel_stats = kmod_kernel_stats,
	.seg_create = kmod_seg_create,
	.seg_find = kmod_seg_find,
};
