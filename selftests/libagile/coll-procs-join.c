// SPDX-License-Identifier: MIT
/*
 * coll-procs-join - joining a group of processes, on each backend: a join
 * nobody completes times out (-ETIMEDOUT), and members that disagree on
 * max_bytes, segments or the layout get -EINVAL.
 */
#define _GNU_SOURCE

#include "colltest.h"
#include "tap.h"
#include "collprocs.h"

/*
 * Two members whose options differ in @what (@a for this process, @b for
 * a forked one): the join fails, with -EINVAL for at least one of them
 * (the other may see it leave: -EPIPE), never success.
 */
static void disagree(const struct agile_coll_opts *a,
		     const struct agile_coll_opts *b, const char *what)
{
	uint64_t key = ct_random_key();
	struct agile_coll *coll;
	int err, status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		alarm(60);
		err = agile_coll_procs_join(key, 2, b, JOIN_NS, &coll);
		if (!err)
			agile_coll_destroy(coll);
		_exit(err == -EINVAL ? 0 : err == -EPIPE ? 2 : 1);
	}
	err = agile_coll_procs_join(key, 2, a, JOIN_NS, &coll);
	if (!err)
		agile_coll_destroy(coll);
	waitpid(pid, &status, 0);
	tap_ok((err == -EINVAL || err == -EPIPE) && WIFEXITED(status) &&
		       WEXITSTATUS(status) != 1 &&
		       (err == -EINVAL || WEXITSTATUS(status) == 0),
	       "%s: members with different %s: -EINVAL (%s, other exit %d)", be,
	       what, agile_strerror(err),
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void join(void)
{
	struct agile_coll_opts o, o2;
	struct agile_coll *coll;
	uint64_t key = ct_random_key();

	opts_for(&o, 2, 0, 4096);
	tap_ok(agile_coll_procs_join(key, 2, &o, 200ULL * 1000 * 1000, &coll) ==
		       -ETIMEDOUT,
	       "%s: a join nobody completes: -ETIMEDOUT", be);

	/* Two members that disagree on what shapes the schedule. */
	opts_for(&o2, 2, 0, 8192);
	disagree(&o, &o2, "max_bytes");
	opts_for(&o2, 3, 0, 4096);
	disagree(&o, &o2, "segments");
	opts_for(&o2, 2, 1, 4096);
	disagree(&o, &o2, "layouts (interleaved)");
}

static void run_backend(bool quick)
{
	(void)quick;
	join();
}

int main(void)
{
	return cp_main(run_backend);
}
