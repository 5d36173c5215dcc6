/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * agile.ko internals shared by the files of the module.
 *
 * Objects and lifetimes
 *
 * struct agile_file is the open file's private data.  It holds one
 * reference on its context once CTX_INIT or GROUP_JOIN has run.
 *
 * struct agile_ctx is refcounted and separate from the file so that
 * several files may share one context (groups).  It owns the doorbell
 * and task-register pages; every mapping holds its own page references
 * (vm_insert_pages()), so a page lives until the context and every
 * mapping of it are gone.
 *
 * struct agile_group (group.c) belongs to the context of a group, which
 * frees it.  It is published in the registry of groups, by key, from its
 * creation until the last member's file is released.  The first release
 * ends the group: it sets agile_group.ended (a join finds the key taken
 * by an ended group: EPIPE, at once) and agile_ctx.ended, and wakes every
 * sleeper with EPIPE; the last one unpublishes the key, which a new
 * group may then take.  The members' files keep their context references
 * until their own release, so the context is freed with the last member
 * (or dma-buf).
 *
 * struct agile_waiter lives in the frame of a task inside WAIT or
 * WAIT_ANY.  While queued it is reachable from its context's lists; a
 * waker that dequeues it must not touch it after the release store of
 * @woken (see agile_waiter_wake()).
 *
 * Locking, outermost first
 *
 * No lock that another user's file can need is held across a user copy,
 * a fault or a page allocation: such a lock would let a process whose
 * page faults slowly (userfaultfd, FUSE) hold other users' processes,
 * even killed ones, in their ioctls or their ->release.  ->release takes
 * only spinlocks held for a few instructions.
 *
 * agile_file.flags (AGILE_FILE_CLAIMED, main.c): not a lock but a claim:
 *	CTX_INIT and GROUP_JOIN take it with test_and_set_bit(), so a
 *	concurrent one on the same file fails with EBUSY at once instead of
 *	waiting.  The claim holder makes the context and copies the result
 *	out holding no lock, then publishes agile_file.ctx.  mmap reads the
 *	published pointer, so there is no ordering against mmap_lock.
 * agile_group_lock (spinlock, group.c): the registry of live groups (the
 *	hash table, agile_group.published, .nr_members, .nr_open and
 *	.ended).  Held
 *	for a lookup, the join's checks, a copy_to_user_nofault() of its
 *	result (page faults disabled) and the commit; a would-be group's
 *	context is allocated before it is taken, and a result page the
 *	copy cannot reach is faulted in after it is dropped (then the join
 *	is tried again).  Process context only; nothing nests inside it.
 *	A member's release takes it to unpublish the key, then drops it
 *	before ending the context; mmap and the waits never take it.
 *	fdinfo (fdinfo.c) takes it to copy a group's facts, then prints
 *	them after it is dropped.
 *	DEBUG_ATOMIC_SLEEP catches any sleep under it.
 * agile_users_lock (spinlock, limits.c): the per-user counts of
 *	contexts.  Held for a lookup and a count, never across an
 *	allocation; taken when a context is made and when it is freed.
 *	Process context only; nothing nests inside it.
 * agile_poller.lock (spinlock, poll.c): the poller's list of users with
 *	sleeping contexts, each user's list of them and share of the
 *	poller (agile_user.poll), the contexts' poll counters
 *	(agile_ctx.poll_checks), its timer's @armed, its CPU credit and
 *	its counters.  Taken in
 *	process context with spin_lock_bh() and by the poller's hrtimer in
 *	softirq context with spin_lock().  Outside agile_ctx.lock: the poller
 *	takes a context's lock under it; a waiter never takes it while it
 *	holds a context's lock (it registers the context after dropping it,
 *	see poll.c).  A context's release takes it wherever the last
 *	reference goes.  The
 *	hrtimer base lock nests inside it (hrtimer_start());
 *	hrtimer_cancel() is never called under it.
 * agile_ctx.lock (spinlock): the slots' waiter lists and sleeper
 *	counts, the doorbells' sleeper mirrors, the context's list of
 *	sleeping waiters and its count, and the dequeue of every waiter.
 *	Taken in process context with spin_lock_bh() (spin_lock() when
 *	nested in agile_poller.lock) and by the poller's hrtimer in softirq
 *	context with spin_lock().  The poller's fields of the context
 *	(@poll_node, @poll_listed, @poll_round_left, @poll_checks) are
 *	written only with both locks held and read under either.  It also orders the end of
 *	a group against queueing waiters: agile_ctx.ended is set under it,
 *	and a waiter checks it under it before it queues.
 *	fdinfo takes it (spin_lock_bh()) to copy @nr_sleepers and @ended,
 *	nothing else, and never together with agile_group_lock or
 *	agile_poller.lock (which it takes alone, to copy the poll
 *	counters of the context and of its owner).
 * agile_ctx.seg_lock (spinlock): the context's segment ids in use
 *	(@seg_ids).  Process context only; held to reserve or return an id,
 *	nothing else: SEG_CREATE allocates the pages and copies its result
 *	out with no lock held, then publishes the segment in @segs[id] with
 *	smp_store_release().  mmap and EXPORT_DMABUF never take it: they
 *	read @segs[id] with smp_load_acquire().
 * agile_dmabuf.lock (mutex): a dma-buf's list of DMA mappings.  Taken by
 *	map/unmap (inside the dma-buf's reservation lock where the dma-buf
 *	core holds it) and by begin/end_cpu_access; nothing nests inside.
 *
 * Segments and dma-bufs
 *
 * A segment (struct agile_seg) belongs to its context and is freed with
 * it.  A dma-buf holds a reference on the context, so the pages it
 * exports outlive a closed agile file; the agile file does not depend
 * on the dma-buf either.
 */
#ifndef AGILE_KMOD_AGILE_H
#define AGILE_KMOD_AGILE_H

#include <linux/atomic.h>
#include <linux/bitmap.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm_types.h>
#include <linux/percpu.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>
#include <linux/types.h>
#include <linux/uidgid.h>

#include <linux/agile.h>

struct seq_file;

/* Counters kept per context and module-wide, both per CPU. */
enum agile_counter {
	AGILE_CNT_SIGNALS,
	AGILE_CNT_WAITS,
	AGILE_CNT_WAKEUPS_SIGNAL,
	AGILE_CNT_WAKEUPS_POLL,
	AGILE_CNT_TIMEOUTS,
	AGILE_CNT_INTERRUPTED,
	AGILE_CNT_SPIN_HITS,
	AGILE_NR_COUNTERS
};

struct agile_counters {
	u64 count[AGILE_NR_COUNTERS];
};

/**
 * struct agile_slot - the kernel's side of one slot
 * @waiters: linked entries (struct agile_wait_entry) of the waiters
 *	sleeping on this slot, one per waiter; under agile_ctx.lock.
 * @sleepers: number of entries on @waiters.  Written under
 *	agile_ctx.lock with WRITE_ONCE(), read without it by SIGNAL.
 * @doorbell: kernel address of the slot's doorbell line.  The line is
 *	in a page shared with userspace: read it with READ_ONCE() (or
 *	acquire), never trust it.
 */
struct agile_slot {
	struct list_head waiters;
	unsigned int sleepers;
	struct agile_doorbell *doorbell;
};

/**
 * struct agile_charge - pages charged to a user and a process (limits.c)
 * @user: the user whose locked_vm (RLIMIT_MEMLOCK) holds them, with a
 *	reference; NULL when its task had CAP_IPC_LOCK.
 * @mm: the mm whose pinned_vm (VmPin) holds them, with an mmgrab()
 *	reference (not on its address space); NULL for a kernel thread.
 * @nr_pages: the pages charged.
 */
struct agile_charge {
	struct user_struct *user;
	struct mm_struct *mm;
	unsigned long nr_pages;
};

/**
 * struct agile_poll_share - one user's part of the poller (poll.c)
 * @node: in the poller's list of users while @listed.
 * @ctxs: the user's contexts on the poller's list (agile_ctx.poll_node),
 *	in round-robin order: a turn starts at the head.
 * @nr_ctxs: contexts on @ctxs.
 * @listed: on the poller's list of users: while @ctxs is not empty.
 * @deficit: conditions the user may check on top of its next turn's
 *	quantum: what a turn left when it stopped before a waiter too large
 *	for the rest (deficit round robin); below AGILE_WAIT_ANY_MAX.
 * @turns: the poller's turns for the user (at most one per tick).
 * @checks: conditions of the user's contexts checked (and emptied
 *	contexts dropped) in them.
 * @ns: nanoseconds spent in them.
 *
 * All under agile_poller.lock.  The counters live as long as the record:
 * while the user holds a context.
 */
struct agile_poll_share {
	struct list_head node;
	struct list_head ctxs;
	unsigned int nr_ctxs;
	bool listed;
	u32 deficit;
	u64 turns;
	u64 checks;
	u64 ns;
};

/**
 * struct agile_user - one user's contexts and share of the poller
 * @node: in the table of users (limits.c) while @nr_contexts is not zero.
 * @uid: the user (real uid of the context's creator).
 * @nr_contexts: its contexts.  Under agile_users_lock.
 * @poll: its part of the poller, under agile_poller.lock.  A context on
 *	the poller's list holds a reference on its owner (agile_ctx.owner),
 *	and leaves the list before that reference is dropped, so the record
 *	outlives its place on the poller's list.
 */
struct agile_user {
	struct hlist_node node;
	kuid_t uid;
	unsigned int nr_contexts;
	struct agile_poll_share poll;
};

/**
 * struct agile_seg - a data segment
 * @pages: its zeroed pages.
 * @nr_pages: pages in @pages.
 * @charge: its pages, charged to the member that created it.
 */
struct agile_seg {
	struct page **pages;
	unsigned long nr_pages;
	struct agile_charge charge;
};

/**
 * struct agile_group - a group: a context shared by processes, by key
 * @node: in the registry's hash table while @published.
 * @key: the key it was created with.
 * @user_ns: the creator's user namespace, with a reference: only callers
 *	in it find the group.
 * @ipc_ns: the creator's IPC namespace, without a reference (put_ipc_ns()
 *	is not exported), compared with @ipc_ns_inum; see group.c for why
 *	that is safe enough.  Only callers in it find the group.
 * @ipc_ns_inum: @ipc_ns's inode number (ns.inum).
 * @uid: the creator's effective uid.
 * @gid: the creator's effective gid.
 * @mode: permission bits within AGILE_GROUP_MODE_MASK.
 * @max_members: most members, 1 .. AGILE_GROUP_MAX_MEMBERS.
 * @ctx: the shared context.  Holds no reference: while @published a
 *	member's file is open (@nr_open > 0), and its reference keeps it.
 * @nr_members: members that joined, the creator included: the next
 *	member's index.  Under agile_group_lock.
 * @nr_open: members whose file is not released yet.  Under
 *	agile_group_lock.
 * @published: in the registry, by key: from creation until @nr_open
 *	drops to 0.  Under agile_group_lock.
 * @ended: a member's file was released: joins fail with EPIPE.  Set
 *	once, under agile_group_lock.
 */
struct agile_group {
	struct hlist_node node;
	u64 key;
	struct user_namespace *user_ns;
	struct ipc_namespace *ipc_ns;
	unsigned int ipc_ns_inum;
	kuid_t uid;
	kgid_t gid;
	u32 mode;
	u32 max_members;
	struct agile_ctx *ctx;
	u32 nr_members;
	u32 nr_open;
	bool published;
	bool ended;
};

/**
 * struct agile_ctx - a context: slots, their pages and their waiters
 * @ref: one reference per file that uses the context.
 * @id: a small number naming the context in tracepoints.
 * @nr_slots: slots in the context.
 * @task_reg_size: bytes per task register.
 * @slots: @nr_slots slots.
 * @pages: the doorbell area's pages, then the task-register area's.
 * @nr_doorbell_pages: pages of the doorbell area.
 * @nr_pages: pages in @pages.
 * @charge: @pages, charged to the task that made the context (a group's
 *	creator).
 * @owner: the user whose count of contexts it is in (limits.c).
 * @counters: this context's counters, per CPU.
 * @lock: see the locking rules at the top of this file.
 * @sleepers: waiters queued on the context (struct agile_waiter.node),
 *	in the order the poller checks them.
 * @nr_sleepers: waiters on @sleepers.
 * @poll_node: in its owner's list of polled contexts
 *	(agile_poll_share.ctxs) while @poll_listed (poll.c).
 * @poll_listed: on the poller's list: set by the first waiter to find it
 *	clear (agile_poll_add()), cleared by the poller once it finds
 *	@sleepers empty, or by the context's release.
 * @poll_round_left: waiters the poller has still to check in this
 *	context's current round; 0 between rounds.
 * @poll_checks: conditions of this context the poller checked (and its
 *	drop from the list, once emptied), since it was made.
 * @ended: the context's group has ended (a member's file was released):
 *	every wait fails with EPIPE.  Set once, under @lock, with
 *	WRITE_ONCE(); read under @lock before a waiter queues and with
 *	READ_ONCE() elsewhere.  Always false outside groups.
 * @group: the group sharing the context, or NULL; set before the
 *	context is reachable by anyone but its creator, freed with it.
 * @seg_lock: guards @seg_ids; see "Locking" above.
 * @seg_ids: the segment ids in use: published, or reserved by a
 *	SEG_CREATE that runs.
 * @segs: the published segments, by id; NULL for a free or reserved id.
 *	Each set once with smp_store_release(), read with
 *	smp_load_acquire(); a segment never changes until the context is
 *	freed.
 */
struct agile_ctx {
	struct kref ref;
	u32 id;
	u32 nr_slots;
	u32 task_reg_size;
	struct agile_slot *slots;
	struct page **pages;
	unsigned long nr_doorbell_pages;
	unsigned long nr_pages;
	struct agile_charge charge;
	struct agile_user *owner;
	struct agile_counters __percpu *counters;

	/* waiter lists and sleeper counts: see "Locking" above */
	spinlock_t lock ____cacheline_aligned_in_smp;
	struct list_head sleepers;
	unsigned int nr_sleepers;
	struct list_head poll_node;
	bool poll_listed;
	u32 poll_round_left;
	u64 poll_checks;
	bool ended;

	struct agile_group *group;

	spinlock_t seg_lock; /* guards @seg_ids */
	DECLARE_BITMAP(seg_ids, AGILE_MAX_SEGMENTS);
	struct agile_seg *segs[AGILE_MAX_SEGMENTS];
};

/* How a waiter was woken; the waker stores it last. */
enum agile_woken {
	AGILE_WOKEN_NONE,
	AGILE_WOKEN_SIGNAL,
	AGILE_WOKEN_POLL,
	AGILE_WOKEN_ENDED, /* the group ended: EPIPE */
};

/**
 * struct agile_wait_entry - one condition of a waiter
 * @node: in the slot's @waiters list while queued, if @linked.
 * @waiter: the waiter the entry belongs to.
 * @slot: the doorbell's slot, below the context's nr_slots.
 * @cmp: AGILE_CMP_*.
 * @value: right-hand side of the comparison.
 * @linked: the waiter's first entry on @slot: only it is queued, so a
 *	waiter appears once on a slot's list and counts once as a sleeper.
 */
struct agile_wait_entry {
	struct list_head node;
	struct agile_waiter *waiter;
	u32 slot;
	u32 cmp;
	u32 value;
	bool linked;
};

/**
 * struct agile_waiter - a task in WAIT or WAIT_ANY
 * @node: in agile_ctx.sleepers while queued.
 * @task: the sleeping task.
 * @entries: its conditions.
 * @nr_entries: number of @entries.
 * @index: result: the entry that held.
 * @observed: result: the doorbell value that made it hold.
 * @woken: AGILE_WOKEN_*; set once by the waker that dequeued the waiter.
 */
struct agile_waiter {
	struct list_head node;
	struct task_struct *task;
	struct agile_wait_entry *entries;
	u32 nr_entries;
	u32 index;
	u32 observed;
	int woken;
};

/* main.c: tunables (module parameters, also written through sysfs) */
extern unsigned int agile_poll_interval_us;
extern unsigned int agile_poll_max_checks;
extern unsigned int agile_poll_cpu_permille;
extern unsigned int agile_spin_ns;
extern unsigned int agile_max_slots;
extern unsigned int agile_max_segment_bytes;
extern unsigned int agile_max_contexts_per_user;

/* ctx.c */
extern atomic_t agile_nr_contexts;
DECLARE_PER_CPU(struct agile_counters, agile_totals);

int agile_ctx_check_sizes(u32 nr_slots, u32 task_reg_size);
int agile_ctx_check_limit(u32 nr_slots);
int agile_ctx_check_init(const struct agile_ctx_init *args);
struct agile_ctx *agile_ctx_create(u32 nr_slots, u32 task_reg_size);
void agile_ctx_fill_init(const struct agile_ctx *ctx,
			 struct agile_ctx_init *args);
void agile_ctx_put(struct agile_ctx *ctx);
int agile_ctx_mmap(struct agile_ctx *ctx, struct vm_area_struct *vma);
int agile_pages_mmap(struct vm_area_struct *vma, struct page **pages,
		     unsigned long nr_pages);
struct page **agile_pages_alloc(unsigned long nr_pages);
void agile_pages_free(struct page **pages, unsigned long nr_pages);
void agile_ctx_stats(const struct agile_ctx *ctx, struct agile_stats *stats);
const struct agile_task_reg *agile_ctx_task_reg(const struct agile_ctx *ctx,
						u32 slot);
u64 agile_counter_sum(const struct agile_counters __percpu *counters,
		      enum agile_counter counter);

static inline void agile_count(struct agile_ctx *ctx,
			       enum agile_counter counter)
{
	this_cpu_inc(ctx->counters->count[counter]);
	this_cpu_inc(agile_totals.count[counter]);
}

/* fence.c */
int agile_fence_ioctl(struct agile_ctx *ctx, struct agile_fence __user *uarg,
		      bool writable);
int agile_wait_any_ioctl(struct agile_ctx *ctx,
			 struct agile_wait_any __user *uarg);
bool agile_waiter_check(const struct agile_ctx *ctx,
			const struct agile_waiter *w, u32 *index,
			u32 *observed);
void agile_waiter_wake(struct agile_ctx *ctx, struct agile_waiter *w,
		       enum agile_woken reason, u32 index, u32 observed);
void agile_ctx_end(struct agile_ctx *ctx);

/* group.c */
extern atomic_t agile_nr_groups;

struct agile_ctx *agile_group_join_ioctl(struct agile_group_join __user *uarg,
					 bool writable);
int agile_group_query_ioctl(struct agile_group_join __user *uarg);
void agile_group_leave(struct agile_ctx *ctx);
void agile_group_free(struct agile_group *group);
void agile_group_show_fdinfo(struct seq_file *m,
			     const struct agile_group *group);

/* seg.c */
int agile_seg_create_ioctl(struct agile_ctx *ctx,
			   struct agile_seg_create __user *uarg, bool writable);
const struct agile_seg *agile_seg_get(struct agile_ctx *ctx, u32 id);
int agile_seg_find_mmap(struct agile_ctx *ctx, unsigned long pgoff,
			struct page ***pages, unsigned long *nr_pages);
void agile_seg_free_all(struct agile_ctx *ctx);

/* limits.c */
extern atomic_long_t agile_nr_pages;

int agile_charge(struct agile_charge *charge, unsigned long nr_pages);
void agile_uncharge(struct agile_charge *charge);
struct agile_user *agile_user_get(void);
void agile_user_put(struct agile_user *user);

/* dmabuf.c */
int agile_dmabuf_export_ioctl(struct agile_ctx *ctx,
			      struct agile_export_dmabuf __user *uarg,
			      bool writable);

/* poll.c */
/* The poller's counters, as sysfs shows them. */
struct agile_poll_stats {
	u64 ticks;
	u64 checks;
	u64 ns;
	u64 stretched;
	unsigned int contexts;
	unsigned int users;
	unsigned int budget;
};

/* A context's poll counters and its owner's, as fdinfo shows them. */
struct agile_poll_ctx_stats {
	u64 checks;
	u64 owner_turns;
	u64 owner_checks;
	u64 owner_ns;
	unsigned int owner_contexts;
};

void agile_poll_init(void);
void agile_poll_exit(void);
void agile_poll_add(struct agile_ctx *ctx);
void agile_poll_ctx_release(struct agile_ctx *ctx);
void agile_poll_read_stats(struct agile_poll_stats *stats);
void agile_poll_read_ctx_stats(const struct agile_ctx *ctx,
			       struct agile_poll_ctx_stats *stats);

/* fdinfo.c */
void agile_ctx_show_fdinfo(struct seq_file *m, struct agile_ctx *ctx);

/* sysfs.c */
extern const struct attribute_group *agile_groups[];
int agile_sysfs_check_params(void);

#endif /* AGILE_KMOD_AGILE_H */
