// SPDX-License-Identifier: MIT
/*
 * coll-procs-spin - AGILE_COLL_SPIN_AUTO in the process scope counts the union
 * of the members' affinity masks, on each backend.  Skipped with fewer
 * than 2 CPUs to pin to.
 */
#define _GNU_SOURCE
#include <sched.h>

#include "coll/shm.h"
#include "colltest.h"
#include "tap.h"
#include "collprocs.h"

/*
 * AGILE_COLL_SPIN_AUTO in the process scope counts the union of the
 * members' affinity masks: two members pinned to one CPU yield; pinned
 * to two different CPUs, they spin.  White box: the handle's coll_shm.
 */
static bool pinned_pair_yields(int cpu0, int cpu1)
{
	struct agile_coll_opts o;
	struct agile_coll *coll;
	uint64_t key = ct_random_key();
	cpu_set_t set;
	pid_t pid;
	bool yields = false;
	int status = 1;

	opts_for(&o, 2, 0, 4096);
	pid = fork();
	if (pid == 0) {
		alarm(60);
		CPU_ZERO(&set);
		CPU_SET(cpu1, &set);
		sched_setaffinity(0, sizeof(set), &set);
		if (agile_coll_procs_join(key, 2, &o, JOIN_NS, &coll))
			_exit(1);
		_exit(agile_coll_destroy(coll) ? 1 : 0);
	}
	CPU_ZERO(&set);
	CPU_SET(cpu0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	if (!agile_coll_procs_join(key, 2, &o, JOIN_NS, &coll)) {
		yields = ((struct coll_shm *)coll)->yield_ns != 0;
		agile_coll_destroy(coll);
	}
	waitpid(pid, &status, 0);
	CPU_ZERO(&set);
	for (int i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	sched_setaffinity(0, sizeof(set), &set);
	return yields && WIFEXITED(status) && !WEXITSTATUS(status);
}

static void spin_policy(void)
{
	cpu_set_t set;
	int cpus[2], n = 0;

	unsetenv("AGILE_SPIN_NS");
	if (sched_getaffinity(0, sizeof(set), &set))
		CPU_ZERO(&set);
	for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
		if (CPU_ISSET(i, &set))
			cpus[n++] = i;
	if (n < 2) {
		tap_skip("spin policy from the members' masks",
			 "fewer than 2 CPUs to pin to");
		return;
	}
	tap_ok(pinned_pair_yields(cpus[0], cpus[0]),
	       "%s: 2 members pinned to one CPU: AUTO yields", be);
	tap_ok(!pinned_pair_yields(cpus[0], cpus[1]),
	       "%s: 2 members pinned to two CPUs (the masks' union): AUTO spins",
	       be);
}

static void run_backend(bool quick)
{
	(void)quick;
	spin_policy();
}

int main(void)
{
	return cp_main(run_backend);
}
