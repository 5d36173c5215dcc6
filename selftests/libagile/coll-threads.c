// SPDX-License-Identifier: MIT
/*
 * coll-threads - the collectives among the threads of one process
 * (agile_coll_threads_create): allreduce, reduce (several roots),
 * reduce_scatter and allgather, every op x type, sizes 0, 1, 1001 and a
 * page worth of elements, 1 to 9 members, M = 1, 2, 4 segments, plain and
 * interleaved layouts, some in place, a non-commutative user op that must
 * keep rank order; checked element by element against a naive reference.
 * The full op x type x size matrix runs with M = 2 (plain); the other
 * layouts run a subset (int32 and double, 1001 and a page), and the
 * 64 MiB vectors only an allreduce with 2 and 5 members (a full matrix
 * at 64 MiB would take minutes).  Also: a sequence-number bank switch
 * ($AGILE_COLL_SEQ_LIMIT), barriers, bad arguments, and the spin
 * AGILE_COLL_SPIN_AUTO picks (M = 1 runs spin first, the rest with AUTO).
 *
 * $AGILE_TEST_QUICK (the test guests, emulated): fewer sizes and layouts
 * and no 64 MiB vectors.  An alarm fails the test instead of a hang.
 */
#define _GNU_SOURCE
#include <agile/coll.h>
#include <agile/dev.h>
#include <agile/error.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/coll_impl.h"
#include "colltest.h"
#include "tap.h"

#define ALARM_S 1200

struct team_run {
	struct agile_coll_team *team;
	uint32_t n;
	const struct ct_case *cases;
	size_t nr_cases;
	size_t buf_bytes;
	/* per member: failures and the first one's description */
	int fails[16];
	char first[16][160];
};

struct member_arg {
	struct team_run *run;
	uint32_t rank;
};

static void *member_main(void *p)
{
	struct member_arg *a = p;
	struct team_run *run = a->run;
	struct agile_coll *coll;
	void *send = aligned_alloc(64, run->buf_bytes);
	void *recv = aligned_alloc(64, run->buf_bytes);

	if (agile_coll_threads_member(run->team, a->rank, &coll) || !send ||
	    !recv) {
		/* the others would wait for us forever: the alarm ends it */
		run->fails[a->rank]++;
		snprintf(run->first[a->rank], sizeof(run->first[0]),
			 "member set-up failed");
		free(send);
		free(recv);
		return NULL;
	}
	for (size_t k = 0; k < run->nr_cases; k++) {
		const struct ct_case *cs = &run->cases[k];
		size_t bad;
		int err;

		err = ct_run(coll, cs, a->rank, run->n, send, recv, &bad);
		if ((err || bad != SIZE_MAX) && !run->fails[a->rank]++) {
			char d[100];

			ct_describe(cs, d, sizeof(d));
			snprintf(run->first[a->rank], sizeof(run->first[0]),
				 "rank %u: %s: %s (element %zd)", a->rank, d,
				 err ? agile_strerror(err) : "wrong result",
				 bad == SIZE_MAX ? (ssize_t)-1 : (ssize_t)bad);
		}
		if (k % 16 == 15 && agile_coll_barrier(coll) &&
		    !run->fails[a->rank]++)
			snprintf(run->first[a->rank], sizeof(run->first[0]),
				 "rank %u: barrier failed", a->rank);
	}
	free(send);
	free(recv);
	return NULL;
}

static void opts_for(struct agile_coll_opts *o, uint32_t segs, uint32_t inter)
{
	agile_coll_opts_init(o);
	/* waits that spin first as well as AUTO's (here: sleep at once) */
	if (segs == 1)
		o->spin_ns = AGILE_DEV_SPIN_NS_DEFAULT;
	o->segments = segs;
	o->interleaved = inter;
	o->user_fn = ct_matmul_op;
	o->user_commutative = 0;
}

/* Every member runs @cases in order; one TAP line. */
static void run_team(uint32_t n, uint32_t segs, uint32_t inter,
		     const struct ct_case *cases, size_t nr, const char *what)
{
	struct team_run run = { .n = n, .cases = cases, .nr_cases = nr };
	struct member_arg args[16];
	pthread_t tids[16];
	struct agile_coll_opts o;
	int err, fails = 0;
	const char *first = "";

	for (size_t k = 0; k < nr; k++) {
		size_t s, r, es = agile_coll_type_size(cases[k].type);

		ct_sizes(&cases[k], n, &s, &r);
		s = (s > r ? s : r) * es;
		if (s > run.buf_bytes)
			run.buf_bytes = s;
	}
	run.buf_bytes = (run.buf_bytes + 64) & ~(size_t)63;
	opts_for(&o, segs, inter);
	err = agile_coll_threads_create(n, &o, &run.team);
	if (err) {
		tap_ok(0, "%u members, M=%u, %s: create: %s", n, segs,
		       inter ? "interleaved" : "plain", agile_strerror(err));
		return;
	}
	for (uint32_t r = 0; r < n; r++) {
		args[r] = (struct member_arg){ &run, r };
		pthread_create(&tids[r], NULL, member_main, &args[r]);
	}
	for (uint32_t r = 0; r < n; r++)
		pthread_join(tids[r], NULL);
	for (uint32_t r = 0; r < n; r++) {
		if (run.fails[r] && !fails)
			first = run.first[r];
		fails += run.fails[r];
	}
	tap_ok(!fails && !agile_coll_threads_destroy(run.team),
	       "%u members, M=%u, %s: %zu collectives (%s)%s%s", n, segs,
	       inter ? "interleaved" : "plain", nr, what, fails ? ": " : "",
	       first);
}

static void matrix(uint32_t n, uint32_t segs, uint32_t inter,
		   const size_t *sizes, size_t nr_sizes, bool all_types,
		   const char *what)
{
	size_t nr;
	struct ct_case *cases =
		ct_matrix_cases(n, sizes, nr_sizes, all_types, &nr);

	if (!cases) {
		tap_ok(0, "cases: out of memory");
		return;
	}
	run_team(n, segs, inter, cases, nr, what);
	free(cases);
}

static void big(uint32_t n, uint32_t segs, uint32_t inter,
		enum agile_coll_type type, enum agile_coll_op op)
{
	struct ct_case cs = {
		.kind = CT_ALLREDUCE,
		.type = type,
		.op = op,
		.count = (64u << 20) / agile_coll_type_size(type),
	};

	run_team(n, segs, inter, &cs, 1, "64 MiB");
}

/* Values past a small limit: the sequence words switch banks. */
static void bank_switch(void)
{
	struct ct_case cases[600];

	for (size_t k = 0; k < 600; k++)
		cases[k] = (struct ct_case){
			.kind = (int)(k % 4),
			.type = AGILE_COLL_INT32,
			.op = AGILE_COLL_SUM,
			.count = 1 + k % 5,
			.root = (uint32_t)(k % 3),
		};
	setenv("AGILE_COLL_SEQ_LIMIT", "1024", 1);
	run_team(3, 2, 1, cases, 600, "sequence limit 1024: bank switches");
	run_team(4, 4, 0, cases, 600, "sequence limit 1024: bank switches");
	unsetenv("AGILE_COLL_SEQ_LIMIT");
}

/* AGILE_COLL_SPIN_AUTO: no spin for a peer that has no CPU to run on. */
static bool spin_is(uint64_t requested, uint32_t members, long cpus,
		    uint64_t spin, uint64_t yield)
{
	uint64_t y = 1;

	return agile__coll_spin_ns(requested, members, cpus, &y) == spin &&
	       y == yield;
}

static void spin_policy(void)
{
	const uint64_t dflt = AGILE_DEV_SPIN_NS_DEFAULT,
		       auto_ = AGILE_COLL_SPIN_AUTO;
	struct agile_coll_opts o;

	unsetenv("AGILE_SPIN_NS");
	agile_coll_opts_init(&o);
	tap_ok(o.spin_ns == AGILE_COLL_SPIN_AUTO, "opts_init: spin AUTO");
	tap_ok(spin_is(auto_, 2, 2, dflt, 0) && spin_is(auto_, 1, 1, dflt, 0),
	       "AUTO, members <= CPUs: the dev layer's default spin, no yield");
	tap_ok(spin_is(auto_, 3, 2, 0, COLL_YIELD_NS) &&
		       spin_is(auto_, 9, 1, 0, COLL_YIELD_NS),
	       "AUTO, more members than CPUs: yield, no spin");
	tap_ok(spin_is(auto_, 9, 0, dflt, 0),
	       "AUTO, CPUs unknown: the default spin");
	tap_ok(spin_is(5000, 9, 1, 5000, 0) && spin_is(0, 1, 8, 0, 0),
	       "an explicit spin_ns is kept, no yield");
	setenv("AGILE_SPIN_NS", "777", 1);
	tap_ok(spin_is(auto_, 9, 1, 777, 0) && spin_is(auto_, 1, 8, 777, 0) &&
		       spin_is(123, 9, 1, 123, 0),
	       "AUTO with $AGILE_SPIN_NS: the variable wins");
	unsetenv("AGILE_SPIN_NS");
}

static void bad_arguments(void)
{
	struct agile_coll_team *team;
	struct agile_coll *coll;
	struct agile_coll_opts o;
	int32_t buf[16] = { 0 }, out[16];
	int err;

	agile_coll_opts_init(&o);
	tap_ok(agile_coll_threads_create(0, NULL, &team) == -EINVAL &&
		       agile_coll_threads_create(AGILE_COLL_MAX_MEMBERS + 1,
						 NULL, &team) == -EINVAL,
	       "0 or too many members: -EINVAL");
	o.segments = 0;
	err = agile_coll_threads_create(1, &o, &team);
	o.segments = AGILE_COLL_SEGMENTS_MAX + 1;
	tap_ok(err == -EINVAL &&
		       agile_coll_threads_create(1, &o, &team) == -EINVAL,
	       "0 or too many segments: -EINVAL");
	agile_coll_opts_init(&o);
	o.reserved[2] = 1;
	tap_ok(agile_coll_threads_create(1, &o, &team) == -EINVAL,
	       "reserved opts: -EINVAL");
	tap_ok(agile_coll_opts_init(NULL) == -EINVAL, "opts_init(NULL)");

	err = agile_coll_threads_create(1, NULL, &team);
	if (!tap_ok_call(err, "a team of one"))
		return;
	tap_ok(agile_coll_threads_member(team, 1, &coll) == -EINVAL,
	       "member 1 of 1: -EINVAL");
	agile_coll_threads_member(team, 0, &coll);
	tap_ok(agile_coll_rank(coll) == 0 && agile_coll_size(coll) == 1 &&
		       agile_coll_rank(NULL) == -EINVAL,
	       "rank and size");
	tap_ok(agile_coll_allreduce(coll, buf, out, 4, AGILE_COLL_NR_TYPES,
				    AGILE_COLL_SUM) == -EINVAL &&
		       agile_coll_allreduce(coll, buf, out, 4, AGILE_COLL_INT32,
					    AGILE_COLL_NR_OPS) == -EINVAL,
	       "unknown type or op: -EINVAL");
	tap_ok(agile_coll_allreduce(coll, buf, out, 4, AGILE_COLL_INT32,
				    AGILE_COLL_USER) == -EINVAL,
	       "AGILE_COLL_USER without a callback: -EINVAL");
	tap_ok(agile_coll_allreduce(coll, NULL, out, 4, AGILE_COLL_INT32,
				    AGILE_COLL_SUM) == -EINVAL &&
		       agile_coll_allreduce(coll, buf, NULL, 4,
					    AGILE_COLL_INT32,
					    AGILE_COLL_SUM) == -EINVAL &&
		       agile_coll_allgather(coll, NULL, out, 4,
					    AGILE_COLL_INT32) == -EINVAL,
	       "NULL buffers with count > 0: -EINVAL");
	tap_ok(agile_coll_allreduce(coll, NULL, NULL, 0, AGILE_COLL_INT32,
				    AGILE_COLL_SUM) == 0,
	       "count 0 with NULL buffers: 0");
	tap_ok(agile_coll_reduce(coll, buf, out, 4, AGILE_COLL_INT32,
				 AGILE_COLL_SUM, 1) == -EINVAL &&
		       agile_coll_reduce(coll, buf, NULL, 4, AGILE_COLL_INT32,
					 AGILE_COLL_SUM, 0) == -EINVAL,
	       "reduce: bad root, or no recv at the root: -EINVAL");
	tap_ok(agile_coll_allreduce(coll, buf, buf + 1, 4, AGILE_COLL_INT32,
				    AGILE_COLL_SUM) == -EINVAL &&
		       agile_coll_reduce_scatter(coll, buf, buf, 4,
						 AGILE_COLL_INT32,
						 AGILE_COLL_SUM) == -EINVAL,
	       "overlapping buffers: -EINVAL");
	tap_ok(agile_coll_allreduce(coll, buf, out, SIZE_MAX / 2,
				    AGILE_COLL_INT32,
				    AGILE_COLL_SUM) == -EOVERFLOW,
	       "count x size overflows: -EOVERFLOW");
	tap_ok(agile_coll_destroy(coll) == -EINVAL &&
		       agile_coll_destroy(NULL) == -EINVAL,
	       "agile_coll_destroy of a team's member: -EINVAL");
	tap_ok(agile_coll_barrier(NULL) == -EINVAL &&
		       agile_coll_barrier(coll) == 0,
	       "barrier");
	{
		void *p = agile_coll_alloc(coll, 100);

		tap_ok(p && ((uintptr_t)p & 63) == 0 &&
			       !agile_coll_alloc(coll, 0),
		       "agile_coll_alloc: aligned plain memory");
		agile_coll_free(coll, p);
	}
	tap_ok(agile_coll_threads_destroy(team) == 0 &&
		       agile_coll_threads_destroy(NULL) == -EINVAL,
	       "threads_destroy");
}

int main(void)
{
	static const size_t full[] = { 0, 1, 1001, 4096 / 4 };
	static const size_t some[] = { 1001, 4096 / 8 };
	static const size_t quick_full[] = { 1, 1001 };
	static const size_t quick_some[] = { 1001 };
	bool quick = getenv("AGILE_TEST_QUICK") != NULL;

	alarm(ALARM_S);
	spin_policy();
	bad_arguments();
	for (uint32_t n = 1; n <= 9; n++) {
		if (quick) {
			matrix(n, 2, 0, quick_full, 2, true, "quick matrix");
			if (n == 3 || n == 4 || n == 7)
				matrix(n, 4, 1, quick_some, 1, false,
				       "quick subset");
			continue;
		}
		matrix(n, 2, 0, full, 4, true, "full matrix");
		matrix(n, 1, 0, some, 2, false, "subset");
		matrix(n, 4, 0, some, 2, false, "subset");
		matrix(n, 1, 1, some, 2, false, "subset");
		matrix(n, 2, 1, some, 2, false, "subset");
		matrix(n, 4, 1, some, 2, false, "subset");
	}
	bank_switch();
	if (!quick) {
		big(2, 2, 0, AGILE_COLL_DOUBLE, AGILE_COLL_SUM);
		big(2, 4, 1, AGILE_COLL_INT32, AGILE_COLL_MAX);
		big(5, 2, 1, AGILE_COLL_FLOAT, AGILE_COLL_SUM);
		big(5, 2, 0, AGILE_COLL_INT64, AGILE_COLL_PROD);
	}
	return tap_done();
}
