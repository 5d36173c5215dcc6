/* SPDX-License-Identifier: MIT */
/*
 * dev_impl.h - what dev.c shares with its two backends (dev_kmod.c,
 * dev_user.c): the context and the backend operations.  Private.
 *
 * dev.c holds everything both backends do alike (the spin, the sleeper
 * count check, argument checks, counters); a backend only sets the pages
 * up and implements the two slow paths, sleeping and waking.
 */
#ifndef AGILE_DEV_IMPL_H
#define AGILE_DEV_IMPL_H

#include <agile/dev.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dev_backend {
	const char *name;
	/* Set up the context and map both areas; on failure leave nothing. */
	int (*open)(struct agile_dev *dev, const struct agile_dev_opts *opts);
	void (*close)(struct agile_dev *dev);
	/* Wake the sleepers of @slot whose condition holds now. */
	int (*wake)(struct agile_dev *dev, uint32_t slot);
	/*
	 * Sleep until woken, the condition might hold, or @deadline_ns
	 * (CLOCK_MONOTONIC; 0: none) passes.  May return 0 without the
	 * condition holding (the caller re-checks), -ETIMEDOUT, -EINTR or
	 * another negative errno.
	 */
	int (*sleep)(struct agile_dev *dev, uint32_t slot, uint32_t cmp,
		     uint32_t value, uint64_t deadline_ns);
	/* Optional: the kernel's counters. */
	int (*kernel_stats)(struct agile_dev *dev, struct agile_stats *st);
};

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

static inline bool dev_cmp_holds(uint32_t cmp, uint32_t left, uint32_t right)
{
	switch (cmp) {
	case AGILE_CMP_EQ:
		return left == right;
	case AGILE_CMP_NE:
		return left != right;
	case AGILE_CMP_GE:
		return left >= right;
	case AGILE_CMP_LT:
		return left < right;
	case AGILE_CMP_GT:
		return left > right;
	case AGILE_CMP_LE:
		return left <= right;
	}
	return false;
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

static inline uint32_t doorbell_load_relaxed(const struct agile_doorbell *db)
{
	return __atomic_load_n(&db->value, __ATOMIC_RELAXED);
}

#endif /* AGILE_DEV_IMPL_H */
