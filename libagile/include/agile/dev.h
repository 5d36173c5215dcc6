/* SPDX-License-Identifier: MIT */
/*
 * agile/dev.h - the doorbell layer of libagile (SPEC §3, layer 1)
 *
 * A device context is M slots; slot k is a doorbell (struct agile_doorbell,
 * one 128-byte line) and a task register (struct agile_task_reg at the
 * start of task_reg_size bytes), the "portion" that worker k and execution
 * unit k share in seed 002.  Two backends give the same pages and the same
 * behaviour:
 *
 *  - kmod: /dev/agile's context (AGILE_IOC_CTX_INIT), its pages mapped;
 *    sleeping waiters sleep in AGILE_FENCE_WAIT and are woken by
 *    AGILE_FENCE_SIGNAL (or by the module's poller, for writers that never
 *    enter the kernel, such as a GPU);
 *  - user: the same layout in a memfd (a file under /dev/shm for a
 *    group), for machines without the module; sleeping waiters sleep on a
 *    futex on the doorbell word, and the library keeps
 *    agile_doorbell.sleepers itself.
 *
 * A signaller stores the doorbell, issues a full fence and reads the
 * line's sleeper count; only when it is not zero does it enter the kernel
 * to wake someone (SIGNAL with AGILE_SIGNAL_WAKE_ONLY, or FUTEX_WAKE).  A
 * waiter spins on the doorbell for a bounded, tunable time, then raises
 * the count, fences, re-reads and sleeps: neither can miss the other.
 *
 * Errors: every call returns 0 or a negative errno (agile/error.h).
 *
 * Thread safety: agile_dev_open, agile_dev_group_join and agile_dev_close
 * are not thread safe against other calls on the same context.
 * Everything else may be called from any number of threads at once; the
 * slot protocol decides who writes a task register when (seed 002: the
 * worker until it posts, the execution unit until it stores IDLE).
 */
#ifndef AGILE_DEV_H
#define AGILE_DEV_H

#include <stddef.h>
#include <stdint.h>

#include <agile/uapi.h>

#ifdef __cplusplus
extern "C" {
#endif

struct agile_dev;

/**
 * enum agile_backend - where a context's pages come from
 * @AGILE_BACKEND_AUTO: $AGILE_BACKEND ("kmod" or "user"), else kmod if
 *                      /dev/agile exists, else user
 * @AGILE_BACKEND_KMOD: /dev/agile; -ENODEV without it
 * @AGILE_BACKEND_USER: memfd + futex
 *
 * agile_dev_opts.backend and agile_dev_backend's result.
 */
enum agile_backend {
	/* $AGILE_BACKEND ("kmod" or "user"), else kmod if /dev/agile exists */
	AGILE_BACKEND_AUTO = 0,
	AGILE_BACKEND_KMOD = 1, /* /dev/agile; -ENODEV without it */
	AGILE_BACKEND_USER = 2, /* memfd + futex */
};

/* Default spin of agile_dev_wait before it sleeps ($AGILE_SPIN_NS overrides). */
#define AGILE_DEV_SPIN_NS_DEFAULT 20000ULL
/* Most slots of a user-backend context (the module's default max_slots). */
#define AGILE_DEV_USER_MAX_SLOTS 4096
/* Largest user-backend segment (the module's largest max_segment_bytes). */
#define AGILE_DEV_USER_MAX_SEGMENT_BYTES (1ULL << 30)

/**
 * struct agile_dev_opts - how to open a context (agile_dev_opts_init)
 * @nr_slots:      M, the slots (1 .. the module's max_slots, or
 *                 AGILE_DEV_USER_MAX_SLOTS; -ENOSPC above)
 * @task_reg_size: bytes per task register: a power of two from
 *                 AGILE_TASK_REG_MIN_SIZE to AGILE_TASK_REG_MAX_SIZE
 * @backend:       enum agile_backend
 * @flags:         must be zero
 * @spin_ns:       how long agile_dev_wait spins before it sleeps
 * @path:          kmod: the device node; NULL means /dev/agile
 * @reserved:      must be zero
 */
struct agile_dev_opts {
	uint32_t nr_slots;
	uint32_t task_reg_size;
	uint32_t backend;
	uint32_t flags;
	uint64_t spin_ns;
	const char *path;
	uint64_t reserved[4];
};

/**
 * struct agile_dev_stats - a context's counters (agile_dev_stats)
 * @wake_calls: signals that entered the kernel because the sleeper count
 *              said someone sleeps (SIGNAL ioctl or FUTEX_WAKE)
 * @sleeps:     times a wait went to sleep (WAIT ioctl or FUTEX_WAIT)
 * @timeouts:   waits that returned -ETIMEDOUT
 * @kernel:     kmod: the module's counters for this context
 *              (AGILE_IOC_STATS); all zero on the user backend
 */
struct agile_dev_stats {
	uint64_t wake_calls;
	uint64_t sleeps;
	uint64_t timeouts;
	struct agile_stats kernel;
};

/**
 * agile_dev_opts_init - fill @opts with the defaults
 * @opts: the options
 *
 * One slot, AGILE_TASK_REG_MIN_SIZE bytes per register, AGILE_BACKEND_AUTO,
 * spin_ns from $AGILE_SPIN_NS (nanoseconds) or AGILE_DEV_SPIN_NS_DEFAULT.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, or -EINVAL if @opts is NULL.
 */
int agile_dev_opts_init(struct agile_dev_opts *opts);

/**
 * agile_dev_open - set up a context and map its doorbells and task registers
 * @opts: NULL for the defaults
 * @out:  receives the context
 *
 * The pages start zeroed: every doorbell AGILE_DOORBELL_IDLE.
 *
 * Thread safety: thread safe (each call makes its own context).
 *
 * Return: 0, -EINVAL (bad @opts, or $AGILE_BACKEND not "kmod" or "user"),
 * -ENODEV (kmod asked for and no /dev/agile), -AGILE_E_ABI (the module
 * speaks another ABI version), -ENOSPC (too many slots), -ENOMEM,
 * -EACCES, or another errno from open, ioctl or mmap.
 */
int agile_dev_open(const struct agile_dev_opts *opts, struct agile_dev **out);

/**
 * agile_dev_close - unmap the pages and free the context
 * @dev: the context
 *
 * Nobody may use the context or its pages any more, nor sleep in it.  A
 * group member leaves the group, which ends it for the others.
 *
 * Thread safety: not thread safe against any other call on @dev.
 *
 * Return: 0 or -EINVAL (@dev NULL).
 */
int agile_dev_close(struct agile_dev *dev);

/**
 * agile_dev_backend - which backend @dev runs on
 * @dev: the context
 *
 * Thread safety: thread safe.
 *
 * Return: AGILE_BACKEND_KMOD or AGILE_BACKEND_USER, or -EINVAL (@dev NULL).
 */
int agile_dev_backend(const struct agile_dev *dev);

/**
 * agile_dev_backend_name - the name of an enum agile_backend value
 * @backend: the value
 *
 * Thread safety: thread safe.
 *
 * Return: a constant string: "kmod", "user", "auto", or "?" for other
 * values.
 */
const char *agile_dev_backend_name(int backend);

/**
 * agile_dev_backend_choose - the backend agile_dev_open would choose, and why
 * @opts: NULL for the defaults
 * @why:  receives a constant string naming the reason (may be NULL):
 *        "agile_dev_opts.backend", "AGILE_BACKEND", "the device node
 *        exists" or "no device node" (@opts->path, else /dev/agile)
 *
 * The same choice as agile_dev_open's with the same @opts and
 * environment, made without opening anything: the caller's
 * agile_dev_opts.backend, else $AGILE_BACKEND, else kmod where the node
 * exists and user where it does not.  kmod chosen for an existing node
 * may still fail to open: where no agile module answers the node (a node
 * made at boot from modules.devname whose module did not load on the
 * first open, or not a device of agile's: -ENODEV), agile_dev_open and
 * agile_dev_group_join fall back to user (AGILE_DEBUG says "the device
 * node exists, but no agile module answers it"); on any other error
 * (-EACCES, -AGILE_E_ABI) they do not.
 *
 * Thread safety: thread safe.
 *
 * Return: AGILE_BACKEND_KMOD or AGILE_BACKEND_USER, or -EINVAL (bad
 * @opts, or $AGILE_BACKEND not "kmod" or "user").
 */
int agile_dev_backend_choose(const struct agile_dev_opts *opts,
			     const char **why);

/**
 * agile_dev_nr_slots - how many slots @dev has
 * @dev: the context
 *
 * Thread safety: thread safe.
 *
 * Return: M, or -EINVAL if @dev is NULL.
 */
int agile_dev_nr_slots(const struct agile_dev *dev);

/**
 * agile_dev_task_reg_size - bytes per task register of @dev
 * @dev: the context
 *
 * Thread safety: thread safe.
 *
 * Return: the size, or -EINVAL if @dev is NULL.
 */
int agile_dev_task_reg_size(const struct agile_dev *dev);

/**
 * agile_dev_slot - where slot @slot's doorbell and task register are mapped
 * @dev:      the context
 * @slot:     the slot, 0 .. M - 1
 * @doorbell: receives the doorbell line (may be NULL)
 * @task_reg: receives the task register (may be NULL)
 *
 * The pointers stay valid until agile_dev_close.  Access the doorbell word
 * only with atomic operations (or through agile_dev_signal/wait).
 *
 * Thread safety: thread safe; who may write the task register is the
 * slot protocol's business (see the top).
 *
 * Return: 0, or -EINVAL (bad @dev or @slot).
 */
int agile_dev_slot(struct agile_dev *dev, uint32_t slot,
		   struct agile_doorbell **doorbell,
		   struct agile_task_reg **task_reg);

/**
 * agile_dev_set_spin - change the default spin of agile_dev_wait
 * @dev:     the context
 * @spin_ns: the new spin, in nanoseconds
 *
 * Takes effect for waits that start afterwards.
 *
 * Thread safety: thread safe (a relaxed atomic store).
 *
 * Return: 0 or -EINVAL (@dev NULL).
 */
int agile_dev_set_spin(struct agile_dev *dev, uint64_t spin_ns);

/**
 * agile_dev_signal - store @value into doorbell @slot and wake its sleepers
 * @dev:   the context
 * @slot:  the slot
 * @value: the doorbell's new value
 *
 * A release store, so that everything the caller wrote before (task
 * register, results) is visible to whoever sees @value; then a full fence
 * and a read of the line's sleeper count, and a system call only when it
 * is not zero.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL, or an errno of the wake-up call.
 */
int agile_dev_signal(struct agile_dev *dev, uint32_t slot, uint32_t value);

/**
 * agile_dev_post - post the task in task register @slot (process 600a)
 * @dev:  the context
 * @slot: the slot
 *
 * Steps 604-606 of seed 002: the task register, written by the caller, is
 * released, then the doorbell becomes AGILE_DOORBELL_POSTED (and a
 * sleeping execution unit is woken, as agile_dev_signal).  It finds the
 * doorbell IDLE with an acquire load, pairing with the unit's release
 * store of IDLE: once a post succeeds, whatever the unit wrote for the
 * slot's previous task (results in memory the task pointed at) is
 * visible to the caller.  Write the register only while the slot is
 * IDLE (a wait for IDLE said so): the check here comes after those
 * writes, so it cannot make them safe.
 *
 * Thread safety: thread safe; of two posts racing on one slot, one gets
 * -EBUSY (the slot protocol gives a slot one poster anyway).
 *
 * Return: 0, -EBUSY (the doorbell is not AGILE_DOORBELL_IDLE: a task is
 * in flight), -EINVAL, or an errno of the wake-up call.
 */
int agile_dev_post(struct agile_dev *dev, uint32_t slot);

/**
 * agile_dev_wait - wait until doorbell @slot compares @cmp to @value
 * @dev:        the context
 * @slot:       the slot
 * @cmp:        AGILE_CMP_EQ, _NE, _GE, _LT, _GT or _LE (doorbell on the left)
 * @value:      the value compared with
 * @timeout_ns: relative; 0 checks once; AGILE_TIMEOUT_INFINITE never ends
 * @observed:   receives the doorbell value that satisfied the condition,
 *              or the last one seen (may be NULL)
 *
 * Spins for the context's spin time (agile_dev_set_spin), then sleeps: in
 * AGILE_FENCE_WAIT (kmod) or on a futex (user).  Both count against
 * @timeout_ns; interrupted sleeps are resumed.  On success the load that
 * saw the condition is an acquire: it pairs with the release store of
 * whoever stored the value (agile_dev_signal/post), so what they wrote
 * before is visible.
 *
 * Thread safety: thread safe; any number of threads may wait on one
 * doorbell.
 *
 * Return: 0, -ETIMEDOUT, -EINVAL, -EPIPE (a group that has ended: see
 * Groups below), or an errno of the sleeping call.
 */
int agile_dev_wait(struct agile_dev *dev, uint32_t slot, uint32_t cmp,
		   uint32_t value, uint64_t timeout_ns, uint32_t *observed);

/**
 * agile_dev_wait_spin - agile_dev_wait with its own spin time
 * @dev:        the context
 * @slot:       the slot
 * @cmp:        as agile_dev_wait's
 * @value:      as agile_dev_wait's
 * @spin_ns:    how long to spin before sleeping (0: sleep at once);
 *              counted from the first clock read, a few hundred pause
 *              instructions in, so that a wait satisfied soon never reads
 *              the clock
 * @timeout_ns: as agile_dev_wait's
 * @observed:   as agile_dev_wait's
 *
 * Thread safety: thread safe, as agile_dev_wait.
 *
 * Return: as agile_dev_wait.
 */
int agile_dev_wait_spin(struct agile_dev *dev, uint32_t slot, uint32_t cmp,
			uint32_t value, uint64_t spin_ns, uint64_t timeout_ns,
			uint32_t *observed);

/**
 * agile_dev_stats - read the context's counters into @stats
 * @dev:   the context
 * @stats: receives the counters
 *
 * A snapshot while others run.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL, or the errno of AGILE_IOC_STATS.
 */
int agile_dev_stats(struct agile_dev *dev, struct agile_dev_stats *stats);

/*
 * Groups: one context shared by several processes (SPEC §2 GROUPS).
 *
 * kmod: AGILE_IOC_GROUP_JOIN (a module without AGILE_FEAT_GROUPS:
 * -EOPNOTSUPP).  user: a shared-memory file /dev/shm/agile-<creator's
 * euid>-<key, 16 hex digits> with process-shared futexes, published
 * whole (built under a temporary name, then linked); the file's mode is
 * the creator's @mode, so file permissions decide who joins, and a
 * joiner that finds no group of its own euid with the key joins another
 * user's (keys are machine-wide, as on the module).  Unlike the module,
 * which applies the mode even to root, root bypasses the file's mode.
 * Each member holds an OFD lock on its own byte of the file, so a member
 * that dies is seen by the others: their sleeping waits sleep in slices
 * of a few milliseconds and look at the members' locks after each.
 *
 * Either way, once any member leaves (closes or dies), the group has
 * ended: every wait of every member that sleeps, or would sleep, fails
 * with -EPIPE (a wait whose condition already holds still returns 0), so
 * no member hangs on a dead peer; a join of the key fails with -EPIPE at
 * once while any member still holds the group (a late joiner does not
 * wait for members that will never come), and once every member has
 * closed or died the key is free for a new group.  The pages stay valid until each member's agile_dev_close.  On
 * the user backend a group whose members all died leaves its file
 * (segments included) behind until the next join with its key, or the
 * next creation of any group by the same user, removes it.
 */

/*
 * agile_dev_group_opts.flags: CREATE makes the group when no live group has
 * the key; EXCL, with CREATE, fails with -EEXIST when one has (EXCL alone:
 * -EINVAL).
 */
#define AGILE_DEV_GROUP_CREATE AGILE_GROUP_CREATE
#define AGILE_DEV_GROUP_EXCL AGILE_GROUP_EXCL

/**
 * struct agile_dev_group_opts - how to join a group (agile_dev_group_opts_init)
 * @dev:         nr_slots, task_reg_size, backend, spin_ns and path, as for
 *               agile_dev_open; nr_slots and task_reg_size must equal the
 *               creator's (-EINVAL otherwise)
 * @key:         the group's key
 * @max_members: 1 .. AGILE_GROUP_MAX_MEMBERS; must equal the creator's
 * @mode:        the creator's permission bits (within AGILE_GROUP_MODE_MASK)
 * @flags:       AGILE_DEV_GROUP_CREATE, AGILE_DEV_GROUP_EXCL
 * @reserved:    must be zero
 */
struct agile_dev_group_opts {
	struct agile_dev_opts dev;
	uint64_t key;
	uint32_t max_members;
	uint32_t mode;
	uint32_t flags;
	uint32_t reserved[3];
};

/**
 * agile_dev_group_opts_init - fill @opts with the defaults
 * @opts: the options
 *
 * agile_dev_opts_init's, key 0, one member, mode 0600,
 * AGILE_DEV_GROUP_CREATE.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, or -EINVAL if @opts is NULL.
 */
int agile_dev_group_opts_init(struct agile_dev_group_opts *opts);

/**
 * agile_dev_group_join - join (or create) the group with @opts->key
 * @opts: the group's key, size and flags
 * @out:  receives the context, shared with every other member
 *
 * agile_dev_close leaves the group, which ends it for the others.
 *
 * Thread safety: thread safe (each call makes its own context).
 *
 * Return: 0, -EPIPE (the key's group has ended, and a member still holds
 * it), -ENOENT (no such group and no AGILE_DEV_GROUP_CREATE),
 * -EEXIST, -EACCES (the creator's mode refuses the caller), -EINVAL (bad
 * field, or sizes unlike the creator's), -ENOSPC (the group is full, or
 * too many slots), -ENODEV, -EOPNOTSUPP (a module without groups),
 * -AGILE_E_ABI, -ENOMEM, -EAGAIN (user: groups with the key kept ending
 * or appearing while we tried), or another errno from open, ioctl or
 * mmap.
 */
int agile_dev_group_join(const struct agile_dev_group_opts *opts,
			 struct agile_dev **out);

/**
 * agile_dev_member - this member's index in its group
 * @dev: the context
 *
 * Thread safety: thread safe.
 *
 * Return: the index in join order (creator 0); 0 for a context that is
 * not a group; -EINVAL if @dev is NULL.
 */
int agile_dev_member(const struct agile_dev *dev);

/**
 * agile_dev_max_members - the group's max_members
 * @dev: the context
 *
 * Thread safety: thread safe.
 *
 * Return: max_members; 1 for a context that is not a group; -EINVAL if
 * @dev is NULL.
 */
int agile_dev_max_members(const struct agile_dev *dev);

/*
 * Segments: zeroed data buffers of the context (SPEC §2 SEGMENTS), for task
 * data and the collectives' exchange buffers.  kmod: AGILE_IOC_SEG_CREATE,
 * mapped at the offset the module gives.  user: pages of the context's
 * own file (the memfd, or the group's file), after the two areas, each
 * segment at a page-aligned offset the context's segment table records
 * (in a group, in the file's header, so every member finds it).  Ids
 * count from 0 in creation order and are the same for every member of a
 * group; at most AGILE_MAX_SEGMENTS per context.  A segment stays mapped
 * until agile_dev_close.
 */

/**
 * agile_dev_seg_create - create a segment of @bytes and map it
 * @dev:   the context
 * @bytes: the segment's size
 * @id:    receives its id
 * @addr:  receives where it is mapped (page aligned)
 *
 * The pages are allocated now (a full /dev/shm fails here, not later).
 *
 * Thread safety: thread safe (creations are serialised).
 *
 * Return: 0, -EINVAL (@bytes 0, NULL pointers), -ENOSPC (over the
 * module's max_segment_bytes or AGILE_DEV_USER_MAX_SEGMENT_BYTES, over
 * AGILE_MAX_SEGMENTS segments, or no memory left in the file system),
 * -EOPNOTSUPP (a module without segments), -ENOMEM, or an errno of
 * ioctl/mmap.
 */
int agile_dev_seg_create(struct agile_dev *dev, size_t bytes, uint32_t *id,
			 void **addr);

/**
 * agile_dev_seg_map - map segment @id, made by another member, of @bytes
 * @dev:   the context
 * @id:    the segment's id
 * @bytes: its size, as created
 * @addr:  receives where it is mapped
 *
 * @bytes must be the size it was created with: the user backend knows
 * it to the byte, the module only in pages (kmod checks that @bytes
 * rounds up to the segment's pages).  Mapping a segment twice returns the
 * same address; a segment this context created is mapped already.
 *
 * Thread safety: thread safe (maps are serialised).
 *
 * Return: 0, -EINVAL (no such segment, or another size), -ENOMEM, or an
 * errno of mmap.
 */
int agile_dev_seg_map(struct agile_dev *dev, uint32_t id, size_t bytes,
		      void **addr);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_DEV_H */
