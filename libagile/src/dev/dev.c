// SPDX-License-Identifier: MIT
/*
 * dev.c - the doorbell layer (SPEC §3, layer 1): what both backends share.
 *
 * The fast paths never leave userspace: a signal is a release store, a
 * full fence and a load of the sleeper count; a wait that is satisfied
 * while spinning is a loop of acquire loads.  Only a signal that finds a
 * sleeper, and a wait that runs out of spin, call the backend.
 *
 * The sleeper count protocol (the futex trick, <linux/agile.h>):
 *
 *	signaller                         waiter
 *	store doorbell (release)          sleepers++ (kernel or user backend)
 *	full fence                 <->    full fence
 *	read sleepers: 0? done            re-read doorbell: holds? done
 *	else wake                         else sleep (the backend re-checks
 *	                                  under its own lock or futex compare)
 *
 * Either the waiter's re-read sees the store, or the signaller's read sees
 * the raised count and wakes it: a wake-up is never lost, and the common
 * case, nobody asleep, costs no system call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "dev/dev_impl.h"
#include "env.h"
#include "sys.h"

/* A spinning wait reads the clock once every this many polls. */
#define SPIN_POLLS_PER_CLOCK 256

static void count(_Atomic uint64_t *counter)
{
	atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

int agile_dev_map_area(struct agile_dev *dev, size_t bytes, uint64_t offset,
		       unsigned char **area)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, dev->fd,
		       (off_t)offset);

	if (p == MAP_FAILED)
		return -errno;
	*area = p;
	return 0;
}

size_t agile_dev_page_round(size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (bytes > SIZE_MAX - (page - 1))
		return 0;
	return (bytes + page - 1) / page * page;
}

void agile_dev_unmap_close(struct agile_dev *dev)
{
	if (dev->task_regs)
		munmap(dev->task_regs, dev->task_reg_bytes);
	if (dev->doorbells)
		munmap(dev->doorbells, dev->doorbell_bytes);
	if (dev->fd >= 0)
		close(dev->fd);
	dev->task_regs = NULL;
	dev->doorbells = NULL;
	dev->fd = -1;
}

int agile_dev_opts_init(struct agile_dev_opts *opts)
{
	const char *env;

	if (!opts)
		return -EINVAL;
	memset(opts, 0, sizeof(*opts));
	opts->nr_slots = 1;
	opts->task_reg_size = AGILE_TASK_REG_MIN_SIZE;
	opts->backend = AGILE_BACKEND_AUTO;
	opts->spin_ns = AGILE_DEV_SPIN_NS_DEFAULT;
	env = getenv("AGILE_SPIN_NS");
	if (env && *env) {
		char *end;
		unsigned long long ns = strtoull(env, &end, 10);

		if (!*end && *env != '-')
			opts->spin_ns = ns;
		else
			agile__env_invalid("AGILE_SPIN_NS", env,
					   "a number of nanoseconds; the "
					   "default spin applies");
	}
	return 0;
}

static int check_opts(const struct agile_dev_opts *o)
{
	for (size_t i = 0; i < sizeof(o->reserved) / sizeof(o->reserved[0]);
	     i++)
		if (o->reserved[i])
			return -EINVAL;
	if (o->flags || !o->nr_slots || o->backend > AGILE_BACKEND_USER ||
	    o->task_reg_size < AGILE_TASK_REG_MIN_SIZE ||
	    o->task_reg_size > AGILE_TASK_REG_MAX_SIZE ||
	    (o->task_reg_size & (o->task_reg_size - 1)))
		return -EINVAL;
	return 0;
}

/* Why kmod was chosen for AGILE_BACKEND_AUTO, and why it then was not. */
#define WHY_NODE "the device node exists"
#define WHY_NO_MODULE "the device node exists, but no agile module answers it"

/*
 * The backend @o asks for, and why: the caller's choice, else
 * $AGILE_BACKEND, else kmod where the node exists (AGILE_BACKEND_AUTO).
 */
static int pick_backend(const struct agile_dev_opts *o, const char **why)
{
	const char *node = o->path ? o->path : "/dev/agile";
	const char *env;

	if (o->backend != AGILE_BACKEND_AUTO) {
		*why = "agile_dev_opts.backend";
		return (int)o->backend;
	}
	env = getenv("AGILE_BACKEND");
	if (env && *env) {
		*why = "AGILE_BACKEND";
		if (!strcmp(env, "kmod"))
			return AGILE_BACKEND_KMOD;
		if (!strcmp(env, "user"))
			return AGILE_BACKEND_USER;
		agile__env_invalid("AGILE_BACKEND", env,
				   "kmod or user; agile_dev_open fails with "
				   "EINVAL");
		return -EINVAL;
	}
	if (access(node, F_OK)) {
		*why = "no device node";
		return AGILE_BACKEND_USER;
	}
	*why = WHY_NODE;
	return AGILE_BACKEND_KMOD;
}

/*
 * $AGILE_DEBUG=1: the first context's backend and why, once a process
 * (the choice is the same for every context opened with the same opts).
 */
static void say_backend(const struct agile_dev_opts *o, int backend,
			const char *why)
{
	static atomic_bool said; /* once per process, as the message is */

	if (!agile__env_debug() || atomic_exchange(&said, true))
		return;
	fprintf(stderr, "agile: backend %s (%s; %s)\n",
		agile_dev_backend_name(backend), why,
		o->path ? o->path : "/dev/agile");
}

/* A zeroed context for checked @opts on @backend, for the backend to set up. */
static struct agile_dev *dev_alloc(const struct agile_dev_opts *opts,
				   int backend)
{
	struct agile_dev *dev;

	dev = aligned_alloc(_Alignof(struct agile_dev), sizeof(*dev));
	if (!dev)
		return NULL;
	memset(dev, 0, sizeof(*dev));
	dev->backend = backend;
	dev->ops = backend == AGILE_BACKEND_KMOD ? &agile_dev_kmod :
						   &agile_dev_user;
	dev->fd = -1;
	dev->nr_slots = opts->nr_slots;
	dev->task_reg_size = opts->task_reg_size;
	dev->max_members = 1;
	atomic_init(&dev->spin_ns, opts->spin_ns);
	if (pthread_mutex_init(&dev->seg_lock, NULL)) {
		free(dev);
		return NULL;
	}
	return dev;
}

static void dev_free(struct agile_dev *dev)
{
	pthread_mutex_destroy(&dev->seg_lock);
	free(dev);
}

int agile_dev_backend_choose(const struct agile_dev_opts *opts,
			     const char **why)
{
	struct agile_dev_opts defaults;
	const char *reason;
	int err;

	if (!opts) {
		agile_dev_opts_init(&defaults);
		opts = &defaults;
	}
	err = check_opts(opts);
	if (err)
		return err;
	return pick_backend(opts, why ? why : &reason);
}

int agile_dev_open(const struct agile_dev_opts *opts, struct agile_dev **out)
{
	struct agile_dev_opts defaults;
	struct agile_dev *dev;
	const char *why;
	int backend, err;

	if (!out)
		return -EINVAL;
	if (!opts) {
		agile_dev_opts_init(&defaults);
		opts = &defaults;
	}
	backend = agile_dev_backend_choose(opts, &why);
	if (backend < 0)
		return backend;

	dev = dev_alloc(opts, backend);
	if (!dev)
		return -ENOMEM;
	err = dev->ops->open(dev, opts);
	if (err == -ENODEV && !strcmp(why, WHY_NODE)) {
		/*
		 * The node is there but no module answers it: made at boot
		 * from modules.devname for a module that did not load on
		 * this open (unsigned under Secure Boot, removed, ...).  The
		 * automatic choice falls back as if there were no node.
		 */
		dev_free(dev);
		backend = AGILE_BACKEND_USER;
		say_backend(opts, backend, WHY_NO_MODULE);
		dev = dev_alloc(opts, backend);
		if (!dev)
			return -ENOMEM;
		err = dev->ops->open(dev, opts);
	} else {
		say_backend(opts, backend, why);
	}
	if (err) {
		dev_free(dev);
		return err;
	}
	*out = dev;
	return 0;
}

int agile_dev_group_opts_init(struct agile_dev_group_opts *opts)
{
	if (!opts)
		return -EINVAL;
	memset(opts, 0, sizeof(*opts));
	agile_dev_opts_init(&opts->dev);
	opts->max_members = 1;
	opts->mode = 0600;
	opts->flags = AGILE_DEV_GROUP_CREATE;
	return 0;
}

int agile_dev_group_join(const struct agile_dev_group_opts *opts,
			 struct agile_dev **out)
{
	struct agile_dev *dev;
	const char *why;
	int backend, err;

	if (!opts || !out)
		return -EINVAL;
	err = check_opts(&opts->dev);
	if (err)
		return err;
	for (size_t i = 0;
	     i < sizeof(opts->reserved) / sizeof(opts->reserved[0]); i++)
		if (opts->reserved[i])
			return -EINVAL;
	/* EXCL alone is refused, as the module refuses it. */
	if (opts->flags & ~(AGILE_DEV_GROUP_CREATE | AGILE_DEV_GROUP_EXCL) ||
	    opts->flags == AGILE_DEV_GROUP_EXCL || !opts->max_members ||
	    opts->max_members > AGILE_GROUP_MAX_MEMBERS ||
	    opts->mode & ~AGILE_GROUP_MODE_MASK)
		return -EINVAL;
	backend = pick_backend(&opts->dev, &why);
	if (backend < 0)
		return backend;

	dev = dev_alloc(&opts->dev, backend);
	if (!dev)
		return -ENOMEM;
	dev->group = true;
	err = dev->ops->group_join(dev, opts);
	if (err == -ENODEV && !strcmp(why, WHY_NODE)) {
		/* As agile_dev_open: a node with no module behind it. */
		dev_free(dev);
		backend = AGILE_BACKEND_USER;
		say_backend(&opts->dev, backend, WHY_NO_MODULE);
		dev = dev_alloc(&opts->dev, backend);
		if (!dev)
			return -ENOMEM;
		dev->group = true;
		err = dev->ops->group_join(dev, opts);
	} else {
		say_backend(&opts->dev, backend, why);
	}
	if (err) {
		dev_free(dev);
		return err;
	}
	*out = dev;
	return 0;
}

int agile_dev_close(struct agile_dev *dev)
{
	if (!dev)
		return -EINVAL;
	/* First the segments: a kmod file is released with its last mapping. */
	for (uint32_t id = 0; id < AGILE_MAX_SEGMENTS; id++)
		if (dev->segs[id].addr)
			munmap(dev->segs[id].addr, dev->segs[id].map_bytes);
	dev->ops->close(dev);
	dev_free(dev);
	return 0;
}

int agile_dev_member(const struct agile_dev *dev)
{
	return dev ? (int)dev->member : -EINVAL;
}

int agile_dev_max_members(const struct agile_dev *dev)
{
	return dev ? (int)dev->max_members : -EINVAL;
}

/* Map @map_bytes of dev->fd at @offset as segment @id; under seg_lock. */
static int seg_map_locked(struct agile_dev *dev, uint32_t id, uint64_t offset,
			  size_t map_bytes)
{
	unsigned char *p = NULL;
	int err;

	err = agile_dev_map_area(dev, map_bytes, offset, &p);
	if (err)
		return err;
	dev->segs[id].addr = p;
	dev->segs[id].map_bytes = map_bytes;
	return 0;
}

int agile_dev_seg_create(struct agile_dev *dev, size_t bytes, uint32_t *id,
			 void **addr)
{
	uint64_t offset;
	size_t map_bytes;
	uint32_t new_id;
	int err;

	if (!dev || !bytes || !id || !addr)
		return -EINVAL;
	pthread_mutex_lock(&dev->seg_lock);
	err = dev->ops->seg_create(dev, bytes, &new_id, &offset, &map_bytes);
	/*
	 * A segment that cannot be mapped here stays in the context (the
	 * module cannot take one back), unmapped: seg_map may try again.
	 */
	if (!err)
		err = seg_map_locked(dev, new_id, offset, map_bytes);
	if (!err) {
		*id = new_id;
		*addr = dev->segs[new_id].addr;
	}
	pthread_mutex_unlock(&dev->seg_lock);
	return err;
}

int agile_dev_seg_map(struct agile_dev *dev, uint32_t id, size_t bytes,
		      void **addr)
{
	uint64_t offset;
	size_t map_bytes;
	int err;

	if (!dev || !bytes || !addr || id >= AGILE_MAX_SEGMENTS)
		return -EINVAL;
	pthread_mutex_lock(&dev->seg_lock);
	/* The backend checks @bytes even when the segment is mapped here. */
	err = dev->ops->seg_find(dev, id, bytes, &offset, &map_bytes);
	if (!err && dev->segs[id].addr && dev->segs[id].map_bytes != map_bytes)
		err = -EINVAL;
	else if (!err && !dev->segs[id].addr)
		err = seg_map_locked(dev, id, offset, map_bytes);
	if (!err)
		*addr = dev->segs[id].addr;
	pthread_mutex_unlock(&dev->seg_lock);
	return err;
}

int agile_dev_backend(const struct agile_dev *dev)
{
	return dev ? dev->backend : -EINVAL;
}

const char *agile_dev_backend_name(int backend)
{
	switch (backend) {
	case AGILE_BACKEND_AUTO:
		return "auto";
	case AGILE_BACKEND_KMOD:
		return "kmod";
	case AGILE_BACKEND_USER:
		return "user";
	}
	return "?";
}

int agile_dev_nr_slots(const struct agile_dev *dev)
{
	return dev ? (int)dev->nr_slots : -EINVAL;
}

int agile_dev_task_reg_size(const struct agile_dev *dev)
{
	return dev ? (int)dev->task_reg_size : -EINVAL;
}

int agile_dev_slot(struct agile_dev *dev, uint32_t slot,
		   struct agile_doorbell **doorbell,
		   struct agile_task_reg **task_reg)
{
	if (!dev || slot >= dev->nr_slots)
		return -EINVAL;
	if (doorbell)
		*doorbell = dev_doorbell(dev, slot);
	if (task_reg)
		*task_reg = dev_task_reg(dev, slot);
	return 0;
}

int agile_dev_set_spin(struct agile_dev *dev, uint64_t spin_ns)
{
	if (!dev)
		return -EINVAL;
	atomic_store_explicit(&dev->spin_ns, spin_ns, memory_order_relaxed);
	return 0;
}

/* After the doorbell store: wake the slot's sleepers if the count says so. */
static int wake_sleepers(struct agile_dev *dev, uint32_t slot,
			 struct agile_doorbell *db)
{
	/*
	 * The signaller's full fence: it orders our doorbell store before
	 * the sleeper count load, and pairs with the waiter's fence between
	 * raising the count and re-reading the doorbell (set_current_state
	 * in the module's agile_wait_sleep; user_sleep in dev/user.c).
	 */
	atomic_thread_fence(memory_order_seq_cst);
	if (dev->sleeper_count &&
	    !__atomic_load_n(&db->sleepers, __ATOMIC_RELAXED))
		return 0;
	count(&dev->wake_calls);
	return dev->ops->wake(dev, slot);
}

int agile_dev_signal(struct agile_dev *dev, uint32_t slot, uint32_t value)
{
	struct agile_doorbell *db;

	if (!dev || slot >= dev->nr_slots)
		return -EINVAL;
	db = dev_doorbell(dev, slot);
	/*
	 * Release: what the caller wrote before (a task register, results)
	 * is visible to the waiter whose acquire load in agile_dev_wait_spin
	 * reads @value.
	 */
	__atomic_store_n(&db->value, value, __ATOMIC_RELEASE);
	return wake_sleepers(dev, slot, db);
}

int agile_dev_post(struct agile_dev *dev, uint32_t slot)
{
	struct agile_doorbell *db;

	if (!dev || slot >= dev->nr_slots)
		return -EINVAL;
	db = dev_doorbell(dev, slot);
	/*
	 * Acquire: pairs with the release store of IDLE by the execution
	 * unit (agile_dev_signal): a post that succeeds comes after
	 * everything the EU did for the slot's previous task, so its results
	 * are the caller's to read.
	 */
	if (doorbell_load_acquire(db) != AGILE_DOORBELL_IDLE)
		return -EBUSY;
	/*
	 * Steps 604 and 606 as one release store (the fence and the store
	 * of seed 002, in a form TSan sees): the task register is visible
	 * to the execution unit whose acquire load reads POSTED.
	 */
	__atomic_store_n(&db->value, AGILE_DOORBELL_POSTED, __ATOMIC_RELEASE);
	return wake_sleepers(dev, slot, db);
}

int agile_dev_wait(struct agile_dev *dev, uint32_t slot, uint32_t cmp,
		   uint32_t value, uint64_t timeout_ns, uint32_t *observed)
{
	if (!dev)
		return -EINVAL;
	return agile_dev_wait_spin(dev, slot, cmp, value,
				   atomic_load_explicit(&dev->spin_ns,
							memory_order_relaxed),
				   timeout_ns, observed);
}

/*
 * Poll the doorbell up to @polls times, a pause before each look; true
 * when the condition holds, with *seen the value (read with acquire: it
 * pairs with the release store of the signaller).  The comparison is
 * hoisted out of the loop: each case gives agile_cmp_holds (the ABI's
 * one definition) a constant AGILE_CMP_*, which the compiler folds, so
 * each poll is a load, a compare and a branch, as in a hand-written spin.
 */
#define POLL_UNTIL(COND)                                   \
	do {                                               \
		for (unsigned int i = 0; i < polls; i++) { \
			agile_cpu_relax();                 \
			v = doorbell_load_acquire(db);     \
			if (COND)                          \
				goto hit;                  \
		}                                          \
	} while (0)

static bool poll_batch(const struct agile_doorbell *db, uint32_t cmp,
		       uint32_t value, unsigned int polls, uint32_t *seen)
{
	uint32_t v = 0;

	switch (cmp) {
	case AGILE_CMP_EQ:
		POLL_UNTIL(agile_cmp_holds(AGILE_CMP_EQ, v, value));
		break;
	case AGILE_CMP_NE:
		POLL_UNTIL(agile_cmp_holds(AGILE_CMP_NE, v, value));
		break;
	case AGILE_CMP_GE:
		POLL_UNTIL(agile_cmp_holds(AGILE_CMP_GE, v, value));
		break;
	case AGILE_CMP_LT:
		POLL_UNTIL(agile_cmp_holds(AGILE_CMP_LT, v, value));
		break;
	case AGILE_CMP_GT:
		POLL_UNTIL(agile_cmp_holds(AGILE_CMP_GT, v, value));
		break;
	case AGILE_CMP_LE:
		POLL_UNTIL(agile_cmp_holds(AGILE_CMP_LE, v, value));
		break;
	}
	*seen = v;
	return false;
hit:
	*seen = v;
	return true;
}

#undef POLL_UNTIL

/*
 * Spin up to @spin_ns, bounded by @timeout_ns, reading the clock once per
 * SPIN_POLLS_PER_CLOCK polls (the first time that many polls in).  Returns
 * true when the condition holds (*seen is the value); *start_ns is the
 * first clock reading, or 0 if none was taken.
 */
static bool spin_wait(const struct agile_doorbell *db, uint32_t cmp,
		      uint32_t value, uint64_t spin_ns, uint64_t timeout_ns,
		      uint32_t *seen, uint64_t *start_ns)
{
	uint64_t budget = spin_ns < timeout_ns ? spin_ns : timeout_ns;
	uint64_t start = 0;

	*start_ns = 0;
	if (!budget)
		return false;
	for (;;) {
		if (poll_batch(db, cmp, value, SPIN_POLLS_PER_CLOCK, seen))
			return true;
		if (!start) {
			start = agile_mono_ns();
			*start_ns = start;
		} else if (agile_mono_ns() - start >= budget) {
			return false;
		}
	}
}

int agile_dev_wait_spin(struct agile_dev *dev, uint32_t slot, uint32_t cmp,
			uint32_t value, uint64_t spin_ns, uint64_t timeout_ns,
			uint32_t *observed)
{
	struct agile_doorbell *db;
	uint64_t start, deadline = 0;
	uint32_t seen;
	int err;

	if (!dev || slot >= dev->nr_slots || cmp > AGILE_CMP_LE)
		return -EINVAL;
	db = dev_doorbell(dev, slot);
	/* Acquire: pairs with the release store of the signaller. */
	seen = doorbell_load_acquire(db);
	if (agile_cmp_holds(cmp, seen, value))
		goto out;
	err = -ETIMEDOUT;
	if (!timeout_ns)
		goto fail;
	if (spin_wait(db, cmp, value, spin_ns, timeout_ns, &seen, &start))
		goto out;
	if (!start)
		start = agile_mono_ns();
	if (timeout_ns != AGILE_TIMEOUT_INFINITE &&
	    __builtin_add_overflow(start, timeout_ns, &deadline))
		deadline = 0; /* past the end of time: no deadline */

	for (;;) {
		if (deadline && agile_mono_ns() >= deadline) {
			err = -ETIMEDOUT;
			break;
		}
		count(&dev->sleeps);
		err = dev->ops->sleep(dev, slot, cmp, value, deadline);
		/* Acquire: pairs with the release store of the signaller. */
		seen = doorbell_load_acquire(db);
		if (agile_cmp_holds(cmp, seen, value))
			goto out;
		/*
		 * -EPIPE (the group ended) and other errors end the wait;
		 * only an interrupted or timed-out sleep is resumed, and
		 * the loop's clock check decides about the timeout.
		 */
		if (err && err != -EINTR && err != -ETIMEDOUT)
			break;
	}
fail:
	if (err == -ETIMEDOUT)
		count(&dev->timeouts);
	if (observed)
		*observed = seen;
	return err;
out:
	if (observed)
		*observed = seen;
	return 0;
}

int agile_dev_stats(struct agile_dev *dev, struct agile_dev_stats *st)
{
	if (!dev || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->wake_calls =
		atomic_load_explicit(&dev->wake_calls, memory_order_relaxed);
	st->sleeps = atomic_load_explicit(&dev->sleeps, memory_order_relaxed);
	st->timeouts =
		atomic_load_explicit(&dev->timeouts, memory_order_relaxed);
	if (dev->ops->kernel_stats)
		return dev->ops->kernel_stats(dev, &st->kernel);
	return 0;
}
