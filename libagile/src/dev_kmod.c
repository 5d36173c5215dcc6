// SPDX-License-Identifier: MIT
/*
 * dev_kmod.c - the kmod backend of the doorbell layer: a context of
 * /dev/agile, its two areas mapped, waits in AGILE_FENCE_WAIT and wake-ups
 * through AGILE_FENCE_SIGNAL.  The module keeps agile_doorbell.sleepers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <agile/error.h>

#include "dev_impl.h"

static int kmod_open(struct agile_dev *dev, const struct agile_dev_opts *opts)
{
	const char *path = opts->path ? opts->path : "/dev/agile";
	struct agile_ctx_init init;
	struct agile_info info;
	int err;

	dev->fd = open(path, O_RDWR | O_CLOEXEC);
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
	dev->sleeper_count = info.features & AGILE_FEAT_SLEEPER_COUNT;

	memset(&init, 0, sizeof(init));
	init.nr_slots = dev->nr_slots;
	init.task_reg_size = dev->task_reg_size;
	if (ioctl(dev->fd, AGILE_IOC_CTX_INIT, &init) < 0) {
		err = -errno;
		goto fail;
	}
	dev->doorbell_bytes = init.doorbell_bytes;
	dev->task_reg_bytes = init.task_reg_bytes;
	err = agile_dev_map_area(dev, init.doorbell_bytes, init.doorbell_offset,
		       &dev->doorbells);
	if (!err)
		err = agile_dev_map_area(dev, init.task_reg_bytes, init.task_reg_offset,
			       &dev->task_regs);
	if (!err)
		return 0;
fail:
	agile_dev_unmap_close(dev);
	return err;
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
	.close = agile_dev_unmap_close,
	.wake = kmod_wake,
	.sleep = kmod_sleep,
	.kernel_stats = kmod_kernel_stats,
};
