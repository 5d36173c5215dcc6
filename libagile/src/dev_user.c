// SPDX-License-Identifier: MIT
/*
 * dev_user.c - the user backend of the doorbell layer, for machines
 * without /dev/agile: the module's page layout in a memfd, waits on a
 * futex on the doorbell word, and agile_doorbell.sleepers kept here with
 * atomics, so that signallers skip FUTEX_WAKE exactly as they skip the
 * SIGNAL ioctl on the kmod backend.
 *
 * The futexes are private: a context belongs to one process (its memfd is
 * not shared).  Sharing it between processes would need shared futexes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dev_impl.h"
#include "sys.h"

static size_t page_round(size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (bytes + page - 1) / page * page;
}

static int user_open(struct agile_dev *dev, const struct agile_dev_opts *opts)
{
	int err;

	(void)opts;
	if (dev->nr_slots > AGILE_DEV_USER_MAX_SLOTS)
		return -ENOSPC;
	dev->sleeper_count = true;
	/* The module's layout: doorbell area, then task-register area. */
	dev->doorbell_bytes =
		page_round((size_t)dev->nr_slots * AGILE_DOORBELL_STRIDE);
	dev->task_reg_bytes =
		page_round((size_t)dev->nr_slots * dev->task_reg_size);
	dev->fd = memfd_create("agile-user", MFD_CLOEXEC);
	if (dev->fd < 0)
		return -errno;
	/* A memfd reads as zeroes: every doorbell starts IDLE. */
	if (ftruncate(dev->fd,
		      (off_t)(dev->doorbell_bytes + dev->task_reg_bytes))) {
		err = -errno;
		goto fail;
	}
	err = agile_dev_map_area(dev, dev->doorbell_bytes, 0, &dev->doorbells);
	if (!err)
		err = agile_dev_map_area(dev, dev->task_reg_bytes,
					 dev->doorbell_bytes, &dev->task_regs);
	if (!err)
		return 0;
fail:
	agile_dev_unmap_close(dev);
	return err;
}

static int user_wake(struct agile_dev *dev, uint32_t slot)
{
	struct agile_doorbell *db = dev_doorbell(dev, slot);

	/* Every sleeper re-checks its own condition (cmp may differ). */
	if (agile_futex(&db->value, FUTEX_WAKE, INT_MAX, NULL, 0) < 0)
		return -errno;
	return 0;
}

static int user_sleep(struct agile_dev *dev, uint32_t slot, uint32_t cmp,
		      uint32_t value, uint64_t deadline_ns)
{
	struct agile_doorbell *db = dev_doorbell(dev, slot);
	struct timespec deadline = {
		.tv_sec = (time_t)(deadline_ns / 1000000000ULL),
		.tv_nsec = (long)(deadline_ns % 1000000000ULL),
	};
	uint32_t seen;
	int err = 0;

	__atomic_fetch_add(&db->sleepers, 1, __ATOMIC_RELAXED);
	/*
	 * The waiter's full fence: pairs with the signaller's fence in
	 * wake_sleepers (dev.c).  Either it reads our count and wakes us, or
	 * our re-read below sees its store.
	 */
	atomic_thread_fence(memory_order_seq_cst);
	seen = doorbell_load_acquire(db);
	/*
	 * FUTEX_WAIT sleeps only while the word still holds @seen, checked
	 * under the futex bucket lock FUTEX_WAKE takes: a store after our
	 * re-read makes it return at once (EAGAIN).  BITSET for an absolute
	 * CLOCK_MONOTONIC deadline.
	 */
	if (!dev_cmp_holds(cmp, seen, value) &&
	    agile_futex(&db->value, FUTEX_WAIT_BITSET, seen,
			deadline_ns ? &deadline : NULL,
			FUTEX_BITSET_MATCH_ANY) < 0 &&
	    errno != EAGAIN)
		err = -errno;
	__atomic_fetch_sub(&db->sleepers, 1, __ATOMIC_RELAXED);
	return err;
}

const struct dev_backend agile_dev_user = {
	.name = "user",
	.open = user_open,
	.close = agile_dev_unmap_close,
	.wake = user_wake,
	.sleep = user_sleep,
};
