// SPDX-License-Identifier: MIT
/*
 * coll-procs-args - bad arguments of the collectives among processes, on each
 * backend: a join with 0 or too many members or bad opts, and
 * AGILE_COLL_USER without a callback, are -EINVAL.
 */
#define _GNU_SOURCE

#include "colltest.h"
#include "tap.h"
#include "collprocs.h"

static void args(void)
{
	struct agile_coll_opts o;
	struct agile_coll *coll;
	uint64_t key = ct_random_key();
	int err;

	opts_for(&o, 2, 0, 4096);
	tap_ok(agile_coll_procs_join(key, 0, &o, JOIN_NS, &coll) == -EINVAL &&
		       agile_coll_procs_join(key, AGILE_GROUP_MAX_MEMBERS + 1,
					     &o, JOIN_NS, &coll) == -EINVAL,
	       "%s: join with 0 or too many members: -EINVAL", be);
	o.interleaved = 2;
	tap_ok(agile_coll_procs_join(key, 1, &o, JOIN_NS, &coll) == -EINVAL,
	       "%s: join with bad opts: -EINVAL", be);

	/* AGILE_COLL_USER without a callback, even for 0 elements. */
	opts_for(&o, 2, 0, 4096);
	o.user_fn = NULL;
	err = agile_coll_procs_join(ct_random_key(), 1, &o, JOIN_NS, &coll);
	if (!tap_ok(!err, "%s: a group of one without a user op", be))
		return;
	{
		int32_t v[4] = { 0 }, out[4];

		tap_ok(agile_coll_allreduce(coll, v, out, 4, AGILE_COLL_INT32,
					    AGILE_COLL_USER) == -EINVAL &&
			       agile_coll_allreduce(coll, v, out, 0,
						    AGILE_COLL_INT32,
						    AGILE_COLL_USER) == -EINVAL,
		       "%s: AGILE_COLL_USER without a callback: -EINVAL", be);
	}
	agile_coll_destroy(coll);
}

static void run_backend(bool quick)
{
	(void)quick;
	args();
}

int main(void)
{
	return cp_main(run_backend);
}
