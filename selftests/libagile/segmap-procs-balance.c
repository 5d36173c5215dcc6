// SPDX-License-Identifier: MIT
/*
 * segmap-procs-balance - agile_forall's balance mode in the processes
 * scope (agile_segmap_procs_join), with 2 to 4 forked members on each dev
 * backend ($AGILE_BACKEND alone when set, else user and, where /dev/agile
 * exists, kmod): the per-node queues of memory-block tasks live in shared
 * memory, so when node 0's blocks are slow the other processes steal them
 * and write node 0's home directly.  Checked: every memory block runs
 * exactly once across the processes (calls add up), steals happen, Y
 * equals the plain reference on every member, twice in a row (the queues
 * are reset between foralls), on the caller and on a pool of 2; and a
 * member killed inside the kernel: the others' forall returns -EPIPE,
 * never hangs.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/sched.h>
#include <agile/segmap.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "testutil.h"
#include "segmaptest.h"

#define MAX_MEMBERS 4
#define JOIN_NS (30ULL * 1000 * 1000 * 1000)
#define ALARM_S 120
#define NX 64
#define NY 48
#define RUNS 2
#define WHY 200

static const char *be;

/* What each member reports, in memory shared with the parent. */
struct report {
	int err;
	uint64_t calls[RUNS];
	uint64_t steals[RUNS];
	char why[WHY];
};

static struct report *reports;

struct job {
	struct agile_rmap *rm;
	uint32_t slow_node; /* its blocks sleep, whoever runs them */
	uint32_t victim; /* dies in its first call; UINT32_MAX none */
};

static uint64_t random_key(void)
{
	uint64_t key = 0;

	while (!key)
		if (getrandom(&key, sizeof(key), 0) != sizeof(key))
			key = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
	return key;
}

static int fail(struct report *r, int err, const char *what)
{
	snprintf(r->why, WHY, "err %d: %s: %s", err, what, agile_segmap_why());
	return err ? err : -EBADMSG;
}

static double xval(int64_t x, int64_t y)
{
	return (double)(x + NX * y);
}

static double yval(int64_t x, int64_t y)
{
	return 2 * xval(x, y) + xval(NX - 1 - x, y);
}

/* X = xval over ctx->grid (acc[0] X write). */
static int fill(struct agile_forall_ctx *ctx, void *arg)
{
	const struct agile_grid *g = &ctx->grid;

	(void)arg;
	for (int64_t y = g->offset.i[1];
	     y < g->offset.i[1] + (int64_t)g->extent.n[1]; y++)
		for (int64_t x = g->offset.i[0];
		     x < g->offset.i[0] + (int64_t)g->extent.n[0]; x++) {
			int64_t i[2] = { x, y };
			double v = xval(x, y);
			int err = agile_acc_write(&ctx->acc[0], i, &v);

			if (err)
				return err;
		}
	return 0;
}

/*
 * Y = 2 X + X mirrored along axis 0 (acc[0] Y write, acc[1] X read): a
 * block reads its own X and another node's, so thieves owner-copy too.
 */
static int mirror(struct agile_forall_ctx *ctx, void *arg)
{
	const struct job *job = arg;
	const struct agile_grid *g = &ctx->grid;
	struct timespec slow = { 0, 10 * 1000 * 1000 };
	uint32_t owner;

	if (ctx->node == job->victim)
		raise(SIGKILL);
	agile_rmap_segment(job->rm, ctx->segment, NULL, &owner);
	if (owner == job->slow_node)
		nanosleep(&slow, NULL);
	for (int64_t y = g->offset.i[1];
	     y < g->offset.i[1] + (int64_t)g->extent.n[1]; y++)
		for (int64_t x = g->offset.i[0];
		     x < g->offset.i[0] + (int64_t)g->extent.n[0]; x++) {
			int64_t i[2] = { x, y }, m[2] = { NX - 1 - x, y };
			double a, b;
			int err = agile_acc_read(&ctx->acc[1], i, &a);

			if (!err)
				err = agile_acc_read(&ctx->acc[1], m, &b);
			if (!err)
				a = 2 * a + b;
			if (!err)
				err = agile_acc_write(&ctx->acc[0], i, &a);
			if (err)
				return err;
		}
	return 0;
}

/*
 * A member's work on its map: X and Y of 32x24 segments dealt
 * cyclically, memory blocks of 16x8 (24 of them, 6 per segment); Y by a
 * balanced forall RUNS times, gathered and compared each time.
 */
static int member_work(struct agile_segmap *sm, uint32_t n, uint32_t victim,
		       struct report *r)
{
	struct agile_grid parent = grid2(0, 0, NX, NY);
	struct agile_extent seg = ext2(32, 24);
	struct agile_proto p = proto(AGILE_PROTO_CYCLIC, n);
	struct agile_levels lv = { .tile = ext2(16, 8), .block = ext2(16, 8) };
	struct agile_field *x = NULL, *y = NULL;
	struct agile_forall_stats st;
	struct job job = { .slow_node = 0, .victim = victim };
	double *out = malloc(NX * NY * sizeof(*out)), sum;
	int err;

	if (!out)
		return fail(r, -ENOMEM, "malloc");
	err = agile_rmap_tiles(&parent, &seg, &p, &job.rm);
	if (err) {
		free(out);
		return fail(r, err, "rmap");
	}
	err = agile_field_create(sm, job.rm, &lv, sizeof(double), &x);
	if (!err)
		err = agile_field_create(sm, job.rm, &lv, sizeof(double), &y);
	if (err) {
		fail(r, err, "fields");
		goto out;
	}
	{
		struct agile_forall_field ff[1] = { { x, AGILE_ACC_WRITE } };

		err = agile_forall(sm, x, fill, NULL, ff, 1, 0, NULL);
		if (err) {
			fail(r, err, "fill X");
			goto out;
		}
	}
	for (int k = 0; k < RUNS; k++) {
		struct agile_forall_field ff[2] = { { y, AGILE_ACC_WRITE },
						    { x, AGILE_ACC_READ } };

		memset(out, 0, NX * NY * sizeof(*out));
		err = agile_forall(sm, y, mirror, &job, ff, 2,
				   AGILE_FORALL_BALANCE, &st);
		if (err) {
			fail(r, err, "balanced forall");
			goto out;
		}
		r->calls[k] = st.calls;
		r->steals[k] = st.steals;
		err = agile_field_gather(y, out, NX * NY * sizeof(*out));
		if (err) {
			fail(r, err, "gather");
			goto out;
		}
		for (int64_t j = 0; j < NY && !err; j++)
			for (int64_t i = 0; i < NX && !err; i++)
				if (out[i + NX * j] != yval(i, j)) {
					snprintf(
						r->why, WHY,
						"run %d: Y(%lld, %lld) = %g, want %g",
						k, (long long)i, (long long)j,
						out[i + NX * j], yval(i, j));
					err = -EBADMSG;
				}
		/* every member has gathered before Y is written again */
		if (!err)
			err = agile_field_reduce(x, AGILE_COLL_DOUBLE,
						 AGILE_COLL_SUM, &sum);
		if (err)
			goto out;
		/* X's values into Y: a block the next run misses shows */
		err = agile_forall(sm, y, fill, NULL,
				   (struct agile_forall_field[1]){
					   { y, AGILE_ACC_WRITE } },
				   1, 0, NULL);
		if (err) {
			fail(r, err, "refill");
			goto out;
		}
	}
out:
	if (y)
		agile_field_destroy(y);
	if (x)
		agile_field_destroy(x);
	agile_rmap_destroy(job.rm);
	free(out);
	return err;
}

/* In a child: join, work, report, leave. */
static void member_main(uint64_t key, uint32_t n, int workers, uint32_t victim,
			int slot)
{
	struct report *r = &reports[slot];
	struct agile_sched *pool = NULL;
	struct agile_segmap *sm;
	int err;

	alarm(ALARM_S);
	if (workers) {
		struct agile_sched_opts o;

		agile_sched_opts_init(&o);
		o.nr_workers = workers;
		err = agile_sched_create(&o, &pool);
		if (err) {
			r->err = fail(r, err, "pool");
			_exit(1);
		}
	}
	err = agile_segmap_procs_join(key, n, JOIN_NS, pool, &sm);
	if (err) {
		r->err = fail(r, err, "join");
		_exit(1);
	}
	r->err = member_work(sm, n, victim, r);
	agile_segmap_destroy(sm);
	if (pool)
		agile_sched_destroy(pool);
	exit(r->err ? 1 : 0); /* not _exit: LSan looks for leaks at exit */
}

/* Fork @n members; whether all passed. */
static bool run_members(uint32_t n, int workers, const char **why)
{
	uint64_t key = random_key();
	pid_t pids[MAX_MEMBERS];
	bool ok = true;

	memset(reports, 0, sizeof(*reports) * MAX_MEMBERS);
	fflush(stdout);
	for (uint32_t i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			member_main(key, n, workers, UINT32_MAX, (int)i);
	}
	*why = "";
	for (uint32_t i = 0; i < n; i++) {
		int status = 0;

		waitpid(pids[i], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) ||
		    reports[i].err) {
			if (ok)
				*why = reports[i].why[0] ? reports[i].why :
							   "a member died";
			ok = false;
		}
	}
	return ok;
}

static void balanced(uint32_t n, int workers)
{
	uint64_t calls[RUNS] = { 0 }, steals[RUNS] = { 0 };
	const char *why;
	bool ok = run_members(n, workers, &why);

	for (uint32_t i = 0; i < n; i++)
		for (int k = 0; k < RUNS; k++) {
			calls[k] += reports[i].calls[k];
			steals[k] += reports[i].steals[k];
		}
	for (int k = 0; k < RUNS; k++)
		ok = ok && calls[k] == 24 && steals[k] > 0;
	tap_ok(ok,
	       "%s: %u members%s, node 0's blocks slow: Y right on every "
	       "member, 24 block calls across them (%llu, %llu), stolen "
	       "across processes (%llu, %llu)%s%s",
	       be, n, workers ? " with pools of 2" : "",
	       (unsigned long long)calls[0], (unsigned long long)calls[1],
	       (unsigned long long)steals[0], (unsigned long long)steals[1],
	       why[0] ? ": " : "", why);
}

/* The last member dies in its first kernel call; the others: -EPIPE. */
static void killed(uint32_t n)
{
	uint64_t key = random_key();
	pid_t pids[MAX_MEMBERS];
	int witnesses = 0, dead = 0;
	const char *why = "";

	memset(reports, 0, sizeof(*reports) * MAX_MEMBERS);
	fflush(stdout);
	for (uint32_t i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			member_main(key, n, 0, n - 1, (int)i);
	}
	for (uint32_t i = 0; i < n; i++) {
		int status = 0;

		waitpid(pids[i], &status, 0);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			dead++;
		else if (WIFEXITED(status) && reports[i].err == -EPIPE)
			witnesses++;
		else if (!why[0])
			why = reports[i].why[0] ? reports[i].why : "died";
	}
	tap_ok(dead == 1 && witnesses == (int)n - 1,
	       "%s: %u members, one killed inside a balanced forall: the "
	       "others' forall returns -EPIPE (%d of %u)%s%s",
	       be, n, witnesses, n - 1, why[0] ? ": " : "", why);
}

static void test_backend(int backend)
{
	be = agile_dev_backend_name(backend);
	setenv("AGILE_BACKEND", be, 1);
	for (uint32_t n = 2; n <= MAX_MEMBERS; n++)
		balanced(n, 0);
	balanced(3, 2);
	killed(3);
}

int main(void)
{
	reports = mmap(NULL, sizeof(*reports) * MAX_MEMBERS,
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		       0);
	if (reports == MAP_FAILED) {
		tap_ok(0, "shared report page");
		return tap_done();
	}
	alarm(8 * ALARM_S);
	run_backends(test_backend);
	return tap_done();
}
