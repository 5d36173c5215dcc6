// SPDX-License-Identifier: MIT
/*
 * plan.c - the collectives' schedule (seed 001), transport-free.
 *
 * The schedule itself is described in plan.h.  How it is computed:
 *
 * Units and positions.  The vector is cut into nr_lanes x p units (one
 * lane, or M lanes when interleaved), laid out lane by lane, and within a
 * lane in position order; unit_off[] holds their offsets (prefix sums).
 * The members' shares are the sums of a position's units over the lanes:
 * they differ by at most one element, and so do a lane's units.  A set of
 * positions held by a member turns into runs, one per lane and stretch of
 * consecutive positions (positions_to_runs).  Allgather's units are the
 * members' blocks in rank order instead (a partner of the fold holds two).
 *
 * Sequence values, the same function on every member (so a reader knows
 * which value a peer publishes when what it needs is ready):
 *   1                         announced, folded (SEND and round-0 data)
 *   H(r, j) = 2 + order(r, j) halving round r, segment j done, in the
 *                             common execution order (with the deferred
 *                             tail of the interleaved layout)
 *   V + 1 + k, V = 1 + L*M    gather or allgather round k done
 *   V + L + 1 = seq_span      unfold / copy out done
 * Every wait names a value that comes earlier in that common order than
 * the step that waits, so no set of members can wait on each other in a
 * cycle.
 *
 * Write-after-read: within a collective a member writes a region of its
 * WORK only while it holds it (halving: its kept half; nobody reads a kept
 * half until it is published) or, in the collection phase, a region it
 * gave away during the halving.  The peer that read that region then is
 * the halving partner of that round: the first collection step waits for
 * every halving partner's last step of its round (for allreduce those
 * waits are implied by the data waits and left out).  Across collectives,
 * the EXIT step waits for every reader of the member's buffers.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "coll/plan.h"

/* Most halving rounds: log2 of AGILE_COLL_PLAN_MAX_MEMBERS. */
#define MAX_ROUNDS 10

_Static_assert((1u << MAX_ROUNDS) == AGILE_COLL_PLAN_MAX_MEMBERS,
	       "MAX_ROUNDS is log2 of the member limit");

struct builder {
	struct agile_coll_plan *plan;
	const struct agile_coll_plan_params *pa;
	uint32_t n, p, rounds, rem, lanes, segs;
	int32_t me; /* newrank, -1 for an extra */
	uint64_t total; /* elements of the whole vector */
	bool reducing; /* allreduce, reduce, reduce_scatter */
	uint32_t v_halve; /* V: the value after the last halving step */
	/* H(r, j) and the largest H of each round */
	uint32_t h[MAX_ROUNDS * AGILE_COLL_PLAN_MAX_SEGMENTS];
	uint32_t h_max[MAX_ROUNDS];
	int err;
};

int32_t agile_coll_plan_newrank(uint32_t n, uint32_t rank)
{
	uint32_t p = 1, rem;

	while (p * 2 <= n)
		p *= 2;
	rem = n - p;
	if (rank < 2 * rem)
		return rank % 2 ? -1 : (int32_t)(rank / 2);
	return (int32_t)(rank - rem);
}

uint32_t agile_coll_plan_rank(uint32_t n, uint32_t newrank)
{
	uint32_t p = 1, rem;

	while (p * 2 <= n)
		p *= 2;
	rem = n - p;
	return newrank < rem ? 2 * newrank : newrank + rem;
}

static uint32_t rounds_of(uint32_t n)
{
	uint32_t l = 0;

	while ((2u << l) <= n)
		l++;
	return l;
}

static bool kind_reduces(uint32_t kind)
{
	return kind != AGILE_COLL_KIND_ALLGATHER;
}

uint32_t agile_coll_plan_seq_span(const struct agile_coll_plan_params *pa)
{
	uint32_t l = rounds_of(pa->nr_members);
	uint32_t v = 1 + (kind_reduces(pa->kind) ? l * pa->segments : 0);

	return v + l + 1;
}

/* ---- growing arrays ---- */

static bool grow(void **array, uint32_t *cap, uint32_t need, size_t size)
{
	uint32_t n = *cap ? *cap : 16;
	void *a;

	if (need <= *cap)
		return true;
	while (n < need)
		n *= 2;
	a = realloc(*array, (size_t)n * size);
	if (!a)
		return false;
	*array = a;
	*cap = n;
	return true;
}

static struct agile_coll_step *add_step(struct builder *b, uint8_t phase)
{
	struct agile_coll_plan *pl = b->plan;
	struct agile_coll_step *s;

	if (b->err)
		return NULL;
	if (!grow((void **)&pl->steps, &pl->cap_steps, pl->nr_steps + 1,
		  sizeof(*s))) {
		b->err = -ENOMEM;
		return NULL;
	}
	s = &pl->steps[pl->nr_steps++];
	memset(s, 0, sizeof(*s));
	s->phase = phase;
	s->peer = -1;
	s->send_peer = -1;
	s->run = pl->nr_runs;
	s->send_run = pl->nr_runs;
	s->wait = pl->nr_waits;
	return s;
}

/* The step last added: a pointer into the array, valid until the next add. */
static struct agile_coll_step *last_step(struct builder *b)
{
	return &b->plan->steps[b->plan->nr_steps - 1];
}

static void add_run(struct builder *b, uint64_t src, uint64_t dst, uint64_t len)
{
	struct agile_coll_plan *pl = b->plan;

	if (b->err || !len)
		return;
	if (!grow((void **)&pl->runs, &pl->cap_runs, pl->nr_runs + 1,
		  sizeof(*pl->runs))) {
		b->err = -ENOMEM;
		return;
	}
	pl->runs[pl->nr_runs++] = (struct agile_coll_run){ src, dst, len };
}

/*
 * Waits of the step last added: call between add_step and the next
 * add_step, before any run of another step (the step's waits are
 * contiguous).
 */
static void add_wait(struct builder *b, uint32_t newrank_or_rank,
		     uint32_t value, bool is_rank)
{
	struct agile_coll_plan *pl = b->plan;
	uint32_t rank = is_rank ? newrank_or_rank :
				  agile_coll_plan_rank(b->n, newrank_or_rank);

	if (b->err || rank == b->pa->rank || !value)
		return;
	if (!grow((void **)&pl->waits, &pl->cap_waits, pl->nr_waits + 1,
		  sizeof(*pl->waits))) {
		b->err = -ENOMEM;
		return;
	}
	pl->waits[pl->nr_waits++] = (struct agile_coll_wait){ rank, value };
	last_step(b)->nr_waits++;
}

/* ---- units and positions ---- */

static uint64_t unit_off(const struct builder *b, uint32_t lane, uint32_t pos)
{
	return b->plan->unit_off[(size_t)lane * b->p + pos];
}

static uint64_t unit_end(const struct builder *b, uint32_t lane, uint32_t pos)
{
	return b->plan->unit_off[(size_t)lane * b->p + pos + 1];
}

/*
 * Runs for the parts of unit position @q (one per lane) that fall in
 * [@r0, @r1) of the vector: from their offset to offset - @r0.
 */
static void add_unit_runs(struct builder *b, uint32_t q, uint64_t r0,
			  uint64_t r1)
{
	for (uint32_t l = 0; l < b->lanes; l++) {
		uint64_t x = unit_off(b, l, q), y = unit_end(b, l, q);

		x = x > r0 ? x : r0;
		y = y < r1 ? y : r1;
		if (y > x)
			add_run(b, x, x - r0, y - x);
	}
}

static void build_units(struct builder *b)
{
	uint64_t *off = b->plan->unit_off, at = 0;
	uint32_t p = b->p;

	if (!b->reducing) {
		/* allgather: newrank q's blocks, in rank order */
		for (uint32_t q = 0; q < p; q++) {
			off[q] = at;
			at += b->pa->count * (q < b->rem ? 2 : 1);
		}
		off[p] = at;
		return;
	}
	for (uint32_t l = 0; l < b->lanes; l++) {
		for (uint32_t q = 0; q < p; q++) {
			uint64_t share = b->total / p + (q < b->total % p);

			off[(size_t)l * p + q] = at;
			at += share / b->lanes + (l < share % b->lanes);
		}
	}
	off[(size_t)b->lanes * p] = at;
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, c = *(const uint32_t *)y;

	return (a > c) - (a < c);
}

/*
 * Runs covering @nr positions (any order; sorted here) in every lane:
 * incoming (src = dst = the offset) when @out is false, else outgoing.
 */
static void positions_to_runs(struct builder *b, uint32_t *pos, uint32_t nr,
			      bool out)
{
	struct agile_coll_step *s = last_step(b);
	uint32_t first_run = b->plan->nr_runs;

	qsort(pos, nr, sizeof(*pos), cmp_u32);
	for (uint32_t l = 0; l < b->lanes; l++) {
		for (uint32_t i = 0; i < nr;) {
			uint32_t j = i + 1;
			uint64_t a;

			while (j < nr && pos[j] == pos[j - 1] + 1)
				j++;
			a = unit_off(b, l, pos[i]);
			add_run(b, a, a, unit_end(b, l, pos[j - 1]) - a);
			i = j;
		}
	}
	if (out) {
		s->send_run = first_run;
		s->nr_send_runs = b->plan->nr_runs - first_run;
	} else {
		s->run = first_run;
		s->nr_runs = b->plan->nr_runs - first_run;
	}
}

/* Plain: the lower newrank keeps the first half; interleaved: bit 1 does. */
static bool keeps_first(const struct builder *b, uint32_t newrank, uint32_t r)
{
	bool bit = (newrank >> r) & 1;

	return b->pa->interleaved ? bit : !bit;
}

/* The position newrank @a holds after the halving. */
static uint32_t final_pos(const struct builder *b, uint32_t a)
{
	uint32_t lo = 0;

	for (uint32_t r = 0; r < b->rounds; r++)
		if (!keeps_first(b, a, r))
			lo += b->p >> (r + 1);
	return lo;
}

/* Where a member ends up holding its position: halving or allgather. */
static uint32_t holding_pos(const struct builder *b, uint32_t a)
{
	return b->reducing ? final_pos(b, a) : a;
}

/* Segment @j of @m of the element range [@a, @e): [*lo, *hi). */
static void cut(uint64_t a, uint64_t e, uint32_t j, uint32_t m, uint64_t *lo,
		uint64_t *hi)
{
	uint64_t len = e - a;

	*lo = a + len / m * j + len % m * j / m;
	*hi = a + len / m * (j + 1) + len % m * (j + 1) / m;
}

/* ---- the phases ---- */

static void plan_order(struct builder *b)
{
	uint32_t m = b->segs, v = 2;
	bool defer = b->pa->interleaved && m >= 2;

	for (uint32_t r = 0; r < b->rounds; r++) {
		for (uint32_t j = 0; j < m; j++) {
			if (defer && r > 0 && j == 0)
				continue; /* ran before the previous tail */
			if (defer && j == m - 1 && r + 1 < b->rounds)
				b->h[(r + 1) * m] = v++;
			b->h[r * m + j] = v++;
		}
		b->h_max[r] = b->h[r * m + m - 1];
	}
}

static uint32_t fold_partner(const struct builder *b)
{
	uint32_t rank = b->pa->rank;

	return rank % 2 ? rank - 1 : rank + 1;
}

static bool is_fold_receiver(const struct builder *b, uint32_t newrank)
{
	return newrank < b->rem;
}

/* Step 0: announce (value 1), with the fold. */
static void plan_fold(struct builder *b)
{
	const struct agile_coll_plan_params *pa = b->pa;
	uint64_t blk = pa->count;
	struct agile_coll_step *s;

	if (b->me < 0) {
		/* An extra: its partner takes its SEND. */
		s = add_step(b, AGILE_COLL_PHASE_FOLD);
		if (!s)
			return;
		s->send_peer = (int32_t)fold_partner(b);
		s->send_buf = AGILE_COLL_BUF_SEND;
		s->send_run = b->plan->nr_runs;
		if (b->reducing)
			add_run(b, 0, 0, b->total);
		else
			add_run(b, 0, pa->rank * blk, blk);
		last_step(b)->nr_send_runs =
			b->plan->nr_runs - last_step(b)->send_run;
		last_step(b)->publish = 1;
		return;
	}
	if (!b->reducing) {
		/* allgather: my own block into WORK */
		s = add_step(b, AGILE_COLL_PHASE_FOLD);
		if (!s)
			return;
		s->action = AGILE_COLL_ACT_COPY;
		s->peer = (int32_t)pa->rank;
		s->src_buf = AGILE_COLL_BUF_SEND;
		s->dst_buf = AGILE_COLL_BUF_WORK;
		add_run(b, 0, pa->rank * blk, blk);
		last_step(b)->nr_runs = b->plan->nr_runs - last_step(b)->run;
	}
	s = add_step(b, AGILE_COLL_PHASE_FOLD);
	if (!s)
		return;
	s->publish = 1;
	if (is_fold_receiver(b, (uint32_t)b->me)) {
		uint32_t extra = fold_partner(b);

		s->peer = (int32_t)extra;
		s->src_buf = AGILE_COLL_BUF_SEND;
		s->dst_buf = AGILE_COLL_BUF_WORK;
		add_wait(b, extra, 1, true);
		if (b->reducing) {
			s = last_step(b);
			s->action = AGILE_COLL_ACT_REDUCE;
			s->left_buf = AGILE_COLL_BUF_SEND;
			s->run = b->plan->nr_runs;
			add_run(b, 0, 0, b->total);
		} else {
			s = last_step(b);
			s->action = AGILE_COLL_ACT_COPY;
			s->run = b->plan->nr_runs;
			add_run(b, 0, extra * blk, blk);
		}
		last_step(b)->nr_runs = b->plan->nr_runs - last_step(b)->run;
	} else if (b->reducing && !b->rounds) {
		/* One member: no halving moves SEND into WORK. */
		s->action = AGILE_COLL_ACT_COPY;
		s->peer = (int32_t)pa->rank;
		s->src_buf = AGILE_COLL_BUF_SEND;
		s->dst_buf = AGILE_COLL_BUF_WORK;
		add_run(b, 0, 0, b->total);
		last_step(b)->nr_runs = b->plan->nr_runs - last_step(b)->run;
	}
}

/* The element range of lane @l (interleaved) or segment @j (plain) of a
 * position range [lo, lo + n). */
static void seg_range(const struct builder *b, uint32_t lo, uint32_t n,
		      uint32_t j, uint64_t *a, uint64_t *e)
{
	if (b->pa->interleaved) {
		*a = unit_off(b, j, lo);
		*e = unit_end(b, j, lo + n - 1);
	} else {
		cut(unit_off(b, 0, lo), unit_end(b, 0, lo + n - 1), j, b->segs,
		    a, e);
	}
}

/* allreduce and reduce with flat_gather: the whole vector, from its holders. */
static bool flat(const struct builder *b)
{
	return b->pa->flat_gather &&
	       (b->pa->kind == AGILE_COLL_KIND_ALLREDUCE ||
		b->pa->kind == AGILE_COLL_KIND_REDUCE);
}

static bool takes_result(const struct builder *b, uint32_t rank)
{
	return b->pa->kind == AGILE_COLL_KIND_ALLREDUCE || rank == b->pa->root;
}

/*
 * flat_gather: this member takes the result and holds units of it, so it
 * writes them into RECV in its last halving round (step also_recv) and
 * plan_take leaves them out.
 */
static bool fuses_take(const struct builder *b)
{
	return flat(b) && takes_result(b, b->pa->rank) && b->me >= 0 &&
	       b->rounds > 0;
}

static void plan_halve(struct builder *b)
{
	uint32_t a = (uint32_t)b->me, m = b->segs;
	uint32_t lo[MAX_ROUNDS], klo[MAX_ROUNDS], slo[MAX_ROUNDS];
	uint16_t step_of[MAX_ROUNDS * AGILE_COLL_PLAN_MAX_SEGMENTS + 2];
	bool folded_me = is_fold_receiver(b, a);

	/* Each round's position ranges: current, kept, sent. */
	for (uint32_t r = 0, at = 0; r < b->rounds && r < MAX_ROUNDS; r++) {
		uint32_t half = b->p >> (r + 1);

		lo[r] = at;
		klo[r] = keeps_first(b, a, r) ? at : at + half;
		slo[r] = klo[r] == at ? at + half : at;
		at = klo[r];
	}
	for (uint32_t i = 0; i < b->rounds * m; i++)
		step_of[b->h[i]] = (uint16_t)i;

	/* Steps in the common order, so the published values rise. */
	for (uint32_t v = 2; v <= b->v_halve; v++) {
		uint32_t r = step_of[v] / m, j = step_of[v] % m;
		uint32_t half = b->p >> (r + 1), partner = a ^ (1u << r);
		uint8_t left = r == 0 && !folded_me ? AGILE_COLL_BUF_SEND :
						      AGILE_COLL_BUF_WORK;
		uint8_t src = r == 0 && !is_fold_receiver(b, partner) ?
				      AGILE_COLL_BUF_SEND :
				      AGILE_COLL_BUF_WORK;
		uint64_t x, y, sx, sy;
		struct agile_coll_step *s;

		s = add_step(b, AGILE_COLL_PHASE_HALVE);
		if (!s)
			return;
		s->action = AGILE_COLL_ACT_REDUCE;
		s->round = (uint16_t)r;
		s->segment = (uint16_t)j;
		s->peer = (int32_t)agile_coll_plan_rank(b->n, partner);
		s->src_buf = src;
		s->left_buf = left;
		s->dst_buf = AGILE_COLL_BUF_WORK;
		s->peer_left = partner < a;
		s->send_peer = s->peer;
		s->send_buf = left;
		s->also_recv = fuses_take(b) && r + 1 == b->rounds;
		s->publish = v;
		seg_range(b, klo[r], half, j, &x, &y);
		seg_range(b, slo[r], half, j, &sx, &sy);
		if (y > x) {
			uint32_t need = 1;

			if (r > 0 && b->pa->interleaved) {
				need = b->h[(r - 1) * m + j];
			} else if (r > 0) {
				/* the last segment of round r-1 (whose kept
				 * range was [lo[r], lo[r] + 2 half)) that
				 * overlaps [x, y) */
				uint32_t jj = m;
				uint64_t px, py;

				do {
					jj--;
					seg_range(b, lo[r], 2 * half, jj, &px,
						  &py);
				} while (jj > 0 && !(px < y && py > x));
				need = b->h[(r - 1) * m + jj];
			}
			add_wait(b, partner, need, false);
		}
		s = last_step(b);
		s->run = b->plan->nr_runs;
		add_run(b, x, x, y - x);
		s->nr_runs = b->plan->nr_runs - s->run;
		s->send_run = b->plan->nr_runs;
		add_run(b, sx, sx, sy - sx);
		s->nr_send_runs = b->plan->nr_runs - s->send_run;
	}
}

/* Before the collection writes regions given away in the halving. */
static void add_war_waits(struct builder *b)
{
	if (!b->reducing)
		return;
	for (uint32_t r = 0; r < b->rounds; r++)
		add_wait(b, (uint32_t)b->me ^ (1u << r), b->h_max[r], false);
}

/* Collect the final positions of newranks [first, first + nr) (taken
 * modulo p, shifted by @base) into plan->positions; returns nr. */
static uint32_t group_positions(struct builder *b, uint32_t base,
				uint32_t first, uint32_t nr)
{
	for (uint32_t i = 0; i < nr; i++)
		b->plan->positions[i] =
			holding_pos(b, (base + first + i) % b->p);
	return nr;
}

static void plan_gather(struct builder *b)
{
	const struct agile_coll_plan_params *pa = b->pa;
	int32_t nr = agile_coll_plan_newrank(b->n, pa->root);
	uint32_t newroot = nr >= 0 ? (uint32_t)nr : (uint32_t)(pa->root / 2);
	uint32_t i = ((uint32_t)b->me + b->p - newroot) % b->p;
	bool first = true;

	for (uint32_t k = 0; k < b->rounds; k++) {
		uint32_t low = i & ((2u << k) - 1);
		struct agile_coll_step *s;

		if (low == 0) {
			uint32_t c = i + (1u << k);
			uint32_t child = (c + newroot) % b->p;

			s = add_step(b, AGILE_COLL_PHASE_GATHER);
			if (!s)
				return;
			s->action = AGILE_COLL_ACT_COPY;
			s->round = (uint16_t)k;
			s->peer = (int32_t)agile_coll_plan_rank(b->n, child);
			s->src_buf = AGILE_COLL_BUF_WORK;
			s->dst_buf = AGILE_COLL_BUF_WORK;
			s->publish = b->v_halve + 1 + k;
			if (first)
				add_war_waits(b);
			first = false;
			add_wait(b, child, k ? b->v_halve + k : b->v_halve,
				 false);
			positions_to_runs(
				b, b->plan->positions,
				group_positions(b, newroot, c, 1u << k), false);
		} else if (low == (1u << k)) {
			uint32_t parent = (i - (1u << k) + newroot) % b->p;

			s = add_step(b, AGILE_COLL_PHASE_GATHER);
			if (!s)
				return;
			s->round = (uint16_t)k;
			s->send_peer =
				(int32_t)agile_coll_plan_rank(b->n, parent);
			s->send_buf = AGILE_COLL_BUF_WORK;
			positions_to_runs(
				b, b->plan->positions,
				group_positions(b, newroot, i, 1u << k), true);
			return;
		}
	}
}

/*
 * The newranks whose data newrank @x holds before allgather round @t:
 * allreduce undoes the halving (masks p/2, p/4, ...: the group agrees with
 * @x on the low L - t bits); allgather doubles up (masks 1, 2, ...: the
 * group agrees on the bits from t up).
 */
static uint32_t allgather_group(struct builder *b, uint32_t x, uint32_t t)
{
	uint32_t nr = 1u << t;

	for (uint32_t g = 0; g < nr; g++) {
		uint32_t member = b->reducing ? (x & ((b->p >> t) - 1)) |
							(g << (b->rounds - t)) :
						(x & ~(nr - 1)) | g;

		b->plan->positions[g] = holding_pos(b, member);
	}
	return nr;
}

static uint32_t allgather_mask(const struct builder *b, uint32_t t)
{
	return b->reducing ? 1u << (b->rounds - 1 - t) : 1u << t;
}

static void plan_allgather(struct builder *b)
{
	uint32_t a = (uint32_t)b->me;

	for (uint32_t t = 0; t < b->rounds; t++) {
		uint32_t partner = a ^ allgather_mask(b, t);
		struct agile_coll_step *s =
			add_step(b, AGILE_COLL_PHASE_ALLGATHER);

		if (!s)
			return;
		s->action = AGILE_COLL_ACT_COPY;
		s->round = (uint16_t)t;
		s->peer = (int32_t)agile_coll_plan_rank(b->n, partner);
		s->src_buf = AGILE_COLL_BUF_WORK;
		s->dst_buf = AGILE_COLL_BUF_WORK;
		s->send_peer = s->peer;
		s->send_buf = AGILE_COLL_BUF_WORK;
		s->publish = b->v_halve + 1 + t;
		add_wait(b, partner, t ? b->v_halve + t : b->v_halve, false);
		positions_to_runs(b, b->plan->positions,
				  allgather_group(b, partner, t), false);
		positions_to_runs(b, b->plan->positions,
				  allgather_group(b, a, t), true);
	}
}

/* The value after a member's last collection step. */
static uint32_t collected(const struct builder *b)
{
	return b->v_halve + b->rounds;
}

/* Does the extra read its partner's result at the end? */
static bool extra_unfolds(const struct builder *b)
{
	uint32_t extra = b->me < 0 ? b->pa->rank : b->pa->rank + 1;

	switch (b->pa->kind) {
	case AGILE_COLL_KIND_ALLREDUCE:
	case AGILE_COLL_KIND_ALLGATHER:
		return true;
	case AGILE_COLL_KIND_REDUCE:
		return b->pa->root == extra;
	}
	return false;
}

static void plan_unfold(struct builder *b)
{
	uint32_t span = b->plan->seq_span;
	struct agile_coll_step *s;

	if (b->me >= 0 && !is_fold_receiver(b, (uint32_t)b->me))
		return;
	if (!extra_unfolds(b))
		return;
	s = add_step(b, AGILE_COLL_PHASE_UNFOLD);
	if (!s)
		return;
	if (b->me < 0) {
		uint32_t partner = fold_partner(b);

		s->action = AGILE_COLL_ACT_COPY;
		s->peer = (int32_t)partner;
		s->src_buf = AGILE_COLL_BUF_WORK;
		s->dst_buf = AGILE_COLL_BUF_RECV;
		s->publish = span;
		add_wait(b, partner, collected(b), true);
		s = last_step(b);
		s->run = b->plan->nr_runs;
		add_run(b, 0, 0, b->total);
		last_step(b)->nr_runs = b->plan->nr_runs - last_step(b)->run;
	} else {
		s->send_peer = (int32_t)fold_partner(b);
		s->send_buf = AGILE_COLL_BUF_WORK;
		add_run(b, 0, 0, b->total);
		last_step(b)->nr_send_runs =
			b->plan->nr_runs - last_step(b)->send_run;
	}
}

/*
 * Outgoing, for message passing: what @reader takes from this member's
 * final units, the part of them in [@r0, @r1) of the vector, to its
 * offset - @r0.
 */
static void plan_give(struct builder *b, uint32_t reader, uint64_t r0,
		      uint64_t r1)
{
	uint32_t q = final_pos(b, (uint32_t)b->me);
	struct agile_coll_step *s;

	if (reader == b->pa->rank)
		return;
	s = add_step(b, AGILE_COLL_PHASE_COPYOUT);
	if (!s)
		return;
	s->send_peer = (int32_t)reader;
	s->send_buf = AGILE_COLL_BUF_WORK;
	add_unit_runs(b, q, r0, r1);
	s = last_step(b);
	s->nr_send_runs = b->plan->nr_runs - s->send_run;
	if (!s->nr_send_runs)
		b->plan->nr_steps--; /* takes nothing */
}

/*
 * Incoming: [@r0, @r1) of the reduced vector from the holders of its
 * units into RECV at offset - @r0, one step per holder; the last step
 * publishes seq_span.  @war: first wait for the halving partners (RECV
 * may be this member's WORK).
 */
static void plan_take(struct builder *b, uint64_t r0, uint64_t r1, bool war,
		      bool fused)
{
	uint32_t last = UINT32_MAX;

	for (uint32_t h = 0; h < b->p; h++) {
		uint32_t q = final_pos(b, h), holder;
		struct agile_coll_step *s;

		holder = agile_coll_plan_rank(b->n, h);
		if (fused && (int32_t)h == b->me)
			continue; /* written by the last halving round */
		s = add_step(b, AGILE_COLL_PHASE_COPYOUT);
		if (!s)
			return;
		s->action = AGILE_COLL_ACT_COPY;
		s->peer = (int32_t)holder;
		s->src_buf = AGILE_COLL_BUF_WORK;
		s->dst_buf = AGILE_COLL_BUF_RECV;
		if (war && b->me >= 0 && last == UINT32_MAX)
			add_war_waits(b);
		add_wait(b, holder, b->v_halve, true);
		s = last_step(b);
		s->run = b->plan->nr_runs;
		add_unit_runs(b, q, r0, r1);
		s = last_step(b);
		s->nr_runs = b->plan->nr_runs - s->run;
		if (!s->nr_runs) {
			/* not one of mine: drop it with its waits */
			b->plan->nr_waits -= s->nr_waits;
			b->plan->nr_steps--;
		} else {
			last = b->plan->nr_steps - 1;
		}
	}
	if (last == UINT32_MAX && add_step(b, AGILE_COLL_PHASE_COPYOUT))
		last = b->plan->nr_steps -
		       1; /* nothing to take: still say so */
	if (last != UINT32_MAX)
		b->plan->steps[last].publish = b->plan->seq_span;
}

/* reduce_scatter: rank r's block is [r * count, (r + 1) * count). */
static void plan_copyout(struct builder *b)
{
	uint64_t blk = b->pa->count, mine = b->pa->rank * blk;

	if (b->me >= 0)
		for (uint32_t reader = 0; reader < b->n && blk; reader++)
			plan_give(b, reader, reader * blk, (reader + 1) * blk);
	plan_take(b, mine, mine + blk, false, false);
}

static void plan_flat(struct builder *b)
{
	if (b->me >= 0)
		for (uint32_t reader = 0; reader < b->n; reader++)
			if (takes_result(b, reader))
				plan_give(b, reader, 0, b->total);
	if (takes_result(b, b->pa->rank))
		plan_take(b, 0, b->total, true, fuses_take(b));
}

/* Everyone who reads my buffers, and the value after which they are done. */
static void plan_exit(struct builder *b)
{
	const struct agile_coll_plan_params *pa = b->pa;
	uint32_t a = (uint32_t)b->me;

	if (!add_step(b, AGILE_COLL_PHASE_EXIT))
		return;
	if (b->me < 0) {
		add_wait(b, fold_partner(b), 1, true);
		return;
	}
	if (is_fold_receiver(b, a) && extra_unfolds(b) && !flat(b))
		add_wait(b, fold_partner(b), b->plan->seq_span, true);
	if (b->reducing)
		for (uint32_t r = 0; r < b->rounds; r++)
			add_wait(b, a ^ (1u << r), b->h_max[r], false);
	if (flat(b)) {
		/* every member that takes the result reads my units */
		for (uint32_t reader = 0; reader < b->n; reader++)
			if (takes_result(b, reader))
				add_wait(b, reader, b->plan->seq_span, true);
		return;
	}
	switch (pa->kind) {
	case AGILE_COLL_KIND_ALLREDUCE:
	case AGILE_COLL_KIND_ALLGATHER:
		for (uint32_t t = 0; t < b->rounds; t++)
			add_wait(b, a ^ allgather_mask(b, t),
				 b->v_halve + 1 + t, false);
		break;
	case AGILE_COLL_KIND_REDUCE: {
		int32_t nr = agile_coll_plan_newrank(b->n, pa->root);
		uint32_t newroot = nr >= 0 ? (uint32_t)nr : pa->root / 2;
		uint32_t i = (a + b->p - newroot) % b->p;

		for (uint32_t k = 0; k < b->rounds; k++) {
			if ((i & ((2u << k) - 1)) == (1u << k)) {
				uint32_t parent =
					(i - (1u << k) + newroot) % b->p;

				add_wait(b, parent, b->v_halve + 1 + k, false);
				break;
			}
		}
		break;
	}
	case AGILE_COLL_KIND_REDUCE_SCATTER: {
		uint32_t q = final_pos(b, a);
		uint64_t blk = pa->count;

		for (uint32_t l = 0; l < b->lanes && blk; l++) {
			uint64_t x = unit_off(b, l, q), y = unit_end(b, l, q);

			if (y <= x)
				continue;
			for (uint64_t rd = x / blk; rd <= (y - 1) / blk; rd++)
				add_wait(b, (uint32_t)rd, b->plan->seq_span,
					 true);
		}
		break;
	}
	}
}

static int check_params(const struct agile_coll_plan_params *pa)
{
	if (!pa->nr_members || pa->nr_members > AGILE_COLL_PLAN_MAX_MEMBERS ||
	    pa->rank >= pa->nr_members ||
	    pa->kind > AGILE_COLL_KIND_ALLGATHER || !pa->segments ||
	    pa->segments > AGILE_COLL_PLAN_MAX_SEGMENTS ||
	    pa->interleaved > 1 || pa->flat_gather > 1 || pa->reserved)
		return -EINVAL;
	if (pa->kind == AGILE_COLL_KIND_REDUCE ? pa->root >= pa->nr_members :
						 pa->root != 0)
		return -EINVAL;
	return 0;
}

int agile_coll_plan_build(struct agile_coll_plan *plan,
			  const struct agile_coll_plan_params *pa)
{
	struct builder *b;
	uint32_t units;
	int err;

	if (!plan || !pa)
		return -EINVAL;
	plan->nr_steps = plan->nr_runs = plan->nr_waits = 0;
	err = check_params(pa);
	if (err)
		return err;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->plan = plan;
	b->pa = pa;
	b->n = pa->nr_members;
	b->rounds = rounds_of(b->n);
	b->p = 1u << b->rounds;
	b->rem = b->n - b->p;
	b->segs = pa->segments;
	b->reducing = kind_reduces(pa->kind);
	b->lanes = b->reducing && pa->interleaved ? pa->segments : 1;
	b->me = agile_coll_plan_newrank(b->n, pa->rank);
	b->v_halve = 1 + (b->reducing ? b->rounds * b->segs : 0);
	if (pa->kind == AGILE_COLL_KIND_REDUCE_SCATTER ||
	    pa->kind == AGILE_COLL_KIND_ALLGATHER) {
		if (__builtin_mul_overflow(pa->count, (uint64_t)b->n,
					   &b->total)) {
			err = -EOVERFLOW;
			goto out;
		}
	} else {
		b->total = pa->count;
	}

	plan->params = *pa;
	plan->nr_active = b->p;
	plan->rounds = b->rounds;
	plan->newrank = b->me;
	plan->seq_span = agile_coll_plan_seq_span(pa);
	plan->work_count = b->me >= 0 ? b->total : 0;

	units = b->lanes * b->p + 1;
	if (!grow((void **)&plan->unit_off, &plan->cap_units, units,
		  sizeof(*plan->unit_off)) ||
	    !(plan->positions = realloc(plan->positions,
					(size_t)plan->cap_units *
						sizeof(*plan->positions)))) {
		err = -ENOMEM;
		goto out;
	}
	build_units(b);
	plan_order(b);

	plan_fold(b);
	if (b->me >= 0 && b->reducing)
		plan_halve(b);
	if (flat(b)) {
		plan_flat(b);
	} else if (b->me >= 0) {
		switch (pa->kind) {
		case AGILE_COLL_KIND_ALLREDUCE:
		case AGILE_COLL_KIND_ALLGATHER:
			plan_allgather(b);
			break;
		case AGILE_COLL_KIND_REDUCE:
			plan_gather(b);
			break;
		}
	}
	if (pa->kind == AGILE_COLL_KIND_REDUCE_SCATTER)
		plan_copyout(b);
	else if (!flat(b))
		plan_unfold(b);
	plan_exit(b);
	err = b->err;
out:
	if (err)
		plan->nr_steps = plan->nr_runs = plan->nr_waits = 0;
	free(b);
	return err;
}

void agile_coll_plan_release(struct agile_coll_plan *plan)
{
	if (!plan)
		return;
	free(plan->steps);
	free(plan->runs);
	free(plan->waits);
	free(plan->unit_off);
	free(plan->positions);
	memset(plan, 0, sizeof(*plan));
}
