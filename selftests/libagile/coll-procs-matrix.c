// SPDX-License-Identifier: MIT
/*
 * coll-procs-matrix - the collectives among processes of one node
 * (agile_coll_procs_join), on each backend: 1 to 9 forked members join
 * with a random key and run allreduce, reduce (several roots),
 * reduce_scatter and allgather, every op x type at sizes 0, 1, 1001 and a
 * page worth of elements (M = 2, plain), a subset with M = 4 interleaved
 * and M = 1, some in place, a non-commutative user op, with buffers from
 * agile_coll_alloc (no copy in or out) and from malloc alternating; each
 * member checks its result against a naive reference; then one large
 * allreduce, the exchange area's full size.
 *
 * $AGILE_TEST_QUICK (the test guests): fewer sizes, members and layouts,
 * no large allreduce.
 */
#define _GNU_SOURCE

#include "colltest.h"
#include "tap.h"
#include "collprocs.h"

static void matrix(uint32_t n, uint32_t segs, uint32_t inter,
		   const size_t *sizes, size_t nr_sizes, bool all_types,
		   const char *what)
{
	struct agile_coll_opts o;
	struct member_job job = { .key = ct_random_key(), .n = n, .opts = &o };
	struct ct_case *cases;

	cases = ct_matrix_cases(n, sizes, nr_sizes, all_types, &job.nr_cases);
	if (!cases) {
		tap_ok(0, "cases: out of memory");
		return;
	}
	job.cases = cases;
	job.buf_bytes = buf_bytes(&job);
	opts_for(&o, segs, inter, job.buf_bytes);
	run_group(&job, what);
	free(cases);
}

/* A larger vector, once: the exchange area's full size. */
static void big(uint32_t n, size_t bytes)
{
	struct agile_coll_opts o;
	struct ct_case cs = { .kind = CT_ALLREDUCE,
			      .type = AGILE_COLL_DOUBLE,
			      .op = AGILE_COLL_SUM,
			      .count = bytes / 8 };
	struct member_job job = { .key = ct_random_key(),
				  .n = n,
				  .opts = &o,
				  .cases = &cs,
				  .nr_cases = 1,
				  .buf_bytes = bytes };

	opts_for(&o, 2, 1, bytes);
	run_group(&job, "one large allreduce");
}

static void run_backend(bool quick)
{
	static const size_t full[] = { 0, 1, 1001, 4096 / 4 };
	static const size_t some[] = { 1001, 4096 / 8 };
	static const size_t quick_sizes[] = { 1, 1001 };

	for (uint32_t n = 1; n <= MAX_MEMBERS; n++) {
		if (quick) {
			if (n == 1 || n == 2 || n == 3 || n == 5 || n == 8)
				matrix(n, 2, 0, quick_sizes, 2, n < 4,
				       "quick matrix");
			if (n == 3)
				matrix(n, 4, 1, quick_sizes + 1, 1, false,
				       "quick subset");
			continue;
		}
		matrix(n, 2, 0, full, 4, true, "full matrix");
		if (n == 3 || n == 4 || n == 6 || n == 9) {
			matrix(n, 4, 1, some, 2, false, "subset");
			matrix(n, 1, 0, some, 2, false, "subset");
		}
	}
	if (!quick) {
		big(2, 16u << 20);
		big(3, 4u << 20);
	}
}

int main(void)
{
	return cp_main(run_backend);
}
