// SPDX-License-Identifier: MIT
/*
 * shm.c - the collectives over shared memory: threads of a process
 * and processes of a node execute the plans of plan.h here.
 *
 * PULL model.  Every member's SEND and WORK are readable by all (threads:
 * the caller's buffers, whose addresses each member publishes per
 * collective; processes: places in the member's exchange segment, mapped
 * by all, published as offsets).  A step that brings data in reads it
 * straight from the peer's buffer: a halving step reads the peer's copy
 * of the segment this member keeps and reduces it into its own (round 0:
 * SEND (op) peer's SEND into WORK, one pass), a gather step copies, and a
 * flat gather (processes) copies each block of the result from its holder
 * into the caller's recv.  One copy, no intermediate buffer.  A member
 * reads its own SEND where the caller has it; peers read a shared copy
 * (node.c copies in only what they read).  A member's own blocks of the
 * result go into its recv as its last halving round reduces them (the
 * plan's also_recv: reduce_also), not read back by a copy; into a private
 * recv, a call of stream_from bytes or more writes with non-temporal
 * stores (agile__coll_copy_streaming) and fences once per step.
 *
 * Progress is a sequence number per member in its doorbell (agile_dev
 * slot bank * size + rank): the plan's values 1 .. span, plus a base that
 * grows by span per collective, so a value never repeats.  A step waits
 * until each peer it depends on has published the value the plan names
 * (agile_dev_wait_spin, AGILE_CMP_GE: spin, then sleep; with more
 * members than CPUs, yield, then sleep), runs, publishes
 * (agile_dev_signal).  So the reduce of segment j starts as soon as the
 * partner has published segment j of the previous round (the overlap of
 * seed 001: a member reduces segment j while its partner still produces
 * j + 1), and in the interleaved layout a round's last segment is
 * reduced after the next round's first (the deferred tail: what the next
 * partner needs first is published first).
 *
 * Memory ordering (every acquire names its release):
 *  - agile_dev_signal's release store of a value, after the step's
 *    writes (and, for value 1, after the member's buffer addresses and
 *    copy-in) <-> the acquire load in agile_dev_wait_spin of the peer that
 *    waits for it: the peer then reads the addresses and the data.
 *  - write-after-read: a reader publishes after its read; the writer's
 *    wait for that value is the acquire (the plan's WAR and EXIT waits),
 *    so the read happens before the overwrite, in this collective or the
 *    caller's next use of the buffers.
 *  - bank switch (switch_bank): two rounds of release stores and acquire
 *    waits on the new bank; the second orders every member's reset of its
 *    old-bank word before anyone's later wait on it.
 * A peer that dies (processes scope) ends its group: every wait fails
 * with -EPIPE, and so does the collective (never a hang).
 *
 * Loud failures.  With its addresses each member publishes what it calls
 * (struct coll_desc, numbered by call).  Before it trusts a peer at all
 * (waits for more than its value 1, reads its buffers) a member waits
 * for the peer's value 1 of this call and compares descriptors, and it
 * returns 0 only after it has done so for every peer
 * (coll_shm_check_peer): the members' values mean the same steps only
 * while they run the same call, so a member that trusted the values of a
 * peer in another call
 * (a barrier's, whose span is 1, then that peer's next call, alike by
 * kind and count) would read its buffers a step early.  Where they differ
 * it fails with -EPROTO, so every member of a call the members disagree
 * on fails (each differs from some peer, and checks it or sees its
 * poison).  Every member publishes value 1 before it waits for anything
 * but a fold receiver for its extra's value 1, so these waits end; after
 * them a member waits only for peers in its own call.  A member whose
 * call fails once started (that, a dead peer, its own allocation) stores
 * COLL_POISON in its words: every wait on it is satisfied at once, the
 * waiter sees the poison, fails with -EPIPE and poisons its own words, so
 * the error reaches every member, each of which first waits until its
 * readers are done with its buffers (run_failed) and then returns.  The
 * member keeps the values it had reached beside the poison
 * (COLL_LINE_LAST): a wait for one of those still succeeds, so that a
 * peer still in the call before, which the failed member had completed,
 * completes it too instead of failing alone.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/shm.h"
#include "env.h"
#include "transport/procs.h"
#include "sys.h"

/* Values stay below this: the kernel's comparison is unsigned. */
#define SEQ_LIMIT_DEFAULT (1u << 31)
/* reduce_also: the block reduced, then copied while still in L1 */
#define COLL_ALSO_BLOCK_BYTES (16U << 10)
/*
 * Processes: from this many bytes of a call up, its results go into a
 * private recv with non-temporal stores (agile__coll_copy_streaming): a result
 * that large leaves the caches anyway, and a plain store first reads the
 * line it overwrites.  On the 2-core development VM (32 MiB of L3), 2
 * processes, private buffers, medians of 15 cold calls, five runs each
 * way (2026-11-26): 2 MiB slower streamed in 4 runs of 5 (minimums
 * 1.13-1.43x: the members' buffers fit in the cache), 8 MiB even (0.77-
 * 1.65x), 32 MiB 1.02-1.39x faster, 64 MiB 1.2-1.9x (three runs); 4
 * processes at 64 MiB 1.35-1.52x faster (three runs).
 */
#define COLL_STREAM_FROM_BYTES (8ULL << 20)

static uint32_t slot_of(const struct coll_shm *c, uint32_t bank, uint32_t rank)
{
	return bank * (uint32_t)c->base.size + rank;
}

static int publish(struct coll_shm *c, uint32_t value)
{
	return agile_dev_signal(
		c->dev, slot_of(c, c->bank, (uint32_t)c->base.rank), value);
}

/*
 * More members than CPUs (c->yield_ns): look, give the CPU away, look
 * again, up to c->yield_ns; true if @slot reached @value.  The peer this
 * member waits for is likely runnable but without a CPU: a yield lets it
 * run at once, where a spin would hold it off and a sleep would cost a
 * futex wake (an IPI, in a VM an exit) on both sides.  The acquire load
 * pairs with agile_dev_signal's release store, as the dev wait's does.
 */
static bool yield_until_ge(struct coll_shm *c, uint32_t slot, uint32_t value,
			   uint32_t *seen)
{
	struct agile_doorbell *db;
	uint64_t end = 0;

	if (agile_dev_slot(c->dev, slot, &db, NULL))
		return false;
	for (unsigned int i = 0;; i++) {
		*seen = __atomic_load_n(&db->value, __ATOMIC_ACQUIRE);
		if (*seen >= value)
			return true;
		if (i % 16 == 0) {
			uint64_t now = agile_mono_ns();

			if (!end)
				end = now + c->yield_ns;
			else if (now >= end)
				return false;
		}
		sched_yield();
	}
}

/*
 * Wait until @rank's word has reached @value; *@seen: what it holds then
 * (COLL_POISON: the member has failed).
 */
static int wait_seen(struct coll_shm *c, uint32_t rank, uint32_t value,
		     uint32_t *seen)
{
	uint32_t slot = slot_of(c, c->bank, rank);

	/* No timeout: a dead peer ends the group, a failed one poisons. */
	if (c->yield_ns && yield_until_ge(c, slot, value, seen))
		return 0;
	return agile_dev_wait_spin(c->dev, slot, AGILE_CMP_GE, value,
				   c->spin_ns, AGILE_TIMEOUT_INFINITE, seen);
}

/* Member @q's protocol words (COLL_LINE_*). */
static uint32_t *line_words(const struct coll_shm *c, uint32_t q)
{
	struct agile_doorbell *db = NULL;

	if (c->scope == COLL_SCOPE_THREADS)
		return c->addrs[q].words;
	agile_dev_slot(c->dev, slot_of(c, 1, q), &db, NULL);
	return db->user;
}

/*
 * Wait for @rank's @value; -EPIPE if the member has failed before it
 * published that value.  Its COLL_LINE_LAST words were stored before the
 * poison's release, and the wait's acquire saw the poison.
 */
static int wait_ge(struct coll_shm *c, uint32_t rank, uint32_t value)
{
	uint32_t seen = 0;
	int err = wait_seen(c, rank, value, &seen);

	if (!err && seen == COLL_POISON &&
	    __atomic_load_n(&line_words(c, rank)[COLL_LINE_LAST + c->bank],
			    __ATOMIC_RELAXED) < value)
		err = -EPIPE;
	return err;
}

static int wait_all_bank(struct coll_shm *c, uint32_t value)
{
	for (uint32_t q = 0; q < (uint32_t)c->base.size; q++) {
		int err;

		if (q == (uint32_t)c->base.rank)
			continue;
		err = wait_ge(c, q, value);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Store COLL_POISON in both banks' words of this member (see shm.h), after
 * what they held (the release of agile_dev_signal orders it before).
 */
static void poison(struct coll_shm *c)
{
	uint32_t me = (uint32_t)c->base.rank, *last = line_words(c, me);

	for (uint32_t bank = 0; bank < 2; bank++) {
		struct agile_doorbell *db;

		if (agile_dev_slot(c->dev, slot_of(c, bank, me), &db, NULL))
			continue;
		/* only this member writes its words */
		__atomic_store_n(&last[COLL_LINE_LAST + bank],
				 __atomic_load_n(&db->value, __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
	}
	agile_dev_signal(c->dev, slot_of(c, c->bank ^ 1, me), COLL_POISON);
	agile_dev_signal(c->dev, slot_of(c, c->bank, me), COLL_POISON);
}

int coll_shm_abort(struct coll_shm *c, int err)
{
	if (!c->broken) {
		c->broken = err;
		poison(c);
	}
	return c->broken;
}

/*
 * Move to the other bank, whose words are all 0: after the first round
 * everyone has left the old bank (no wait on it is pending), each member
 * zeroes its old word, and the second round makes those zeroes visible
 * before anyone returns to that bank, a 2^31 values later.
 */
static int switch_bank(struct coll_shm *c)
{
	uint32_t old = c->bank;
	int err;

	c->bank ^= 1;
	err = publish(c, 1);
	if (!err)
		err = wait_all_bank(c, 1);
	if (!err)
		err = agile_dev_signal(
			c->dev, slot_of(c, old, (uint32_t)c->base.rank), 0);
	if (!err)
		err = publish(c, 2);
	if (!err)
		err = wait_all_bank(c, 2);
	c->seq_base = 2;
	return err;
}

/*
 * The switch does not depend on this call's span but on the largest any
 * call has: members that disagree on the call (and so on its span) still
 * all switch or all stay, then find out at the check of their value 1.
 */
int coll_shm_begin(struct coll_shm *c, uint32_t span)
{
	int err = 0;

	if (c->broken)
		return c->broken;
	if (span > c->span_max)
		return coll_shm_abort(c, -EINVAL); /* cannot happen */
	if ((uint64_t)c->seq_base + c->span_max >= c->seq_limit)
		err = switch_bank(c);
	if (err)
		return coll_shm_abort(c, err);
	c->call++;
	if (++c->epoch == 0) {
		memset(c->peer_epoch, 0,
		       (size_t)c->base.size * sizeof(*c->peer_epoch));
		memset(c->peer_checked, 0,
		       (size_t)c->base.size * sizeof(*c->peer_checked));
		c->epoch = 1;
	}
	return err;
}

/* Member @q's words of descriptor slot @slot (struct coll_desc). */
static uint32_t *desc_words(const struct coll_shm *c, uint32_t q, uint32_t slot)
{
	return line_words(c, q) + COLL_LINE_DESC + slot * COLL_DESC_WORDS;
}

void coll_shm_publish_desc(struct coll_shm *c, const struct coll_desc *desc)
{
	uint32_t *w = desc_words(c, (uint32_t)c->base.rank, c->call & 1);

	c->desc = *desc;
	c->desc.call = c->call;
	/* ordered before value 1 by its release (publish) */
	__atomic_store_n(&w[COLL_DESC_CALL], c->desc.call, __ATOMIC_RELAXED);
	__atomic_store_n(&w[COLL_DESC_WHAT], desc->what, __ATOMIC_RELAXED);
	__atomic_store_n(&w[COLL_DESC_COUNT], (uint32_t)desc->count,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&w[COLL_DESC_COUNT + 1], (uint32_t)(desc->count >> 32),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&w[COLL_DESC_ROOT], desc->root, __ATOMIC_RELAXED);
}

/* Make this collective's SEND and WORK known (before value 1). */
static void publish_addrs(struct coll_shm *c, const void *send, void *work)
{
	uint32_t me = (uint32_t)c->base.rank;
	struct agile_doorbell *db;

	if (c->scope == COLL_SCOPE_THREADS) {
		c->addrs[me].send = send;
		c->addrs[me].work = work;
		return;
	}
	agile_dev_slot(c->dev, me, &db, NULL);
	procs_set_word_pair(db, COLL_WORD_SEND,
			    send ? (uint64_t)((const char *)send - c->seg[me]) :
				   UINT64_MAX);
	procs_set_word_pair(db, COLL_WORD_WORK,
			    work ? (uint64_t)((char *)work - c->seg[me]) :
				   UINT64_MAX);
}

/*
 * A peer's SEND and WORK for this collective, after a check that it runs
 * the same call (coll_shm_check_peer: done already, as the plan puts a
 * wait on the peer before every read).  Its acquire pairs with the peer's
 * release of value 1, which came after publish_desc and publish_addrs;
 * and the peer cannot have moved on to its next call, whose addresses
 * would overwrite these, before this member has read its buffers (its
 * EXIT waits).  Processes: offsets past the segment (a broken peer) come
 * back as NULL.
 */
static int resolve(struct coll_shm *c, uint32_t q)
{
	struct agile_doorbell *db;
	uint64_t s, w;
	int err;

	if (c->peer_epoch[q] == c->epoch)
		return 0;
	err = coll_shm_check_peer(c, q);
	if (err)
		return err;
	if (c->scope == COLL_SCOPE_THREADS) {
		c->peer_send[q] = c->addrs[q].send;
		c->peer_work[q] = c->addrs[q].work;
	} else {
		agile_dev_slot(c->dev, q, &db, NULL);
		s = procs_word_pair(db, COLL_WORD_SEND);
		w = procs_word_pair(db, COLL_WORD_WORK);
		c->peer_send[q] = s < c->seg_bytes ? c->seg[q] + s : NULL;
		c->peer_work[q] = w < c->seg_bytes ? c->seg[q] + w : NULL;
	}
	c->peer_epoch[q] = c->epoch;
	return 0;
}

/* Is member @q's descriptor of this call (slot call & 1) this member's? */
static bool desc_alike(const struct coll_shm *c, uint32_t q)
{
	const uint32_t *w = desc_words(c, q, c->call & 1);
	struct coll_desc d;

	d.call = __atomic_load_n(&w[COLL_DESC_CALL], __ATOMIC_RELAXED);
	d.what = __atomic_load_n(&w[COLL_DESC_WHAT], __ATOMIC_RELAXED);
	d.count = (uint64_t)__atomic_load_n(&w[COLL_DESC_COUNT],
					    __ATOMIC_RELAXED) |
		  (uint64_t)__atomic_load_n(&w[COLL_DESC_COUNT + 1],
					    __ATOMIC_RELAXED)
			  << 32;
	d.root = __atomic_load_n(&w[COLL_DESC_ROOT], __ATOMIC_RELAXED);
	return d.call == c->desc.call && d.what == c->desc.what &&
	       d.count == c->desc.count && d.root == c->desc.root;
}

/*
 * The wait's acquire pairs with @q's release of value 1 (or of a later
 * value, of this call or the next), which came after its publish_desc of
 * this call; its next call writes the other slot.  Values of this call
 * are the same on every member as long as every earlier call was alike on
 * all (each member checked every peer then), so a peer in another call
 * has published the same value 1 after its own descriptor.
 */
int coll_shm_check_peer(struct coll_shm *c, uint32_t q)
{
	int err;

	if (q == (uint32_t)c->base.rank || c->peer_checked[q] == c->epoch)
		return 0;
	err = wait_ge(c, q, c->seq_base + 1);
	if (err)
		return err;
	if (!desc_alike(c, q))
		return -EPROTO;
	c->peer_checked[q] = c->epoch;
	return 0;
}

int coll_shm_check_peers(struct coll_shm *c)
{
	for (uint32_t q = 0; q < (uint32_t)c->base.size; q++) {
		int err = coll_shm_check_peer(c, q);

		if (err)
			return err;
	}
	return 0;
}

int coll_shm_signal(struct coll_shm *c, uint32_t value)
{
	return publish(c, value);
}

int coll_shm_wait(struct coll_shm *c, uint32_t rank, uint32_t value)
{
	return wait_ge(c, rank, value);
}

int coll_shm_wait_seen(struct coll_shm *c, uint32_t rank, uint32_t value)
{
	uint32_t seen = 0;

	return wait_seen(c, rank, value, &seen);
}

/* Processes: is [@p, @p + @bytes) inside member @q's segment? */
static bool in_segment(const struct coll_shm *c, uint32_t q, const char *p,
		       uint64_t bytes)
{
	if (c->scope == COLL_SCOPE_THREADS)
		return true;
	return p >= c->seg[q] && bytes <= c->seg_bytes &&
	       (size_t)(p - c->seg[q]) <= c->seg_bytes - bytes;
}

struct run_ctx {
	struct coll_shm *c;
	const struct coll_reducer *rd;
	size_t esize;
	char *mine[4]; /* by enum agile_coll_buf */
	bool stream_recv;
};

/*
 * A reduce whose result is final (step also_recv): into @to (WORK, read
 * by peers) and into @also (RECV), a cache-sized block at a time, so the
 * copy reads the block back from the cache.
 */
static void reduce_also(const struct run_ctx *x, char *to, char *also,
			const char *left, const char *right, size_t count)
{
	size_t es = x->esize, block = COLL_ALSO_BLOCK_BYTES / es;

	for (size_t at = 0; at < count; at += block) {
		size_t n = count - at < block ? count - at : block;

		agile__coll_reduce(x->rd, to + at * es, left + at * es,
				   right + at * es, n);
		if (x->stream_recv)
			agile__coll_copy_streaming(also + at * es, to + at * es,
						   n * es);
		else
			memcpy(also + at * es, to + at * es, n * es);
	}
}

static int transfer(struct run_ctx *x, const struct agile_coll_plan *plan,
		    const struct agile_coll_step *s)
{
	struct coll_shm *c = x->c;
	uint32_t q = (uint32_t)s->peer;
	const char *src;
	char *dst = x->mine[s->dst_buf], *left = x->mine[s->left_buf];
	size_t es = x->esize;

	if (!s->nr_runs)
		return 0; /* an empty segment: no wait came before it */
	if (q == (uint32_t)c->base.rank) {
		src = x->mine[s->src_buf];
	} else {
		int err = resolve(c, q);

		if (err)
			return err;
		src = s->src_buf == AGILE_COLL_BUF_SEND ? c->peer_send[q] :
							  c->peer_work[q];
	}
	if (!src || !dst)
		return -EPROTO;
	for (uint32_t i = 0; i < s->nr_runs; i++) {
		const struct agile_coll_run *r = &plan->runs[s->run + i];
		const char *from = src + r->src * es;
		char *to = dst + r->dst * es;

		if (q != (uint32_t)c->base.rank &&
		    !in_segment(c, q, from, r->len * es))
			return -EPROTO;
		if (s->action == AGILE_COLL_ACT_COPY) {
			if (from == to)
				continue;
			if (x->stream_recv && s->dst_buf == AGILE_COLL_BUF_RECV)
				agile__coll_copy_streaming(to, from,
							   r->len * es);
			else
				memcpy(to, from, r->len * es);
		} else {
			const char *l = left + r->dst * es;
			const char *a = s->peer_left ? from : l;
			const char *b = s->peer_left ? l : from;
			char *also = x->mine[AGILE_COLL_BUF_RECV];

			if (s->also_recv && also && also != dst)
				reduce_also(x, to, also + r->dst * es, a, b,
					    r->len);
			else
				agile__coll_reduce(x->rd, to, a, b, r->len);
		}
	}
	/* so the caller's own release orders the streaming stores */
	if (x->stream_recv)
		agile__coll_stream_fence();
	return 0;
}

int coll_shm_plan(struct coll_shm *c, const struct agile_coll_plan_params *pa)
{
	int err;

	if (c->plan_ok && !memcmp(&c->plan.params, pa, sizeof(*pa)))
		return 0;
	c->plan_ok = false;
	err = agile_coll_plan_build(&c->plan, pa);
	c->plan_ok = !err;
	return err;
}

/*
 * After an error in coll_shm_run: poison (coll_shm_abort), then wait
 * until every peer that reads this member's buffers in @plan has read
 * them or has failed itself (its poison passes every wait), so that the
 * caller may free them once we return.  A peer that sees the poison
 * fails and poisons its own words, so these waits end.
 */
static int run_failed(struct coll_shm *c, const struct agile_coll_plan *plan,
		      uint32_t base, int err)
{
	err = coll_shm_abort(c, err);
	for (uint32_t k = 0; k < plan->nr_steps; k++) {
		const struct agile_coll_step *s = &plan->steps[k];

		if (s->phase != AGILE_COLL_PHASE_EXIT)
			continue;
		for (uint32_t i = 0; i < s->nr_waits; i++) {
			const struct agile_coll_wait *w =
				&plan->waits[s->wait + i];
			uint32_t seen;

			if (wait_seen(c, w->rank, base + w->value, &seen))
				return err; /* dead: it reads no more */
		}
	}
	return err;
}

int coll_shm_run(struct coll_shm *c, const struct coll_desc *desc,
		 const void *send, const void *send_shared, void *work,
		 void *recv, const struct coll_reducer *rd, bool stream_recv)
{
	const struct agile_coll_plan *plan = &c->plan;
	uint32_t base;
	struct run_ctx x = {
		.c = c,
		.rd = rd,
		.esize = rd->size,
		.mine = { NULL, (char *)send, work, recv },
		.stream_recv = stream_recv,
	};
	int err;

	if (!c->plan_ok)
		return coll_shm_abort(c, -EINVAL);
	err = coll_shm_begin(c, plan->seq_span);
	if (err)
		return err;
	coll_shm_publish_desc(c, desc);
	publish_addrs(c, send_shared, work);
	base = c->seq_base;
	for (uint32_t k = 0; k < plan->nr_steps; k++) {
		const struct agile_coll_step *s = &plan->steps[k];

		for (uint32_t i = 0; i < s->nr_waits; i++) {
			const struct agile_coll_wait *w =
				&plan->waits[s->wait + i];

			/* its values are this plan's only in this call */
			err = coll_shm_check_peer(c, w->rank);
			if (!err)
				err = wait_ge(c, w->rank, base + w->value);
			if (err)
				return run_failed(c, plan, base, err);
		}
		if (s->action != AGILE_COLL_ACT_NONE) {
			err = transfer(&x, plan, s);
			if (err)
				return run_failed(c, plan, base, err);
		}
		if (s->publish) {
			err = publish(c, base + s->publish);
			if (err)
				return run_failed(c, plan, base, err);
		}
	}
	/* the peers no step waited for may be in another call */
	err = coll_shm_check_peers(c);
	if (err)
		return run_failed(c, plan, base, err);
	c->seq_base += plan->seq_span;
	return 0;
}

int coll_shm_barrier(struct coll_shm *c)
{
	struct coll_desc desc = { .what = COLL_DESC_BARRIER };
	int err = coll_shm_begin(c, 1);

	if (err)
		return err;
	coll_shm_publish_desc(c, &desc);
	err = publish(c, c->seq_base + 1);
	if (!err)
		err = coll_shm_check_peers(c);
	if (err)
		return coll_shm_abort(c, err);
	c->seq_base += 1;
	return 0;
}

/*
 * The smallest call whose results go into a private recv with
 * non-temporal stores: $AGILE_COLL_STREAM_FROM (bytes, or "off"), else
 * COLL_STREAM_FROM_BYTES.
 */
static uint64_t stream_from(void)
{
	const char *env = getenv("AGILE_COLL_STREAM_FROM");
	unsigned long long v;
	char *end;

	if (!env || !*env)
		return COLL_STREAM_FROM_BYTES;
	if (!strcmp(env, "off"))
		return UINT64_MAX;
	errno = 0;
	v = strtoull(env, &end, 0);
	if (*end || errno || *env == '-') {
		agile__env_invalid("AGILE_COLL_STREAM_FROM", env,
				   "a size in bytes or off; the default "
				   "applies");
		return COLL_STREAM_FROM_BYTES;
	}
	return v;
}

int coll_shm_init(struct coll_shm *c)
{
	size_t n = (size_t)c->base.size;
	const char *env = getenv("AGILE_COLL_SEQ_LIMIT");

	c->seq_limit = SEQ_LIMIT_DEFAULT;
	c->stream_from = stream_from();
	if (env && *env) {
		char *end;
		unsigned long v = strtoul(env, &end, 10);

		if (!*end && v >= 1024 && v <= SEQ_LIMIT_DEFAULT)
			c->seq_limit = (uint32_t)v;
		else
			agile__env_invalid(
				"AGILE_COLL_SEQ_LIMIT", env,
				"a number from 1024 to the default "
				"(agile/coll.h); the default applies");
	}
	/* reductions' plans are the longest (plan.c); a barrier's span is 1 */
	c->span_max = agile_coll_plan_seq_span(&(struct agile_coll_plan_params){
		.nr_members = (uint32_t)n,
		.kind = AGILE_COLL_KIND_ALLREDUCE,
		.segments = c->opts.segments,
	});
	if (c->span_max < COLL_CMA_SPAN)
		c->span_max = COLL_CMA_SPAN;
	c->peer_send = calloc(n, sizeof(*c->peer_send));
	c->peer_work = calloc(n, sizeof(*c->peer_work));
	c->peer_epoch = calloc(n, sizeof(*c->peer_epoch));
	c->peer_checked = calloc(n, sizeof(*c->peer_checked));
	/* a non-commutative user op's: a call must not fail for want of it */
	if (c->opts.user_fn && !c->opts.user_commutative)
		c->bounce = malloc(COLL_BOUNCE_BYTES);
	if (!c->peer_send || !c->peer_work || !c->peer_epoch ||
	    !c->peer_checked ||
	    (c->opts.user_fn && !c->opts.user_commutative && !c->bounce)) {
		coll_shm_release(c);
		return -ENOMEM;
	}
	return 0;
}

void coll_shm_release(struct coll_shm *c)
{
	agile_coll_plan_release(&c->plan);
	c->plan_ok = false;
	free(c->peer_send);
	free(c->peer_work);
	free(c->peer_epoch);
	free(c->peer_checked);
	free(c->bounce);
	free(c->pieces);
	c->peer_send = NULL;
	c->peer_work = NULL;
	c->peer_epoch = NULL;
	c->peer_checked = NULL;
	c->bounce = NULL;
	c->pieces = NULL;
}
