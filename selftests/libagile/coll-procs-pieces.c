// SPDX-License-Identifier: MIT
/*
 * coll-procs-pieces - every collective over max_bytes runs in pieces of it, on
 * each backend: 3 and 5 members (5 not with $AGILE_TEST_QUICK), tails, in
 * place or not, a non-commutative user op keeping rank order in every
 * piece; and the same for a group of one; and 3 members again with
 * the results streamed into recv ($AGILE_COLL_STREAM_FROM=1).
 */
#define _GNU_SOURCE

#include "colltest.h"
#include "tap.h"
#include "collprocs.h"

/*
 * Every collective over max_bytes (4 KiB here): in pieces of it, with
 * tails; a non-commutative user op keeps rank order in every piece.
 */
static void pieces(uint32_t n, const char *what)
{
	const struct ct_case cases[] = {
		{ CT_ALLREDUCE, AGILE_COLL_INT32, AGILE_COLL_SUM, 3001, 0,
		  false },
		{ CT_ALLREDUCE, AGILE_COLL_DOUBLE, AGILE_COLL_PROD, 1500, 0,
		  true },
		{ CT_REDUCE, AGILE_COLL_FLOAT, AGILE_COLL_MAX, 2500, 0, false },
		{ CT_REDUCE, AGILE_COLL_FLOAT, AGILE_COLL_MIN, 2500, n - 1,
		  true },
		{ CT_ALLREDUCE, AGILE_COLL_INT64, AGILE_COLL_USER, 1200, 0,
		  false },
		{ CT_ALLREDUCE, AGILE_COLL_FLOAT16, AGILE_COLL_SUM, 5000, 0,
		  false },
		{ CT_REDUCE, AGILE_COLL_BFLOAT16, AGILE_COLL_SUM, 4100, n / 2,
		  false },
		/* per member: pieces of 4096 / size / n elements */
		{ CT_ALLGATHER, AGILE_COLL_INT32, AGILE_COLL_SUM, 700, 0,
		  false },
		{ CT_ALLGATHER, AGILE_COLL_DOUBLE, AGILE_COLL_SUM, 333, 0,
		  true },
		{ CT_REDUCE_SCATTER, AGILE_COLL_DOUBLE, AGILE_COLL_MIN, 300, 0,
		  false },
		{ CT_REDUCE_SCATTER, AGILE_COLL_INT64, AGILE_COLL_USER, 250, 0,
		  false },
	};
	struct agile_coll_opts o;
	struct member_job job = { .key = ct_random_key(),
				  .n = n,
				  .opts = &o,
				  .cases = cases,
				  .nr_cases = sizeof(cases) / sizeof(cases[0]),
				  .private_only = true };

	job.buf_bytes = buf_bytes(&job);
	opts_for(&o, 2, 0, 4096);
	run_group(&job, what);
}

/* One member: the collectives over max_bytes, in pieces, in a group of one. */
static void one_member(void)
{
	struct agile_coll_opts o;
	struct agile_coll *coll;
	int32_t big[2048], out[2048];
	int err;

	opts_for(&o, 2, 0, 4096);
	err = agile_coll_procs_join(ct_random_key(), 1, &o, JOIN_NS, &coll);
	if (!tap_ok(!err, "%s: a group of one (%s)", be, agile_strerror(err)))
		return;
	for (int i = 0; i < 2048; i++)
		big[i] = i;
	memset(out, 0, sizeof(out));
	err = agile_coll_allgather(coll, big, out, 1025, AGILE_COLL_INT32);
	tap_ok(!err && !memcmp(big, out, 1025 * sizeof(big[0])),
	       "%s: an allgather over max_bytes: in pieces%s%s", be,
	       err ? ": " : "", err ? agile_strerror(err) : "");
	memset(out, 0, sizeof(out));
	err = agile_coll_reduce_scatter(coll, big, out, 2047, AGILE_COLL_INT32,
					AGILE_COLL_SUM);
	tap_ok(!err && !memcmp(big, out, 2047 * sizeof(big[0])),
	       "%s: a reduce_scatter over max_bytes: in pieces%s%s", be,
	       err ? ": " : "", err ? agile_strerror(err) : "");
	tap_ok(agile_coll_allreduce(coll, big, out, 2048, AGILE_COLL_INT32,
				    AGILE_COLL_SUM) == 0 &&
		       !memcmp(big, out, sizeof(big)),
	       "%s: an allreduce over max_bytes: in pieces", be);
	memset(big, 0, sizeof(big));
	tap_ok(agile_coll_allreduce(coll, big, out, 1024, AGILE_COLL_INT32,
				    AGILE_COLL_SUM) == 0,
	       "%s: a vector of max_bytes: 0", be);
	tap_ok(agile_coll_destroy(coll) == 0, "%s: destroy", be);
}

static void run_backend(bool quick)
{
	one_member();
	pieces(3, "over max_bytes (4 KiB): in pieces");
	if (!quick)
		pieces(5, "over max_bytes (4 KiB): in pieces");
	/*
	 * The same with every result streamed into the private recv
	 * (non-temporal stores, which calls of 8 MiB and more get): the
	 * members fork after the setenv and read it at join.
	 */
	setenv("AGILE_COLL_STREAM_FROM", "1", 1);
	pieces(3, "in pieces, streamed into recv");
	unsetenv("AGILE_COLL_STREAM_FROM");
}

int main(void)
{
	return cp_main(run_backend);
}
