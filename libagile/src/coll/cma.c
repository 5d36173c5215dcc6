// SPDX-License-Identifier: MIT
/*
 * cma.c - allreduce among the processes scope's members straight between
 * their private buffers, by Cross Memory Attach (process_vm_readv and
 * process_vm_writev): the push schedule of docs/allreduce.md.
 *
 * Member r owns part r of the vector (nr_members parts, sizes differing by
 * at most one element).  For each chunk of its part (cma_chunk bytes, so
 * that the chunk stays in the caches) it reads every peer's send chunk
 * into its scratch (one process_vm_readv per peer), reduces the members'
 * chunks with its own send read where it is, into its own recv, and copies
 * that result into every peer's recv (process_vm_writev).  With 2 members
 * each reads L/2 of its send and L/2 of its peer's and writes L/2 of its
 * recv and L/2 of its peer's: 4 L of memory traffic for a vector of L
 * bytes, the least an allreduce moves, and no copy into a shared segment.
 *
 * The order of the reduction is the pull schedule's (plan.h: the fold's
 * pairs, the even rank on the left, then the halving's rounds, the lower
 * newrank on the left), so both schedules give the same bits for the same
 * members, and non-commutative user ops keep rank order.
 *
 * Synchronisation: two values per call.  Value 1 comes after the call's
 * descriptor and the caller's send and recv addresses (release store by
 * agile_dev_signal <-> the acquire of the peers' waits, which then read
 * the words).  Value 2 comes after the member's part is in every recv:
 * the kernel's copies are done when process_vm_writev returns, before the
 * release store; a member returns after every peer's value 2 (the
 * acquire), so its recv is complete and no peer reads its send any more.
 *
 * In place (send == recv): part q of every member's buffers is touched by
 * member q only, and chunk by chunk it reads that chunk from every send
 * before it writes it into any recv.
 *
 * Errors: a peer that has died (process_vm_* fail with ESRCH; a wait with
 * -EPIPE) or failed (its poison) ends the call for all as in shm.c: the
 * member poisons its words and, before it returns, waits until every peer
 * has published value 2 or failed or died, so that no peer still writes
 * into its recv or reads its send.  A peer poisons only after its last
 * process_vm_* call.
 *
 * The probe at join (coll_cma_probe): each member reads a cookie of every
 * peer with process_vm_readv; where the kernel refuses it (ptrace access:
 * another user, Yama's ptrace_scope, a seccomp filter, CONFIG_CROSS_MEMORY_
 * ATTACH off) or reads another process (a pid namespace apart), that
 * member's error is published, and every member keeps the pull schedule
 * (agile__coll_procs_cma says why).  Never an error for the caller.  Every call
 * reads each peer's cookie again before it moves anything (meet): a pid
 * whose member died and that another process of the user took since
 * fails the call with -EPIPE instead of receiving its writes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <unistd.h>

#include "coll/shm.h"
#include "env.h"
#include "sys.h"
#include "transport/procs.h"

/*
 * The smallest allreduce that goes by CMA with $AGILE_COLL_CMA=auto.  2 processes on the 2-core development VM, private buffers,
 * the pull schedule's median over CMA's, in the same runs (agile-bench
 * allreduce): 1 MiB 0.6-1.5 (8 of 12 runs below 1), 2 MiB 0.6-2.6, 4 MiB
 * 0.4-1.8 (even), 8 MiB 1.0-1.5 (4 of 4 at least 1), 16 MiB 0.8-2.5,
 * 64 MiB 1.1-2.0 (12 of 12 above 1), on a machine busy with other work;
 * in the quietest of 16 later runs CMA was no faster at 64 MiB
 * (0.78-1.01), as the kernel pins each 4 KiB page it copies.
 * docs/allreduce.md has the tables.
 */
#define COLL_CMA_FROM_DEFAULT (8ULL << 20)
/* Bytes reduced at a time ($AGILE_COLL_CMA_CHUNK overrides it). */
#define COLL_CMA_CHUNK_DEFAULT (256U << 10)
#define COLL_CMA_CHUNK_MIN 64U
#define COLL_CMA_CHUNK_MAX (64U << 20)

static struct agile_doorbell *line(const struct coll_shm *c, uint32_t q)
{
	struct agile_doorbell *db = NULL;

	agile_dev_slot(c->dev, q, &db, NULL);
	return db;
}

/*
 * $AGILE_COLL_CMA: unset or "off": never (the default: on a quiet 2-CPU VM,
 * 8 runs of agile-bench allreduce, 2026-11-26, the pull schedule was as
 * fast or faster at 64 MiB in all 8, CMA / pull 1.00-1.25, and at 16 MiB
 * even or faster in 5; CMA is faster when the machine is busy,
 * docs/allreduce.md); "auto": COLL_CMA_FROM_DEFAULT with 2
 * members, else never; "on": every call; a number: calls of at least that
 * many bytes.  4 processes on 2 CPUs, 2 runs: the pull schedule's
 * median over CMA's 0.68 at 64 MiB, 0.75 at 16 MiB (each member copies
 * 3/4 of the vector in and out through the kernel, page by page); more
 * members than 2 are not measured otherwise.
 */
static uint64_t wanted_from(uint32_t nr_members)
{
	const char *env = getenv("AGILE_COLL_CMA");
	unsigned long long v;
	char *end;

	if (!env || !*env || !strcmp(env, "off"))
		return UINT64_MAX;
	if (!strcmp(env, "auto"))
		return nr_members == 2 ? COLL_CMA_FROM_DEFAULT : UINT64_MAX;
	if (!strcmp(env, "on"))
		return 1;
	errno = 0;
	v = strtoull(env, &end, 10);
	if (errno || *end || *env == '-') {
		agile__env_invalid("AGILE_COLL_CMA", env,
				   "off, auto, on or a size in bytes; the "
				   "default size applies");
		return COLL_CMA_FROM_DEFAULT;
	}
	return v ? v : 1;
}

static size_t chunk_bytes(void)
{
	const char *env = getenv("AGILE_COLL_CMA_CHUNK");
	unsigned long v;
	char *end;

	if (!env || !*env)
		return COLL_CMA_CHUNK_DEFAULT;
	v = strtoul(env, &end, 10);
	if (*end || v < COLL_CMA_CHUNK_MIN || v > COLL_CMA_CHUNK_MAX) {
		char expected[96];

		snprintf(expected, sizeof(expected),
			 "bytes from %lu to %lu; the default applies",
			 (unsigned long)COLL_CMA_CHUNK_MIN,
			 (unsigned long)COLL_CMA_CHUNK_MAX);
		agile__env_invalid("AGILE_COLL_CMA_CHUNK", env, expected);
		return COLL_CMA_CHUNK_DEFAULT;
	}
	return v & ~63UL;
}

void coll_cma_probe_publish(struct coll_shm *c)
{
	struct agile_doorbell *db = line(c, (uint32_t)c->base.rank);

	if (getrandom(&c->cma_cookie, sizeof(c->cma_cookie), GRND_NONBLOCK) !=
	    sizeof(c->cma_cookie))
		c->cma_cookie = agile_mono_ns() ^ (uintptr_t)c;
	__atomic_store_n(&db->user[COLL_WORD_PID], (uint32_t)getpid(),
			 __ATOMIC_RELAXED);
	procs_set_word_pair(db, COLL_WORD_PROBE_ADDR,
			    (uintptr_t)&c->cma_cookie);
	procs_set_word_pair(db, COLL_WORD_PROBE_COOKIE, c->cma_cookie);
	procs_set_word_pair(db, COLL_WORD_CMA_FROM,
			    wanted_from((uint32_t)c->base.size));
}

/*
 * Is process @pid the member whose probe cookie is at @addr with value
 * @cookie, and may this member read its memory?  0 or a positive errno.
 */
static int probe_peer(int pid, uint64_t addr, uint64_t cookie)
{
	uint64_t got = 0;
	struct iovec local = { &got, sizeof(got) };
	struct iovec remote = { (void *)(uintptr_t)addr, sizeof(got) };
	ssize_t done = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (done < 0)
		return errno;
	/* short, or another process's memory (a pid namespace apart) */
	if (done != sizeof(got) || got != cookie)
		return EIO;
	return 0;
}

/*
 * The words of the join lines are read after the rendezvous of value 1
 * (here) or 2 (coll_cma_agree), whose acquire pairs with the release of
 * the value by the member that wrote them.
 */
void coll_cma_probe(struct coll_shm *c)
{
	uint32_t n = (uint32_t)c->base.size, me = (uint32_t)c->base.rank;
	int err = n < 2 || wanted_from(n) == UINT64_MAX ? ENOTSUP : 0;

	for (uint32_t q = 0; q < n; q++) {
		const struct agile_doorbell *db = line(c, q);

		c->pid[q] = (int)__atomic_load_n(&db->user[COLL_WORD_PID],
						 __ATOMIC_RELAXED);
		c->probe[2 * q] = procs_word_pair(db, COLL_WORD_PROBE_ADDR);
		c->probe[2 * q + 1] =
			procs_word_pair(db, COLL_WORD_PROBE_COOKIE);
		if (q != me && !err)
			err = probe_peer(c->pid[q], c->probe[2 * q],
					 c->probe[2 * q + 1]);
	}
	if (!err) {
		c->cma_chunk = chunk_bytes();
		c->cma_scratch = aligned_alloc(64, n * c->cma_chunk);
		if (!c->cma_scratch)
			err = ENOMEM;
	}
	__atomic_store_n(&line(c, me)->user[COLL_WORD_CMA_ERR], (uint32_t)err,
			 __ATOMIC_RELAXED);
}

void coll_cma_agree(struct coll_shm *c)
{
	int err = 0;
	uint64_t from = 0;

	for (uint32_t q = 0; q < (uint32_t)c->base.size; q++) {
		const struct agile_doorbell *db = line(c, q);
		uint32_t e = __atomic_load_n(&db->user[COLL_WORD_CMA_ERR],
					     __ATOMIC_RELAXED);
		uint64_t f = procs_word_pair(db, COLL_WORD_CMA_FROM);

		if (!err && e)
			err = -(int)e;
		if (f > from)
			from = f;
	}
	if (!err && from == UINT64_MAX)
		err = -ENOTSUP;
	c->cma_err = err;
	c->cma_from = from;
	if (err) {
		free(c->cma_scratch);
		c->cma_scratch = NULL;
	}
}

bool coll_cma_wanted(const struct coll_shm *c, size_t bytes)
{
	return c->scope == COLL_SCOPE_PROCS && !c->cma_err &&
	       bytes >= c->cma_from;
}

int agile__coll_procs_cma(const struct agile_coll *coll)
{
	if (!coll_is(coll, &coll_procs_ops))
		return -EINVAL;
	return ((const struct coll_shm *)coll)->cma_err;
}

uint64_t agile__coll_procs_cma_calls(const struct agile_coll *coll)
{
	if (!coll_is(coll, &coll_procs_ops))
		return 0;
	return ((const struct coll_shm *)coll)->cma_calls;
}

/*
 * Move @bytes between this member's @local and member @q's @remote (into
 * @local, or out of it with @out); -EPIPE if @q is gone.
 */
static int move(const struct coll_shm *c, uint32_t q, char *local,
		uint64_t remote, size_t bytes, bool out)
{
	while (bytes) {
		struct iovec l = { local, bytes };
		struct iovec r = { (void *)(uintptr_t)remote, bytes };
		ssize_t done =
			out ? process_vm_writev(c->pid[q], &l, 1, &r, 1, 0) :
			      process_vm_readv(c->pid[q], &l, 1, &r, 1, 0);

		if (done < 0 && errno == EINTR)
			continue;
		if (done < 0)
			return errno == ESRCH ? -EPIPE : -errno;
		if (!done)
			return -EFAULT;
		local += done;
		remote += (uint64_t)done;
		bytes -= (size_t)done;
	}
	return 0;
}

static char *slot(const struct coll_shm *c, uint32_t q)
{
	return c->cma_scratch + (size_t)q * c->cma_chunk;
}

/*
 * @out = the reduction of @in[0 .. nr_members) (@n elements each) in the
 * pull schedule's order.  Intermediate results go into the scratch slot of
 * the lowest rank they cover (which holds that member's chunk, or nothing:
 * this member's own slot); the last into @out, which may be this member's
 * send (in place).
 */
static void reduce_tree(const struct coll_shm *c, const struct coll_reducer *rd,
			const char *const *in, char *out, size_t n)
{
	uint32_t nr = (uint32_t)c->base.size, p = 1, rem;
	const char *val[AGILE_GROUP_MAX_MEMBERS];

	while (p * 2 <= nr)
		p *= 2;
	rem = nr - p;
	for (uint32_t a = 0; a < p; a++) {
		uint32_t r = agile_coll_plan_rank(nr, a);

		val[a] = in[r];
		if (a < rem) {
			/* the fold: even rank r (op) the extra r + 1 */
			agile__coll_reduce(rd, slot(c, r), in[r], in[r + 1], n);
			val[a] = slot(c, r);
		}
	}
	for (uint32_t step = 1; step < p; step *= 2) {
		for (uint32_t a = 0; a < p; a += 2 * step) {
			char *dst =
				2 * step == p ?
					out :
					slot(c, agile_coll_plan_rank(nr, a));

			agile__coll_reduce(rd, dst, val[a], val[a + step], n);
			val[a] = dst;
		}
	}
}

/* Every peer's value 1 and descriptor, and its addresses. */
static int meet(struct coll_shm *c, uint64_t *peer_send, uint64_t *peer_recv)
{
	for (uint32_t q = 0; q < (uint32_t)c->base.size; q++) {
		int err;

		if (q == (uint32_t)c->base.rank)
			continue;
		err = coll_shm_check_peer(c, q);
		/*
		 * The pid is still the member's: its cookie reads back.  A
		 * member that died and whose pid another process of the
		 * user took since would otherwise get this call's writes;
		 * this leaves that to a pid reused within the call itself
		 * (process_vm_* take no pidfd).
		 */
		if (!err &&
		    probe_peer(c->pid[q], c->probe[2 * q], c->probe[2 * q + 1]))
			err = -EPIPE;
		if (err)
			return err;
		peer_send[q] = procs_word_pair(line(c, q), COLL_WORD_CMA_SEND);
		peer_recv[q] = procs_word_pair(line(c, q), COLL_WORD_CMA_RECV);
	}
	return 0;
}

/* Reduce this member's part, chunk by chunk, into every member's recv. */
static int push_part(struct coll_shm *c, const struct coll_reducer *rd,
		     const char *send, char *recv, size_t count,
		     const uint64_t *peer_send, const uint64_t *peer_recv)
{
	uint32_t nr = (uint32_t)c->base.size, me = (uint32_t)c->base.rank;
	size_t es = rd->size, share = count / nr, extra = count % nr;
	size_t lo = me * share + (me < extra ? me : extra);
	size_t hi = lo + share + (me < extra);
	size_t per_chunk = c->cma_chunk / es ? c->cma_chunk / es : 1;
	const char *in[AGILE_GROUP_MAX_MEMBERS];

	for (size_t at = lo; at < hi; at += per_chunk) {
		size_t n = hi - at < per_chunk ? hi - at : per_chunk;
		int err;

		for (uint32_t q = 0; q < nr; q++) {
			in[q] = send + at * es;
			if (q == me)
				continue;
			err = move(c, q, slot(c, q), peer_send[q] + at * es,
				   n * es, false);
			if (err)
				return err;
			in[q] = slot(c, q);
		}
		reduce_tree(c, rd, in, recv + at * es, n);
		for (uint32_t q = 0; q < nr; q++) {
			if (q == me)
				continue;
			err = move(c, q, recv + at * es, peer_recv[q] + at * es,
				   n * es, true);
			if (err)
				return err;
		}
	}
	return 0;
}

int coll_cma_allreduce(struct coll_shm *c, const struct coll_desc *desc,
		       const void *send, void *recv, size_t count,
		       const struct coll_reducer *rd)
{
	uint64_t peer_send[AGILE_GROUP_MAX_MEMBERS];
	uint64_t peer_recv[AGILE_GROUP_MAX_MEMBERS];
	uint32_t me = (uint32_t)c->base.rank, base;
	struct agile_doorbell *db = line(c, me);
	int err = coll_shm_begin(c, COLL_CMA_SPAN);

	if (err)
		return err;
	coll_shm_publish_desc(c, desc);
	procs_set_word_pair(db, COLL_WORD_CMA_SEND, (uintptr_t)send);
	procs_set_word_pair(db, COLL_WORD_CMA_RECV, (uintptr_t)recv);
	base = c->seq_base;
	err = coll_shm_signal(c, base + 1);
	if (!err)
		err = meet(c, peer_send, peer_recv);
	if (!err)
		err = push_part(c, rd, send, recv, count, peer_send, peer_recv);
	if (!err)
		err = coll_shm_signal(c, base + 2);
	for (uint32_t q = 0; !err && q < (uint32_t)c->base.size; q++)
		if (q != me)
			err = coll_shm_wait(c, q, base + 2);
	if (err) {
		err = coll_shm_abort(c, err);
		/* until no peer touches this member's buffers (see above) */
		for (uint32_t q = 0; q < (uint32_t)c->base.size; q++)
			if (q != me)
				coll_shm_wait_seen(c, q, base + 2);
		return err;
	}
	c->seq_base += COLL_CMA_SPAN;
	c->cma_calls++;
	return 0;
}
