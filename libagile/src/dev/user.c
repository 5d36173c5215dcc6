// SPDX-License-Identifier: MIT
/*
 * user.c - the user backend's contexts, waits and segments; the page
 * layout, the locks and the group files are described in user.h.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dev/user.h"
#include "sys.h"

struct user_seg_table *user_segs(struct dev_user *u)
{
	return u->hdr ? &u->hdr->segs : &u->local;
}

/* A group's pages are shared with other processes: shared futexes. */
long user_futex(const struct agile_dev *dev, void *word, int op, uint32_t val,
		const struct timespec *timeout, uint32_t val3)
{
	if (dev->group)
		return syscall(SYS_futex, (uint32_t *)word, op, val, timeout,
			       NULL, val3);
	return agile_futex(word, op, val, timeout, val3);
}

/* The sizes of both areas, as the module would give them. */
void user_area_sizes(struct agile_dev *dev)
{
	dev->doorbell_bytes = agile_dev_page_round((size_t)dev->nr_slots *
						   AGILE_DOORBELL_STRIDE);
	dev->task_reg_bytes = agile_dev_page_round((size_t)dev->nr_slots *
						   dev->task_reg_size);
}

struct dev_user *user_alloc(void)
{
	struct dev_user *u = calloc(1, sizeof(*u));

	if (u && pthread_mutex_init(&u->gate_lock, NULL)) {
		free(u);
		return NULL;
	}
	return u;
}

void user_free(struct agile_dev *dev)
{
	if (!dev->user)
		return;
	pthread_mutex_destroy(&dev->user->gate_lock);
	free(dev->user);
	dev->user = NULL;
}

static int user_open(struct agile_dev *dev, const struct agile_dev_opts *opts)
{
	int err;

	(void)opts;
	if (dev->nr_slots > AGILE_DEV_USER_MAX_SLOTS)
		return -ENOSPC;
	dev->sleeper_count = true;
	user_area_sizes(dev);
	dev->user = user_alloc();
	if (!dev->user)
		return -ENOMEM;
	dev->user->seg_base = dev->doorbell_bytes + dev->task_reg_bytes;
	dev->fd = memfd_create("agile-user", MFD_CLOEXEC);
	if (dev->fd < 0) {
		err = -errno;
		goto fail;
	}
	/* A memfd reads as zeroes: every doorbell starts IDLE. */
	if (ftruncate(dev->fd,
		      (off_t)(dev->doorbell_bytes + dev->task_reg_bytes))) {
		err = -errno;
		goto fail;
	}
	/* The module's layout: doorbell area, then task-register area. */
	err = agile_dev_map_area(dev, dev->doorbell_bytes, 0, &dev->doorbells);
	if (!err)
		err = agile_dev_map_area(dev, dev->task_reg_bytes,
					 dev->doorbell_bytes, &dev->task_regs);
	if (!err)
		return 0;
fail:
	agile_dev_unmap_close(dev);
	user_free(dev);
	return err;
}

static void user_close(struct agile_dev *dev)
{
	if (dev->group) {
		user_group_end(dev, true);
		user_group_unmap_close(dev);
	} else {
		agile_dev_unmap_close(dev);
	}
	user_free(dev);
}

/* ---- sleeping and waking ---- */

static int user_wake(struct agile_dev *dev, uint32_t slot)
{
	struct agile_doorbell *db = dev_doorbell(dev, slot);

	/* Every sleeper re-checks its own condition (cmp may differ). */
	if (user_futex(dev, &db->value, FUTEX_WAKE, INT_MAX, NULL, 0) < 0)
		return -errno;
	return 0;
}

/*
 * One FUTEX_WAIT until woken, the word is not @seen, or @deadline_ns
 * (absolute CLOCK_MONOTONIC; 0: none): 0, -ETIMEDOUT, -EINTR or an errno.
 */
int user_futex_sleep(struct agile_dev *dev, struct agile_doorbell *db,
		     uint32_t seen, uint64_t deadline_ns)
{
	struct timespec deadline = {
		.tv_sec = (time_t)(deadline_ns / 1000000000ULL),
		.tv_nsec = (long)(deadline_ns % 1000000000ULL),
	};

	/*
	 * FUTEX_WAIT sleeps only while the word still holds @seen, checked
	 * under the futex bucket lock FUTEX_WAKE takes: a store after our
	 * re-read makes it return at once (EAGAIN).  BITSET for an absolute
	 * CLOCK_MONOTONIC deadline.
	 */
	if (user_futex(dev, &db->value, FUTEX_WAIT_BITSET, seen,
		       deadline_ns ? &deadline : NULL,
		       FUTEX_BITSET_MATCH_ANY) < 0 &&
	    errno != EAGAIN)
		return -errno;
	return 0;
}

/*
 * Is a look at the members' locks due (the last one, by any thread of the
 * context, a slice ago)?  Racy on purpose: two threads looking at once
 * cost a few system calls, never a missed death.
 */
static int user_sleep(struct agile_dev *dev, uint32_t slot, uint32_t cmp,
		      uint32_t value, uint64_t deadline_ns)
{
	struct agile_doorbell *db = dev_doorbell(dev, slot);
	uint32_t seen;
	int err = 0;

	__atomic_fetch_add(&db->sleepers, 1, __ATOMIC_RELAXED);
	/*
	 * The waiter's full fence: pairs with the signaller's fence in
	 * wake_sleepers (dev.c), and in a group with user_group_end's.  Either
	 * it reads our count and wakes us, or our re-read below sees its
	 * store (the doorbell, or "ended" in user_group_check).
	 */
	atomic_thread_fence(memory_order_seq_cst);
	seen = doorbell_load_acquire(db);
	if (!agile_cmp_holds(cmp, seen, value))
		err = dev->group ?
			      user_group_sleep(dev, db, seen, deadline_ns) :
			      user_futex_sleep(dev, db, seen, deadline_ns);
	__atomic_fetch_sub(&db->sleepers, 1, __ATOMIC_RELAXED);
	return err;
}

/* ---- segments ---- */

static int user_seg_create(struct agile_dev *dev, size_t bytes, uint32_t *id,
			   uint64_t *offset, size_t *map_bytes)
{
	struct dev_user *u = dev->user;
	struct user_seg_table *t = user_segs(u);
	size_t pages = agile_dev_page_round(bytes);
	uint32_t n;
	int err;

	if (!pages || bytes > AGILE_DEV_USER_MAX_SEGMENT_BYTES)
		return -ENOSPC;
	/* Another member may create one at the same time. */
	if (dev->group)
		user_gate_acquire(dev);
	n = t->nr_segs;
	err = -ENOSPC;
	if (n >= AGILE_MAX_SEGMENTS)
		goto out;
	/* Zeroed pages: the file grows into a hole. */
	err = user_file_reserve(dev->fd, u->seg_base + t->end, pages);
	if (err)
		goto out;
	t->offset[n] = u->seg_base + t->end;
	t->bytes[n] = bytes;
	t->end += pages;
	/* Release: pairs with the acquire in user_seg_find. */
	__atomic_store_n(&t->nr_segs, n + 1, __ATOMIC_RELEASE);
	*id = n;
	*offset = t->offset[n];
	*map_bytes = pages;
out:
	if (dev->group)
		user_gate_release(dev);
	return err;
}

static int user_seg_find(struct agile_dev *dev, uint32_t id, size_t bytes,
			 uint64_t *offset, size_t *map_bytes)
{
	struct user_seg_table *t = user_segs(dev->user);

	/* Acquire: pairs with the release in user_seg_create. */
	if (id >= __atomic_load_n(&t->nr_segs, __ATOMIC_ACQUIRE) ||
	    t->bytes[id] != bytes)
		return -EINVAL;
	*offset = t->offset[id];
	*map_bytes = agile_dev_page_round(bytes);
	return 0;
}

const struct dev_backend agile_dev_user = {
	.name = "user",
	.open = user_open,
	.group_join = user_group_join,
	.close = user_close,
	.wake = user_wake,
	.sleep = user_sleep,
	.seg_create = user_seg_create,
	.seg_find = user_seg_find,
};
