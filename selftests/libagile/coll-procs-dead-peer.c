// SPDX-License-Identifier: MIT
/*
 * coll-procs-dead-peer - a member killed with SIGKILL in the middle of an allreduce
 * (in its user op's callback) makes the others' collective and every
 * later call return -EPIPE, on each backend.
 */
#define _GNU_SOURCE
#include <signal.h>

#include "colltest.h"
#include "tap.h"
#include "collprocs.h"

/* Set in each child after its join: whether its op kills it. */
static bool i_am_victim;

static void sum_or_die(void *inout, const void *in, size_t count,
		       enum agile_coll_type type, void *arg)
{
	(void)type;
	(void)arg;
	if (i_am_victim)
		raise(SIGKILL);
	for (size_t i = 0; i < count; i++)
		((int32_t *)inout)[i] += ((const int32_t *)in)[i];
}

static void dead_peer(uint32_t n, uint32_t victim)
{
	uint64_t key = ct_random_key();
	pid_t pids[MAX_MEMBERS];
	int epipe = 0, later = 0, killed = 0, others = 0;

	memset(reports, 0, sizeof(*reports) * (MAX_MEMBERS + 1));
	for (uint32_t i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			struct agile_coll_opts o;
			struct agile_coll *coll;
			int32_t v[4096];
			int err, later_err;

			alarm(60);
			opts_for(&o, 2, 0, sizeof(v));
			o.user_fn = sum_or_die;
			o.user_commutative = 1;
			err = agile_coll_procs_join(key, n, &o, JOIN_NS, &coll);
			if (err) {
				reports[i].err = err;
				_exit(2);
			}
			i_am_victim = agile_coll_rank(coll) == (int)victim;
			for (size_t k = 0; k < 4096; k++)
				v[k] = (int32_t)k;
			err = agile_coll_allreduce(coll, v, v, 4096,
						   AGILE_COLL_INT32,
						   AGILE_COLL_USER);
			reports[i].err = err;
			/* So do the next calls, one moving nothing included. */
			later_err = agile_coll_barrier(coll);
			reports[i].fails = later_err != err;
			later_err = agile_coll_allreduce(coll, NULL, NULL, 0,
							 AGILE_COLL_INT32,
							 AGILE_COLL_SUM);
			reports[i].fails += later_err != err;
			agile_coll_destroy(coll);
			_exit(0);
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		int status = 0;

		waitpid(pids[i], &status, 0);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
			killed++;
			continue;
		}
		others++;
		epipe += reports[i].err == -EPIPE;
		later += reports[i].fails == 0;
	}
	tap_ok(killed == 1 && epipe == others && later == others,
	       "%s: %u members, one killed with SIGKILL inside an allreduce: "
	       "the others get -EPIPE (%d of %d), and so do their next calls, "
	       "a barrier and a count-0 allreduce (%d)",
	       be, n, epipe, others, later);
}

static void run_backend(bool quick)
{
	dead_peer(2, 1);
	dead_peer(3, 0);
	if (!quick)
		dead_peer(5, 4);
}

int main(void)
{
	return cp_main(run_backend);
}
