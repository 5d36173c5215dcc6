/* SPDX-License-Identifier: MIT */
/*
 * dev_impl.h - what dev.c shares with its two backends (dev/kmod.c,
 * dev/user.c): the context and the backend operations.  Private.
 *
 * dev.c holds everything both backends do alike (the spin, the sleeper
 * count check, argument checks, counters, the segment table and every
 * mmap); a backend only sets the pages up, implements the two slow paths,
 * sleeping and waking, and says where a segment lies in the context's
 * file.
 */
#ifndef AGILE_DEV_IMPL_H
#define AGILE_DEV_IMPL_H

#include <agile/dev.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dev_backend {
	const char *name;
	/* Set up the context and map both areas; on failure leave nothing. */
	int (*open)(struct agile_dev *dev, const struct agile_dev_opts *opts);
	/*
	 * The same for a group (checked @opts): join or create it, set
	 * dev->member and dev->max_members; on failure leave nothing.
	 */
	int (*group_join)(struct agile_dev *dev,
			  const struct agile_dev_group_opts *opts);
	/* After dev.c unmapped the segments: leave, unmap, close. */
	void (*close)(struct agile_dev *dev);
	/* Wake the sleepers of @slot whose condition holds now. */
	int (*wake)(struct agile_dev *dev, uint32_t slot);
	/*
	 * Sleep until woken, the condition might hold, or @deadline_ns
	 * (CLOCK_MONOTONIC; 0: none) passes.  May return 0 without the
	 * condition holding (the caller re-checks), -ETIMEDOUT, -EINTR,
	 * -EPIPE (the group has ended) or another negative errno.
	 */
	int (*sleep)(struct agile_dev *dev, uint32_t slot, uint32_t cmp,
		     uint32_t value, uint64_t deadline_ns);
	/* Optional: the kernel's counters. */
	int (*kernel_stats)(struct agile_dev *dev, struct agile_stats *st);
	/*
	 * Segments, under dev->seg_lock: create one of @bytes (> 0), or find
	 * segment @id (< AGILE_MAX_SEGMENTS) of @bytes; either way say where
	 * dev.c maps it: *@offset in dev->fd, *@map_bytes long (whole
	 * pages).  -EINVAL for an unknown id or another size (as far as the
	 * backend knows sizes: the module knows pages), -ENOSPC when full.
	 */
	int (*seg_create)(struct agile_dev *dev, size_t bytes, uint32_t *id,
			  uint64_t *offset, size_t *map_bytes);
	int (*seg_find)(struct agile_dev *dev, uint32_t id, size_t bytes,
			uint64_t *offset, size_t *map_bytes);
};

/* One mapped segment of a context (dev.c's table). */
struct dev_seg {
	void *addr; /* NULL: not mapped here (yet) */
	size_t map_bytes;
};

/* The user backend's own state (dev/user.c). */
struct dev_user;

struct agile_dev {
	/* Read on every call; written only by open. */
	const struct dev_backend *ops;
	int backend;
	int fd;
	uint32_t nr_slots;
	uint32_t task_reg_size;
	unsigned char *doorbells, *task_regs;
	size_t doorbell_bytes, task_reg_bytes;
	/* false: the module keeps no sleeper count, so always wake */
	bool sleeper_count;
	_Atomic uint64_t spin_ns;
	/* A group's context?  Its member index and size (0 and 1 if not). */
	bool group;
	uint32_t member, max_members;
	/* user backend only: segment allocator, group file; else NULL */
	struct dev_user *user;
	/*
	 * Segments mapped here, by id.  seg_lock makes create and map thread
	 * safe and a second map of an id return the first address.
	 */
	pthread_mutex_t seg_lock;
	struct dev_seg segs[AGILE_MAX_SEGMENTS];
	/* Slow-path counters, on their own line. */
	_Alignas(128) _Atomic uint64_t wake_calls;
	_Atomic uint64_t sleeps, timeouts;
};

extern const struct dev_backend agile_dev_kmod;
extern const struct dev_backend agile_dev_user;

/*
 * Both backends' pages: map @bytes of dev->fd at @offset read-write and
 * shared into *@area (0 or a negative errno); unmap both areas, close the
 * fd and clear all three (any of them may be unset).  In dev.c.
 */
int agile_dev_map_area(struct agile_dev *dev, size_t bytes, uint64_t offset,
		       unsigned char **area);
void agile_dev_unmap_close(struct agile_dev *dev);

/* @bytes rounded up to whole pages; 0 if that overflows. */
size_t agile_dev_page_round(size_t bytes);

static inline struct agile_doorbell *dev_doorbell(const struct agile_dev *dev,
						  uint32_t slot)
{
	return (struct agile_doorbell *)(dev->doorbells +
					 (size_t)slot * AGILE_DOORBELL_STRIDE);
}

static inline struct agile_task_reg *dev_task_reg(const struct agile_dev *dev,
						  uint32_t slot)
{
	return (struct agile_task_reg *)(dev->task_regs +
					 (size_t)slot * dev->task_reg_size);
}

/*
 * The doorbell word is a plain __u32 in the uapi struct: the GCC __atomic
 * builtins give it atomic, ordered accesses without casting it to an
 * _Atomic type, and TSan sees them.
 */
static inline uint32_t doorbell_load_acquire(const struct agile_doorbell *db)
{
	return __atomic_load_n(&db->value, __ATOMIC_ACQUIRE);
}

#endif /* AGILE_DEV_IMPL_H */
