// SPDX-License-Identifier: MIT
/*
 * coll-procs - the collectives among processes of one node
 * (agile_coll_procs_join), on each backend: 1 to 9 forked members join
 * with a random key and run allreduce, reduce (several roots),
 * reduce_scatter and allgather, every op x type at sizes 0, 1, 1001 and a
 * page worth of elements (M = 2, plain), a subset with M = 4 interleaved
 * and M = 1, some in place, a non-commutative user op, with buffers from
 * agile_coll_alloc (no copy in or out) and from malloc alternating; each
 * member checks its result against a naive reference.  Then: a member
 * killed with SIGKILL in the middle of an allreduce (in its user op's
 * callback) makes the others' collective and every later call return
 * -EPIPE; every collective over max_bytes runs in pieces (3 and 5
 * members, tails, in place or not, a user op); AGILE_COLL_SPIN_AUTO
 * counts the union of the members' affinity masks; members that disagree on
 * max_bytes get -EINVAL; a join nobody completes times out; the heap of
 * agile_coll_alloc.
 *
 * $AGILE_TEST_QUICK (the test guests): fewer sizes, members and layouts.
 * Every process has an alarm: a hang fails the test instead.
 * Backends: $AGILE_BACKEND alone when it is set, else user and, where
 * /dev/agile exists, kmod.
 */
#define _GNU_SOURCE
#include <agile/coll.h>
#include <agile/dev.h>
#include <agile/error.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coll/shm.h"
#include "colltest.h"
#include "tap.h"

#define ALARM_S 600
#define JOIN_NS (30ULL * 1000 * 1000 * 1000)
#define MAX_MEMBERS 9

static const char *be;
static int backend;

/* What each member reports, in memory shared with the parent. */
struct report {
	int fails;
	int err;
	char msg[200];
};

static struct report *reports; /* MAX_MEMBERS + 1, shared */

static void opts_for(struct agile_coll_opts *o, uint32_t segs, uint32_t inter,
		     uint64_t max_bytes)
{
	agile_coll_opts_init(o);
	o->segments = segs;
	o->interleaved = inter;
	o->backend = (uint32_t)backend;
	o->max_bytes = max_bytes;
	o->user_fn = ct_matmul_op;
	o->user_commutative = 0;
}

static void fail(struct report *r, const char *fmt, const char *what, int err)
{
	if (!r->fails++) {
		snprintf(r->msg, sizeof(r->msg), fmt, what,
			 err ? agile_strerror(err) : "wrong result");
		r->err = err;
	}
}

struct member_job {
	uint64_t key;
	uint32_t n;
	const struct agile_coll_opts *opts;
	const struct ct_case *cases;
	size_t nr_cases;
	size_t buf_bytes;
	bool private_only; /* no agile_coll_alloc buffers */
};

/* In a child: join, run every case, report. */
static void member_main(const struct member_job *job, uint32_t slot)
{
	struct report *r = &reports[slot];
	struct agile_coll *coll;
	void *priv_send, *priv_recv, *seg_send, *seg_recv;
	int err, rank;

	err = agile_coll_procs_join(job->key, job->n, job->opts, JOIN_NS,
				    &coll);
	if (err) {
		fail(r, "join: %s%s", "", err);
		return;
	}
	rank = agile_coll_rank(coll);
	priv_send = aligned_alloc(64, job->buf_bytes);
	priv_recv = aligned_alloc(64, job->buf_bytes);
	seg_send = job->private_only ? NULL :
				       agile_coll_alloc(coll, job->buf_bytes);
	seg_recv = job->private_only ? NULL :
				       agile_coll_alloc(coll, job->buf_bytes);
	if (!priv_send || !priv_recv ||
	    (!job->private_only && (!seg_send || !seg_recv))) {
		fail(r, "buffers%s: %s", "", -ENOMEM);
		_exit(1); /* the others' waits end with -EPIPE */
	}
	for (size_t k = 0; k < job->nr_cases; k++) {
		const struct ct_case *cs = &job->cases[k];
		bool in_seg = !job->private_only && (k + (size_t)rank) % 2;
		char d[100];
		size_t bad;

		err = ct_run(coll, cs, (uint32_t)rank, job->n,
			     in_seg ? seg_send : priv_send,
			     in_seg ? seg_recv : priv_recv, &bad);
		if (err || bad != SIZE_MAX) {
			char what[140];

			ct_describe(cs, d, sizeof(d));
			snprintf(
				what, sizeof(what), "rank %d: %s (%s)", rank, d,
				in_seg ? "segment buffers" : "private buffers");
			fail(r, "%s: %s", what, err);
			if (err)
				break; /* out of step with the others now */
		}
	}
	agile_coll_free(coll, seg_send);
	agile_coll_free(coll, seg_recv);
	free(priv_send);
	free(priv_recv);
	err = agile_coll_destroy(coll);
	if (err && !r->fails)
		fail(r, "destroy%s: %s", "", err);
}

/* Fork @job->n members; one TAP line. */
static void run_group(const struct member_job *job, const char *what)
{
	pid_t pids[MAX_MEMBERS];
	int fails = 0, died = 0;
	const char *first = "";

	memset(reports, 0, sizeof(*reports) * (MAX_MEMBERS + 1));
	for (uint32_t i = 0; i < job->n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			alarm(ALARM_S);
			member_main(job, i);
			_exit(reports[i].fails ? 1 : 0);
		}
	}
	for (uint32_t i = 0; i < job->n; i++) {
		int status = 0;

		waitpid(pids[i], &status, 0);
		died += !WIFEXITED(status);
		if (reports[i].fails && !fails)
			first = reports[i].msg;
		fails += reports[i].fails;
	}
	tap_ok(!fails && !died,
	       "%s: %u members, M=%u, %s: %zu collectives (%s)%s%s%s", be,
	       job->n, job->opts->segments,
	       job->opts->interleaved ? "interleaved" : "plain", job->nr_cases,
	       what, fails ? ": " : "", first, died ? " (a member died)" : "");
}

/* Bytes of the largest send or recv buffer of @job's cases, 64-aligned. */
static size_t buf_bytes(const struct member_job *job)
{
	size_t most = 0;

	for (size_t k = 0; k < job->nr_cases; k++) {
		size_t s, r;

		ct_sizes(&job->cases[k], job->n, &s, &r);
		s = (s > r ? s : r) * agile_coll_type_size(job->cases[k].type);
		if (s > most)
			most = s;
	}
	return (most + 64) & ~(size_t)63;
}

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

/*
 * Every collective over max_bytes (4 KiB here): in pieces of it, with
 * tails; a non-commutative user op keeps rank order in every piece.
 */
static void pieces(uint32_t n)
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
	run_group(&job, "over max_bytes (4 KiB): in pieces");
}

/* ---- a member dies in the middle of an allreduce ---- */

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

/* ---- bad arguments and limits ---- */

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
	       "%s: members with different %s: -EINVAL (%s, other exit %d)",
	       be, what, agile_strerror(err),
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

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

static void limits(void)
{
	struct agile_coll_opts o, o2;
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

	/* One member: the heap, pieces, a collective in the segment. */
	err = agile_coll_procs_join(ct_random_key(), 1, &o, JOIN_NS, &coll);
	if (!tap_ok(!err, "%s: a group of one (%s)", be, agile_strerror(err)))
		return;
	{
		int32_t big[2048], out[2048];
		void *a = agile_coll_alloc(coll, 4096);
		void *b = agile_coll_alloc(coll, 4096);
		void *c = agile_coll_alloc(coll, 64);
		void *a2;

		tap_ok(a && b && !c && ((uintptr_t)a & 63) == 0,
		       "%s: agile_coll_alloc: 2 x max_bytes, then NULL", be);
		agile_coll_free(coll, a);
		a2 = agile_coll_alloc(coll, 1000);
		c = agile_coll_alloc(coll, 3000);
		tap_ok(a2 == a && c && (char *)c == (char *)a + 1024,
		       "%s: freed heap memory is used again", be);
		agile_coll_free(coll, a2);
		agile_coll_free(coll, c);
		agile_coll_free(coll, b);
		a = agile_coll_alloc(coll, 8192);
		tap_ok(a != NULL, "%s: freed blocks merge", be);
		agile_coll_free(coll, a);
		for (int i = 0; i < 2048; i++)
			big[i] = i;
		memset(out, 0, sizeof(out));
		err = agile_coll_allgather(coll, big, out, 1025,
					   AGILE_COLL_INT32);
		tap_ok(!err && !memcmp(big, out, 1025 * sizeof(big[0])),
		       "%s: an allgather over max_bytes: in pieces%s%s", be,
		       err ? ": " : "", err ? agile_strerror(err) : "");
		memset(out, 0, sizeof(out));
		err = agile_coll_reduce_scatter(
			coll, big, out, 2047, AGILE_COLL_INT32, AGILE_COLL_SUM);
		tap_ok(!err && !memcmp(big, out, 2047 * sizeof(big[0])),
		       "%s: a reduce_scatter over max_bytes: in pieces%s%s", be,
		       err ? ": " : "", err ? agile_strerror(err) : "");
		tap_ok(agile_coll_allreduce(coll, big, out, 2048,
					    AGILE_COLL_INT32,
					    AGILE_COLL_SUM) == 0 &&
			       !memcmp(big, out, sizeof(big)),
		       "%s: an allreduce over max_bytes: in pieces", be);
		memset(big, 0, sizeof(big));
		tap_ok(agile_coll_allreduce(coll, big, out, 1024,
					    AGILE_COLL_INT32,
					    AGILE_COLL_SUM) == 0,
		       "%s: a vector of max_bytes: 0", be);
	}
	tap_ok(agile_coll_destroy(coll) == 0, "%s: destroy", be);

	/* AGILE_COLL_USER without a callback, even for 0 elements. */
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

/*
 * Reproducible ranks: members join in opposite orders (delays) with
 * distinct agile_coll_opts.order values; each must get rank == its order's
 * place, and an allreduce of order-sensitive floats (wide exponents,
 * both signs: the sum depends on the order of the additions) must give
 * the same bits in every run and on every member.
 */
#define ORDER_COUNT 300001

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

static void ordered_ranks(uint32_t n, int runs)
{
	uint64_t first = 0;
	bool ranks_ok = true, same = true, ran = true;

	for (int run = 0; run < runs; run++) {
		uint64_t key = ct_random_key();
		pid_t pid[MAX_MEMBERS];

		memset(reports, 0, sizeof(*reports) * (MAX_MEMBERS + 1));
		for (uint32_t k = 0; k < n; k++) {
			pid[k] = fork();
			if (pid[k] == 0) {
				struct agile_coll_opts o;
				struct agile_coll *coll;
				float *send = malloc(ORDER_COUNT * sizeof(float));
				float *recv = malloc(ORDER_COUNT * sizeof(float));
				uint64_t h;

				alarm(120);
				/* k-th to join in odd runs, (n-1-k)-th in even */
				usleep((run % 2 ? k : n - 1 - k) * 20000);
				opts_for(&o, 2, 0, 4u << 20);
				/* orders with gaps: the ranks are their places */
				o.order = 100 + 7 * k;
				if (!send || !recv ||
				    agile_coll_procs_join(key, n, &o, JOIN_NS,
							  &coll))
					_exit(1);
				for (size_t j = 0; j < ORDER_COUNT; j++) {
					int m = (int)((k * 7919 + j * 104729) %
						      2001) -
						1000;

					send[j] = ldexpf((float)m,
							 (int)((k * 13 + j) % 48) -
								 24);
				}
				if (agile_coll_allreduce(coll, send, recv,
							 ORDER_COUNT,
							 AGILE_COLL_FLOAT,
							 AGILE_COLL_SUM))
					_exit(2);
				h = fnv(recv, ORDER_COUNT * sizeof(float));
				reports[k].fails = agile_coll_rank(coll) != (int)k;
				memcpy(reports[k].msg, &h, sizeof(h));
				agile_coll_destroy(coll);
				_exit(0);
			}
		}
		for (uint32_t k = 0; k < n; k++) {
			int status = 1;
			uint64_t h;

			waitpid(pid[k], &status, 0);
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				ran = false;
				continue;
			}
			memcpy(&h, reports[k].msg, sizeof(h));
			if (reports[k].fails)
				ranks_ok = false;
			if (!run && !k)
				first = h;
			else if (h != first)
				same = false;
		}
	}
	tap_ok(ran && ranks_ok,
	       "%s: %u members joining in opposite orders: ranks follow "
	       "opts.order",
	       be, n);
	tap_ok(ran && same,
	       "%s: %u members, %d runs: an order-sensitive float allreduce "
	       "gives the same bits every run, on every member",
	       be, n, runs);
}

static void run_backend(bool quick)
{
	static const size_t full[] = { 0, 1, 1001, 4096 / 4 };
	static const size_t some[] = { 1001, 4096 / 8 };
	static const size_t quick_sizes[] = { 1, 1001 };

	limits();
	spin_policy();
	pieces(3);
	if (!quick)
		pieces(5);
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
	dead_peer(2, 1);
	dead_peer(3, 0);
	if (!quick)
		dead_peer(5, 4);
	ordered_ranks(3, quick ? 2 : 4);
	if (!quick)
		ordered_ranks(5, 4);
}

int main(void)
{
	const char *env = getenv("AGILE_BACKEND");
	bool quick = getenv("AGILE_TEST_QUICK") != NULL;

	reports = mmap(NULL, sizeof(*reports) * (MAX_MEMBERS + 1),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		       0);
	if (reports == MAP_FAILED) {
		tap_ok(0, "shared report page: %s", strerror(errno));
		return tap_done();
	}
	alarm(ALARM_S * 2);
	if (env && *env) {
		be = env;
		backend = !strcmp(env, "kmod") ? AGILE_BACKEND_KMOD :
						 AGILE_BACKEND_USER;
		run_backend(quick);
		return tap_done();
	}
	be = "user";
	backend = AGILE_BACKEND_USER;
	run_backend(quick);
	if (access("/dev/agile", F_OK)) {
		tap_skip("kmod", "no /dev/agile");
	} else {
		be = "kmod";
		backend = AGILE_BACKEND_KMOD;
		run_backend(quick);
	}
	return tap_done();
}
