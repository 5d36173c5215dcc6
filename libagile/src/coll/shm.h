/* SPDX-License-Identifier: MIT */
/*
 * shm.h - the shared-memory transport of the collectives (shm.c)
 * and the handle of the two scopes that use it: threads of a process and
 * processes of a node (coll.c).  Private.
 */
#ifndef AGILE_COLL_SHM_H
#define AGILE_COLL_SHM_H

#include <agile/coll.h>
#include <agile/dev.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coll/coll_impl.h"
#include "coll/ops.h"
#include "coll/plan.h"

enum coll_scope {
	COLL_SCOPE_THREADS = 0,
	COLL_SCOPE_PROCS = 1,
};

/*
 * What a call is, as each member publishes it before its value 1: every
 * member compares every peer's with its own before it trusts any progress
 * or data of that peer, and before it returns 0 (coll_shm_check_peer);
 * one unlike its own fails the call with -EPROTO (the members called
 * different collectives, counts, types, ops or roots).  @what: kind |
 * type << 8 | op << 16, kind COLL_DESC_BARRIER for a barrier; @count: the
 * caller's count (a call in pieces publishes the whole call's, so that the
 * pieces of different counts never pair); @call: which collective of the
 * member's this is (coll_shm_begin counts them), so that a peer's
 * descriptor of another call never passes for this one's.
 *
 * A member keeps two descriptors, of its even and its odd calls (slot
 * @call & 1): a peer may still check call k's while the member runs call
 * k + 1, and no member begins call k + 2 before every member has arrived
 * at k + 1 (its checks of call k + 1 wait for that), so slot k & 1 holds
 * until every check of call k is done.
 */
struct coll_desc {
	uint64_t count;
	uint32_t what;
	uint32_t root;
	uint32_t call;
};

#define COLL_DESC_BARRIER 0xffu

static inline struct coll_desc coll_desc_of(uint32_t kind, size_t count,
					    enum agile_coll_type type,
					    enum agile_coll_op op,
					    uint32_t root)
{
	return (struct coll_desc){
		.count = count,
		.what = kind | (uint32_t)type << 8 | (uint32_t)op << 16,
		.root = root,
	};
}

/* The words of a published descriptor (struct coll_desc). */
enum {
	COLL_DESC_CALL = 0,
	COLL_DESC_WHAT = 1,
	COLL_DESC_COUNT = 2, /* two words, low first */
	COLL_DESC_ROOT = 4,
	COLL_DESC_WORDS = 5,
};

/*
 * A member's protocol words (threads: its coll_shm_addrs line; processes:
 * the user words of its line of bank 1, slot size + rank, which nothing
 * else uses): its two descriptors (slot j at j * COLL_DESC_WORDS), and
 * the values it had published in bank 0 and 1 when it failed (written
 * before COLL_POISON: a peer that sees the poison reads them).
 */
enum {
	COLL_LINE_DESC = 0,
	COLL_LINE_LAST = 2 * COLL_DESC_WORDS, /* two words, by bank */
	COLL_LINE_WORDS = COLL_LINE_LAST + 2,
};

/*
 * Threads scope: where a member's SEND and WORK are for the collective
 * running now, and its protocol words (COLL_LINE_*), one line per member
 * in the team.  The addresses are written by the member before it
 * publishes value 1 and read by a peer after it has seen that value (or a
 * later one) of this collective; the protocol words atomically, as a peer
 * may check one descriptor while the member writes the other.
 */
struct coll_shm_addrs {
	_Alignas(64) const void *send;
	void *work;
	uint32_t words[COLL_LINE_WORDS];
};

/*
 * Processes scope: the same, as offsets into the member's exchange
 * segment, in the user words of its doorbell line (slot = rank).  The
 * words set at join are in the line of the member's join index
 * (agile_dev_member), read by the others before the join's last
 * rendezvous; from then on lines are indexed by rank (procs.c).  The
 * protocol words (COLL_LINE_*) are in the member's line of bank 1.
 */
enum {
	COLL_WORD_SEG_ID = 0, /* the segment's id (set at join) */
	COLL_WORD_SEG_BYTES = 1, /* its size, two words (low first) */
	COLL_WORD_SEND = 3, /* SEND's offset, two words */
	COLL_WORD_WORK = 5, /* WORK's offset, two words */
	COLL_WORD_SCHEDULE = 7, /* schedule_word() of procs.c (set at join) */
	COLL_WORD_ORDER = 8, /* agile_coll_opts.order (set at join) */
	/* 10 .. 13: free */
	/* cma.c, set at join: the probe (coll_cma_probe) */
	COLL_WORD_PID = 14, /* the member's pid */
	COLL_WORD_PROBE_ADDR = 15, /* where its probe cookie is, two words */
	COLL_WORD_PROBE_COOKIE = 17, /* the cookie's value, two words */
	COLL_WORD_CMA_ERR = 19, /* 0: it reached every peer, else an errno */
	COLL_WORD_CMA_FROM = 20, /* the smallest call it wants by CMA, two */
	/* cma.c, per call: the caller's own send and recv addresses */
	COLL_WORD_CMA_SEND = 22, /* two words */
	COLL_WORD_CMA_RECV = 24, /* two words */
};

/*
 * The sequence value of a member that has failed (any error once a call
 * has started: a dead peer, a descriptor unlike its own, a local
 * allocation): it stores it in its words of both banks, above every value
 * a collective publishes (< seq_limit <= 2^31), so that it satisfies
 * every wait on that member, and whoever sees it fails with -EPIPE and
 * stores it too.  So one member's error ends the collective for all.
 * But a wait for a value the member had published before it failed
 * (COLL_LINE_LAST) still succeeds: a peer still finishing the call before
 * (which the failed member had completed) completes it too.
 */
#define COLL_POISON UINT32_MAX

/* A block of the agile_coll_alloc heap. */
struct coll_heap_block {
	size_t off;
	size_t bytes;
	bool used;
};

/**
 * struct coll_shm - one member's handle in the threads or processes scope
 * @base:      agile/coll.h's head (ops, rank, size)
 * @dev:       the doorbells: slot bank * size + rank is the member's
 *             sequence word in bank 0 or 1 (threads: the team's context;
 *             processes: the group's)
 * @spin_ns:   how long a wait spins before it sleeps (agile__coll_spin_ns)
 * @yield_ns:  before that, how long a wait looks with a sched_yield
 *             between looks (more members than CPUs; 0: not at all)
 * @bank:      the bank in use; @seq_base: the base of the next collective
 * @seq_limit: when base + @span_max would pass it, switch banks (2^31:
 *             the kernel compares doorbells unsigned; $AGILE_COLL_SEQ_LIMIT
 *             lowers it for the tests)
 * @span_max:  the largest span of any call of this communicator: members
 *             that disagree on the call still switch banks together
 * @call:      the member's collectives so far (coll_desc.call)
 * @broken:    the first error that left the members out of step (a dead
 *             peer: -EPIPE); every later call returns it; the member's
 *             words hold COLL_POISON from then on
 * @peer_*:    peers' SEND/WORK addresses, resolved at most once per
 *             collective (@peer_epoch[q] == @epoch)
 * @peer_checked: @epoch when peer q's descriptor was found like this
 *             member's in this collective (coll_shm_check_peer)
 * @addrs:     threads: the team's address lines
 * @scratch:   threads: WORK where the caller's recv cannot be
 * @seg:       processes: every member's exchange segment, mapped here;
 *             @seg_bytes each: @xchg_bytes of exchange area, then the heap
 * @pid:       processes: every member's pid, by rank (cma.c)
 * @probe:     processes: every member's probe cookie, by rank: where it is
 *             (@probe[2 q]) and its value (@probe[2 q + 1]) (cma.c)
 * @cma_err:   processes: 0 if allreduce may use the CMA schedule (cma.c),
 *             else why not (the first member's probe error, -ENOTSUP:
 *             switched off, one member, "auto" with more than 2)
 * @cma_from:  the smallest allreduce, in bytes, that uses it (the largest
 *             any member asked for: all agree)
 * @cma_chunk: bytes a member reduces at a time; @cma_scratch: nr_members
 *             of them, where the peers' chunks are read
 * @cma_cookie: what peers read here at join to see that CMA works
 * @cma_calls: the allreduces that went by CMA (agile__coll_procs_cma_calls)
 * @stream_from: processes: the smallest call, in bytes, whose results are
 *             copied into a private recv with non-temporal stores
 *             (coll_shm_init)
 */
struct coll_shm {
	struct agile_coll base;
	int scope;
	struct agile_dev *dev;
	uint32_t bank;
	uint32_t seq_base;
	uint32_t seq_limit;
	uint32_t span_max;
	uint32_t call;
	uint64_t spin_ns;
	uint64_t yield_ns;
	int broken;
	struct coll_desc desc; /* of the call running now */
	struct agile_coll_opts opts;
	struct agile_coll_plan plan;
	bool plan_ok;
	void *bounce; /* a non-commutative user op's (set up at join) */
	void *pieces; /* processes: in_pieces' gather buffer (at join) */
	const char **peer_send;
	char **peer_work;
	uint32_t *peer_epoch;
	uint32_t *peer_checked;
	uint32_t epoch;
	/* threads */
	struct agile_coll_team *team;
	struct coll_shm_addrs *addrs;
	void *scratch;
	size_t scratch_bytes;
	/* processes */
	char **seg;
	size_t seg_bytes, xchg_bytes;
	struct coll_heap_block *heap;
	uint32_t nr_heap, cap_heap;
	int *pid;
	uint64_t *probe;
	int cma_err;
	uint64_t cma_from;
	size_t cma_chunk;
	char *cma_scratch;
	uint64_t cma_cookie;
	uint64_t cma_calls;
	uint64_t stream_from;
};

/* The ops of each scope (threads.c, procs.c). */
extern const struct coll_ops coll_threads_ops;
extern const struct coll_ops coll_procs_ops;

/*
 * coll_shm_plan - build (or reuse) the plan for @pa into @c->plan; no
 * member is waited for.  0, or an error of agile_coll_plan_build.
 */
int coll_shm_plan(struct coll_shm *c, const struct agile_coll_plan_params *pa);

/*
 * coll_shm_run - execute @c->plan (coll_shm_plan) for the call @desc
 * @send:        this member's SEND as it reads it itself
 * @send_shared: SEND as peers read it (the same, or a copy holding what
 *               the plan's outgoing SEND runs name; processes: in the
 *               member's segment)
 * @work, @recv: WORK (processes: in the segment) and RECV; NULL where the
 *               plan does not use them
 * @stream_recv: copy into RECV with non-temporal stores
 *               (agile__coll_copy_streaming): a private recv of a call larger
 *               than the caches (@c->stream_from)
 * Returns 0 or a wait's error (-EPIPE: a peer left or failed), -EPROTO for
 * a peer's address outside its segment or a peer's descriptor unlike
 * @desc; on an error the member has ended the collective for all
 * (coll_shm_abort) and waited until no peer reads its buffers any more.
 * It returns 0 only once every peer's descriptor is @desc.
 */
int coll_shm_run(struct coll_shm *c, const struct coll_desc *desc,
		 const void *send, const void *send_shared, void *work,
		 void *recv, const struct coll_reducer *rd, bool stream_recv);

/*
 * coll_shm_abort - a call that had started fails with @err before
 * coll_shm_run (an allocation, a plan): the member is broken for good and
 * its words hold COLL_POISON, so every peer's call fails too.  Returns
 * the member's first error (@err, or an earlier one).
 */
int coll_shm_abort(struct coll_shm *c, int err);

/*
 * The pieces of coll_shm_run for a schedule of its own (cma.c), and the
 * rule every schedule keeps: publish the descriptor, then value 1 (before
 * any wait but a fold receiver's for its extra's value 1); check a peer
 * (coll_shm_check_peer) before any other wait on it or read of it, and
 * every peer before returning 0.
 * coll_shm_begin - before a collective of at most @span values (bank
 * switch, the call's number, the epoch); the member's error if it is
 * broken.
 * coll_shm_publish_desc - make the call's descriptor known (before value 1).
 * coll_shm_check_peer - wait for member @q's value 1 of this call and
 * compare its descriptor with this member's: 0, -EPROTO where they
 * differ, -EPIPE if @q has failed or died.  Once per call and peer (the
 * later calls return 0 at once).
 * coll_shm_check_peers - coll_shm_check_peer for every peer.
 * coll_shm_signal - publish @value (absolute: base + the plan's value).
 * coll_shm_wait - wait for @rank's @value; -EPIPE if it has died, or has
 * failed before it published @value.
 * coll_shm_wait_seen - the same, but a poisoned member satisfies it: 0, or
 * an error when the member is dead.
 */
int coll_shm_begin(struct coll_shm *c, uint32_t span);
void coll_shm_publish_desc(struct coll_shm *c, const struct coll_desc *desc);
int coll_shm_check_peer(struct coll_shm *c, uint32_t q);
int coll_shm_check_peers(struct coll_shm *c);
int coll_shm_signal(struct coll_shm *c, uint32_t value);
int coll_shm_wait(struct coll_shm *c, uint32_t rank, uint32_t value);
int coll_shm_wait_seen(struct coll_shm *c, uint32_t rank, uint32_t value);

/*
 * cma.c: allreduce by Cross Memory Attach (process_vm_readv/writev) among
 * the processes scope's members, straight between their private buffers.
 * coll_cma_probe_publish - at join, before the rendezvous of value 1
 * (c->base.rank is still the join index): this member's pid, its probe
 * cookie's address and value, and the smallest call it wants by CMA
 * ($AGILE_COLL_CMA), in its join line.
 * coll_cma_probe - after value 1: read every peer's cookie, set up the
 * scratch, publish the verdict (before value 2).
 * coll_cma_agree - after value 2, before take_rank: every member's verdict
 * and wish, so all decide alike (cma_err, cma_from); @c->pid is by join
 * index until take_rank reorders it.
 * coll_cma_wanted - does this allreduce of @bytes go by CMA?
 * coll_cma_allreduce - the call itself (see cma.c).
 */
#define COLL_CMA_SPAN 2 /* values of one call: the addresses, the part */
void coll_cma_probe_publish(struct coll_shm *c);
void coll_cma_probe(struct coll_shm *c);
void coll_cma_agree(struct coll_shm *c);
bool coll_cma_wanted(const struct coll_shm *c, size_t bytes);
int coll_cma_allreduce(struct coll_shm *c, const struct coll_desc *desc,
		       const void *send, void *recv, size_t count,
		       const struct coll_reducer *rd);

/*
 * agile__coll_procs_cma - a processes-scope handle's CMA verdict: 0 if its
 * allreduce uses the CMA schedule (from cma_from bytes up), else
 * why not (a negative errno; -ENOTSUP: $AGILE_COLL_CMA=off, one member, or
 * "auto" with other than 2 members).
 * A white-box hook for the tests and the benchmark's note; -EINVAL for a
 * handle of another scope.
 */
int agile__coll_procs_cma(const struct agile_coll *coll);
/* agile__coll_procs_cma_calls - how many of its allreduces went by CMA. */
uint64_t agile__coll_procs_cma_calls(const struct agile_coll *coll);

/* coll_shm_barrier - every member arrives before any leaves. */
int coll_shm_barrier(struct coll_shm *c);

/* coll_shm_release - free what the transport keeps (plan, addresses). */
void coll_shm_release(struct coll_shm *c);

/* coll_shm_init - the transport's part of a new handle; 0 or -ENOMEM. */
int coll_shm_init(struct coll_shm *c);

static inline struct coll_shm *to_shm(struct agile_coll *coll)
{
	return (struct coll_shm *)coll;
}

/* coll.c: the options every scope takes, and the CPUs this thread may use. */
int coll_take_opts(const struct agile_coll_opts *opts,
		   struct agile_coll_opts *out);
long coll_affinity_cpus(void);

/*
 * node.c: the collectives of both shared-memory scopes (their coll_ops)
 * and agile_coll_alloc's heap in a member's segment.
 */
int coll_node_allreduce(struct agile_coll *coll, const void *send, void *recv,
			size_t count, enum agile_coll_type type,
			enum agile_coll_op op);
int coll_node_reduce(struct agile_coll *coll, const void *send, void *recv,
		     size_t count, enum agile_coll_type type,
		     enum agile_coll_op op, uint32_t root);
int coll_node_reduce_scatter(struct agile_coll *coll, const void *send,
			     void *recv, size_t recv_count,
			     enum agile_coll_type type, enum agile_coll_op op);
int coll_node_allgather(struct agile_coll *coll, const void *send, void *recv,
			size_t count, enum agile_coll_type type);
int coll_node_barrier(struct agile_coll *coll);
agile_coll_user_fn coll_node_user_fn(const struct agile_coll *coll);
int coll_node_error(const struct agile_coll *coll);
void *coll_heap_alloc(struct agile_coll *coll, size_t bytes);
bool coll_heap_free(struct agile_coll *coll, void *ptr);

#endif /* AGILE_COLL_SHM_H */
