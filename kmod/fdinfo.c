// SPDX-License-Identifier: GPL-2.0-only
/*
 * /proc/PID/fdinfo/FD of an open /dev/agile: the file's context as
 * "key:\tvalue" lines, as io_uring shows its rings.  procfs lets only a
 * reader that may ptrace the process (PTRACE_MODE_READ) open it, so this
 * shows nothing the owner's pages and counters do not already tell such
 * a reader.  agile(4) documents every key.
 *
 * Locking: ctx->lock (spin_lock_bh) for a copy of the waiter count,
 * agile_poller.lock (in poll.c) for a copy of the poll counters and
 * agile_group_lock (in group.c) for a copy of the group's facts, one
 * after the other, never nested, each held for a few loads.  The slots
 * are read with no lock: their doorbell and task-register words live in
 * pages userspace writes at any time, and slot->sleepers is read as
 * SIGNAL reads it, with READ_ONCE().  seq_file's buffer is kernel memory:
 * the copy to the reader happens after this returns, with nothing held.
 */

#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>

#include "agile.h"

/*
 * Most slots shown; the others are counted in slots_not_shown, so a
 * context of 65536 slots in use costs a few KiB, not megabytes.
 */
#define AGILE_FDINFO_MAX_SLOTS 32

/* Argument words of a task register shown (every register has 4). */
#define AGILE_FDINFO_ARGS 4

static void agile_fdinfo_counters(struct seq_file *m,
				  const struct agile_ctx *ctx)
{
	struct agile_stats stats = {};

	agile_ctx_stats(ctx, &stats);
	seq_printf(m, "signals:\t%llu\n", stats.signals);
	seq_printf(m, "waits:\t%llu\n", stats.waits);
	seq_printf(m, "wakeups_signal:\t%llu\n", stats.wakeups_signal);
	seq_printf(m, "wakeups_poll:\t%llu\n", stats.wakeups_poll);
	seq_printf(m, "timeouts:\t%llu\n", stats.timeouts);
	seq_printf(m, "interrupted:\t%llu\n", stats.interrupted);
	seq_printf(m, "spin_hits:\t%llu\n", stats.spin_hits);
}

/*
 * The poller's work for this context, and for every context of its owner
 * (the user that made it) together: whose sleepers cost what (poll.c).
 */
static void agile_fdinfo_poll(struct seq_file *m, const struct agile_ctx *ctx)
{
	struct agile_poll_ctx_stats stats;

	agile_poll_read_ctx_stats(ctx, &stats);
	seq_printf(m, "poll_checks:\t%llu\n", stats.checks);
	seq_printf(m, "poll_owner_uid:\t%u\n",
		   from_kuid_munged(seq_user_ns(m), ctx->owner->uid));
	seq_printf(m, "poll_owner_contexts:\t%u\n", stats.owner_contexts);
	seq_printf(m, "poll_owner_turns:\t%llu\n", stats.owner_turns);
	seq_printf(m, "poll_owner_checks:\t%llu\n", stats.owner_checks);
	seq_printf(m, "poll_owner_ns:\t%llu\n", stats.owner_ns);
}

static void agile_fdinfo_segments(struct seq_file *m, struct agile_ctx *ctx)
{
	unsigned long nr_pages = 0;
	u32 id, nr_segs = 0;

	for (id = 0; id < AGILE_MAX_SEGMENTS; id++) {
		const struct agile_seg *seg = agile_seg_get(ctx, id);

		if (seg) {
			nr_segs++;
			nr_pages += seg->nr_pages;
		}
	}
	seq_printf(m, "segments:\t%u\n", nr_segs);
	seq_printf(m, "segment_pages:\t%lu\n", nr_pages);
}

/*
 * Whether slot @i is in use: anything in it differs from a fresh slot
 * (doorbell value, sleepers, or the head of its task register).  If so
 * and @show (fewer than AGILE_FDINFO_MAX_SLOTS were shown), one line.
 */
static bool agile_fdinfo_slot(struct seq_file *m, const struct agile_ctx *ctx,
			      u32 i, bool show)
{
	const struct agile_task_reg *reg = agile_ctx_task_reg(ctx, i);
	const struct agile_slot *slot = &ctx->slots[i];
	u32 value = READ_ONCE(slot->doorbell->value);
	unsigned int sleepers = READ_ONCE(slot->sleepers);
	u32 opcode = READ_ONCE(reg->opcode);
	u32 nr_parts = READ_ONCE(reg->nr_parts);
	u32 flags = READ_ONCE(reg->flags);
	s32 error = READ_ONCE(reg->error);
	u32 error_lane = READ_ONCE(reg->error_lane);
	u64 status = READ_ONCE(reg->status);
	int a;

	if (!value && !sleepers && !opcode && !nr_parts && !flags && !error &&
	    !error_lane && !status)
		return false;
	if (!show)
		return true;
	seq_printf(m, "slot:\t%u value=%u sleepers=%u", i, value, sleepers);
	seq_printf(m, " opcode=%u nr_parts=%u flags=%#x", opcode, nr_parts,
		   flags);
	seq_printf(m, " error=%d error_lane=%u status=%#llx args=", error,
		   error_lane, status);
	for (a = 0; a < AGILE_FDINFO_ARGS; a++)
		seq_printf(m, "%s%#llx", a ? "," : "",
			   (u64)READ_ONCE(reg->args[a]));
	seq_putc(m, '\n');
	return true;
}

static void agile_fdinfo_slots(struct seq_file *m, const struct agile_ctx *ctx)
{
	u32 i, in_use = 0;

	for (i = 0; i < ctx->nr_slots; i++) {
		if (agile_fdinfo_slot(m, ctx, i,
				      in_use < AGILE_FDINFO_MAX_SLOTS))
			in_use++;
		/* Up to 65536 slots, with no lock held. */
		if (!(i % 1024))
			cond_resched();
	}
	seq_printf(m, "slots_in_use:\t%u\n", in_use);
	seq_printf(m, "slots_not_shown:\t%u\n",
		   in_use - min_t(u32, in_use, AGILE_FDINFO_MAX_SLOTS));
}

/**
 * agile_ctx_show_fdinfo - the fdinfo lines of a file's context
 * @m: the fdinfo seq_file.
 * @ctx: the file's context, or NULL before CTX_INIT and GROUP_JOIN; the
 *	open file holds its reference.
 */
void agile_ctx_show_fdinfo(struct seq_file *m, struct agile_ctx *ctx)
{
	unsigned int nr_sleepers;
	bool ended;

	if (!ctx) {
		seq_puts(m, "ctx:\tnone\n");
		return;
	}
	seq_printf(m, "ctx:\t%u\n", ctx->id);
	seq_printf(m, "nr_slots:\t%u\n", ctx->nr_slots);
	seq_printf(m, "task_reg_size:\t%u\n", ctx->task_reg_size);
	seq_printf(m, "pages:\t%lu\n", ctx->nr_pages);
	agile_fdinfo_counters(m, ctx);

	spin_lock_bh(&ctx->lock);
	nr_sleepers = ctx->nr_sleepers;
	ended = ctx->ended;
	spin_unlock_bh(&ctx->lock);
	seq_printf(m, "sleepers:\t%u\n", nr_sleepers);
	seq_printf(m, "ended:\t%d\n", ended);
	agile_fdinfo_poll(m, ctx);

	agile_fdinfo_segments(m, ctx);
	agile_group_show_fdinfo(m, ctx->group);
	agile_fdinfo_slots(m, ctx);
}
