// SPDX-License-Identifier: MIT
/*
 * coll-misuse - collectives that must fail loudly, in the threads and the
 * processes scopes.
 *
 * Members that call different collectives (another count, type, op,
 * kind or root, or a barrier against a reduction) must not pair them up:
 * each call, a barrier too, publishes a descriptor, a member that finds a
 * peer's unlike its own fails with -EPROTO, and its error ends the
 * collective for every member (-EPIPE), so that no call returns 0 (a
 * barrier neither) and none hangs; every later call, count 0 included,
 * returns the member's first error (coll-fuzz: random sequences).  A
 * call the process scope cuts in pieces publishes the whole call's count:
 * members whose counts differ but whose first pieces are alike still
 * fail.
 *
 * A member that fails on its own once a call has started (here: the
 * threads scope's scratch buffer, under an address-space limit) ends the
 * collective for all as well: the others get -EPIPE instead of waiting
 * forever.  What the process scope would allocate in a call (in_pieces'
 * buffer) is allocated at join: an allgather in pieces succeeds under a
 * limit that leaves no room for it.  The address-space tests are skipped
 * under the sanitizers, whose allocators abort instead of failing.
 *
 * A late joiner of a communicator whose member died gets -EPIPE at once,
 * while the survivors hold their handles; the key is free once they have
 * left.  A member that dies at several points of the schedule (before
 * its first publish, between calls, stopped and killed inside a call)
 * leaves the others with -EPIPE, never a wrong result or a hang.
 *
 * Every process has an alarm: a hang fails the test.
 */
#define _GNU_SOURCE
#include <agile/coll.h>
#include <agile/dev.h>
#include <agile/error.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "colltest.h"
#include "tap.h"

#define ALARM_S 300
#define JOIN_NS (30ULL * 1000 * 1000 * 1000)
#define MAX_N 4
#define BUF_ELEMS 4096

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

enum { ALLREDUCE, REDUCE, REDUCE_SCATTER, ALLGATHER, BARRIER };

/* One member's call. */
struct call {
	int kind;
	size_t count;
	enum agile_coll_type type;
	enum agile_coll_op op;
	uint32_t root;
};

/* What a member got: the call, then a barrier, count 0, a small call. */
struct outcome {
	int first, barrier, zero, again;
};

static const char *be = "user";
static int backend = AGILE_BACKEND_USER;

static int do_call(struct agile_coll *coll, const struct call *c, void *send,
		   void *recv)
{
	switch (c->kind) {
	case ALLREDUCE:
		return agile_coll_allreduce(coll, send, recv, c->count, c->type,
					    c->op);
	case REDUCE:
		return agile_coll_reduce(coll, send, recv, c->count, c->type,
					 c->op, c->root);
	case REDUCE_SCATTER:
		return agile_coll_reduce_scatter(coll, send, recv, c->count,
						 c->type, c->op);
	case ALLGATHER:
		return agile_coll_allgather(coll, send, recv, c->count,
					    c->type);
	default:
		return agile_coll_barrier(coll);
	}
}

/* The call, then what every later call must return. */
static void run_member(struct agile_coll *coll, const struct call *c,
		       struct outcome *o)
{
	size_t elems = c->count * MAX_N > BUF_ELEMS ? c->count * MAX_N :
						      BUF_ELEMS;
	double *send = calloc(elems, sizeof(double));
	double *recv = calloc(elems, sizeof(double));
	int32_t a = 1, b;

	if (!send || !recv) {
		o->first = o->barrier = o->zero = o->again = -ENOMEM;
	} else {
		o->first = do_call(coll, c, send, recv);
		o->barrier = agile_coll_barrier(coll);
		o->zero = agile_coll_allreduce(
			coll, NULL, NULL, 0, AGILE_COLL_INT32, AGILE_COLL_SUM);
		o->again = agile_coll_allreduce(
			coll, &a, &b, 1, AGILE_COLL_INT32, AGILE_COLL_SUM);
	}
	free(send);
	free(recv);
}

/*
 * Every member's call failed, a barrier's too, at least one with -EPROTO,
 * the others with -EPROTO or -EPIPE, and every later call with the
 * member's first error.
 */
static void check(const struct outcome *out, uint32_t n, const char *scope,
		  const char *what)
{
	bool ok = true, proto = false;
	char got[200] = "";

	for (uint32_t r = 0; r < n; r++) {
		const struct outcome *o = &out[r];
		int first = o->first;
		char one[48];

		snprintf(one, sizeof(one), "%s%d/%d/%d/%d", r ? ", " : "",
			 o->first, o->barrier, o->zero, o->again);
		strncat(got, one, sizeof(got) - strlen(got) - 1);
		if (o->first == -EPROTO)
			proto = true;
		if (o->first && o->first != -EPROTO && o->first != -EPIPE)
			ok = false;
		if (first != -EPROTO && first != -EPIPE)
			ok = false; /* 0: paired with another call */
		if (o->barrier != first || o->zero != first ||
		    o->again != first)
			ok = false;
	}
	tap_ok(ok && proto,
	       "%s%s%s: %s: every member fails (-EPROTO where it reads the "
	       "other descriptor, -EPIPE, and the same later) [%s]",
	       scope, *scope == 'p' ? " " : "", *scope == 'p' ? be : "", what,
	       got);
}

/* ---- threads ---- */

struct thread_arg {
	struct agile_coll_team *team;
	uint32_t rank;
	const struct call *call;
	struct outcome *out;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;
	struct agile_coll *coll;

	if (agile_coll_threads_member(a->team, a->rank, &coll))
		a->out->first = -EINVAL;
	else
		run_member(coll, a->call, a->out);
	return NULL;
}

static void threads_case(uint32_t n, const struct call *calls, const char *what)
{
	struct agile_coll_team *team;
	struct thread_arg args[MAX_N];
	struct outcome out[MAX_N];
	pthread_t t[MAX_N];
	int err = agile_coll_threads_create(n, NULL, &team);

	if (!tap_ok_call(err, "threads: a team"))
		return;
	memset(out, 0, sizeof(out));
	for (uint32_t r = 0; r < n; r++) {
		args[r] = (struct thread_arg){ team, r, &calls[r], &out[r] };
		pthread_create(&t[r], NULL, thread_main, &args[r]);
	}
	for (uint32_t r = 0; r < n; r++)
		pthread_join(t[r], NULL);
	check(out, n, "threads", what);
	agile_coll_threads_destroy(team);
}

/* ---- processes ---- */

static void procs_case(uint32_t n, const struct call *calls, uint64_t max_bytes,
		       const char *what)
{
	struct outcome *out = mmap(NULL, sizeof(*out) * MAX_N,
				   PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t key = ct_random_key();
	pid_t pid[MAX_N];
	bool joined = true;

	if (out == MAP_FAILED) {
		tap_ok(0, "processes: shared page: %s", strerror(errno));
		return;
	}
	for (uint32_t r = 0; r < n; r++) {
		pid[r] = fork();
		if (pid[r] == 0) {
			struct agile_coll_opts o;
			struct agile_coll *coll;
			int err;

			alarm(ALARM_S / 2);
			agile_coll_opts_init(&o);
			o.backend = (uint32_t)backend;
			o.max_bytes = max_bytes;
			err = agile_coll_procs_join(key, n, &o, JOIN_NS, &coll);
			if (err)
				_exit(1);
			/* the join rank, not the fork order, picks the call */
			run_member(coll, &calls[agile_coll_rank(coll)],
				   &out[agile_coll_rank(coll)]);
			agile_coll_destroy(coll);
			_exit(0);
		}
	}
	for (uint32_t r = 0; r < n; r++) {
		int status = 1;

		waitpid(pid[r], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			joined = false;
	}
	if (!joined)
		tap_ok(0, "processes %s: %s: a member failed to join or died",
		       be, what);
	else
		check(out, n, "processes", what);
	munmap(out, sizeof(*out) * MAX_N);
}

#define F AGILE_COLL_FLOAT
#define I AGILE_COLL_INT32
#define SUM AGILE_COLL_SUM

/* Both scopes but the pieces; @procs: the processes scope too. */
static void mismatches(bool procs)
{
	static const struct {
		uint32_t n;
		struct call calls[MAX_N];
		const char *what;
	} cases[] = {
		{ 3,
		  { { ALLREDUCE, 1000, F, SUM, 0 },
		    { ALLREDUCE, 1000, F, SUM, 0 },
		    { ALLREDUCE, 999, F, SUM, 0 } },
		  "allreduce counts 1000, 1000, 999" },
		{ 3,
		  { { ALLREDUCE, 1000, F, SUM, 0 },
		    { ALLREDUCE, 1000, F, AGILE_COLL_MAX, 0 },
		    { ALLREDUCE, 1000, F, SUM, 0 } },
		  "allreduce ops sum, max, sum" },
		{ 2,
		  { { ALLREDUCE, 1000, F, SUM, 0 },
		    { ALLREDUCE, 1000, I, SUM, 0 } },
		  "allreduce of floats and of int32 (same size)" },
		{ 4,
		  { { ALLREDUCE, 1000, F, SUM, 0 },
		    { ALLREDUCE, 1000, F, SUM, 0 },
		    { REDUCE, 1000, F, SUM, 0 },
		    { ALLREDUCE, 1000, F, SUM, 0 } },
		  "allreduce against reduce" },
		{ 3,
		  { { REDUCE, 1000, F, SUM, 0 },
		    { REDUCE, 1000, F, SUM, 1 },
		    { REDUCE, 1000, F, SUM, 0 } },
		  "reduce roots 0, 1, 0" },
		{ 2,
		  { { REDUCE_SCATTER, 500, F, SUM, 0 },
		    { ALLGATHER, 500, F, SUM, 0 } },
		  "reduce_scatter against allgather" },
		{ 3,
		  { { ALLREDUCE, 1000, F, SUM, 0 },
		    { BARRIER, 0, F, SUM, 0 },
		    { ALLREDUCE, 1000, F, SUM, 0 } },
		  "allreduce against barrier" },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		/* 1 MiB segments: the guests' /dev/shm is small */
		if (procs)
			procs_case(cases[k].n, cases[k].calls, 1 << 20,
				   cases[k].what);
		else
			threads_case(cases[k].n, cases[k].calls, cases[k].what);
	}
}

/*
 * max_bytes 64 KiB: an allreduce of 2 x 16 Ki floats goes in two pieces
 * of 16 Ki, whose first is like a 16 Ki allreduce's.
 */
static void mismatched_pieces(void)
{
	static const struct call calls[] = {
		{ ALLREDUCE, 32768, F, SUM, 0 },
		{ ALLREDUCE, 16384, F, SUM, 0 },
		{ ALLREDUCE, 16384, F, SUM, 0 },
	};

	procs_case(3, calls, 64 << 10,
		   "allreduce of 2 pieces against 1 piece (max_bytes 64 KiB)");
}

/* ---- failures of one member, under an address-space limit ---- */

/* The process's address-space size now, in bytes; 0 if unknown. */
static size_t vm_size(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	size_t kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %zu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

/* Leave @room bytes of address space; false if that cannot be done. */
static bool limit_as(size_t room, struct rlimit *old)
{
	size_t now = vm_size();
	struct rlimit rl;

	if (!now || getrlimit(RLIMIT_AS, old))
		return false;
	rl = *old;
	rl.rlim_cur = now + room;
	return rl.rlim_cur <= old->rlim_max && !setrlimit(RLIMIT_AS, &rl);
}

#define BIG_ELEMS (16u << 20) /* floats: 64 MiB */

struct scratch_arg {
	struct agile_coll_team *team;
	pthread_barrier_t *ready, *limited;
	uint32_t rank;
	float *send, *recv;
	int err, later;
};

static void *scratch_main(void *p)
{
	struct scratch_arg *a = p;
	struct agile_coll *coll;

	agile_coll_threads_member(a->team, a->rank, &coll);
	pthread_barrier_wait(a->ready);
	pthread_barrier_wait(a->limited);
	/*
	 * Rank 2 (newrank 1 of the halving) needs a 64 MiB scratch buffer:
	 * none to be had; rank 1 (folded into 0) needs none, the root
	 * reduces into its recv.
	 */
	a->err = agile_coll_reduce(coll, a->send, a->recv, BIG_ELEMS,
				   AGILE_COLL_FLOAT, AGILE_COLL_SUM, 0);
	a->later = agile_coll_barrier(coll);
	return NULL;
}

static void threads_local_failure(void)
{
	const char *what = "threads: a member whose scratch buffer cannot be "
			   "had fails (-ENOMEM), the others get -EPIPE, "
			   "not a hang";
	struct agile_coll_team *team;
	pthread_barrier_t ready, limited;
	struct scratch_arg args[3];
	pthread_t t[3];
	struct rlimit old;
	float *send = calloc(BIG_ELEMS, sizeof(float));
	float *recv = calloc(BIG_ELEMS, sizeof(float));
	bool limited_ok;

	if (SANITIZED) {
		tap_skip(what, "the sanitizers' allocators abort");
		goto out;
	}
	if (!send || !recv ||
	    !tap_ok_call(agile_coll_threads_create(3, NULL, &team),
			 "threads: a team of 3"))
		goto out;
	pthread_barrier_init(&ready, NULL, 4);
	pthread_barrier_init(&limited, NULL, 4);
	for (uint32_t r = 0; r < 3; r++) {
		args[r] = (struct scratch_arg){ team, &ready, &limited,
						r,    send,   r ? NULL : recv,
						0,    0 };
		pthread_create(&t[r], NULL, scratch_main, &args[r]);
	}
	pthread_barrier_wait(&ready);
	limited_ok = limit_as(16u << 20, &old);
	pthread_barrier_wait(&limited);
	for (uint32_t r = 0; r < 3; r++)
		pthread_join(t[r], NULL);
	if (limited_ok)
		setrlimit(RLIMIT_AS, &old);
	if (!limited_ok)
		tap_skip(what, "cannot set RLIMIT_AS");
	else
		/*
		 * Rank 1's part (hand its vector to 0) may be over before
		 * rank 2 fails: a non-root has no result, 0 is right then.
		 */
		tap_ok(args[0].err == -EPIPE &&
			       (args[1].err == -EPIPE || !args[1].err) &&
			       args[2].err == -ENOMEM &&
			       args[0].later == -EPIPE &&
			       args[1].later == -EPIPE &&
			       args[2].later == -ENOMEM,
		       "%s (%d %d %d, later %d %d %d)", what, args[0].err,
		       args[1].err, args[2].err, args[0].later, args[1].later,
		       args[2].later);
	agile_coll_threads_destroy(team);
	pthread_barrier_destroy(&ready);
	pthread_barrier_destroy(&limited);
out:
	free(send);
	free(recv);
}

/*
 * Processes: an allgather of 2 x 512 KiB with max_bytes 512 KiB goes in
 * pieces through a buffer allocated at join; a member whose address
 * space is full after the join still completes it, with the right data.
 */
static void procs_pieces_buffer_at_join(void)
{
	const char *what = "processes: an allgather in pieces needs no "
			   "allocation in the call (address space full)";
	const size_t count = 128u << 10; /* floats per member: 512 KiB */
	int *res = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t key = ct_random_key();
	pid_t pid[2];
	bool exited = true;

	if (SANITIZED) {
		tap_skip(what, "the sanitizers' allocators abort");
		return;
	}
	if (res == MAP_FAILED) {
		tap_ok(0, "processes: shared page");
		return;
	}
	res[0] = res[1] = -1;
	for (int r = 0; r < 2; r++) {
		pid[r] = fork();
		if (pid[r] == 0) {
			struct agile_coll_opts o;
			struct agile_coll *coll;
			float *send = malloc(count * sizeof(float));
			float *recv = malloc(2 * count * sizeof(float));
			struct rlimit old;
			int rank, err, bad = 0;

			alarm(ALARM_S / 2);
			agile_coll_opts_init(&o);
			o.backend = (uint32_t)backend;
			o.max_bytes = 512u << 10;
			if (!send || !recv ||
			    agile_coll_procs_join(key, 2, &o, JOIN_NS, &coll))
				_exit(1);
			rank = agile_coll_rank(coll);
			for (size_t i = 0; i < count; i++)
				send[i] = (float)(rank * 1000 + (int)(i % 97));
			/*
			 * One piece's worth first: it builds the plan the
			 * pieces reuse (count / 2 per member: 512 KiB in
			 * all, no pieces yet).
			 */
			if (agile_coll_allgather(coll, send, recv, count / 2,
						 AGILE_COLL_FLOAT))
				_exit(3);
			memset(recv, 0, 2 * count * sizeof(float));
			/*
			 * Then no room for a 512 KiB buffer in the call:
			 * little address space left, and the heap's free
			 * memory used up.
			 */
			if (rank == 1) {
				if (!limit_as(256u << 10, &old))
					_exit(2);
				while (malloc(4096))
					;
			}
			err = agile_coll_allgather(coll, send, recv, count,
						   AGILE_COLL_FLOAT);
			for (size_t i = 0; !err && i < 2 * count; i++)
				if (recv[i] != (float)((int)(i / count) * 1000 +
						       (int)(i % count % 97)))
					bad++;
			res[rank] = err ? err : bad;
			agile_coll_destroy(coll);
			_exit(0);
		}
	}
	for (int r = 0; r < 2; r++) {
		int status = 1;

		waitpid(pid[r], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			exited = false;
	}
	tap_ok(exited && res[0] == 0 && res[1] == 0, "%s %s (%d %d)", be, what,
	       res[0], res[1]);
	munmap(res, 4096);
}

/*
 * A late joiner: a member of 3 dies, the two others see -EPIPE and keep
 * their handles; a process that joins the key now gets -EPIPE at once
 * (not the join timeout's wait for members that will never come).  Once
 * the survivors have destroyed theirs, the key is free.
 */
static void late_joiner(void)
{
	volatile int *st = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct agile_coll_opts o;
	struct agile_coll *coll;
	uint64_t key = ct_random_key(), t0;
	pid_t pid[3];
	int err, err2, exited = 0;

	if (st == MAP_FAILED) {
		tap_ok(0, "processes: shared page");
		return;
	}
	agile_coll_opts_init(&o);
	o.backend = (uint32_t)backend;
	o.max_bytes = 64 << 10;
	for (int k = 0; k < 3; k++) {
		pid[k] = fork();
		if (pid[k] == 0) {
			int32_t a = 1, b;

			alarm(ALARM_S / 2);
			if (agile_coll_procs_join(key, 3, &o, JOIN_NS, &coll))
				_exit(1);
			if (agile_coll_rank(coll) == 2)
				_exit(0); /* dies: no destroy */
			st[1 + agile_coll_rank(coll)] = agile_coll_allreduce(
				coll, &a, &b, 1, AGILE_COLL_INT32,
				AGILE_COLL_SUM);
			__atomic_add_fetch(&st[0], 1, __ATOMIC_SEQ_CST);
			while (!__atomic_load_n(&st[8], __ATOMIC_ACQUIRE))
				usleep(1000);
			agile_coll_destroy(coll);
			_exit(0);
		}
	}
	for (int ms = 0;
	     __atomic_load_n(&st[0], __ATOMIC_ACQUIRE) < 2 && ms < 60000; ms++)
		usleep(1000);
	t0 = (uint64_t)time(NULL);
	err = agile_coll_procs_join(key, 3, &o, JOIN_NS, &coll);
	if (!err)
		agile_coll_destroy(coll);
	tap_ok(st[1] == -EPIPE && st[2] == -EPIPE && err == -EPIPE &&
		       (uint64_t)time(NULL) - t0 < 2,
	       "processes %s: a member died, the others hold their handles: "
	       "a late joiner gets -EPIPE at once (%s, %lus)",
	       be, agile_strerror(err), (unsigned long)(time(NULL) - t0));
	__atomic_store_n(&st[8], 1, __ATOMIC_RELEASE);
	for (int k = 0; k < 3; k++) {
		int status = 1;

		waitpid(pid[k], &status, 0);
		exited += WIFEXITED(status) && !WEXITSTATUS(status);
	}
	err2 = agile_coll_procs_join(key, 1, &o, JOIN_NS, &coll);
	if (!err2)
		agile_coll_destroy(coll);
	tap_ok(exited == 3 && !err2,
	       "processes %s: once they destroyed theirs, the key is free "
	       "(%s)",
	       be, agile_strerror(err2));
	munmap((void *)st, 4096);
}

/*
 * A member that dies at different points of the schedule: it exits after
 * k calls (k = 0: before its first publish; else between two calls), or
 * is stopped and killed at a random moment of a loop of allreduces,
 * reduces, allgathers and barriers (so inside some step of some call,
 * where the others wait on it, sleeping or not).  Every survivor's loop
 * ends with -EPIPE, never with a wrong result or a hang, and its later
 * calls (a barrier, count 0) return -EPIPE too.
 */
#define KILL_COUNT 4099

struct kill_report {
	int err, wrong, later, zero, calls;
};

static int kill_loop_call(struct agile_coll *coll, int i, int rank, int n,
			  float *send, float *recv, int *wrong)
{
	int err;

	for (size_t e = 0; e < KILL_COUNT; e++)
		send[e] = (float)(rank + 1 + i % 5);
	switch (i % 4) {
	case 0:
		err = agile_coll_allreduce(coll, send, recv, KILL_COUNT,
					   AGILE_COLL_FLOAT, AGILE_COLL_SUM);
		for (size_t e = 0; !err && e < KILL_COUNT; e++)
			*wrong += recv[e] !=
				  (float)(n * (n + 1) / 2 + n * (i % 5));
		return err;
	case 1:
		err = agile_coll_reduce(coll, send, recv, KILL_COUNT,
					AGILE_COLL_FLOAT, AGILE_COLL_MAX, 0);
		for (size_t e = 0; !err && !rank && e < KILL_COUNT; e++)
			*wrong += recv[e] != (float)(n + i % 5);
		return err;
	case 2: {
		size_t blk = KILL_COUNT / (size_t)n;

		err = agile_coll_allgather(coll, send, recv, blk,
					   AGILE_COLL_FLOAT);
		for (size_t e = 0; !err && e < blk * (size_t)n; e++)
			*wrong += recv[e] !=
				  (float)(e / blk + 1 + (size_t)(i % 5));
		return err;
	}
	default:
		return agile_coll_barrier(coll);
	}
}

/* @exit_after >= 0: the victim exits after that many calls; else killed */
static void killed_at(int victim, int exit_after, int delay_ms)
{
	struct kill_report *rep = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	const int n = 3;
	uint64_t key = ct_random_key();
	bool ok = true, joined = true;
	char got[160] = "";
	pid_t pid[3];

	if (rep == MAP_FAILED) {
		tap_ok(0, "processes: shared page");
		return;
	}
	for (int k = 0; k < n; k++) {
		pid[k] = fork();
		if (pid[k] == 0) {
			float *send = malloc(KILL_COUNT * sizeof(float));
			float *recv = malloc(KILL_COUNT * sizeof(float));
			struct kill_report *r = &rep[k];
			struct agile_coll_opts o;
			struct agile_coll *coll;
			int err = 0, i;

			alarm(ALARM_S / 2);
			agile_coll_opts_init(&o);
			o.backend = (uint32_t)backend;
			o.max_bytes = 1 << 20;
			o.order = (uint32_t)k; /* rank k */
			if (!send || !recv ||
			    agile_coll_procs_join(key, n, &o, JOIN_NS, &coll))
				_exit(1);
			/* rep[n].calls: members that have joined */
			__atomic_add_fetch(&rep[n].calls, 1, __ATOMIC_SEQ_CST);
			for (i = 0; i < 200000 && !err; i++) {
				if (k == victim && i == exit_after)
					_exit(0);
				err = kill_loop_call(coll, i, k, n, send, recv,
						     &r->wrong);
			}
			r->err = err;
			r->calls = i;
			r->later = agile_coll_barrier(coll);
			r->zero = agile_coll_allreduce(coll, NULL, NULL, 0,
						       AGILE_COLL_INT32,
						       AGILE_COLL_SUM);
			agile_coll_destroy(coll);
			_exit(0);
		}
	}
	if (exit_after < 0) {
		struct timespec ts = { 0, (long)delay_ms * 1000000L };

		/* counted from when all have joined: a death before is
		 * another test (a join that times out) */
		for (int ms = 0;
		     ms < 60000 &&
		     __atomic_load_n(&rep[n].calls, __ATOMIC_SEQ_CST) < n;
		     ms++)
			usleep(1000);
		nanosleep(&ts, NULL);
		kill(pid[victim], SIGSTOP);
		ts.tv_nsec = 20000000L; /* the others now wait on it */
		nanosleep(&ts, NULL);
		kill(pid[victim], SIGKILL);
	}
	for (int k = 0; k < n; k++) {
		int status = 1;

		waitpid(pid[k], &status, 0);
		if (k != victim && (!WIFEXITED(status) || WEXITSTATUS(status)))
			joined = false;
	}
	for (int k = 0; k < n; k++) {
		char one[48];

		if (k == victim)
			continue;
		snprintf(one, sizeof(one), " [%d calls: %d/%d/%d, %d wrong]",
			 rep[k].calls, rep[k].err, rep[k].later, rep[k].zero,
			 rep[k].wrong);
		strncat(got, one, sizeof(got) - strlen(got) - 1);
		if (rep[k].err != -EPIPE || rep[k].later != -EPIPE ||
		    rep[k].zero != -EPIPE || rep[k].wrong)
			ok = false;
	}
	if (exit_after >= 0)
		tap_ok(joined && ok,
		       "processes %s: rank %d of 3 exits after %d calls: the "
		       "others get -EPIPE, later calls too, no wrong "
		       "result%s",
		       be, victim, exit_after, got);
	else
		tap_ok(joined && ok,
		       "processes %s: rank %d of 3 stopped after %d ms and "
		       "killed: the others get -EPIPE, later calls too, no "
		       "wrong result%s",
		       be, victim, delay_ms, got);
	munmap(rep, 4096);
}

static void killed_at_points(void)
{
	killed_at(1, 0, 0);
	killed_at(2, 1, 0);
	killed_at(1, 6, 0);
	killed_at(2, 11, 0);
	killed_at(1, -1, 3);
	killed_at(2, -1, 10);
	killed_at(0, -1, 30);
}

static void run_procs(void)
{
	mismatches(true);
	mismatched_pieces();
	procs_pieces_buffer_at_join();
	late_joiner();
	killed_at_points();
}

int main(void)
{
	const char *env = getenv("AGILE_BACKEND");

	alarm(ALARM_S * 2);
	mismatches(false);
	threads_local_failure();
	if (env && *env) {
		be = env;
		backend = !strcmp(env, "kmod") ? AGILE_BACKEND_KMOD :
						 AGILE_BACKEND_USER;
		run_procs();
		return tap_done();
	}
	run_procs();
	if (access("/dev/agile", F_OK)) {
		tap_skip("kmod", "no /dev/agile");
	} else {
		be = "kmod";
		backend = AGILE_BACKEND_KMOD;
		run_procs();
	}
	return tap_done();
}
