/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * agile - doorbell and task-register pages shared by CPU workers and
 * execution units (GPU work-groups or CPU stand-ins), with the kernel as
 * the referee for fences and waits.
 *
 * ABI versioning
 *
 * AGILE_ABI_VERSION is reported by AGILE_IOC_INFO.  It is bumped whenever
 * an ioctl, a struct or a shared-page layout changes incompatibly.  New
 * ioctls and new feature bits (AGILE_FEAT_*) are added without a bump;
 * userspace tests the feature bits.  Structs grow only by turning
 * reserved fields, which must be zero, into new fields.
 *
 * Version history:
 *   1 - INFO, CTX_INIT, FENCE (SIGNAL, WAIT, BARRIER), WAIT_ANY, STATS.
 *       Added later without a bump: SEG_CREATE and agile_info's
 *       max_segment_bytes (AGILE_FEAT_SEGMENTS), EXPORT_DMABUF
 *       (AGILE_FEAT_DMABUF), GROUP_JOIN (AGILE_FEAT_GROUPS).
 *       Changed later without a bump: a WAIT or WAIT_ANY interrupted by
 *       a signal is restarted (EINTR only after a handler without
 *       SA_RESTART) and writes a relative timeout's time left back;
 *       timeouts above KTIME_MAX other than AGILE_TIMEOUT_INFINITE are
 *       EINVAL; the pages of contexts and segments count against
 *       RLIMIT_MEMLOCK (ENOMEM over it) and each user holds at most
 *       max_contexts_per_user contexts (ENOSPC over it); state-changing
 *       ioctls need a writable file (EBADF), and an O_RDONLY file joins
 *       a group as a read-only member.
 *       Added later without a bump: AGILE_FEAT_GROUP_INFO, that is
 *       groups scoped to the creator's user and IPC namespaces,
 *       agile_group_join's owner_uid, owner_gid, group_mode and
 *       nr_members (formerly reserved[0..1]) and AGILE_GROUP_QUERY;
 *       AGILE_FEAT_GROUP_ENDED: an ended group keeps its key, and joins
 *       of it fail with EPIPE, until its last member's file is released
 *       (before: the key was free at once).
 *
 * Conventions: every field has a fixed width and explicit padding; user
 * pointers travel as __u64; "to kernel" fields are read by the kernel,
 * "from kernel" fields are written by it.  A reserved or padding field
 * that is not zero is rejected with EINVAL.
 *
 * File access mode
 *
 * What changes state needs a file opened for writing: CTX_INIT, creating
 * a group (GROUP_JOIN with AGILE_GROUP_CREATE), FENCE SIGNAL, SEG_CREATE
 * and an EXPORT_DMABUF with O_RDWR fail with EBADF on a file opened
 * O_RDONLY, only after their arguments are checked: bad input is still
 * EINVAL (ENOSPC for a segment above max_segment_bytes) on such a file.
 * An O_RDONLY file may join an existing group as a read-only member: the
 * read bit of its class of the group's mode is then enough; it may WAIT,
 * WAIT_ANY, BARRIER, map the areas and segments read-only (MAP_SHARED
 * with PROT_WRITE is refused by the VFS with EACCES) and export
 * read-only dma-bufs, and it is a member like any other: its release
 * ends the group.
 *
 * Shared-page layout
 *
 * After AGILE_IOC_CTX_INIT a context has nr_slots slots.  Slot k is a
 * doorbell (struct agile_doorbell, one 128-byte line each, so no two
 * doorbells share a GPU cache line) plus a task register of
 * task_reg_size bytes (struct agile_task_reg at its start).  The two
 * areas are mapped separately with mmap(MAP_SHARED) at the offsets that
 * CTX_INIT returns.
 *
 * Data segments (SEG_CREATE) are mapped the same way, each at its own
 * offset: AGILE_MMAP_SEGMENTS + (id << AGILE_MMAP_SEGMENT_SHIFT), which
 * SEG_CREATE returns.  Every mapping must use exactly the returned
 * offset and length.
 */
#ifndef _UAPI_LINUX_AGILE_H
#define _UAPI_LINUX_AGILE_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define AGILE_ABI_VERSION 1

/* Feature bits reported in agile_info.features. */
#define AGILE_FEAT_WAIT_ANY (1U << 0)
/*
 * AGILE_FEAT_POLL_WAKE: plain stores wake sleepers.  One module-wide
 * poller checks sleepers' conditions every poll_interval_us, at most
 * poll_max_checks of them per interval (sysfs), round-robin: with N
 * FENCE WAITs asleep a sleeper's store is seen within
 * ceil(N / poll_max_checks) intervals, one while N <= poll_max_checks
 * (a WAIT_ANY counts one per condition; the module's poll.c gives the
 * exact bound).
 */
#define AGILE_FEAT_POLL_WAKE (1U << 1)
#define AGILE_FEAT_SLEEPER_COUNT (1U << 2) /* agile_doorbell.sleepers */
#define AGILE_FEAT_SEGMENTS (1U << 3) /* SEG_CREATE, max_segment_bytes */
#define AGILE_FEAT_DMABUF (1U << 4) /* EXPORT_DMABUF */
#define AGILE_FEAT_GROUPS (1U << 5) /* GROUP_JOIN */
/*
 * Groups are scoped to the creator's user and IPC namespaces; joins
 * report owner_uid, owner_gid, group_mode and nr_members;
 * AGILE_GROUP_QUERY.
 */
#define AGILE_FEAT_GROUP_INFO (1U << 6)
/*
 * A group that has ended keeps its key while a member's file is open:
 * GROUP_JOIN and QUERY of it fail with EPIPE (a late joiner is told at
 * once).
 */
#define AGILE_FEAT_GROUP_ENDED (1U << 7)

/* Size of one doorbell line: the largest GPU cache line in use. */
#define AGILE_DOORBELL_STRIDE 128

#define AGILE_TASK_REG_MIN_SIZE 64
#define AGILE_TASK_REG_MAX_SIZE 4096

/* Most conditions one AGILE_IOC_WAIT_ANY may wait on. */
#define AGILE_WAIT_ANY_MAX 64

/* Fixed mmap offsets of the two areas (also returned by CTX_INIT). */
#define AGILE_MMAP_DOORBELLS 0x0ULL
#define AGILE_MMAP_TASK_REGS 0x10000000ULL
/* Segment id's mmap offset: AGILE_MMAP_SEGMENTS + (id << 32). */
#define AGILE_MMAP_SEGMENTS 0x100000000ULL
#define AGILE_MMAP_SEGMENT_SHIFT 32

/* Most segments one context holds; SEG_CREATE fails with ENOSPC above. */
#define AGILE_MAX_SEGMENTS 64

/* Doorbell values of the seed-002 offload protocol. */
#define AGILE_DOORBELL_IDLE 0 /* idle, or the task is done */
#define AGILE_DOORBELL_POSTED 1 /* a task waits in the task register */

/**
 * struct agile_doorbell - one slot's doorbell line in the doorbell area
 * @value: the doorbell word.  0 = idle/done, 1 = task posted; other
 *	protocols may store sequence numbers.  Written by userspace (CPU or
 *	GPU) and by AGILE_FENCE_SIGNAL.
 * @sleepers: from kernel: how many tasks sleep in AGILE_FENCE_WAIT or
 *	AGILE_IOC_WAIT_ANY on this slot.  A signaller that stores @value,
 *	issues a full fence and then reads 0 here may skip the system call:
 *	a waiter raises @sleepers, issues a full fence and re-reads @value
 *	before it sleeps.  Advisory only: the kernel never trusts what
 *	userspace writes here, and its poller wakes a sleeper whose
 *	condition holds even when no one enters the kernel.
 * @user: free for the protocol running on the slot (sequence numbers,
 *	a user-space futex word, ...); the kernel never reads it.
 */
struct agile_doorbell {
	__u32 value;
	__u32 sleepers;
	__u32 user[30];
};

/* Opcodes in agile_task_reg.opcode with a fixed meaning. */
#define AGILE_OP_DISCONNECT 0 /* the EU leaves its persistent loop */
#define AGILE_OP_USER_BASE 16 /* first opcode free for kernels */

/* Most lanes one task register reports, one status bit each. */
#define AGILE_MAX_LANES 64

/*
 * C++ has no flexible array member: GNU C++ (g++, clang++) lays out
 * agile_task_reg.args as C does, and spares a -pedantic program the
 * warning here.
 */
#if defined(__cplusplus) && defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

/**
 * struct agile_task_reg - head of one task register
 * @opcode: what to run; AGILE_OP_DISCONNECT detaches the EU.
 * @nr_parts: how many lane parts the task asks for (at most
 *	AGILE_MAX_LANES); the EU assigns part i to lane i.
 * @flags: per-opcode flags.
 * @error: from EU: 0, or the error code of the first failed lane.
 * @error_lane: from EU: the lane that set @error.
 * @reserved: must be zero.
 * @status: from EU: one bit per part, set when that part succeeded;
 *	the task succeeded when bits 0 .. nr_parts-1 are all set.
 * @args: the task's arguments; the register is task_reg_size bytes, so
 *	(task_reg_size - 32) / 8 argument words fit.
 *
 * The kernel never interprets a task register: this layout is the
 * contract between a worker and its EU, kept here so that CPU and GPU
 * code share one definition.
 */
struct agile_task_reg {
	__u32 opcode;
	__u32 nr_parts;
	__u32 flags;
	__s32 error;
	__u32 error_lane;
	__u32 reserved;
	__u64 status;
	__u64 args[];
};

#if defined(__cplusplus) && defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/**
 * struct agile_info - AGILE_IOC_INFO, from kernel
 * @abi_version: AGILE_ABI_VERSION of the running module.
 * @features: AGILE_FEAT_* bits.
 * @max_slots: largest nr_slots CTX_INIT accepts now (sysfs max_slots).
 * @doorbell_stride: bytes per doorbell line (AGILE_DOORBELL_STRIDE).
 * @task_reg_min_size: smallest task register size.
 * @task_reg_max_size: largest task register size.
 * @poll_interval_us: the poller's period (sysfs poll_interval_us).  It
 *	checks at most sysfs poll_max_checks conditions per period; see
 *	AGILE_FEAT_POLL_WAKE.
 * @spin_ns: how long a waiter spins in the kernel before it sleeps.
 * @wait_any_max: most conditions one WAIT_ANY takes.
 * @page_size: the kernel's PAGE_SIZE: areas are mapped in whole pages.
 * @max_segment_bytes: largest segment SEG_CREATE accepts now (sysfs
 *	max_segment_bytes); was reserved[0], so 0 from a module without
 *	AGILE_FEAT_SEGMENTS.
 * @reserved: zero.
 *
 * May be called before CTX_INIT.
 */
struct agile_info {
	__u32 abi_version;
	__u32 features;
	__u32 max_slots;
	__u32 doorbell_stride;
	__u32 task_reg_min_size;
	__u32 task_reg_max_size;
	__u32 poll_interval_us;
	__u32 spin_ns;
	__u32 wait_any_max;
	__u32 page_size;
	__u64 max_segment_bytes;
	__u64 reserved[3];
};

/**
 * struct agile_ctx_init - AGILE_IOC_CTX_INIT
 * @nr_slots: to kernel: number of slots M, 1 .. max_slots (ENOSPC above).
 * @task_reg_size: to kernel: bytes per task register, a power of two
 *	from AGILE_TASK_REG_MIN_SIZE to AGILE_TASK_REG_MAX_SIZE.
 * @flags: to kernel: must be zero.
 * @pad: must be zero.
 * @doorbell_offset: from kernel: mmap offset of the doorbell area.
 * @doorbell_bytes: from kernel: its mmap length (whole pages).
 * @task_reg_offset: from kernel: mmap offset of the task-register area.
 * @task_reg_bytes: from kernel: its mmap length (whole pages).
 * @reserved: must be zero.
 *
 * Sets up the file's context once: a second call, or one made while
 * another CTX_INIT or GROUP_JOIN on the same file runs, fails with EBUSY
 * at once (it never waits for the other: a slow copy of another caller's
 * result, say a userfaultfd page, delays no one else).  The pages are
 * zeroed and live until the file is released and the last mapping is
 * gone.
 *
 * Limits: the pages count against the RLIMIT_MEMLOCK of the caller's
 * user (shared by all its processes, as for io_uring's registered
 * buffers; CAP_IPC_LOCK exempts), show in the caller's VmPin and are
 * charged to its memory cgroup, until they are freed.  Each user holds
 * at most max_contexts_per_user contexts (sysfs; CAP_SYS_RESOURCE
 * exempts), whether made by CTX_INIT or by creating a group.
 *
 * Errors: EINVAL (a bad field or size), EBADF (the file was opened
 * O_RDONLY), ENOSPC (@nr_slots above max_slots, or the user holds
 * max_contexts_per_user contexts), ENOMEM (over RLIMIT_MEMLOCK, or no
 * memory: large allocations fail rather than invoke the OOM killer),
 * EBUSY, EFAULT.
 */
struct agile_ctx_init {
	__u32 nr_slots;
	__u32 task_reg_size;
	__u32 flags;
	__u32 pad;
	__u64 doorbell_offset;
	__u64 doorbell_bytes;
	__u64 task_reg_offset;
	__u64 task_reg_bytes;
	__u64 reserved[4];
};

/* agile_fence.op */
#define AGILE_FENCE_SIGNAL 0 /* release-store value into doorbell[slot], wake */
#define AGILE_FENCE_WAIT 1 /* sleep until doorbell[slot] cmp value holds */
#define AGILE_FENCE_BARRIER 2 /* full memory barrier */

/* Comparisons: doorbell value (left) against agile_*.value (right), unsigned. */
#define AGILE_CMP_EQ 0
#define AGILE_CMP_NE 1
#define AGILE_CMP_GE 2
#define AGILE_CMP_LT 3
#define AGILE_CMP_GT 4
#define AGILE_CMP_LE 5

/**
 * agile_cmp_holds() - whether doorbell value @left and @right satisfy @cmp
 * @cmp: AGILE_CMP_*; an unknown one never holds.
 * @left: the doorbell's value.
 * @right: the value of the wait or fence.
 *
 * The one definition of a doorbell condition: the module's waits and
 * libagile's (both backends) use it, so they cannot disagree.
 *
 * Return: 1 when the condition holds, else 0.
 */
static inline int agile_cmp_holds(__u32 cmp, __u32 left, __u32 right)
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
	return 0;
}

/* agile_fence.flags for SIGNAL */
#define AGILE_SIGNAL_WAKE_ONLY (1U << 0) /* no store: only wake sleepers */
/* agile_fence.flags and agile_wait_any.flags for waits */
#define AGILE_WAIT_ABSTIME (1U << 1) /* timeout_ns is CLOCK_MONOTONIC */

/* timeout_ns meaning "no timeout". 0 checks once and never sleeps. */
#define AGILE_TIMEOUT_INFINITE (~0ULL)

/**
 * struct agile_fence - AGILE_IOC_FENCE
 * @op: to kernel: AGILE_FENCE_SIGNAL, AGILE_FENCE_WAIT or
 *	AGILE_FENCE_BARRIER.
 * @slot: to kernel: the slot (SIGNAL, WAIT); must be zero for BARRIER.
 * @value: to kernel: SIGNAL: the value stored; WAIT: the right-hand side
 *	of the comparison.
 * @cmp: to kernel: WAIT: AGILE_CMP_*; must be zero otherwise.
 * @flags: to kernel: SIGNAL: AGILE_SIGNAL_WAKE_ONLY; WAIT:
 *	AGILE_WAIT_ABSTIME; no other bits.
 * @observed: from kernel: WAIT: the doorbell value that satisfied the
 *	comparison, or the last value seen on timeout or signal.
 * @timeout_ns: to kernel: WAIT: relative nanoseconds, at most
 *	KTIME_MAX (2^63 - 1), or an absolute CLOCK_MONOTONIC time, at most
 *	KTIME_MAX, with AGILE_WAIT_ABSTIME; AGILE_TIMEOUT_INFINITE waits
 *	forever (with or without AGILE_WAIT_ABSTIME); any other value above
 *	KTIME_MAX is EINVAL; must be zero for SIGNAL and BARRIER.  From
 *	kernel: when a signal interrupts a relative WAIT, the time left
 *	(see below); otherwise left as it was.
 * @reserved: must be zero.
 *
 * SIGNAL stores with release ordering, then wakes the sleepers whose
 * condition now holds.  WAIT checks, spins for spin_ns, then sleeps; the
 * condition is checked again after the waiter is queued, so a store
 * between the caller's own check and the ioctl is never lost.  A store
 * that never enters the kernel is seen by the poller within about
 * poll_interval_us while at most poll_max_checks conditions are polled
 * module-wide (see AGILE_FEAT_POLL_WAKE).  WAIT fails with ETIMEDOUT when the timeout passes.
 *
 * Signals: a WAIT that a signal interrupts is restarted as futex waits
 * are: transparently after a stop signal (SIGSTOP, SIGTSTP, a debugger
 * attaching) or a handler installed with SA_RESTART, and with EINTR
 * after a handler without SA_RESTART.  Before it returns, an
 * interrupted relative WAIT writes the time left into @timeout_ns, as
 * select() does, so the restarted call (or the caller's own retry after
 * EINTR) waits only for the remainder, not the whole timeout again; the
 * time left is taken when the signal interrupts the wait, so time spent
 * stopped or in the handler is not counted (as with select()).  Use an
 * absolute deadline, which is left alone, where that matters.  Each
 * interruption counts in agile_stats.interrupted, and each restart as a
 * new wait in agile_stats.waits.  In a group
 * that has ended (AGILE_IOC_GROUP_JOIN) WAIT fails with EPIPE, at once or
 * when the end comes while it sleeps, even if its condition holds;
 * SIGNAL and BARRIER keep working there (a store in the shared page is
 * no harm: nobody can sleep on it any more).  SIGNAL needs a file opened
 * for writing (EBADF otherwise); WAIT and BARRIER do not.
 */
struct agile_fence {
	__u32 op;
	__u32 slot;
	__u32 value;
	__u32 cmp;
	__u32 flags;
	__u32 observed;
	__u64 timeout_ns;
	__u64 reserved[2];
};

/**
 * struct agile_wait_cond - one condition of AGILE_IOC_WAIT_ANY
 * @slot: the doorbell's slot.
 * @cmp: AGILE_CMP_*.
 * @value: the right-hand side of the comparison.
 * @pad: must be zero.
 */
struct agile_wait_cond {
	__u32 slot;
	__u32 cmp;
	__u32 value;
	__u32 pad;
};

/**
 * struct agile_wait_any - AGILE_IOC_WAIT_ANY
 * @conds: to kernel: user pointer to an array of struct agile_wait_cond.
 * @nr_conds: to kernel: 1 .. AGILE_WAIT_ANY_MAX.
 * @flags: to kernel: AGILE_WAIT_ABSTIME or zero.
 * @timeout_ns: to kernel and from kernel: as in struct agile_fence (the
 *	time left is written back when a signal interrupts a relative wait).
 * @index: from kernel: the lowest index whose condition held.
 * @observed: from kernel: the doorbell value that made it hold.
 * @reserved: must be zero.
 *
 * Sleeps until any one condition holds; same timeout (EINVAL out of
 * range), signal (restart), lost-wakeup and ended-group (EPIPE) rules as
 * AGILE_FENCE_WAIT.
 */
struct agile_wait_any {
	__u64 conds;
	__u32 nr_conds;
	__u32 flags;
	__u64 timeout_ns;
	__u32 index;
	__u32 observed;
	__u64 reserved[2];
};

/**
 * struct agile_stats - AGILE_IOC_STATS, from kernel: this context's counters
 * @signals: SIGNAL operations.
 * @waits: WAIT and WAIT_ANY calls; a call restarted after a signal
 *	counts again.
 * @wakeups_signal: sleeps ended by a SIGNAL.
 * @wakeups_poll: sleeps ended by the poller seeing a plain store.
 * @timeouts: waits that ended with ETIMEDOUT.
 * @interrupted: waits that a signal interrupted, whether they were
 *	then restarted or failed with EINTR.
 * @spin_hits: waits whose condition held before or while spinning.
 * @reserved: zero.
 *
 * All zero before CTX_INIT.  The module-wide totals are in sysfs, and
 * every context's counters, with its slots in use, in the
 * /proc/PID/fdinfo/FD of its files (agile(4), FDINFO), for whoever may
 * ptrace the process.
 */
struct agile_stats {
	__u64 signals;
	__u64 waits;
	__u64 wakeups_signal;
	__u64 wakeups_poll;
	__u64 timeouts;
	__u64 interrupted;
	__u64 spin_hits;
	__u64 reserved[5];
};

/**
 * struct agile_seg_create - AGILE_IOC_SEG_CREATE
 * @bytes: to kernel: segment size, 1 .. max_segment_bytes; rounded up to
 *	whole pages.
 * @flags: to kernel: must be zero.
 * @pad: must be zero.
 * @id: from kernel: the segment's id in this context: the lowest free,
 *	so 0, 1, 2, ... in creation order, except that the id of a
 *	SEG_CREATE still running or failed is skipped (and taken by the
 *	next one once it failed).
 * @pad2: from kernel: zero.
 * @mmap_offset: from kernel: the segment's mmap offset,
 *	AGILE_MMAP_SEGMENTS + (@id << AGILE_MMAP_SEGMENT_SHIFT).
 * @mmap_bytes: from kernel: its mmap length (@bytes in whole pages).
 * @reserved: must be zero.
 *
 * Creates a data segment: zeroed pages, mapped with mmap(MAP_SHARED)
 * like the areas and living until the context and every mapping (and
 * dma-buf) of it are gone.  They count against the caller's
 * RLIMIT_MEMLOCK, VmPin and memory cgroup as a context's do (see struct
 * agile_ctx_init); in a group, against the member that created the
 * segment.  Errors: EINVAL for a bad field or @bytes 0, ENOSPC for
 * @bytes above max_segment_bytes or a context that already holds
 * AGILE_MAX_SEGMENTS segments, ENOMEM over RLIMIT_MEMLOCK or without
 * memory, EFAULT, EBADFD before CTX_INIT, EBADF on a file opened
 * O_RDONLY (a read-only member) whose arguments are otherwise good.
 */
struct agile_seg_create {
	__u64 bytes;
	__u32 flags;
	__u32 pad;
	__u32 id;
	__u32 pad2;
	__u64 mmap_offset;
	__u64 mmap_bytes;
	__u64 reserved[4];
};

/* agile_export_dmabuf.what */
#define AGILE_DMABUF_DOORBELLS 0 /* the doorbell area */
#define AGILE_DMABUF_TASK_REGS 1 /* the task-register area */
#define AGILE_DMABUF_SEGMENT 2 /* the segment agile_export_dmabuf.id */

/**
 * struct agile_export_dmabuf - AGILE_IOC_EXPORT_DMABUF
 * @what: to kernel: AGILE_DMABUF_*.
 * @id: to kernel: the segment id for AGILE_DMABUF_SEGMENT; zero otherwise.
 * @flags: to kernel: O_CLOEXEC and O_RDWR, or zero (read-only).
 * @fd: from kernel: the new dma-buf file descriptor.
 * @reserved: must be zero.
 *
 * Exports an area or a segment as a dma-buf, so that a GPU driver can
 * import the same pages.  The dma-buf holds its own references on the
 * pages: it stays usable after the agile file is closed, and the agile
 * file after the dma-buf is closed.  Its mmap follows the areas' rules
 * (MAP_SHARED, offset 0, no exec; PROT_WRITE only for an O_RDWR
 * export).  Errors: EINVAL for a bad field or an unknown segment id,
 * EBADF for O_RDWR on a file opened O_RDONLY (once the other fields
 * and the segment id are known good), EBADFD before CTX_INIT,
 * EMFILE, ENOMEM, EFAULT.
 */
struct agile_export_dmabuf {
	__u32 what;
	__u32 id;
	__u32 flags;
	__s32 fd;
	__u64 reserved[3];
};

/* agile_group_join.flags */
#define AGILE_GROUP_CREATE (1U << 0) /* create the group if the key is free */
#define AGILE_GROUP_EXCL (1U << 1) /* with CREATE: EEXIST if it exists */
/* EXCL without CREATE is EINVAL. */
#define AGILE_GROUP_QUERY (1U << 2) /* report the group; join nothing */
/* QUERY with any other flag is EINVAL. */

/* Most members one group holds. */
#define AGILE_GROUP_MAX_MEMBERS 256

/* The permission bits agile_group_join.mode may hold. */
#define AGILE_GROUP_MODE_MASK 0666

/**
 * struct agile_group_join - AGILE_IOC_GROUP_JOIN
 * @key: to kernel: the group's 64-bit key; any value.
 * @nr_slots: to kernel: as in struct agile_ctx_init; a joiner's must
 *	equal the creator's.
 * @task_reg_size: to kernel: as in struct agile_ctx_init; must equal the
 *	creator's.
 * @max_members: to kernel: 1 .. AGILE_GROUP_MAX_MEMBERS; must equal the
 *	creator's.
 * @mode: to kernel: the creator's permission bits (within
 *	AGILE_GROUP_MODE_MASK, as a file mode: 0600 owner, 0060 the
 *	creator's group, 0006 others).  The creator's effective uid and gid
 *	are recorded; a joiner is in the owner class when its effective uid
 *	is the creator's, else in the group class when the creator's gid is
 *	its effective gid or one of its supplementary groups, else in the
 *	others class, and needs both the read and the write bit of its
 *	class (only the read bit for a file opened O_RDONLY, which joins as
 *	a read-only member).  No capability overrides the mode (0066
 *	refuses even a root creator's other root processes).  A joiner's
 *	own @mode is ignored, but must still be within
 *	AGILE_GROUP_MODE_MASK.
 * @flags: to kernel: AGILE_GROUP_CREATE, AGILE_GROUP_EXCL (only with
 *	CREATE); no other bits.
 * @member: from kernel: this file's member index, in join order; the
 *	creator is 0.
 * @doorbell_offset: from kernel: as in struct agile_ctx_init.
 * @doorbell_bytes: from kernel: as in struct agile_ctx_init.
 * @task_reg_offset: from kernel: as in struct agile_ctx_init.
 * @task_reg_bytes: from kernel: as in struct agile_ctx_init.
 * @owner_uid: from kernel: the creator's effective uid, as the caller's
 *	user namespace sees it (the overflow uid, 65534, if it has no
 *	mapping there).  Formerly reserved (AGILE_FEAT_GROUP_INFO); ignored
 *	on input.
 * @owner_gid: from kernel: the creator's effective gid, likewise.
 * @group_mode: from kernel: the mode the creator gave the group.
 *	Formerly reserved; ignored on input.
 * @nr_members: from kernel: how many members have joined, this one
 *	included (for QUERY: so far).  Formerly reserved; ignored on input.
 * @reserved: must be zero.
 *
 * Instead of CTX_INIT: makes this file a member of the group with @key,
 * creating it (and its context, which counts for the creator as
 * CTX_INIT's does: RLIMIT_MEMLOCK, VmPin, memory cgroup and
 * max_contexts_per_user) when AGILE_GROUP_CREATE is given and no live
 * group has the key; joining charges the joiner nothing.  All
 * members share one context: the same doorbells, task registers and
 * segments (a segment created by any member is mapped by every member
 * at its offset; the segment ids are the context's, see struct
 * agile_seg_create).
 *
 * A group ends when any member's file is released, that is when its last
 * reference goes: the process exits or is killed, or closes the
 * descriptor and unmaps everything it mapped from the file (a descriptor
 * inherited by fork() or passed on, or a mapping, keeps the file open).
 * From then on every wait of every member, sleeping or new, fails with
 * EPIPE (see struct agile_fence), so no member hangs on a dead peer, and
 * so does every GROUP_JOIN (and QUERY) of the key, with or without
 * AGILE_GROUP_CREATE and AGILE_GROUP_EXCL, as long as a member's file is
 * not released: a late joiner learns at once that the group it came for
 * is over.  Once the last member's file is released the key is free, for
 * a new group.  The other ioctls and the mappings keep working on the
 * ended group's context, which is freed with its last member, mapping
 * and dma-buf.
 *
 * Errors: EBADF (AGILE_GROUP_CREATE on a file opened O_RDONLY), EBUSY
 * (the file already has a context, or another CTX_INIT or GROUP_JOIN on
 * it runs), EPIPE (the group with @key has ended; before any other check
 * of the group), ENOENT (no group has @key and
 * AGILE_GROUP_CREATE is not given), EEXIST (AGILE_GROUP_EXCL and the
 * group exists), EACCES (the mode refuses this caller), EINVAL (bad
 * field, or a size that differs from the creator's), ENOSPC (the group
 * has max_members members, or, when creating, nr_slots above max_slots
 * or max_contexts_per_user reached), ENOMEM (creating: over
 * RLIMIT_MEMLOCK, or no memory), EFAULT, EINTR (a signal cut short the fault of
 * the result page; restarted under SA_RESTART).  A join commits only
 * once its result is in the caller's struct, so a failed call leaves no
 * trace: no group, no member index used.  Its result page is written
 * with no lock held that others need: a page that faults slowly
 * (userfaultfd, FUSE) delays this caller alone.  Within a namespace
 * (below) keys are shared by every user: the mode is what keeps groups
 * apart.
 *
 * Namespaces: a group belongs to its creator's user namespace and IPC
 * namespace.  Only a caller in both finds it (to join or query it); in
 * any other, the key is free, and a group made there with the same key
 * is another group.
 *
 * Trust: every successful join (and QUERY) fills @owner_uid, @owner_gid,
 * @group_mode and @nr_members, so a joiner can check who made the group
 * and with what mode before it trusts the pages, and a creator that must
 * not join a group another user made first (a squatter on its key) gives
 * AGILE_GROUP_EXCL and fails with EEXIST instead.
 *
 * AGILE_GROUP_QUERY (alone in @flags): reports the group with @key in
 * the caller's namespaces without joining it, on any file (with a
 * context or not, opened for writing or not): @nr_slots, @task_reg_size,
 * @max_members, @owner_uid, @owner_gid, @group_mode, @nr_members, and the
 * offsets and lengths a member maps; @member is zero and @mode is left as
 * it was.  The to-kernel fields are checked as for a join (any valid
 * sizes, mode and max_members will do: they are replaced by the
 * group's), but only @key is used.  No permission is needed beyond being
 * in the group's namespaces.  Errors: ENOENT (no such group), EINVAL
 * (other flags with QUERY, a bad field as for a join), EFAULT.
 */
struct agile_group_join {
	__u64 key;
	__u32 nr_slots;
	__u32 task_reg_size;
	__u32 max_members;
	__u32 mode;
	__u32 flags;
	__u32 member;
	__u64 doorbell_offset;
	__u64 doorbell_bytes;
	__u64 task_reg_offset;
	__u64 task_reg_bytes;
	__u32 owner_uid;
	__u32 owner_gid;
	__u32 group_mode;
	__u32 nr_members;
	__u64 reserved[2];
};

#define AGILE_IOC_MAGIC 0xA9

#define AGILE_IOC_INFO _IOR(AGILE_IOC_MAGIC, 0x00, struct agile_info)
#define AGILE_IOC_CTX_INIT _IOWR(AGILE_IOC_MAGIC, 0x01, struct agile_ctx_init)
#define AGILE_IOC_FENCE _IOWR(AGILE_IOC_MAGIC, 0x02, struct agile_fence)
#define AGILE_IOC_WAIT_ANY _IOWR(AGILE_IOC_MAGIC, 0x03, struct agile_wait_any)
#define AGILE_IOC_STATS _IOR(AGILE_IOC_MAGIC, 0x04, struct agile_stats)
#define AGILE_IOC_SEG_CREATE \
	_IOWR(AGILE_IOC_MAGIC, 0x05, struct agile_seg_create)
#define AGILE_IOC_GROUP_JOIN \
	_IOWR(AGILE_IOC_MAGIC, 0x06, struct agile_group_join)
#define AGILE_IOC_EXPORT_DMABUF \
	_IOWR(AGILE_IOC_MAGIC, 0x07, struct agile_export_dmabuf)

#endif /* _UAPI_LINUX_AGILE_H */
