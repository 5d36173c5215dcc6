/* SPDX-License-Identifier: MIT */
/*
 * collprocs.h - the harness of the coll-procs-* selftests (collectives
 * among processes of one node, agile_coll_procs_join): forked members that
 * join with a random key, run a list of cases and report into a shared
 * page, one TAP line per group; and cp_main, which runs a program's tests
 * on each backend ($AGILE_BACKEND alone when it is set, else user and,
 * where /dev/agile exists, kmod) with $AGILE_TEST_QUICK (the test guests:
 * fewer sizes, members and layouts) passed on.  Every process has an
 * alarm: a hang fails the test instead.  Include colltest.h and tap.h
 * first.
 */
#ifndef AGILE_COLLPROCS_H
#define AGILE_COLLPROCS_H

#include <agile/coll.h>
#include <agile/dev.h>
#include <agile/error.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

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

static inline void opts_for(struct agile_coll_opts *o, uint32_t segs,
			    uint32_t inter, uint64_t max_bytes)
{
	agile_coll_opts_init(o);
	o->segments = segs;
	o->interleaved = inter;
	o->backend = (uint32_t)backend;
	o->max_bytes = max_bytes;
	o->user_fn = ct_matmul_op;
	o->user_commutative = 0;
}

static inline void fail(struct report *r, const char *fmt, const char *what,
			int err)
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
static inline void member_main(const struct member_job *job, uint32_t slot)
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
static inline void run_group(const struct member_job *job, const char *what)
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
static inline size_t buf_bytes(const struct member_job *job)
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

/*
 * main() of a coll-procs-* program: @run_backend(quick) once per backend,
 * with be and backend set; the TAP plan and exit status (77: all skipped).
 */
static inline int cp_main(void (*run_backend)(bool quick))
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

#endif /* AGILE_COLLPROCS_H */
