// SPDX-License-Identifier: MIT
/*
 * coll-plan - the collectives' schedule (src/coll/plan.c) without a
 * transport: every member's plan is executed by a simulator that picks,
 * at random, a member whose next step's waits hold, and runs that step
 * whole.  So every interleaving the waits allow may happen, and a missing
 * wait shows up as a wrong result.  After a member's EXIT step its SEND
 * and WORK are overwritten (the caller reusing them), which catches a
 * peer that still reads them.  No step may be stuck (no deadlock).
 *
 * The op is 2x2 matrix multiplication mod 65521 packed into an int64:
 * associative and not commutative, so the result also proves rank order.
 * Each incoming transfer must match, run for run, the outgoing transfer
 * its peer lists (what a message-passing transport relies on).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "coll/plan.h"
#include "colltest.h"
#include "tap.h"

#define POISON INT64_C(-7777777)

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int64_t random_matrix(void)
{
	return ct_pack(rnd() % CT_PRIME, rnd() % CT_PRIME, rnd() % CT_PRIME,
		       rnd() % CT_PRIME);
}

struct member {
	struct agile_coll_plan plan;
	int64_t *send, *work, *recv;
	uint32_t pc, published;
	bool done;
};

static int64_t *buf(struct member *m, uint8_t which)
{
	switch (which) {
	case AGILE_COLL_BUF_SEND:
		return m->send;
	case AGILE_COLL_BUF_WORK:
		return m->work;
	case AGILE_COLL_BUF_RECV:
		return m->recv;
	}
	return NULL;
}

static bool ready(struct member *ms, struct member *m)
{
	const struct agile_coll_step *s = &m->plan.steps[m->pc];

	for (uint32_t w = 0; w < s->nr_waits; w++) {
		const struct agile_coll_wait *wt = &m->plan.waits[s->wait + w];

		if (ms[wt->rank].published < wt->value)
			return false;
	}
	return true;
}

static void run_step(struct member *ms, struct member *m)
{
	const struct agile_coll_step *s = &m->plan.steps[m->pc];

	if (s->action != AGILE_COLL_ACT_NONE) {
		int64_t *src = buf(&ms[s->peer], s->src_buf);
		int64_t *dst = buf(m, s->dst_buf), *left = buf(m, s->left_buf);

		for (uint32_t i = 0; i < s->nr_runs; i++) {
			const struct agile_coll_run *r =
				&m->plan.runs[s->run + i];

			for (uint64_t k = 0; k < r->len; k++) {
				int64_t in = src[r->src + k];

				if (s->action == AGILE_COLL_ACT_COPY)
					dst[r->dst + k] = in;
				else if (s->peer_left)
					dst[r->dst + k] =
						ct_matmul(in, left[r->dst + k]);
				else
					dst[r->dst + k] =
						ct_matmul(left[r->dst + k], in);
				if (s->also_recv)
					m->recv[r->dst + k] = dst[r->dst + k];
			}
		}
	}
	if (s->publish) {
		if (s->publish <= m->published)
			m->published = UINT32_MAX; /* caught below */
		else
			m->published = s->publish;
	}
	m->pc++;
}

/* The runs @from lists for @to, incoming (at @to) or outgoing (at @from). */
static size_t flatten(const struct member *m, uint32_t peer, bool out,
		      struct agile_coll_run *list, size_t cap)
{
	size_t n = 0;

	for (uint32_t i = 0; i < m->plan.nr_steps; i++) {
		const struct agile_coll_step *s = &m->plan.steps[i];
		int32_t who = out ? s->send_peer : s->peer;
		uint32_t first = out ? s->send_run : s->run;
		uint32_t nr = out ? s->nr_send_runs : s->nr_runs;

		if (who != (int32_t)peer || (!out && !s->action))
			continue;
		for (uint32_t k = 0; k < nr && n < cap; k++)
			list[n++] = m->plan.runs[first + k];
	}
	return n;
}

static bool runs_match(struct member *ms, uint32_t n)
{
	static struct agile_coll_run a[4096], b[4096];

	for (uint32_t to = 0; to < n; to++) {
		for (uint32_t from = 0; from < n; from++) {
			size_t na, nb;

			if (from == to)
				continue;
			na = flatten(&ms[to], from, false, a, 4096);
			nb = flatten(&ms[from], to, true, b, 4096);
			if (na != nb)
				return false;
			for (size_t i = 0; i < na; i++)
				if (a[i].src != b[i].src ||
				    a[i].dst != b[i].dst ||
				    a[i].len != b[i].len)
					return false;
		}
	}
	return true;
}

static const char *const kind_names[] = { "allreduce", "reduce",
					  "reduce_scatter", "allgather" };

/* One collective, @trials random interleavings; returns pass. */
static bool simulate(uint32_t n, uint32_t kind, uint32_t root, uint64_t count,
		     uint32_t segs, uint32_t inter, uint32_t flat,
		     bool in_place, int trials, const char **why)
{
	struct member *ms = calloc(n, sizeof(*ms));
	bool reducing = kind != AGILE_COLL_KIND_ALLGATHER;
	uint64_t total = kind == AGILE_COLL_KIND_ALLREDUCE ||
					 kind == AGILE_COLL_KIND_REDUCE ?
				 count :
				 count * n;
	uint64_t recv_len = kind == AGILE_COLL_KIND_REDUCE_SCATTER ? count :
								     total;
	uint64_t send_len = reducing ? total : count;
	int64_t **input = calloc(n, sizeof(*input)), *want;
	bool ok = true;

	*why = "";
	want = calloc(total + 1, sizeof(*want));
	for (uint32_t r = 0; r < n; r++) {
		struct agile_coll_plan_params pa = {
			.nr_members = n,
			.rank = r,
			.kind = kind,
			.root = root,
			.count = count,
			.segments = segs,
			.interleaved = inter,
			.flat_gather = flat,
		};
		int err = agile_coll_plan_build(&ms[r].plan, &pa);

		if (err) {
			*why = "build failed";
			ok = false;
			goto out;
		}
		if (ms[r].plan.seq_span != agile_coll_plan_seq_span(&pa)) {
			*why = "seq_span differs";
			ok = false;
			goto out;
		}
		input[r] = calloc(send_len + 1, sizeof(int64_t));
		for (uint64_t i = 0; i < send_len; i++)
			input[r][i] = random_matrix();
	}
	if (!runs_match(ms, n)) {
		*why = "incoming and outgoing runs differ";
		ok = false;
		goto out;
	}
	/* The reference: rank-ordered products, or the blocks in order. */
	for (uint64_t i = 0; i < total; i++) {
		if (reducing) {
			want[i] = input[0][i];
			for (uint32_t r = 1; r < n; r++)
				want[i] = ct_matmul(want[i], input[r][i]);
		} else {
			want[i] = input[i / count][i % count];
		}
	}

	for (int t = 0; t < trials && ok; t++) {
		uint32_t left = n;

		for (uint32_t r = 0; r < n; r++) {
			struct member *m = &ms[r];

			free(m->work);
			free(m->recv);
			if (m->send != input[r] && !in_place)
				free(m->send);
			m->work = calloc(total + 1, sizeof(int64_t));
			m->recv = calloc(recv_len + 1, sizeof(int64_t));
			for (uint64_t i = 0; i < total; i++)
				m->work[i] = POISON;
			if (in_place && reducing) {
				memcpy(m->work, input[r], total * 8);
				m->send = m->work;
			} else if (in_place) {
				memcpy(m->work + r * count, input[r],
				       count * 8);
				m->send = m->work + r * count;
			} else {
				m->send = calloc(send_len + 1, 8);
				memcpy(m->send, input[r], send_len * 8);
			}
			m->pc = 0;
			m->published = 0;
			m->done = false;
		}
		while (left) {
			uint32_t cand[AGILE_COLL_PLAN_MAX_MEMBERS], nc = 0;
			struct member *m;

			for (uint32_t r = 0; r < n; r++)
				if (!ms[r].done && ready(ms, &ms[r]))
					cand[nc++] = r;
			if (!nc) {
				*why = "deadlock";
				ok = false;
				break;
			}
			m = &ms[cand[rnd() % nc]];
			run_step(ms, m);
			if (m->published == UINT32_MAX) {
				*why = "values not increasing";
				ok = false;
				break;
			}
			if (m->pc == m->plan.nr_steps) {
				uint32_t r = (uint32_t)(m - ms);
				bool has_work = m->plan.newrank >= 0;
				bool result = kind != AGILE_COLL_KIND_REDUCE ||
					      r == root;

				/* The result, then the caller reuses
				 * everything the peers could read. */
				if (result && has_work && !flat &&
				    kind != AGILE_COLL_KIND_REDUCE_SCATTER)
					memcpy(m->recv, m->work, total * 8);
				for (uint64_t i = 0; i < send_len; i++)
					m->send[i] = POISON;
				for (uint64_t i = 0; i < total; i++)
					m->work[i] = POISON;
				if (result &&
				    memcmp(m->recv,
					   kind == AGILE_COLL_KIND_REDUCE_SCATTER ?
						   want + r * count :
						   want,
					   recv_len * 8)) {
					*why = "wrong result";
					ok = false;
				}
				m->done = true;
				left--;
			}
		}
	}
out:
	for (uint32_t r = 0; r < n; r++) {
		if (!in_place || !ms[r].work)
			free(ms[r].send);
		free(ms[r].work);
		free(ms[r].recv);
		free(input[r]);
		agile_coll_plan_release(&ms[r].plan);
	}
	free(input);
	free(want);
	free(ms);
	return ok;
}

/* Every member count up to @max_n, every count, every root: one line. */
static void sweep(uint32_t kind, uint32_t flat, uint32_t inter, uint32_t segs,
		  uint32_t max_n, const uint64_t *counts, size_t nr_counts)
{
	int fails = 0, runs = 0;
	const char *why = "";

	for (uint32_t n = 1; n <= max_n; n++) {
		uint32_t roots = kind == AGILE_COLL_KIND_REDUCE ? n : 1;

		for (size_t c = 0; c < nr_counts; c++) {
			for (uint32_t root = 0; root < roots; root++) {
				int trials = counts[c] > 64 ? 2 : 6;
				const char *w;
				bool ok;

				ok = simulate(n, kind, root, counts[c], segs,
					      inter, flat, (n + c) % 2, trials,
					      &w);
				runs++;
				if (ok)
					continue;
				if (!fails++)
					tap_diag("%s n=%u count=%" PRIu64
						 " root=%u M=%u inter=%u: %s",
						 kind_names[kind], n, counts[c],
						 root, segs, inter, w);
				why = w;
			}
		}
	}
	tap_ok(!fails, "%s%s, M=%u, %s: %d collectives, 1..%u members%s%s",
	       kind_names[kind], flat ? " (flat gather)" : "", segs,
	       inter ? "interleaved" : "plain", runs, max_n, fails ? ": " : "",
	       why);
}

/*
 * The shape of the halving, which results cannot show (a schedule
 * without it computes the same sums, only later): in the interleaved
 * layout with M >= 2 segments, round r's last segment is DEFERRED behind
 * round r + 1's first (seed 001), and round r + 1's segment j waits on
 * nothing published after segment j of round r (values are common to all
 * members: coll/plan.c); the plain layout runs rounds and segments in
 * order.  Every kind, 1 .. 17 members, M = 2, 3,
 * 4, 8.  Returns the number of plans that break it; *@why says how.
 */
static int halving_shape(uint32_t n, uint32_t kind, uint32_t segs,
			 uint32_t inter, const char **why)
{
	struct agile_coll_plan plan = { 0 };
	int bad = 0;

	for (uint32_t rank = 0; rank < n; rank++) {
		struct agile_coll_plan_params pa = {
			.nr_members = n,
			.rank = rank,
			.kind = kind,
			.count = 64 * n + 7,
			.segments = segs,
			.interleaved = inter,
		};
		/* index of step (round, segment) in the plan; -1: none */
		int32_t at[16][8];
		uint32_t pub[16][8];

		if (agile_coll_plan_build(&plan, &pa)) {
			*why = "plan_build failed";
			bad++;
			continue;
		}
		memset(at, 0xff, sizeof(at));
		for (uint32_t k = 0; k < plan.nr_steps; k++) {
			const struct agile_coll_step *s = &plan.steps[k];

			if (s->phase != AGILE_COLL_PHASE_HALVE ||
			    s->round >= 16 || s->segment >= 8)
				continue;
			at[s->round][s->segment] = (int32_t)k;
			pub[s->round][s->segment] = s->publish;
		}
		if (plan.newrank < 0)
			continue; /* folded: no halving */
		for (uint32_t r = 0; r + 1 < plan.rounds; r++) {
			int32_t tail = at[r][segs - 1], next = at[r + 1][0];

			if (tail < 0 || next < 0) {
				*why = "a halving step is missing";
				bad++;
				break;
			}
			if (inter && next > tail) {
				*why = "interleaved: round r's last segment "
				       "runs before round r+1's first (no "
				       "deferral)";
				bad++;
				break;
			}
			if (!inter && next < tail) {
				*why = "plain: rounds out of order";
				bad++;
				break;
			}
			if (!inter)
				continue;
			/* segment j of r+1 waits on nothing past (r, j) */
			for (uint32_t j = 0; j < segs; j++) {
				const struct agile_coll_step *s =
					&plan.steps[at[r + 1][j]];

				for (uint32_t w = 0; w < s->nr_waits; w++)
					if (plan.waits[s->wait + w].value >
					    pub[r][j]) {
						*why = "interleaved: segment j "
						       "of round r+1 waits on "
						       "a later segment of "
						       "round r";
						bad++;
					}
			}
		}
	}
	agile_coll_plan_release(&plan);
	return bad;
}

static void shapes(void)
{
	static const uint32_t seg_counts[] = { 2, 3, 4, 8 };

	for (uint32_t inter = 0; inter <= 1; inter++) {
		for (size_t i = 0; i < 4; i++) {
			const char *why = "";
			int bad = 0, plans = 0;

			for (uint32_t n = 1; n <= 17; n++)
				for (uint32_t kind = 0;
				     kind <= AGILE_COLL_KIND_ALLGATHER;
				     kind++) {
					if (kind == AGILE_COLL_KIND_ALLGATHER)
						continue; /* no halving */
					bad += halving_shape(n, kind,
							     seg_counts[i],
							     inter, &why);
					plans += (int)n;
				}
			tap_ok(!bad,
			       "%s, M=%u: %s (%d plans, 1..17 members)%s%s",
			       inter ? "interleaved" : "plain", seg_counts[i],
			       inter ? "each round's last segment deferred "
				       "behind the next round's first; segment "
				       "j waits only on segment j" :
				       "rounds and segments in order",
			       plans, bad ? ": " : "", why);
		}
	}
}

int main(void)
{
	static const uint64_t counts[] = { 0, 1, 7, 64, 1001 };
	/* $AGILE_TEST_QUICK (the emulated guests): fewer members and sizes */
	bool quick = getenv("AGILE_TEST_QUICK") != NULL;
	uint32_t max_n = quick ? 9 : 13;
	size_t nr_counts = sizeof(counts) / sizeof(*counts) - quick;
	struct agile_coll_plan plan = { 0 };
	struct agile_coll_plan_params bad = { .nr_members = 0, .segments = 1 };

	tap_ok(agile_coll_plan_build(&plan, &bad) == -EINVAL,
	       "no members: -EINVAL");
	bad = (struct agile_coll_plan_params){ .nr_members = 3,
					       .rank = 3,
					       .segments = 1 };
	tap_ok(agile_coll_plan_build(&plan, &bad) == -EINVAL,
	       "rank out of range: -EINVAL");
	bad.rank = 0;
	bad.segments = AGILE_COLL_PLAN_MAX_SEGMENTS + 1;
	tap_ok(agile_coll_plan_build(&plan, &bad) == -EINVAL,
	       "too many segments: -EINVAL");
	bad = (struct agile_coll_plan_params){ .nr_members = 3,
					       .kind = AGILE_COLL_KIND_REDUCE,
					       .root = 3,
					       .segments = 1 };
	tap_ok(agile_coll_plan_build(&plan, &bad) == -EINVAL,
	       "root out of range: -EINVAL");
	bad = (struct agile_coll_plan_params){ .nr_members = 3,
					       .kind = AGILE_COLL_KIND_ALLGATHER,
					       .count = UINT64_MAX / 2,
					       .segments = 1 };
	tap_ok(agile_coll_plan_build(&plan, &bad) == -EOVERFLOW,
	       "allgather of 3 x 2^63 elements: -EOVERFLOW");
	agile_coll_plan_release(&plan);
	shapes();

	for (uint32_t kf = 0; kf <= AGILE_COLL_KIND_ALLGATHER + 2; kf++) {
		/* allreduce and reduce twice: classic, then flat_gather */
		uint32_t kind = kf > AGILE_COLL_KIND_ALLGATHER ?
					kf - AGILE_COLL_KIND_ALLGATHER - 1 :
					kf;
		uint32_t flat = kf > AGILE_COLL_KIND_ALLGATHER;

		for (uint32_t inter = 0; inter <= 1; inter++)
			for (uint32_t segs = 1; segs <= 4; segs *= 2)
				sweep(kind, flat, inter, segs, max_n, counts,
				      nr_counts);
	}
	{
		const char *why;
		bool ok;

		ok = simulate(32, AGILE_COLL_KIND_ALLREDUCE, 0, 5000, 8, 1, 0,
			      false, 2, &why);
		tap_ok(ok, "allreduce, 32 members, M=8, interleaved %s", why);
		ok = simulate(37, AGILE_COLL_KIND_REDUCE, 21, 3333, 3, 0, 1,
			      true, 2, &why);
		tap_ok(ok,
		       "reduce to 21, 37 members, M=3, plain, flat, in place %s",
		       why);
		ok = simulate(24, AGILE_COLL_KIND_REDUCE_SCATTER, 0, 77, 5, 1,
			      0, false, 2, &why);
		tap_ok(ok, "reduce_scatter, 24 members, M=5, interleaved %s",
		       why);
		if (!quick) {
			ok = simulate(300, AGILE_COLL_KIND_ALLREDUCE, 0, 999, 2,
				      0, 1, true, 1, &why);
			tap_ok(ok,
			       "allreduce, 300 members, M=2, plain, flat, in place %s",
			       why);
		}
	}
	return tap_done();
}
