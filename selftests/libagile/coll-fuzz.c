// SPDX-License-Identifier: MIT
/*
 * coll-fuzz - members that disagree on their calls, at random points of
 * random sequences of collectives, in the threads and the processes
 * scopes.
 *
 * From a seed ($AGILE_COLL_FUZZ_SEED, else a random one, printed), each
 * sequence is 1 .. MAX_CALLS calls (barrier, allreduce, reduce,
 * reduce_scatter, allgather; every type; sum, min, max, prod; counts 1 ..
 * MAX_COUNT; any root), the same on every member of 2 .. MAX_N, but in
 * some sequences some of the members deviate at one call: they call
 * another collective there (another kind, count, type, op or root),
 * insert one before it, or skip it, and go on with the rest of their list.
 * Each member runs its list until its first error.  What must hold
 * (agile/coll.h): every call before the first one the members disagree
 * on returns 0 with the right result on every member (each checks against
 * what it computes itself); at that call every member fails, with -EPROTO
 * or -EPIPE (at least one -EPROTO), and its next call returns the same
 * error; none returns 0 there, whatever the interleaving, and none hangs
 * (a session that does not end in SESSION_S fails the test).
 *
 * The sequences of one communicator form a session: it ends after the
 * first sequence with a deviation (the communicator is broken then) and a
 * new one is made.  Sessions vary the schedule (segments, layout), the
 * buffers (in place, private or agile_coll_alloc's), the processes
 * scope's allreduce by CMA, and a low $AGILE_COLL_SEQ_LIMIT makes the
 * long sessions switch banks.  $AGILE_COLL_FUZZ_SEQS sets how many
 * sequences run in all (fewer under the sanitizers and
 * $AGILE_TEST_QUICK), two thirds of them in the threads scope;
 * $AGILE_COLL_FUZZ_SCOPE=threads or processes runs that scope's alone.
 */
#define _GNU_SOURCE
#include <agile/coll.h>
#include <agile/dev.h>
#include <agile/error.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "colltest.h"
#include "tap.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SEQS_DEFAULT 10000
#define SESSION_S 300
#define LEAVE_S 30
#else
#define SEQS_DEFAULT 100000
#define SESSION_S 60
#define LEAVE_S 10
#endif
/*
 * The emulated guests (AGILE_TEST_QUICK): 1,000 take about 30 s a backend
 * there; the 100,000 run natively.
 */
#define SEQS_QUICK 1000
#define MIN_N 2
#define MAX_N 6
#define MAX_CALLS 6
#define MAX_COUNT 24
#define SESSION_MAX_SEQS 40
#define JOIN_NS (30ULL * 1000 * 1000 * 1000)
#define MAX_BYTES (64 << 10)
#define BUF_BYTES (MAX_COUNT * MAX_N * 8)
#define MAX_REPORTS 3

enum { K_ALLREDUCE = CT_ALLREDUCE, K_BARRIER = CT_ALLGATHER + 1, NR_KINDS };
enum { DEV_REPLACE, DEV_INSERT, DEV_SKIP, NR_DEVS };

static const char *const kind_names[] = { "allreduce", "reduce",
					  "reduce_scatter", "allgather",
					  "barrier" };
static const char *const dev_names[] = { "replaced", "inserted", "skipped" };

/* One call of a member's list; @salt picks its inputs. */
struct call {
	uint8_t kind, type, op, root;
	uint16_t count;
	uint32_t salt;
};

/*
 * A sequence: every member's list.  @deviate_at: the first call the
 * members disagree on, -1 for none.
 */
struct seq {
	uint8_t len[MAX_N];
	int8_t deviate_at;
	uint8_t dev;
	struct call calls[MAX_N][MAX_CALLS + 1];
};

/* What member r did in one sequence (shared with the processes). */
struct outcome {
	int16_t ran;
	int16_t done; /* calls that returned 0 */
	int16_t wrong; /* the first that returned 0 with a wrong result */
	int16_t pad;
	int32_t err; /* the first error */
	int32_t again; /* what the call after it returned */
};

/* A communicator's sequences: seqs[first .. first + nr). */
struct session {
	size_t first, nr;
	uint32_t segments, interleaved;
	bool cma;
};

struct plan {
	const char *scope;
	uint32_t n;
	struct seq *seqs;
	size_t nr_seqs, nr_deviating;
	struct session *sessions;
	size_t nr_sessions;
	struct outcome *out; /* nr_seqs x MAX_N, MAP_SHARED */
};

static uint64_t seed;
static int backend = AGILE_BACKEND_AUTO;

/* ---- the sequences ---- */

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint32_t below(uint64_t *rng, uint32_t n)
{
	*rng = mix(*rng);
	return (uint32_t)(*rng % n);
}

static struct call random_call(uint64_t *rng, uint32_t n)
{
	struct call c = {
		.kind = (uint8_t)below(rng, NR_KINDS),
		.type = (uint8_t)below(rng, AGILE_COLL_NR_TYPES),
		.op = (uint8_t)below(rng, AGILE_COLL_USER),
		.root = (uint8_t)below(rng, n),
		/* mostly tiny, some past a few segments' worth */
		.count = (uint16_t)(1 +
				    below(rng, below(rng, 2) ? 4 : MAX_COUNT)),
	};

	c.salt = (uint32_t)mix(*rng);
	return c;
}

/* Do @a and @b publish the same descriptor (what the members agree on)? */
static bool alike(const struct call *a, const struct call *b)
{
	if (a->kind != b->kind)
		return false;
	if (a->kind == K_BARRIER)
		return true;
	if (a->count != b->count || a->type != b->type)
		return false;
	if (a->kind != CT_ALLGATHER && a->op != b->op)
		return false;
	return a->kind != CT_REDUCE || a->root == b->root;
}

/* @c changed in one of the things the members must agree on. */
static struct call deviate(uint64_t *rng, const struct call *c, uint32_t n)
{
	struct call d = *c;

	d.salt = (uint32_t)mix(*rng ^ 0x5bd1e995);
	while (alike(&d, c)) {
		switch (below(rng, 5)) {
		case 0:
			d.kind = (uint8_t)below(rng, NR_KINDS);
			break;
		case 1:
			d.count = (uint16_t)(1 + below(rng, MAX_COUNT));
			break;
		case 2:
			d.type = (uint8_t)below(rng, AGILE_COLL_NR_TYPES);
			break;
		case 3:
			d.op = (uint8_t)below(rng, AGILE_COLL_USER);
			break;
		default:
			d.root = (uint8_t)below(rng, n);
		}
	}
	return d;
}

/* The sequence of @key, deviating with probability 1 / @one_in. */
static void make_seq(struct seq *s, uint64_t key, uint32_t n, uint32_t one_in)
{
	uint64_t rng = mix(key);
	struct call base[MAX_CALLS];
	uint32_t len = 1 + below(&rng, MAX_CALLS), d, set = 0;

	memset(s, 0, sizeof(*s));
	for (uint32_t i = 0; i < len; i++)
		base[i] = random_call(&rng, n);
	s->deviate_at = -1;
	if (below(&rng, one_in) == 0) {
		d = below(&rng, len);
		s->dev = (uint8_t)below(&rng, NR_DEVS);
		/* a member that skips the last call would leave the others */
		if (s->dev == DEV_SKIP &&
		    (d + 1 == len || alike(&base[d], &base[d + 1])))
			s->dev = DEV_REPLACE;
		s->deviate_at = (int8_t)d;
		/* some of the members, never all */
		while (!set || set == (1u << n) - 1)
			set = below(&rng, 1u << n);
	}
	for (uint32_t r = 0; r < n; r++) {
		struct call *mine = s->calls[r];
		uint32_t k = 0;

		for (uint32_t i = 0; i < len; i++) {
			if (!(set >> r & 1) || i != (uint32_t)s->deviate_at) {
				mine[k++] = base[i];
				continue;
			}
			if (s->dev == DEV_REPLACE) {
				mine[k++] = deviate(&rng, &base[i], n);
			} else if (s->dev == DEV_INSERT) {
				mine[k++] = deviate(&rng, &base[i], n);
				mine[k++] = base[i];
			}
		}
		s->len[r] = (uint8_t)k;
	}
}

static void make_plan(struct plan *p, const char *scope, uint32_t n,
		      size_t nr_seqs)
{
	static const uint32_t one_in[] = { 2, 3, 4, 50 };
	uint64_t key = mix(seed ^ (uint64_t)n << 40 ^ (uint64_t)(*scope) << 48);

	memset(p, 0, sizeof(*p));
	p->scope = scope;
	p->n = n;
	p->nr_seqs = nr_seqs;
	p->seqs = calloc(nr_seqs, sizeof(*p->seqs));
	p->sessions = calloc(nr_seqs, sizeof(*p->sessions));
	p->out = mmap(NULL, nr_seqs * MAX_N * sizeof(*p->out),
		      PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		      0);
	if (!p->seqs || !p->sessions || p->out == MAP_FAILED) {
		fprintf(stderr, "coll-fuzz: out of memory\n");
		exit(1);
	}
	for (size_t j = 0; j < nr_seqs;) {
		struct session *ss = &p->sessions[p->nr_sessions];
		uint64_t rng = mix(key + p->nr_sessions);
		uint32_t rate = one_in[below(&rng, 4)];

		ss->first = j;
		ss->segments = 1 + below(&rng, 4);
		ss->interleaved = below(&rng, 2);
		ss->cma = below(&rng, 2);
		while (j < nr_seqs && ss->nr < SESSION_MAX_SEQS) {
			make_seq(&p->seqs[j], key ^ mix(j + 1), n, rate);
			ss->nr++;
			if (p->seqs[j++].deviate_at >= 0) {
				p->nr_deviating++;
				break;
			}
		}
		p->nr_sessions++;
	}
}

static void free_plan(struct plan *p)
{
	munmap(p->out, p->nr_seqs * MAX_N * sizeof(*p->out));
	free(p->seqs);
	free(p->sessions);
}

/* ---- one member ---- */

/* Member @r's element @i of the call salted @salt, exact in every type. */
static double value(uint32_t salt, int op, uint32_t r, size_t i)
{
	uint64_t h = mix((uint64_t)salt << 32 ^ (uint64_t)r << 24 ^ i);

	switch (op) {
	case AGILE_COLL_PROD:
		return (double)(1 + (h & 1)); /* at most 2^MAX_N */
	case AGILE_COLL_MIN:
	case AGILE_COLL_MAX:
		return (double)(h % 101) - 50;
	default:
		return (double)(h % 16); /* sums below 2^8: bfloat16 too */
	}
}

static double reference(const struct call *c, uint32_t n, size_t i)
{
	double acc = value(c->salt, c->op, 0, i);

	for (uint32_t r = 1; r < n; r++) {
		double v = value(c->salt, c->op, r, i);

		if (c->op == AGILE_COLL_MIN)
			acc = v < acc ? v : acc;
		else if (c->op == AGILE_COLL_MAX)
			acc = v > acc ? v : acc;
		else if (c->op == AGILE_COLL_PROD)
			acc *= v;
		else
			acc += v;
	}
	return acc;
}

/*
 * Run @c as member @rank of @n with @send and @recv (BUF_BYTES each);
 * the call's error, else 0 and *@wrong if the result is not the right one.
 */
static int run_call(struct agile_coll *coll, const struct call *c,
		    uint32_t rank, uint32_t n, char *send, char *recv,
		    bool *wrong)
{
	enum agile_coll_type t = (enum agile_coll_type)c->type;
	enum agile_coll_op op = (enum agile_coll_op)c->op;
	size_t es = agile_coll_type_size(t), count = c->count;
	bool in_place = (c->salt >> 8) % 3 == rank % 3;
	size_t nr_send = c->kind == CT_REDUCE_SCATTER ? count * n : count;
	size_t nr_recv = c->kind == CT_ALLGATHER ? count * n : count;
	char *sbuf = send;
	int err;

	*wrong = false;
	if (c->kind == K_BARRIER)
		return agile_coll_barrier(coll);
	memset(recv, 0x5a, BUF_BYTES);
	if (in_place && (c->kind == CT_ALLREDUCE || c->kind == CT_REDUCE))
		sbuf = recv;
	else if (in_place && c->kind == CT_ALLGATHER)
		sbuf = recv + rank * count * es;
	for (size_t i = 0; i < nr_send; i++)
		ct_store(t, sbuf, i,
			 value(c->salt, c->kind == CT_ALLGATHER ? 0 : op, rank,
			       i));
	switch (c->kind) {
	case CT_ALLREDUCE:
		err = agile_coll_allreduce(coll, sbuf, recv, count, t, op);
		break;
	case CT_REDUCE:
		err = agile_coll_reduce(coll, sbuf, recv, count, t, op,
					c->root);
		break;
	case CT_REDUCE_SCATTER:
		err = agile_coll_reduce_scatter(coll, sbuf, recv, count, t, op);
		break;
	default:
		err = agile_coll_allgather(coll, sbuf, recv, count, t);
	}
	if (err || (c->kind == CT_REDUCE && rank != c->root))
		return err;
	for (size_t k = 0; k < nr_recv && !*wrong; k++) {
		double want;

		if (c->kind == CT_ALLGATHER)
			want = value(c->salt, 0, (uint32_t)(k / count),
				     k % count);
		else if (c->kind == CT_REDUCE_SCATTER)
			want = reference(c, n, rank * count + k);
		else
			want = reference(c, n, k);
		*wrong = ct_load(t, recv, k) != want;
	}
	return 0;
}

/*
 * Member @rank's part of session @ss: each sequence until its first error;
 * the session ends after a sequence that failed or deviated.
 * @seg_send, @seg_recv: agile_coll_alloc's buffers, or NULL.
 */
static void run_session(struct agile_coll *coll, const struct plan *p,
			const struct session *ss, uint32_t rank, char *send,
			char *recv, char *seg_send, char *seg_recv)
{
	for (size_t j = ss->first; j < ss->first + ss->nr; j++) {
		const struct seq *s = &p->seqs[j];
		struct outcome *o = &p->out[j * MAX_N + rank];

		*o = (struct outcome){ .ran = 1, .wrong = -1 };
		for (uint32_t i = 0; i < s->len[rank]; i++) {
			const struct call *c = &s->calls[rank][i];
			bool seg = seg_send && (c->salt >> 4) % 2 == rank % 2;
			bool wrong;
			int err = run_call(coll, c, rank, p->n,
					   seg ? seg_send : send,
					   seg ? seg_recv : recv, &wrong);

			if (err) {
				o->err = err;
				o->again = agile_coll_barrier(coll);
				break;
			}
			if (wrong && o->wrong < 0)
				o->wrong = (int16_t)i;
			o->done++;
		}
		if (o->err || s->deviate_at >= 0)
			return;
	}
}

/* ---- the verdicts ---- */

static void describe_call(const struct call *c, char *buf, size_t size)
{
	if (c->kind == K_BARRIER)
		snprintf(buf, size, "barrier");
	else
		snprintf(buf, size, "%s %s %s x%u root %u", kind_names[c->kind],
			 ct_op_names[c->op], ct_type_names[c->type], c->count,
			 c->root);
}

static void report(const struct plan *p, size_t j, const char *why)
{
	const struct seq *s = &p->seqs[j];

	printf("# %s %u members, sequence %zu (seed %#" PRIx64 "): %s; "
	       "deviation %d (%s)\n",
	       p->scope, p->n, j, seed, why, s->deviate_at,
	       s->deviate_at >= 0 ? dev_names[s->dev] : "none");
	for (uint32_t r = 0; r < p->n; r++) {
		const struct outcome *o = &p->out[j * MAX_N + r];
		char line[600] = "", one[80];

		for (uint32_t i = 0; i < s->len[r]; i++) {
			describe_call(&s->calls[r][i], one, sizeof(one));
			snprintf(line + strlen(line),
				 sizeof(line) - strlen(line), "%s%s",
				 i ? ", " : "", one);
		}
		printf("#   rank %u: ran %d, %d ok, wrong at %d, error %d then "
		       "%d: %s\n",
		       r, o->ran, o->done, o->wrong, o->err, o->again, line);
	}
}

/* Check sequence @j; false (and a report) where it broke the rule. */
static bool check_seq(const struct plan *p, size_t j, int *nr_reports)
{
	const struct seq *s = &p->seqs[j];
	bool proto = false;
	const char *why = NULL;

	for (uint32_t r = 0; r < p->n && !why; r++) {
		const struct outcome *o = &p->out[j * MAX_N + r];

		if (!o->ran)
			why = "a member did not run it";
		else if (o->wrong >= 0)
			why = "a call returned 0 with a wrong result";
		else if (s->deviate_at < 0 && (o->err || o->done != s->len[r]))
			why = "a call the members agree on failed";
		else if (s->deviate_at >= 0 && o->done > s->deviate_at)
			why = "a call the members disagree on returned 0";
		else if (s->deviate_at >= 0 && o->done < s->deviate_at)
			why = "a call before the deviation failed";
		else if (s->deviate_at >= 0 && o->err != -EPROTO &&
			 o->err != -EPIPE)
			why = "the error is neither EPROTO nor EPIPE";
		else if (o->again != o->err)
			why = "the next call returned another error";
		proto |= o->err == -EPROTO;
	}
	if (!why && s->deviate_at >= 0 && !proto)
		why = "no member found the other descriptor (EPROTO)";
	if (why && (*nr_reports)++ < MAX_REPORTS)
		report(p, j, why);
	return !why;
}

static void verdict(const struct plan *p, double secs)
{
	size_t bad = 0, wrong = 0;
	int nr_reports = 0;

	for (size_t j = 0; j < p->nr_seqs; j++) {
		bad += !check_seq(p, j, &nr_reports);
		for (uint32_t r = 0; r < p->n; r++) {
			const struct outcome *o = &p->out[j * MAX_N + r];

			if (o->ran && o->wrong >= 0) {
				wrong++;
				break;
			}
		}
	}
	tap_ok(!bad,
	       "%s, %u members: %zu sequences (%zu with a deviation, %zu "
	       "communicators), each all right or failed on every member "
	       "(%.1f s): %zu broke the rule, %zu of them with a wrong result",
	       p->scope, p->n, p->nr_seqs, p->nr_deviating, p->nr_sessions,
	       secs, bad, wrong);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- threads ---- */

struct member_arg {
	const struct plan *p;
	const struct session *ss;
	struct agile_coll_team *team;
	uint32_t rank;
};

static void *member_thread(void *arg)
{
	struct member_arg *a = arg;
	struct agile_coll *coll;
	char *send = aligned_alloc(64, BUF_BYTES);
	char *recv = aligned_alloc(64, BUF_BYTES);

	if (send && recv && !agile_coll_threads_member(a->team, a->rank, &coll))
		run_session(coll, a->p, a->ss, a->rank, send, recv, NULL, NULL);
	free(send);
	free(recv);
	return NULL;
}

static void run_threads(struct plan *p)
{
	for (size_t k = 0; k < p->nr_sessions; k++) {
		const struct session *ss = &p->sessions[k];
		struct member_arg args[MAX_N];
		pthread_t t[MAX_N];
		struct agile_coll_team *team;
		struct agile_coll_opts o;
		struct timespec end;
		int err;

		agile_coll_opts_init(&o);
		o.backend = (uint32_t)backend;
		o.segments = ss->segments;
		o.interleaved = ss->interleaved;
		err = agile_coll_threads_create(p->n, &o, &team);
		if (err) {
			tap_ok(0, "threads, %u members: a team: %s", p->n,
			       agile_strerror(err));
			return;
		}
		for (uint32_t r = 0; r < p->n; r++) {
			args[r] = (struct member_arg){ p, ss, team, r };
			pthread_create(&t[r], NULL, member_thread, &args[r]);
		}
		clock_gettime(CLOCK_REALTIME, &end);
		end.tv_sec += SESSION_S;
		for (uint32_t r = 0; r < p->n; r++) {
			if (pthread_timedjoin_np(t[r], NULL, &end)) {
				int nr_reports = 0;

				for (size_t j = ss->first;
				     j < ss->first + ss->nr; j++)
					check_seq(p, j, &nr_reports);
				tap_ok(0,
				       "threads, %u members: sequences %zu .. "
				       "%zu (seed %#" PRIx64 ") hang",
				       p->n, ss->first, ss->first + ss->nr - 1,
				       seed);
				fflush(stdout);
				_exit(1); /* the members still wait */
			}
		}
		agile_coll_threads_destroy(team);
	}
}

/* ---- processes ---- */

/*
 * Count this member out of session @k (@done: one counter per session)
 * and wait, up to LEAVE_S, until every member is: one that leaves ends
 * the group, and a member still in a call would get -EPIPE.  (Where a
 * member went on alone, a library bug, leaving ends its wait.)
 */
static void leave_when_all_done(uint32_t *done, size_t k, uint32_t n)
{
	double end = now_s() + LEAVE_S;

	__atomic_add_fetch(&done[k], 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&done[k], __ATOMIC_ACQUIRE) < n && now_s() < end)
		usleep(50);
}

/* A member process: every session of @p, each a group of its own. */
static void member_process(const struct plan *p, uint64_t key, uint32_t *done)
{
	char *send = aligned_alloc(64, BUF_BYTES);
	char *recv = aligned_alloc(64, BUF_BYTES);

	for (size_t k = 0; send && recv && k < p->nr_sessions; k++) {
		const struct session *ss = &p->sessions[k];
		struct agile_coll_opts o;
		struct agile_coll *coll;
		char *seg_send, *seg_recv;
		int rank;

		alarm(SESSION_S);
		agile_coll_opts_init(&o);
		o.backend = (uint32_t)backend;
		o.segments = ss->segments;
		o.interleaved = ss->interleaved;
		o.max_bytes = MAX_BYTES;
		/* every call by CMA where the kernel lets the members */
		setenv("AGILE_COLL_CMA", ss->cma ? "on" : "off", 1);
		if (agile_coll_procs_join(key + k, p->n, &o, JOIN_NS, &coll))
			_exit(2);
		rank = agile_coll_rank(coll);
		seg_send = agile_coll_alloc(coll, BUF_BYTES);
		seg_recv = agile_coll_alloc(coll, BUF_BYTES);
		if (!seg_send || !seg_recv)
			_exit(3);
		run_session(coll, p, ss, (uint32_t)rank, send, recv, seg_send,
			    seg_recv);
		leave_when_all_done(done, k, p->n);
		agile_coll_free(coll, seg_send);
		agile_coll_free(coll, seg_recv);
		agile_coll_destroy(coll);
	}
	free(send);
	free(recv);
	_exit(0);
}

static void run_procs(struct plan *p)
{
	uint64_t key = ct_random_key();
	size_t done_bytes = p->nr_sessions * sizeof(uint32_t);
	uint32_t *done = mmap(NULL, done_bytes, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid[MAX_N];
	int hung = 0, failed = 0;

	if (done == MAP_FAILED) {
		tap_ok(0, "processes: shared page: %s", strerror(errno));
		return;
	}
	for (uint32_t r = 0; r < p->n; r++) {
		pid[r] = fork();
		if (pid[r] == 0)
			member_process(p, key, done);
	}
	for (uint32_t r = 0; r < p->n; r++) {
		int status = 0;

		waitpid(pid[r], &status, 0);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
			hung++;
		else if (!WIFEXITED(status) || WEXITSTATUS(status))
			failed++;
	}
	if (hung || failed) {
		int nr_reports = 0;

		for (size_t j = 0; j < p->nr_seqs; j++)
			if (!check_seq(p, j, &nr_reports))
				break;
		tap_ok(0,
		       "processes, %u members (seed %#" PRIx64 "): %d members "
		       "hung, %d failed to join or allocate",
		       p->n, seed, hung, failed);
	}
	munmap(done, done_bytes);
}

/* ---- main ---- */

static size_t env_size(const char *name, size_t dflt)
{
	const char *env = getenv(name);

	return env && *env ? (size_t)strtoull(env, NULL, 0) : dflt;
}

int main(void)
{
	const char *be = getenv("AGILE_BACKEND");
	const char *only = getenv("AGILE_COLL_FUZZ_SCOPE");
	size_t total = env_size("AGILE_COLL_FUZZ_SEQS",
				getenv("AGILE_TEST_QUICK") ? SEQS_QUICK :
							     SEQS_DEFAULT);
	size_t per_scope[2] = { total * 2 / 3, total - total * 2 / 3 };
	const char *scopes[2] = { "threads", "processes" };

	seed = env_size("AGILE_COLL_FUZZ_SEED", 0);
	while (!seed && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)time(NULL);
	if (be && *be)
		backend = !strcmp(be, "kmod") ? AGILE_BACKEND_KMOD :
						AGILE_BACKEND_USER;
	/* long sessions switch banks a few times */
	setenv("AGILE_COLL_SEQ_LIMIT", "1024", 1);
	printf("# seed %#" PRIx64 " (AGILE_COLL_FUZZ_SEED), %zu sequences "
	       "(AGILE_COLL_FUZZ_SEQS)\n",
	       seed, total);
	fflush(stdout);
	for (int sc = 0; sc < 2; sc++) {
		if (only && *only && strcmp(only, scopes[sc]))
			continue;
		for (uint32_t n = MIN_N; n <= MAX_N; n++) {
			size_t share = per_scope[sc] / (MAX_N - MIN_N + 1);
			struct plan p;
			double t0;

			if (n == MAX_N)
				share = per_scope[sc] - share * (MAX_N - MIN_N);
			if (!share)
				continue;
			make_plan(&p, scopes[sc], n, share);
			t0 = now_s();
			if (sc == 0)
				run_threads(&p);
			else
				run_procs(&p);
			verdict(&p, now_s() - t0);
			fflush(stdout);
			free_plan(&p);
		}
	}
	return tap_done();
}
