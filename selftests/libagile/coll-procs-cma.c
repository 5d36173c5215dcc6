// SPDX-License-Identifier: MIT
/*
 * coll-procs-cma - the processes scope's allreduce by Cross Memory Attach
 * (coll/cma.c), on each backend: the same bits as the pull schedule for
 * order-sensitive floats, in place, a non-commutative user op in rank
 * order, 2, 3 and 5 members, sizes that end mid-chunk and buffers off
 * their alignment; a member killed in the middle (the others get -EPIPE);
 * and the pull schedule when a member's kernel refuses CMA (a seccomp
 * filter), or a member's $AGILE_COLL_CMA switches it off.
 */
#define _GNU_SOURCE
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "colltest.h"
#include "tap.h"
#include "collprocs.h"
#include "coll/shm.h"

/* Small chunks: every size below crosses chunk boundaries. */
#define CHUNK "4096"
#define MOST (300007 + 89) /* a multiple of 64, with room for offsets */

/* Member @rank's order-sensitive floats: wide exponents, both signs. */
static float ordered_value(uint32_t rank, size_t i)
{
	int m = (int)((rank * 7919 + i * 104729) % 2001) - 1000;

	return ldexpf((float)m, (int)((rank * 13 + i) % 48) - 24);
}

/* Join with rank @slot (opts.order): the same in every communicator. */
static int join_mode(uint64_t key, uint32_t n, uint32_t slot, const char *mode,
		     struct agile_coll **coll)
{
	struct agile_coll_opts o;

	opts_for(&o, 2, 0, 1u << 20);
	o.order = slot;
	if (mode)
		setenv("AGILE_COLL_CMA", mode, 1);
	else
		unsetenv("AGILE_COLL_CMA");
	return agile_coll_procs_join(key, n, &o, JOIN_NS, coll);
}

/*
 * One member of same_bits: a pull and a CMA communicator; for every count,
 * out of place and in place, CMA's bits must be the pull schedule's, and
 * a matrix product must come out in rank order.
 */
static void same_bits_member(uint64_t key, uint32_t n, uint32_t slot,
			     const size_t *counts, size_t nr_counts)
{
	struct report *r = &reports[slot];
	struct agile_coll *pull, *cma;
	char *mem = aligned_alloc(64, 4 * MOST * sizeof(int64_t));
	float *send, *ref, *out, *io;
	int64_t *mat;
	uint32_t rank;
	int err;

	setenv("AGILE_COLL_CMA_CHUNK", CHUNK, 1);
	err = join_mode(key, n, slot, "off", &pull);
	if (!err)
		err = join_mode(key + 1, n, slot, "on", &cma);
	if (err || !mem) {
		fail(r, "join%s: %s", "", err ? err : -ENOMEM);
		_exit(1);
	}
	rank = (uint32_t)agile_coll_rank(cma);
	if (agile__coll_procs_cma(cma) ||
	    agile__coll_procs_cma(pull) != -ENOTSUP)
		fail(r, "verdicts%s: %s", "", agile__coll_procs_cma(cma));
	/* off the alignment by a member's own number of floats */
	send = (float *)mem + 1 + rank;
	ref = (float *)(mem + MOST * sizeof(int64_t)) + 3;
	out = (float *)(mem + 2 * MOST * sizeof(int64_t)) + 2 + rank;
	io = (float *)(mem + 3 * MOST * sizeof(int64_t)) + 1;
	for (size_t k = 0; k < nr_counts && !r->fails; k++) {
		size_t count = counts[k];

		for (size_t i = 0; i < count; i++)
			send[i] = ordered_value(rank, i);
		memcpy(io, send, count * sizeof(float));
		err = agile_coll_allreduce(pull, send, ref, count,
					   AGILE_COLL_FLOAT, AGILE_COLL_SUM);
		if (!err)
			err = agile_coll_allreduce(cma, send, out, count,
						   AGILE_COLL_FLOAT,
						   AGILE_COLL_SUM);
		if (!err)
			err = agile_coll_allreduce(cma, io, io, count,
						   AGILE_COLL_FLOAT,
						   AGILE_COLL_SUM);
		if (err) {
			fail(r, "float sum%s: %s", "", err);
			break;
		}
		for (size_t i = 0; i < count; i++) {
			if (send[i] != ordered_value(rank, i)) {
				fail(r, "send buffer changed%s: %s", "", 0);
				break;
			}
		}
		if (memcmp(ref, out, count * sizeof(float)))
			fail(r, "float sum, CMA against pull%s: %s", "", 0);
		if (memcmp(ref, io, count * sizeof(float)))
			fail(r, "float sum in place, CMA against pull%s: %s",
			     "", 0);

		mat = (int64_t *)mem + 1;
		for (size_t i = 0; i < count; i++)
			mat[i] = ct_matrix(rank, i);
		err = agile_coll_allreduce(cma, mat, mat, count,
					   AGILE_COLL_INT64, AGILE_COLL_USER);
		if (err) {
			fail(r, "matrix product%s: %s", "", err);
			break;
		}
		for (size_t i = 0; i < count; i++) {
			if (mat[i] != ct_matrix_reference(n, i)) {
				fail(r,
				     "matrix product not in rank order%s: %s",
				     "", 0);
				break;
			}
		}
	}
	/* three calls per count: out of place, in place, the matrices */
	if (!r->fails && (agile__coll_procs_cma_calls(cma) != 3 * nr_counts ||
			  agile__coll_procs_cma_calls(pull)))
		fail(r,
		     "calls by CMA: not every one, or in the pull "
		     "communicator%s: %s",
		     "", 0);
	err = agile_coll_destroy(cma);
	if (!err)
		err = agile_coll_destroy(pull);
	if (err && !r->fails)
		fail(r, "destroy%s: %s", "", err);
	free(mem);
}

static bool reap(uint32_t n, const pid_t *pids, const char **first)
{
	bool ok = true;

	*first = "";
	for (uint32_t i = 0; i < n; i++) {
		int status = 0;

		waitpid(pids[i], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) ||
		    reports[i].fails) {
			if (ok)
				*first = reports[i].fails ? reports[i].msg :
							    "a member died";
			ok = false;
		}
	}
	return ok;
}

static void same_bits(uint32_t n)
{
	/* 1: parts of nothing; 1023, 3073: mid-chunk (1024 floats each) */
	static const size_t counts[] = { 1, 2, 1023, 1024, 3073, 300007 };
	uint64_t key = ct_random_key();
	pid_t pids[MAX_MEMBERS];
	const char *first;
	bool ok;

	memset(reports, 0, sizeof(*reports) * (MAX_MEMBERS + 1));
	for (uint32_t i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			alarm(120);
			same_bits_member(key, n, i, counts,
					 sizeof(counts) / sizeof(counts[0]));
			_exit(reports[i].fails ? 1 : 0);
		}
	}
	ok = reap(n, pids, &first);
	tap_ok(ok,
	       "%s: %u members: CMA allreduce gives the pull schedule's bits "
	       "(order-sensitive floats, in place, off alignment, ends "
	       "mid-chunk) and a rank-ordered matrix product%s%s",
	       be, n, ok ? "" : ": ", first);
}

/* Set in each child after its join: whether its op kills it. */
static bool i_am_victim;
static int victim_calls;

static void sum_or_die(void *inout, const void *in, size_t count,
		       enum agile_coll_type type, void *arg)
{
	(void)type;
	(void)arg;
	/* in its third chunk: the peers are in the middle of theirs */
	if (i_am_victim && ++victim_calls == 3)
		raise(SIGKILL);
	for (size_t i = 0; i < count; i++)
		((int32_t *)inout)[i] += ((const int32_t *)in)[i];
}

static void dead_peer(uint32_t n, uint32_t victim)
{
	uint64_t key = ct_random_key();
	pid_t pids[MAX_MEMBERS];
	int epipe = 0, later = 0, killed = 0, others = 0;
	size_t count = 1u << 20;

	memset(reports, 0, sizeof(*reports) * (MAX_MEMBERS + 1));
	for (uint32_t i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			struct agile_coll_opts o;
			struct agile_coll *coll;
			int32_t *v = malloc(count * sizeof(*v));
			int err;

			alarm(60);
			opts_for(&o, 2, 0, 1u << 20);
			o.user_fn = sum_or_die;
			o.user_commutative = 1;
			setenv("AGILE_COLL_CMA", "on", 1);
			setenv("AGILE_COLL_CMA_CHUNK", CHUNK, 1);
			err = agile_coll_procs_join(key, n, &o, JOIN_NS, &coll);
			if (err || !v || agile__coll_procs_cma(coll)) {
				reports[i].err = err ? err : -EINVAL;
				_exit(2);
			}
			i_am_victim = agile_coll_rank(coll) == (int)victim;
			for (size_t k = 0; k < count; k++)
				v[k] = (int32_t)k;
			err = agile_coll_allreduce(coll, v, v, count,
						   AGILE_COLL_INT32,
						   AGILE_COLL_USER);
			reports[i].err = err;
			/* so does the next call */
			reports[i].fails =
				agile_coll_allreduce(coll, v, v, count,
						     AGILE_COLL_INT32,
						     AGILE_COLL_SUM) != err;
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
		later += WIFEXITED(status) && !WEXITSTATUS(status) &&
			 !reports[i].fails;
	}
	tap_ok(killed == 1 && epipe == others && later == others,
	       "%s: %u members, rank %u killed in the middle of a CMA "
	       "allreduce: the others get -EPIPE (%d of %d), and so does "
	       "their next call (%d)",
	       be, n, victim, epipe, others, later);
}

/* A real refusal: this process's process_vm_readv/writev fail, EPERM. */
static int refuse_cma(void)
{
#if defined(__x86_64__)
	const unsigned int arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
	const unsigned int arch = AUDIT_ARCH_AARCH64;
#else
	const unsigned int arch = 0;
#endif
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 2,
			 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_writev, 1,
			 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (!arch || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -1;
	return 0;
}

/*
 * Member @refuser cannot use CMA (a seccomp filter) or asks for @mode:
 * every member must get the same verdict, @want, and a right sum.
 */
static void fallback(uint32_t n, uint32_t refuser, const char *mode, int want,
		     const char *what)
{
	uint64_t key = ct_random_key();
	pid_t pids[MAX_MEMBERS];
	const char *first;
	bool ok;

	memset(reports, 0, sizeof(*reports) * (MAX_MEMBERS + 1));
	for (uint32_t i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			struct report *r = &reports[i];
			struct agile_coll *coll;
			size_t count = 100003;
			int32_t *v = malloc(count * sizeof(*v));
			int err;

			alarm(60);
			if (i == refuser && !mode && refuse_cma()) {
				fail(r, "seccomp%s: %s", "", -errno);
				_exit(1);
			}
			err = join_mode(key, n, i,
					i == refuser && mode ? mode : "on",
					&coll);
			if (err || !v) {
				fail(r, "join%s: %s", "", err ? err : -ENOMEM);
				_exit(1);
			}
			if (agile__coll_procs_cma(coll) != want) {
				snprintf(r->msg, sizeof(r->msg),
					 "verdict %d, not %d",
					 agile__coll_procs_cma(coll), want);
				r->fails++;
			}
			for (size_t k = 0; k < count; k++)
				v[k] = (int32_t)(k + i);
			err = agile_coll_allreduce(coll, v, v, count,
						   AGILE_COLL_INT32,
						   AGILE_COLL_SUM);
			for (size_t k = 0; !err && k < count; k++) {
				if (v[k] !=
				    (int32_t)(n * k + n * (n - 1) / 2)) {
					fail(r, "sum%s: %s", "", 0);
					break;
				}
			}
			if (err)
				fail(r, "allreduce%s: %s", "", err);
			if (agile__coll_procs_cma_calls(coll))
				fail(r, "an allreduce went by CMA%s: %s", "",
				     0);
			err = agile_coll_destroy(coll);
			if (err && !r->fails)
				fail(r, "destroy%s: %s", "", err);
			_exit(r->fails ? 1 : 0);
		}
	}
	ok = reap(n, pids, &first);
	tap_ok(ok,
	       "%s: %u members, %s: every member keeps the pull schedule "
	       "(%s) and sums right%s%s",
	       be, n, what, agile_strerror(want), ok ? "" : ": ", first);
}

/*
 * The threshold: member 0 asks for CMA from 8 KiB, member 1 from 4 KiB;
 * both take 8 KiB (the larger), so 8188 bytes go the pull way and 8192
 * by CMA, on both, with right sums.
 */
static void threshold(void)
{
	static const char *const modes[2] = { "8192", "4096" };
	uint64_t key = ct_random_key();
	pid_t pids[MAX_MEMBERS];
	const char *first;
	bool ok;

	memset(reports, 0, sizeof(*reports) * (MAX_MEMBERS + 1));
	for (uint32_t i = 0; i < 2; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			struct report *r = &reports[i];
			struct agile_coll *coll;
			int32_t v[2048];
			uint64_t calls[2];
			int err;

			alarm(60);
			err = join_mode(key, 2, i, modes[i], &coll);
			if (err) {
				fail(r, "join%s: %s", "", err);
				_exit(1);
			}
			for (size_t n = 2047; n <= 2048 && !err; n++) {
				for (size_t k = 0; k < n; k++)
					v[k] = (int32_t)(k * (i + 1));
				err = agile_coll_allreduce(coll, v, v, n,
							   AGILE_COLL_INT32,
							   AGILE_COLL_SUM);
				for (size_t k = 0; !err && k < n; k++)
					if (v[k] != (int32_t)(3 * k))
						err = -EBADMSG;
				calls[n - 2047] =
					agile__coll_procs_cma_calls(coll);
			}
			if (err)
				fail(r, "allreduce%s: %s", "", err);
			else if (calls[0] != 0 || calls[1] != 1)
				fail(r, "8188 bytes by CMA, or 8192 not%s: %s",
				     "", 0);
			agile_coll_destroy(coll);
			_exit(r->fails ? 1 : 0);
		}
	}
	ok = reap(2, pids, &first);
	tap_ok(ok,
	       "%s: AGILE_COLL_CMA=8192 and =4096: both members take CMA "
	       "from 8192 bytes up%s%s",
	       be, ok ? "" : ": ", first);
}

/*
 * "auto": CMA with 2 members (from 8 MiB: not called here), the pull
 * schedule with 3 (-ENOTSUP), where CMA measured slower.  Unset (@mode
 * NULL, the default): the pull schedule (-ENOTSUP) with any number.
 */
static void auto_members(uint32_t n, const char *mode, int want)
{
	uint64_t key = ct_random_key();
	pid_t pids[MAX_MEMBERS];
	const char *first;
	bool ok;

	memset(reports, 0, sizeof(*reports) * (MAX_MEMBERS + 1));
	for (uint32_t i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			struct report *r = &reports[i];
			struct agile_coll *coll;
			int err;

			alarm(60);
			err = join_mode(key, n, i, mode, &coll);
			if (err) {
				fail(r, "join%s: %s", "", err);
				_exit(1);
			}
			if (agile__coll_procs_cma(coll) != want) {
				snprintf(r->msg, sizeof(r->msg),
					 "verdict %d, not %d",
					 agile__coll_procs_cma(coll), want);
				r->fails++;
			}
			agile_coll_destroy(coll);
			_exit(r->fails ? 1 : 0);
		}
	}
	ok = reap(n, pids, &first);
	tap_ok(ok, "%s: AGILE_COLL_CMA=%s, %u members: verdict %s%s%s", be,
	       mode ? mode : "(unset)", n, agile_strerror(want), ok ? "" : ": ",
	       first);
}

static void run_backend(bool quick)
{
	auto_members(2, NULL, -ENOTSUP);
	auto_members(2, "auto", 0);
	auto_members(3, "auto", -ENOTSUP);
	threshold();
	same_bits(2);
	same_bits(3);
	if (!quick)
		same_bits(5);
	dead_peer(2, 1);
	dead_peer(3, 0);
	if (!quick)
		dead_peer(3, 2);
	fallback(2, 1, NULL, -EPERM,
		 "one refusing process_vm_readv/writev (seccomp)");
	fallback(3, 0, NULL, -EPERM,
		 "one refusing process_vm_readv/writev (seccomp)");
	fallback(3, 2, "off", -ENOTSUP, "one with AGILE_COLL_CMA=off");
}

int main(void)
{
	return cp_main(run_backend);
}
