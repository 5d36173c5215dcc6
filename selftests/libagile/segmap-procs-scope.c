// SPDX-License-Identifier: MIT
/*
 * segmap-procs-scope - segmap's processes scope
 * (agile__segmap_scope_procs_join, libagile/src/segmap/scope_procs.c) with
 * 1 to 4 forked members, on each dev backend ($AGILE_BACKEND alone when
 * set, else user and, where /dev/agile exists, kmod): homes of uneven
 * sizes written by their owners and read by every node (from several
 * threads at once), puts into a peer, agree, allreduce, 150 fields made
 * and freed (more than a group's 64 segments), the segment limit's -ENOSPC
 * on every member, and a member killed with SIGKILL: the others' barrier
 * returns -EPIPE, never hangs.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "testutil.h"
#include "scopetest.h"

#define MAX_MEMBERS 4
#define JOIN_NS (30ULL * 1000 * 1000 * 1000) /* and each collective */
#define ALARM_S 120

static const char *be;

/* What each member reports, in memory shared with the parent. */
struct report {
	int err;
	int self;
	int value; /* a case's count */
	char why[ST_WHY];
};

/* MAX_MEMBERS, and one for a case's flags between members; shared. */
static struct report *reports;
/* The join's timeout, and so each collective's. */
static uint64_t join_ns = JOIN_NS;

static uint64_t random_key(void)
{
	uint64_t key = 0;

	while (!key)
		if (getrandom(&key, sizeof(key), 0) != sizeof(key))
			key = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
	return key;
}

/* A member's part of a case, on its own scope; 0 or an error. */
typedef int (*member_fn)(struct segmap_scope *sc, struct report *r);

static int all_checks(struct segmap_scope *sc, struct report *r)
{
	return st_all(sc, r->why);
}

/*
 * Homes of one page each, kept alive until home_alloc fails: with the
 * group's 64 segments shared by @n members that is after 64 / n, with
 * -ENOSPC on every member.  Once they are freed, homes come again.
 */
static int segment_limit(struct segmap_scope *sc, struct report *r)
{
	uint64_t bytes[MAX_MEMBERS];
	struct segmap_home *h[AGILE_MAX_SEGMENTS + 1];
	int live = 0, err;

	for (uint32_t q = 0; q < sc->nr_nodes; q++)
		bytes[q] = 100;
	do
		err = sc->ops->home_alloc(sc, bytes, &h[live]);
	while (!err && ++live <= AGILE_MAX_SEGMENTS);
	r->value = live;
	if (err != -ENOSPC)
		st_fail(r->why, err, "home_alloc past the limit");
	for (int k = 0; k < live; k++)
		sc->ops->home_free(sc, h[k]);
	if (err != -ENOSPC)
		return err ? err : -EBADMSG;
	for (int k = 0; k < live; k++) {
		err = sc->ops->home_alloc(sc, bytes, &h[k]);
		if (err)
			return st_fail(r->why, err, "home_alloc %d again", k);
	}
	for (int k = 0; k < live; k++)
		sc->ops->home_free(sc, h[k]);
	return 0;
}

/* In a child: join, run @fn, report, leave. */
static void member_main(uint64_t key, uint32_t n, member_fn fn, int slot)
{
	struct report *r = &reports[slot];
	struct segmap_scope *sc;
	int err;

	alarm(ALARM_S);
	err = agile__segmap_scope_procs_join(key, n, join_ns, &sc);
	if (err) {
		r->err = st_fail(r->why, err, "join");
		_exit(1);
	}
	r->self = (int)sc->self;
	if (sc->kind != AGILE_NODE_PROC || sc->nr_nodes != n)
		r->err = st_fail(r->why, 0, "kind %d, %u nodes", sc->kind,
				 sc->nr_nodes);
	else
		r->err = fn(sc, r);
	sc->ops->destroy(sc);
	exit(r->err ? 1 : 0); /* not _exit: LSan looks for leaks at exit */
}

/* Fork @n members running @fn; whether all passed, nodes 0 .. n - 1. */
static bool run_members(uint32_t n, member_fn fn, const char **why)
{
	uint64_t key = random_key();
	pid_t pids[MAX_MEMBERS];
	uint32_t seen = 0;
	bool ok = true;

	memset(reports, 0, sizeof(*reports) * (MAX_MEMBERS + 1));
	for (uint32_t i = 0; i < MAX_MEMBERS; i++)
		reports[i].self = -1;
	fflush(stdout);
	for (uint32_t i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			member_main(key, n, fn, (int)i);
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
		if (reports[i].self >= 0)
			seen |= 1u << reports[i].self;
	}
	if (ok && seen != (1u << n) - 1) {
		*why = "the members' nodes are not 0 .. n - 1";
		ok = false;
	}
	return ok;
}

/* The victim dies after the first barrier; the others see -EPIPE. */
static int victim_or_witness(struct segmap_scope *sc, struct report *r)
{
	uint64_t bytes[MAX_MEMBERS];
	struct segmap_home *h;
	uint8_t buf[64];
	int64_t v = 1;
	int err;

	for (uint32_t q = 0; q < sc->nr_nodes; q++)
		bytes[q] = 4096;
	err = sc->ops->home_alloc(sc, bytes, &h);
	if (!err)
		err = sc->ops->barrier(sc);
	if (err)
		return st_fail(r->why, err, "before the kill");
	if (sc->self == sc->nr_nodes - 1)
		raise(SIGKILL);
	err = sc->ops->barrier(sc);
	if (err != -EPIPE)
		return st_fail(r->why, err, "barrier after the kill");
	/* And every later call, a get included. */
	err = sc->ops->home_get(h, sc->nr_nodes - 1, 0, buf, sizeof(buf));
	if (err == -EPIPE)
		err = sc->ops->agree(sc, 0);
	if (err == -EPIPE)
		err = sc->ops->barrier(sc);
	if (err == -EPIPE)
		err = sc->ops->allreduce(sc, &v, &v, 1, AGILE_COLL_INT64,
					 AGILE_COLL_SUM);
	sc->ops->home_free(sc, h);
	if (err != -EPIPE)
		return st_fail(r->why, err, "a call after the failed barrier");
	return 0;
}

/* Until the members' shared flag is at least @value (a minute at most). */
static bool await_flag_value(int value)
{
	for (int i = 0; i < 60000; i++) {
		if (__atomic_load_n(&reports[MAX_MEMBERS].value,
				    __ATOMIC_ACQUIRE) >= value)
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * Node 1 lives but comes late: node 0's barrier ends with -ETIMEDOUT
 * after the join's timeout.  Then node 1 makes that barrier (it finds
 * node 0's count there) and waits in an agree, where node 0's agree
 * does not meet it: the scope is out of step, and node 0's calls return
 * -ETIMEDOUT at once.  Node 1's agree ends when node 0 leaves (-EPIPE).
 */
static int late_peer(struct segmap_scope *sc, struct report *r)
{
	int *flag = &reports[MAX_MEMBERS].value, err, again;

	if (sc->self == 1) {
		if (!await_flag_value(1))
			return st_fail(r->why, -ETIMEDOUT, "node 0's barrier");
		err = sc->ops->barrier(sc);
		__atomic_store_n(flag, 2, __ATOMIC_RELEASE);
		again = sc->ops->agree(sc, 0);
		if (err || !again)
			return st_fail(r->why, err,
				       "node 1: barrier %d, agree %d", err,
				       again);
		return 0;
	}
	err = sc->ops->barrier(sc);
	__atomic_store_n(flag, 1, __ATOMIC_RELEASE);
	if (!await_flag_value(2))
		return st_fail(r->why, -ETIMEDOUT, "node 1's barrier");
	again = sc->ops->agree(sc, 0);
	if (err != -ETIMEDOUT || again != -ETIMEDOUT)
		return st_fail(r->why, err ? err : again,
			       "node 0: barrier %d, agree %d", err, again);
	return 0;
}

static void killed(uint32_t n)
{
	uint64_t key = random_key();
	pid_t pids[MAX_MEMBERS];
	int witnesses = 0, killed = 0;
	const char *why = "";

	memset(reports, 0, sizeof(*reports) * (MAX_MEMBERS + 1));
	fflush(stdout);
	for (uint32_t i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			member_main(key, n, victim_or_witness, (int)i);
	}
	for (uint32_t i = 0; i < n; i++) {
		int status = 0;

		waitpid(pids[i], &status, 0);
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			killed++;
		else if (WIFEXITED(status) && !WEXITSTATUS(status))
			witnesses++;
		else if (!why[0])
			why = reports[i].why[0] ? reports[i].why : "died";
	}
	tap_ok(killed == 1 && witnesses == (int)n - 1,
	       "%s: %u members, one killed with SIGKILL: the others' barrier "
	       "and every later call return -EPIPE (%d of %u)%s%s",
	       be, n, witnesses, n - 1, why[0] ? ": " : "", why);
}

static void test_backend(int backend)
{
	const char *why;
	bool ok;

	be = agile_dev_backend_name(backend);
	/* The scope takes the dev layer's default backend, this one. */
	setenv("AGILE_BACKEND", be, 1);
	for (uint32_t n = 1; n <= MAX_MEMBERS; n++) {
		ok = run_members(n, all_checks, &why);
		tap_ok(ok,
		       "%s: %u members: homes, gets, puts, agree, "
		       "allreduce, %d fields made and freed%s%s",
		       be, n, ST_LOOPS, ok ? "" : ": ", why);
	}
	for (uint32_t n = 1; n <= MAX_MEMBERS; n += 2) {
		ok = run_members(n, segment_limit, &why);
		ok = ok && reports[0].value == AGILE_MAX_SEGMENTS / (int)n;
		tap_ok(ok,
		       "%s: %u members: the group's %d segments: -ENOSPC "
		       "on every member after %d homes, then homes again%s%s",
		       be, n, AGILE_MAX_SEGMENTS, reports[0].value,
		       ok ? "" : ": ", why);
	}
	killed(2);
	killed(3);
	join_ns = 3ULL * 1000 * 1000 * 1000;
	ok = run_members(2, late_peer, &why);
	join_ns = JOIN_NS;
	tap_ok(ok,
	       "%s: 2 members, one late: the other's barrier ends with "
	       "-ETIMEDOUT after the join's timeout, and then its calls "
	       "(out of step)%s%s",
	       be, ok ? "" : ": ", why);
}

int main(void)
{
	reports = mmap(NULL, sizeof(*reports) * (MAX_MEMBERS + 1),
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
