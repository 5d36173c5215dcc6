// SPDX-License-Identifier: MIT
/*
 * segmap-procs-seed - seed 000's worked example (segmap-seed-example's
 * checks, segmapseed.h) with each node a forked process of a dev group:
 * agile_segmap_procs_join, one node per member, on each dev backend
 * ($AGILE_BACKEND alone when set, else user and, where /dev/agile exists,
 * kmod).  Per node: exactly its owner-copies of B (node 1 and node 3 four
 * memory blocks each, node 3 blocks 2 and 3 from node 1 for segment
 * 20(4), nodes 0 and 2 none), none twice, a second forall and C = A + B
 * moving nothing, C gathered on every node equal to the reference, the
 * field's reduce equal to the reference sum.  Q = 4 row block-cyclic,
 * kernels on the caller and on a pool of 2 workers per member; Q = 3 row
 * block-block and cyclic in 3 processes.  Then a member killed with
 * SIGKILL in its kernel: the others' forall returns -EPIPE (or
 * -ETIMEDOUT), never hangs.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "testutil.h"
#include "segmaptest.h"
#include "segmapseed.h"

#define JOIN_NS (30ULL * 1000 * 1000 * 1000) /* and each collective */
#define KILL_JOIN_NS (10ULL * 1000 * 1000 * 1000)
#define ALARM_S 120

/* What each member reports, in memory shared with the parent. */
struct report {
	int exited; /* seed_run came back */
	int self;
	uint32_t failed;
	int forall_err;
	char why[SEED_WHY]; /* a failure outside the checks */
	char check_why[SEED_NR_CHECKS][SEED_WHY];
};

static struct report *reports; /* SEED_MAX_Q */
static const char *be;

/* The victim of the killed case: this node dies in its first kernel. */
static uint32_t victim = UINT32_MAX, my_node = UINT32_MAX;

static void die_if_victim(struct agile_forall_ctx *ctx)
{
	if (ctx->node == victim && my_node == victim)
		raise(SIGKILL);
}

static uint64_t random_key(void)
{
	uint64_t key = 0;

	while (!key)
		if (getrandom(&key, sizeof(key), 0) != sizeof(key))
			key = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
	return key;
}

/* In a child: join as one node, run the example, report, leave. */
static void member_main(uint64_t key, const struct seed_layout *lay,
			uint32_t workers, uint64_t join_ns, int slot)
{
	struct report *r = &reports[slot];
	struct agile_sched *pool = NULL;
	struct agile_segmap *sm;
	struct seed_node sn;
	int err;

	alarm(ALARM_S);
	if (workers) {
		struct agile_sched_opts o;

		agile_sched_opts_init(&o);
		o.nr_workers = workers;
		o.flags = AGILE_SCHED_QUIET | AGILE_SCHED_NO_PIN;
		err = agile_sched_create(&o, &pool);
		if (err) {
			snprintf(r->why, SEED_WHY, "agile_sched_create: %d",
				 err);
			_exit(1);
		}
	}
	err = agile_segmap_procs_join(key, lay->q, join_ns, pool, &sm);
	if (err) {
		snprintf(r->why, SEED_WHY, "agile_segmap_procs_join: %d", err);
		_exit(1);
	}
	agile_segmap_self(sm, &my_node);
	r->self = (int)my_node;
	if (agile_segmap_kind(sm) != AGILE_NODE_PROC)
		snprintf(r->why, SEED_WHY, "kind %d", agile_segmap_kind(sm));
	seed_kernel_hook = die_if_victim;
	seed_run(sm, lay, &sn);
	r->failed = sn.failed;
	r->forall_err = sn.forall_err;
	memcpy(r->check_why, sn.why, sizeof(sn.why));
	r->exited = 1;
	if (pool)
		agile_sched_destroy(pool);
	/* not _exit: LSan looks for leaks at exit */
	exit(r->why[0] || sn.failed ? 1 : 0);
}

/* Fork @lay->q members; their exit statuses into @status. */
static void fork_members(const struct seed_layout *lay, uint32_t workers,
			 uint64_t join_ns, int *status)
{
	uint64_t key = random_key();
	pid_t pids[SEED_MAX_Q];

	memset(reports, 0, sizeof(*reports) * SEED_MAX_Q);
	for (uint32_t i = 0; i < SEED_MAX_Q; i++)
		reports[i].self = -1;
	fflush(stdout);
	for (uint32_t i = 0; i < lay->q; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			member_main(key, lay, workers, join_ns, (int)i);
	}
	for (uint32_t i = 0; i < lay->q; i++) {
		status[i] = 0;
		waitpid(pids[i], &status[i], 0);
	}
}

static void run_case(const struct seed_layout *lay, uint32_t workers)
{
	int status[SEED_MAX_Q];
	uint32_t seen = 0, exited = 0;
	const char *died = "";
	char on[128];

	snprintf(on, sizeof(on), "%s: %s, %u processes, %s", be, lay->name,
		 lay->q,
		 workers ? "a pool of 2 workers each" : "on the caller");
	victim = UINT32_MAX;
	fork_members(lay, workers, JOIN_NS, status);
	for (uint32_t i = 0; i < lay->q; i++) {
		if (reports[i].self >= 0 && reports[i].self < SEED_MAX_Q)
			seen |= 1u << reports[i].self;
		exited += WIFEXITED(status[i]) && !WEXITSTATUS(status[i]) &&
			  reports[i].exited;
		if (reports[i].why[0] && !died[0])
			died = reports[i].why;
	}
	for (uint32_t k = 0; k < SEED_NR_CHECKS; k++) {
		const char *why = "";
		bool ok = true;

		if (k == SEED_SEG4 && !lay->segment_4)
			continue;
		for (uint32_t i = 0; i < lay->q; i++)
			if (!reports[i].exited || reports[i].failed & 1u << k) {
				if (ok)
					why = reports[i].exited ?
						      reports[i].check_why[k] :
						      "a member did not finish";
				ok = false;
			}
		tap_ok(ok, "%s: %s%s%s", on, seed_check_name(k), ok ? "" : ": ",
		       why);
	}
	tap_ok(exited == lay->q && seen == (1u << lay->q) - 1,
	       "%s: every member exited 0 (%u of %u), nodes 0 .. %u%s%s", on,
	       exited, lay->q, lay->q - 1, died[0] ? ": " : "", died);
}

/*
 * Node 3 dies with SIGKILL in its first kernel call of C = A + B^T; the
 * others' forall returns -EPIPE (or -ETIMEDOUT, after the join's
 * timeout), their teardown too, and they exit.
 */
static void killed(void)
{
	const struct seed_layout *lay = &seed_q4_cyclic;
	int status[SEED_MAX_Q], witnesses = 0, dead = 0, bad = 0;
	struct timespec t0, t1;
	const char *why = "";
	double s;

	victim = 3;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fork_members(lay, 0, KILL_JOIN_NS, status);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	victim = UINT32_MAX;
	s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	for (uint32_t i = 0; i < lay->q; i++) {
		if (WIFSIGNALED(status[i]) && WTERMSIG(status[i]) == SIGKILL) {
			dead++;
			continue;
		}
		if (WIFEXITED(status[i]) && reports[i].exited &&
		    (reports[i].forall_err == -EPIPE ||
		     reports[i].forall_err == -ETIMEDOUT)) {
			witnesses++;
			continue;
		}
		if (!bad++)
			why = reports[i].exited ? "a forall returned else" :
						  "a member did not finish";
	}
	tap_ok(dead == 1 && witnesses == 3 && !bad,
	       "%s: Q = 4, node 3 killed in its kernel: the others' forall returns -EPIPE or -ETIMEDOUT (%d of 3: %d %d %d %d) in %.1f s%s%s",
	       be, witnesses, reports[0].forall_err, reports[1].forall_err,
	       reports[2].forall_err, reports[3].forall_err, s,
	       why[0] ? ": " : "", why);
}

static void test_backend(int backend)
{
	be = agile_dev_backend_name(backend);
	/* The scope takes the dev layer's default backend, this one. */
	setenv("AGILE_BACKEND", be, 1);
	run_case(&seed_q4_cyclic, 0);
	run_case(&seed_q4_cyclic, 2);
	run_case(&seed_q3_row_block, 0);
	run_case(&seed_q3_cyclic, 2);
	killed();
}

int main(void)
{
	reports = mmap(NULL, sizeof(*reports) * SEED_MAX_Q,
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		       0);
	if (reports == MAP_FAILED) {
		tap_ok(0, "shared report page");
		return tap_done();
	}
	alarm(10 * ALARM_S);
	run_backends(test_backend);
	return tap_done();
}
