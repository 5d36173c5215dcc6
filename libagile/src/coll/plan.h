/* SPDX-License-Identifier: MIT */
/*
 * plan.h - the collectives' schedule, independent of any transport
 * (seed 001).  Private to libagile; the shared-memory transport
 * (shm.c: threads and processes) and the MPI transport execute the
 * same plans.
 *
 * A plan is one member's list of steps for one collective.  Everything is
 * counted in ELEMENTS (the transport multiplies by the element size), and
 * every offset is in the coordinates of one of the member's three buffers:
 *
 *   SEND  the member's input (reduce_scatter: nr_members x count elements;
 *         allgather: count elements)
 *   WORK  a buffer as long as the whole vector (allreduce, reduce,
 *         reduce_scatter: the reduced vector; allgather: nr_members x
 *         count), read by peers; allreduce and the reduce root may use
 *         their recv buffer as WORK
 *   RECV  the caller's output, never read by peers (the last copy of the
 *         folded members, reduce_scatter's own block)
 *
 * A step names at most one transfer INTO the member (from @peer's @src_buf
 * into its own @dst_buf, reduced with its @left_buf or copied) and at most
 * one transfer OUT of it (@send_peer takes @send_buf runs: what an MPI
 * transport sends; a pull transport ignores it).  Both directions of a
 * pairwise exchange (recursive halving, recursive doubling) are one step.
 *
 * Synchronisation for transports without matching messages (shared
 * memory): each member publishes a SEQUENCE VALUE, 1 .. seq_span, relative
 * to a base the members agree on (the base grows by seq_span per
 * collective, so values never repeat).  A step first waits until each
 * @waits[i].rank has published at least @waits[i].value, then transfers,
 * then, if @publish is not 0, publishes @publish.  Values are published in
 * increasing order by every member, so "at least" is all a reader needs.
 * Every step that reads a peer's buffer waits on that peer (so the peer's
 * buffer addresses, published with value 1, are known by then), and the
 * last step (phase EXIT) waits until every peer that reads this member's
 * buffers has finished reading: after it the caller may reuse them.  MPI
 * ignores waits, publish values and the EXIT step.
 *
 * The schedule (N members, p = the largest power of two <= N, L = log2 p):
 *
 * FOLD (value 1): N - p members sit out, MPICH/Open MPI style, with the
 *   pairs kept adjacent so that rank order survives: for rank < 2(N - p),
 *   the odd rank (an EXTRA) hands its vector to the even rank below (its
 *   PARTNER), which reduces the two (even on the left) and goes on as
 *   newrank rank/2; ranks >= 2(N - p) are newrank rank - (N - p).  The p
 *   newranks are the ranks in order, so a contiguous newrank range is a
 *   contiguous rank range.
 * HALVE (values 2 .. 1 + L*M): recursive halving, round r pairs newrank a
 *   with a XOR 2^r (increasing r: the data each member holds after round r
 *   is the reduction of an aligned, contiguous newrank range, so the lower
 *   side is the left operand and non-commutative ops keep rank order).
 *   The vector is cut into p UNITS per lane (sizes differing by at most
 *   one element over a member's total), and the members hold POSITION
 *   ranges: each round halves the range, the member keeps one half and
 *   reduces the partner's copy of it into its own, in M SEGMENTS (one step
 *   each, reading runs of the partner's buffer at the same offsets).
 *    - plain layout: one lane; the lower newrank keeps the first half; the
 *      kept half, contiguous, is cut into M segments of equal length;
 *      after the last round newrank a holds position bitrev(a).
 *    - interleaved (seed 001, Fig. 8): M lanes, each halved on its own;
 *      segment j of every round lies in lane j, i.e. the 2M slices of a
 *      round are the halves of the M lanes; a newrank whose bit r is 0
 *      sends the even slices (first halves) and keeps the odd ones.  So
 *      segment j of round r+1 needs only segment j of round r (of both
 *      members), and the last segment of a round is DEFERRED: it runs
 *      after segment 0 of the next round (M >= 2).  Newrank a ends holding
 *      position bitrev(~a) in every lane.
 * GATHER (reduce; values V + 1 .. V + L, V = 1 + L*M): binomial, relative
 *   to the root's newrank: in round k, relative rank i with
 *   i mod 2^(k+1) == 2^k sends all it holds to i - 2^k (the receiver copies
 *   it into its WORK at the same offsets).
 * ALLGATHER (allreduce: recursive doubling with the partner newrank XOR
 *   2^(L-1-k) in round k, undoing the halving, so the exchanged positions
 *   stay contiguous; allgather: XOR 2^k, the blocks in rank order).
 * UNFOLD / COPYOUT (value V + L + 1 = seq_span): an EXTRA copies the
 *   result from its partner's WORK (allreduce; allgather; reduce when it is
 *   the root) into its RECV; reduce_scatter members copy their block from
 *   whoever holds its units, into RECV; with @flat_gather, allreduce's
 *   members (extras too) and reduce's root copy every block from its
 *   holder into RECV instead of GATHER/ALLGATHER/UNFOLD; a member that
 *   takes the result writes its own units into RECV as it reduces them
 *   in the last halving round (@also_recv), so that no step copies them.
 * EXIT: waits only (see above).
 */
#ifndef AGILE_COLL_PLAN_H
#define AGILE_COLL_PLAN_H

#include <stddef.h>
#include <stdint.h>

/* Most members a plan takes (and so a communicator). */
#define AGILE_COLL_PLAN_MAX_MEMBERS 1024
/* Most segments per exchange (agile_coll_opts.segments). */
#define AGILE_COLL_PLAN_MAX_SEGMENTS 64

enum agile_coll_kind {
	AGILE_COLL_KIND_ALLREDUCE = 0,
	AGILE_COLL_KIND_REDUCE = 1,
	AGILE_COLL_KIND_REDUCE_SCATTER = 2,
	AGILE_COLL_KIND_ALLGATHER = 3,
};

/* A member's buffers (see the top of this file). */
enum agile_coll_buf {
	AGILE_COLL_BUF_NONE = 0,
	AGILE_COLL_BUF_SEND = 1,
	AGILE_COLL_BUF_WORK = 2,
	AGILE_COLL_BUF_RECV = 3,
};

enum agile_coll_action {
	AGILE_COLL_ACT_NONE = 0, /* nothing comes in (waits, sends only) */
	AGILE_COLL_ACT_REDUCE = 1, /* dst = left (op) peer, or peer (op) left */
	AGILE_COLL_ACT_COPY = 2, /* dst = peer */
};

enum agile_coll_phase {
	AGILE_COLL_PHASE_FOLD = 0, /* also the announce of value 1 */
	AGILE_COLL_PHASE_HALVE = 1,
	AGILE_COLL_PHASE_GATHER = 2,
	AGILE_COLL_PHASE_ALLGATHER = 3,
	AGILE_COLL_PHASE_UNFOLD = 4,
	AGILE_COLL_PHASE_COPYOUT = 5,
	AGILE_COLL_PHASE_EXIT = 6,
};

/**
 * struct agile_coll_plan_params - what a plan is for
 * @nr_members:  N, 1 .. AGILE_COLL_PLAN_MAX_MEMBERS
 * @rank:        this member, < N
 * @kind:        enum agile_coll_kind
 * @root:        AGILE_COLL_KIND_REDUCE: the root's rank; 0 otherwise
 * @count:       elements: the vector (allreduce, reduce), the block per
 *               member (reduce_scatter's recv_count, allgather's count)
 * @segments:    M, 1 .. AGILE_COLL_PLAN_MAX_SEGMENTS
 * @interleaved: 1: the interleaved layout (Fig. 8) with the deferred tail
 * @flat_gather: allreduce, reduce: 1 collects the result by reading every
 *               block straight from its holder's WORK into RECV (phase
 *               COPYOUT, one pass, nothing read from RECV: what shared
 *               memory wants when RECV is private) instead of the
 *               binomial gather / recursive doubling into WORK; 0 for the
 *               classic schedule (message passing)
 * @reserved:    must be zero
 *
 * No padding: a plan is reused when the params compare equal (memcmp).
 */
struct agile_coll_plan_params {
	uint32_t nr_members;
	uint32_t rank;
	uint32_t kind;
	uint32_t root;
	uint64_t count;
	uint32_t segments;
	uint32_t interleaved;
	uint32_t flat_gather;
	uint32_t reserved;
};

/* A run: @len elements from offset @src of the source to @dst. */
struct agile_coll_run {
	uint64_t src;
	uint64_t dst;
	uint64_t len;
};

/* Wait until member @rank has published at least @value. */
struct agile_coll_wait {
	uint32_t rank;
	uint32_t value;
};

/**
 * struct agile_coll_step - one step of a member's plan
 * @phase:      enum agile_coll_phase
 * @action:     enum agile_coll_action, for the incoming transfer
 * @src_buf:    the peer's buffer read (SEND or WORK)
 * @left_buf:   REDUCE: this member's operand, at each run's @dst offset
 *              (SEND or WORK; may be the same memory as @dst_buf)
 * @dst_buf:    where the result goes (WORK or RECV)
 * @peer_left:  REDUCE: 1 if the peer's data is the left operand (the
 *              peer has the lower rank: non-commutative ops need it)
 * @round:      halving/gather/allgather round; 0 otherwise
 * @segment:    halving segment; 0 otherwise
 * @peer:       whose buffer is read; -1: none; may be this member (a
 *              local copy)
 * @run:        first run of the incoming transfer in plan->runs
 * @nr_runs:    its runs (may be 0: an empty segment still synchronises)
 * @send_peer:  who takes data from this member in this step; -1: none
 * @send_buf:   from which of this member's buffers
 * @also_recv:  REDUCE into WORK: the result is final and also goes to
 *              RECV at the same offsets (flat_gather: the member's own
 *              units, which its COPYOUT then leaves out)
 * @send_run:   first run of the outgoing transfer (@src: this member's
 *              offset, @dst: the taker's)
 * @nr_send_runs: its runs
 * @wait:       first wait in plan->waits
 * @nr_waits:   how many
 * @publish:    value to publish after the step; 0: none
 */
struct agile_coll_step {
	uint8_t phase;
	uint8_t action;
	uint8_t src_buf;
	uint8_t left_buf;
	uint8_t dst_buf;
	uint8_t peer_left;
	uint8_t send_buf;
	uint8_t also_recv;
	uint16_t round;
	uint16_t segment;
	int32_t peer;
	uint32_t run;
	uint32_t nr_runs;
	int32_t send_peer;
	uint32_t send_run;
	uint32_t nr_send_runs;
	uint32_t wait;
	uint32_t nr_waits;
	uint32_t publish;
};

/**
 * struct agile_coll_plan - one member's schedule (agile_coll_plan_build)
 * @params:      what it was built for
 * @nr_active:   p, the members that take part in the halving
 * @rounds:      L = log2 p
 * @newrank:     this member's index among the p; -1 for a folded extra
 * @work_count:  elements of WORK the member needs (0: none, an extra's)
 * @seq_span:    the largest value published; the base of the next
 *               collective is this one's plus @seq_span
 * @steps, @nr_steps, @runs, @nr_runs, @waits, @nr_waits: the arrays
 *
 * The arrays belong to the plan; building into a plan that was built
 * before reuses them.  Zero a plan before its first build.
 */
struct agile_coll_plan {
	struct agile_coll_plan_params params;
	uint32_t nr_active;
	uint32_t rounds;
	int32_t newrank;
	uint32_t seq_span;
	uint64_t work_count;
	struct agile_coll_step *steps;
	struct agile_coll_run *runs;
	struct agile_coll_wait *waits;
	uint32_t nr_steps, nr_runs, nr_waits;
	/* private: capacities and the unit table */
	uint32_t cap_steps, cap_runs, cap_waits;
	uint64_t *unit_off;
	uint32_t *positions;
	uint32_t cap_units;
};

/**
 * agile_coll_plan_build - compute @params' schedule into @plan
 *
 * Pure: the same params give the same plan in every process.  Returns 0,
 * -EINVAL (bad params), -EOVERFLOW (the vector does not fit in 64 bits of
 * elements) or -ENOMEM; on failure @plan holds no steps.
 */
int agile_coll_plan_build(struct agile_coll_plan *plan,
			  const struct agile_coll_plan_params *params);

/* agile_coll_plan_release - free the arrays; the plan is zero after. */
void agile_coll_plan_release(struct agile_coll_plan *plan);

/* agile_coll_plan_newrank / _rank: the fold's rank mapping. */
int32_t agile_coll_plan_newrank(uint32_t nr_members, uint32_t rank);
uint32_t agile_coll_plan_rank(uint32_t nr_members, uint32_t newrank);

/* agile_coll_plan_seq_span - seq_span of any member's plan for @params
 * (it does not depend on the rank). */
uint32_t agile_coll_plan_seq_span(const struct agile_coll_plan_params *params);

#endif /* AGILE_COLL_PLAN_H */
