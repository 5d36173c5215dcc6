// SPDX-License-Identifier: MIT
/*
 * mpi.c - coll's machines scope (agile/coll_mpi.h): the plans of
 * plan.h over MPI point-to-point, hierarchical over nodes.
 *
 * Two parts:
 *
 *  - the network transport (net_*): executes a member's plan.  Each step's
 *    transfer into the member is an MPI_Irecv from the step's peer (one
 *    per run where it is split, below), its transfer out an MPI_Isend to
 *    the step's send_peer (the plan pairs
 *    them: for every ordered pair of members, A's sends to B and B's
 *    receives from A come in the same order with the same runs).  Steps
 *    are posted ahead of the one being completed, so while segment j of a
 *    halving round is reduced, segment j+1 (and the next round's first
 *    segments) are on the wire; the reduce goes in chunks of 64 KiB with
 *    an MPI_Testsome over the posted transfers between them, so they
 *    really move meanwhile (an MPI library without a progress thread
 *    moves data only inside its calls); the interleaved layout's deferred
 *    tail falls out of the plan's order.  A transfer of several runs
 *    (the interleaved layout) never uses an MPI datatype: large runs go
 *    one message each, straight from and to their places; small ones
 *    one message packed into (unpacked from) a staging area.  A step is
 *    posted only once the steps before it that write what it sends are
 *    complete, and a region is written only once the sends that read it
 *    (a packed send: its copy) are; that is all the ordering MPI needs
 *    (the plan's waits and published values are for the shared-memory
 *    transport and are ignored here).
 *
 *  - the hierarchy: the members of a node (MPI_COMM_TYPE_SHARED, or the
 *    test hook $AGILE_COLL_NODE_ID) form a process-scope communicator
 *    (agile_coll_procs_join: shared memory, zero-copy reads), so an
 *    allreduce is node reduce-scatter, network allreduce of one block per
 *    member among the members with the same node rank, node allgather; a
 *    reduce is a node reduce to the member with the root's node rank,
 *    then a network reduce among those.
 *
 * Data travels as bytes and is reduced here, so user ops and every type
 * take one path.  Every MPI call returns (the handle's communicators have
 * MPI_ERRORS_RETURN) and a failure is -EPROTO.
 */
#define _GNU_SOURCE
#include <agile/coll.h>
#include <agile/coll_mpi.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "coll/coll_impl.h"
#include "coll/ops.h"
#include "coll/plan.h"
#include "transport/mpi.h"

/* How long a member waits for its node's other members to join. */
#define MPI_JOIN_TIMEOUT_NS (60ULL * 1000000000ULL)

/**
 * struct coll_mpi - a machines-scope handle
 * @base:       what agile/coll.h's calls dispatch on (coll_impl.h)
 * @comm:       a duplicate of the caller's communicator: our messages never
 *              meet the caller's
 * @node_comm:  the members on this member's node, in @comm's order
 * @cross_comm: the members with this member's node rank (its rank in
 *              @local), one per node, in node order
 * @local:      the node's process-scope communicator; NULL when alone
 * @local_rank: this member's rank in @local: its rank in @node_comm (the
 *              join's order), so a node reduces its members in MPI rank
 *              order, the same in every run; 0 when alone
 * @local_of:   the @local rank of every member of @comm
 * @node_of:    the node of every member of @comm
 * @opts:       the caller's options (segments, layout, user op)
 * @info:       the layout (agile_coll_mpi_info)
 * @max_bytes:  the hierarchical paths' piece (the opts' max_bytes): what
 *              one node collective and one network block take at once;
 *              never less than one element per node member (piece_elems)
 * @plan:       the last plan built (its arrays are reused)
 * @tmp, @work: staging (what a step receives to reduce, and a transfer
 *              of several runs packed into one message) and a WORK
 *              buffer, kept between calls
 * @overlapped: network receives that completed while the member was
 *              reducing another step's data (coll_mpi_overlapped)
 * @block:      a hierarchical piece's result on its way through the network
 * @bounce:     the reducer's scratch (ops.h)
 */
struct coll_mpi {
	struct agile_coll base;
	MPI_Comm comm, node_comm, cross_comm;
	struct agile_coll *local;
	int rank, size, local_rank;
	int *local_of, *node_of;
	struct agile_coll_opts opts;
	struct agile_coll_mpi_info info;
	size_t max_bytes;
	struct agile_coll_plan plan;
	char *tmp, *work, *block;
	size_t tmp_bytes, work_bytes, block_bytes;
	void *bounce;
	uint64_t overlapped;
};

static bool op_commutes(const struct coll_mpi *c, enum agile_coll_op op)
{
	return op != AGILE_COLL_USER || c->opts.user_commutative;
}

/* A buffer of at least @bytes in *@buf (kept, grown as needed). */
static int cache_grow(char **buf, size_t *have, size_t bytes)
{
	char *p;

	if (bytes <= *have)
		return 0;
	p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
	if (!p)
		return -ENOMEM;
	free(*buf);
	*buf = p;
	*have = bytes;
	return 0;
}

/* ---- the network transport ---- */

/*
 * A step's transfers, never an MPI datatype (an hindexed one cost the
 * interleaved layout 2.5x).  A transfer of several runs is one message per
 * run where its runs average NET_SPLIT_BYTES or more (no copy), else one
 * packed message: a send of it is packed into tmp at @send_off when it is
 * posted, a copy received lands in tmp at @tmp_off and is unpacked on
 * completion.  What a step receives to reduce lands in tmp at @tmp_off
 * either way.  Both sides of a transfer have the same runs (the plan), so
 * they split alike.
 */
struct net_step {
	MPI_Request *recv, *send; /* @nr_recv and @nr_send requests */
	uint32_t nr_recv, nr_send;
	uint64_t tmp_off, send_off; /* in elements */
	bool staged; /* the receive lands in tmp */
	bool send_packed; /* the send reads its copy in tmp */
	bool done;
};

/* Runs of at least this many bytes on average travel one message each. */
#define NET_SPLIT_BYTES (256 * 1024)

struct net {
	struct coll_mpi *c;
	MPI_Comm comm;
	const struct agile_coll_plan *plan;
	char *buf[4]; /* by enum agile_coll_buf */
	size_t esize;
	struct coll_reducer rd;
	MPI_Datatype elem;
	struct net_step *st;
	/* steps posted; the first not complete; the first with a send out */
	uint32_t next_post, first_undone, first_send;
	/* every step's requests; net_progress's list and where each came from */
	MPI_Request *pool, *reqs;
	MPI_Request **req_of;
	int *idx;
};

/* Reduce in pieces of this many bytes, with MPI progress between them. */
#define NET_REDUCE_CHUNK (64 * 1024)

static bool has_recv(const struct net *n, const struct agile_coll_step *s)
{
	return s->action != AGILE_COLL_ACT_NONE && s->nr_runs &&
	       s->peer != (int32_t)n->plan->params.rank;
}

static bool has_local(const struct net *n, const struct agile_coll_step *s)
{
	return s->action != AGILE_COLL_ACT_NONE && s->nr_runs &&
	       s->peer == (int32_t)n->plan->params.rank;
}

static bool has_send(const struct agile_coll_step *s)
{
	return s->send_peer >= 0 && s->nr_send_runs;
}

/* The tag of a step: the plan gives both sides of a transfer the same. */
static int step_tag(const struct agile_coll_step *s)
{
	return (s->phase * 16 + s->round) * AGILE_COLL_PLAN_MAX_SEGMENTS +
	       s->segment;
}

/* Do @na runs at @a (their @dst offsets if @a_dst, else @src) overlap
 * @nb runs at @b?  Buffers may alias (in place), so addresses compare. */
static bool runs_overlap(const struct net *n, const char *a,
			 const struct agile_coll_run *ra, uint32_t na,
			 bool a_dst, const char *b,
			 const struct agile_coll_run *rb, uint32_t nb,
			 bool b_dst)
{
	for (uint32_t i = 0; i < na; i++) {
		const char *x = a + (a_dst ? ra[i].dst : ra[i].src) * n->esize;
		const char *xe = x + ra[i].len * n->esize;

		for (uint32_t j = 0; j < nb; j++) {
			const char *y =
				b + (b_dst ? rb[j].dst : rb[j].src) * n->esize;
			const char *ye = y + rb[j].len * n->esize;

			if (x < ye && y < xe)
				return true;
		}
	}
	return false;
}

/* Does step @k write what step @s sends? */
static bool writes_sent(const struct net *n, uint32_t k, uint32_t s)
{
	const struct agile_coll_step *w = &n->plan->steps[k];
	const struct agile_coll_step *r = &n->plan->steps[s];

	return (has_recv(n, w) || has_local(n, w)) &&
	       runs_overlap(n, n->buf[w->dst_buf], n->plan->runs + w->run,
			    w->nr_runs, true, n->buf[r->send_buf],
			    n->plan->runs + r->send_run, r->nr_send_runs,
			    false);
}

/* Does step @k's send (still) read what step @s writes? */
static bool sends_written(const struct net *n, uint32_t k, uint32_t s)
{
	const struct agile_coll_step *r = &n->plan->steps[k];
	const struct agile_coll_step *w = &n->plan->steps[s];

	/* A packed send reads its copy in tmp. */
	return has_send(r) && !n->st[k].send_packed &&
	       runs_overlap(n, n->buf[r->send_buf], n->plan->runs + r->send_run,
			    r->nr_send_runs, false, n->buf[w->dst_buf],
			    n->plan->runs + w->run, w->nr_runs, true);
}

/* Before step @s writes its destination: the sends that read it are done. */
static int net_wait_readers(struct net *n, uint32_t s)
{
	for (uint32_t k = n->first_send; k < n->next_post; k++) {
		if (!mpi_reqs_null(n->st[k].send, n->st[k].nr_send) &&
		    sends_written(n, k, s) &&
		    mpi_reqs_wait(n->st[k].send, n->st[k].nr_send))
			return -EPROTO;
	}
	while (n->first_send < n->next_post &&
	       mpi_reqs_null(n->st[n->first_send].send,
			 n->st[n->first_send].nr_send))
		n->first_send++;
	return 0;
}

/* Elements in @nr runs. */
static uint64_t runs_len(const struct agile_coll_run *runs, uint32_t nr)
{
	uint64_t len = 0;

	for (uint32_t i = 0; i < nr; i++)
		len += runs[i].len;
	return len;
}

/*
 * Copy @nr runs between their places at @base (their @dst offsets if
 * @dst, else @src) and @packed, contiguous: into @packed if @pack.
 */
static void net_pack(const struct net *n, char *base,
		     const struct agile_coll_run *runs, uint32_t nr, bool dst,
		     char *packed, bool pack)
{
	for (uint32_t i = 0; i < nr; i++) {
		char *p = base + (dst ? runs[i].dst : runs[i].src) * n->esize;
		size_t bytes = runs[i].len * n->esize;

		memcpy(pack ? packed : p, pack ? p : packed, bytes);
		packed += bytes;
	}
}

/* Does a transfer of @len elements in @nr runs go as one message a run? */
static bool net_split(const struct net *n, uint64_t len, uint32_t nr)
{
	return nr > 1 && len * n->esize / nr >= NET_SPLIT_BYTES;
}

/*
 * Let MPI move every posted transfer on (one MPI_Testsome over them)
 * while step @s is being reduced: the next segments' receives complete
 * meanwhile instead of in their own waits (counted in c->overlapped), and
 * the sends drain.  A completed request is MPI_REQUEST_NULL, as after
 * MPI_Wait.
 */
static int net_progress(struct net *n, uint32_t s)
{
	int nr = 0, nr_recv, out = 0;

	for (uint32_t k = s + 1; k < n->next_post; k++)
		for (uint32_t j = 0; j < n->st[k].nr_recv; j++)
			if (n->st[k].recv[j] != MPI_REQUEST_NULL)
				n->req_of[nr++] = &n->st[k].recv[j];
	nr_recv = nr;
	for (uint32_t k = n->first_send; k < n->next_post; k++)
		for (uint32_t j = 0; j < n->st[k].nr_send; j++)
			if (n->st[k].send[j] != MPI_REQUEST_NULL)
				n->req_of[nr++] = &n->st[k].send[j];
	if (!nr)
		return 0;
	for (int i = 0; i < nr; i++)
		n->reqs[i] = *n->req_of[i];
	if (MPI_Testsome(nr, n->reqs, &out, n->idx, MPI_STATUSES_IGNORE))
		return -EPROTO;
	for (int i = 0; out != MPI_UNDEFINED && i < out; i++) {
		*n->req_of[n->idx[i]] = MPI_REQUEST_NULL;
		n->c->overlapped += n->idx[i] < nr_recv;
	}
	return 0;
}

static int net_complete(struct net *n, uint32_t s);

/* Post step @s's transfers: its receive, then its send. */
static int net_post(struct net *n, uint32_t s)
{
	const struct agile_coll_step *st = &n->plan->steps[s];
	const struct agile_coll_run *runs = n->plan->runs;
	uint64_t len;
	char *addr = NULL;
	int err;

	if (has_recv(n, st)) {
		const struct agile_coll_run *r = runs + st->run;
		char *tmp = n->c->tmp + n->st[s].tmp_off * n->esize;

		if (!n->st[s].staged) {
			/* A copy lands in place: no send may still read there. */
			err = net_wait_readers(n, s);
			if (err)
				return err;
		}
		for (uint32_t j = 0; j < n->st[s].nr_recv; j++) {
			/* one message, or run j's */
			uint64_t len = n->st[s].nr_recv == 1 ?
					       runs_len(r, st->nr_runs) :
					       r[j].len;

			if (len > INT_MAX)
				return -EOVERFLOW;
			addr = n->st[s].staged ? tmp :
						 n->buf[st->dst_buf] +
							 r[j].dst * n->esize;
			tmp += len * n->esize;
			if (MPI_Irecv(addr, (int)len, n->elem, st->peer,
				      step_tag(st), n->comm, &n->st[s].recv[j]))
				return -EPROTO;
		}
	}
	if (has_send(st)) {
		/* What it sends must be written first (in step order). */
		for (uint32_t k = s; k-- > n->first_undone;) {
			if (!n->st[k].done && writes_sent(n, k, s)) {
				for (uint32_t j = n->first_undone; j <= k;
				     j++) {
					err = n->st[j].done ?
						      0 :
						      net_complete(n, j);
					if (err)
						return err;
				}
				break;
			}
		}
		const struct agile_coll_run *r = runs + st->send_run;

		if (n->st[s].send_packed) {
			addr = n->c->tmp + n->st[s].send_off * n->esize;
			net_pack(n, n->buf[st->send_buf], r, st->nr_send_runs,
				 false, addr, true);
		}
		for (uint32_t j = 0; j < n->st[s].nr_send; j++) {
			len = n->st[s].nr_send == 1 ?
				      runs_len(r, st->nr_send_runs) :
				      r[j].len;
			if (len > INT_MAX)
				return -EOVERFLOW;
			if (!n->st[s].send_packed)
				addr = n->buf[st->send_buf] +
				       r[j].src * n->esize;
			if (MPI_Isend(addr, (int)len, n->elem, st->send_peer,
				      step_tag(st), n->comm, &n->st[s].send[j]))
				return -EPROTO;
		}
	}
	return 0;
}

/* Step @s's incoming data has arrived: reduce or copy it into place. */
static int net_complete(struct net *n, uint32_t s)
{
	const struct agile_coll_step *st = &n->plan->steps[s];
	const struct agile_coll_run *run = n->plan->runs + st->run;
	char *tmp = n->c->tmp + n->st[s].tmp_off * n->esize;
	size_t chunk = NET_REDUCE_CHUNK / n->esize;
	int err;

	n->st[s].done = true;
	while (n->first_undone < n->next_post && n->st[n->first_undone].done)
		n->first_undone++;
	err = mpi_reqs_wait(n->st[s].recv, n->st[s].nr_recv);
	if (err)
		return err;
	if (!has_local(n, st) && !n->st[s].staged)
		return 0;
	err = net_wait_readers(n, s);
	if (err)
		return err;
	if (st->action == AGILE_COLL_ACT_COPY && !has_local(n, st)) {
		net_pack(n, n->buf[st->dst_buf], run, st->nr_runs, true, tmp,
			 false);
		return 0;
	}
	for (uint32_t i = 0; i < st->nr_runs; i++) {
		size_t bytes = run[i].len * n->esize;
		char *dst = n->buf[st->dst_buf] + run[i].dst * n->esize;
		const char *peer =
			has_local(n, st) ?
				n->buf[st->src_buf] + run[i].src * n->esize :
				tmp;
		const char *left = n->buf[st->left_buf] + run[i].dst * n->esize;

		if (st->action == AGILE_COLL_ACT_COPY) {
			memmove(dst, peer, bytes);
			continue;
		}
		/* In chunks, letting the later steps' transfers move on. */
		for (size_t done = 0; done < run[i].len;) {
			size_t len = run[i].len - done, off = done * n->esize;

			if (len > chunk)
				len = chunk;
			coll_reduce(&n->rd, dst + off,
				    (st->peer_left ? peer : left) + off,
				    (st->peer_left ? left : peer) + off, len);
			done += len;
			err = net_progress(n, s);
			if (err)
				return err;
		}
		tmp += bytes;
	}
	return 0;
}

/*
 * Run this member's plan for @pa over @comm: @send, @work and @recv are
 * the plan's SEND, WORK and RECV buffers.
 */
static int net_run(struct coll_mpi *c, MPI_Comm comm,
		   const struct agile_coll_plan_params *pa, const void *send,
		   void *work, void *recv, enum agile_coll_type type,
		   enum agile_coll_op op)
{
	struct agile_coll_plan *plan = &c->plan;
	uint32_t window = c->opts.segments + 1;
	uint64_t tmp_count = 0, nr_reqs = 0;
	struct net n = {
		.c = c,
		.comm = comm,
		.plan = plan,
		.buf = { NULL, (char *)send, work, recv },
		.esize = agile_coll_type_size(type),
	};
	int err;

	err = coll_reducer_init(&n.rd, type, op, c->opts.user_fn,
				c->opts.user_arg, c->opts.user_commutative);
	if (!err)
		err = agile_coll_plan_build(plan, pa);
	if (err)
		return err;
	n.rd.bounce = c->bounce;
	n.st = calloc(plan->nr_steps + 1, sizeof(*n.st));
	if (!n.st)
		return -ENOMEM;
	for (uint32_t s = 0; s < plan->nr_steps; s++) {
		const struct agile_coll_step *st = &plan->steps[s];
		uint64_t len;

		if (has_recv(&n, st)) {
			len = runs_len(plan->runs + st->run, st->nr_runs);
			n.st[s].nr_recv = net_split(&n, len, st->nr_runs) ?
						  st->nr_runs :
						  1;
			if (st->action == AGILE_COLL_ACT_REDUCE ||
			    (st->nr_runs > 1 && n.st[s].nr_recv == 1)) {
				n.st[s].staged = true;
				n.st[s].tmp_off = tmp_count;
				tmp_count += len;
			}
		}
		if (has_send(st)) {
			len = runs_len(plan->runs + st->send_run,
				       st->nr_send_runs);
			n.st[s].nr_send = net_split(&n, len, st->nr_send_runs) ?
						  st->nr_send_runs :
						  1;
			if (st->nr_send_runs > 1 && n.st[s].nr_send == 1) {
				n.st[s].send_packed = true;
				n.st[s].send_off = tmp_count;
				tmp_count += len;
			}
		}
		nr_reqs += n.st[s].nr_recv + n.st[s].nr_send;
	}
	n.pool = malloc((nr_reqs + 1) * sizeof(*n.pool));
	n.reqs = malloc((nr_reqs + 1) * sizeof(*n.reqs));
	n.req_of = malloc((nr_reqs + 1) * sizeof(*n.req_of));
	n.idx = malloc((nr_reqs + 1) * sizeof(*n.idx));
	if (!n.pool || !n.reqs || !n.req_of || !n.idx) {
		err = -ENOMEM;
		goto out;
	}
	for (uint64_t i = 0; i < nr_reqs; i++)
		n.pool[i] = MPI_REQUEST_NULL;
	nr_reqs = 0;
	for (uint32_t s = 0; s < plan->nr_steps; s++) {
		n.st[s].recv = n.pool + nr_reqs;
		nr_reqs += n.st[s].nr_recv;
		n.st[s].send = n.pool + nr_reqs;
		nr_reqs += n.st[s].nr_send;
	}
	err = cache_grow(&c->tmp, &c->tmp_bytes, tmp_count * n.esize);
	if (err)
		goto out;
	if (MPI_Type_contiguous((int)n.esize, MPI_BYTE, &n.elem) ||
	    MPI_Type_commit(&n.elem)) {
		err = -EPROTO;
		goto out;
	}
	for (uint32_t s = 0; s < plan->nr_steps && !err; s++) {
		while (!err && n.next_post < plan->nr_steps &&
		       n.next_post <= s + window)
			err = net_post(&n, n.next_post++);
		if (!err && !n.st[s].done)
			err = net_complete(&n, s);
	}
	/* Every request ends, even after an error, before the buffers go. */
	for (uint32_t s = 0; s < n.next_post; s++) {
		mpi_reqs_wait(n.st[s].recv, n.st[s].nr_recv);
		if (mpi_reqs_wait(n.st[s].send, n.st[s].nr_send) && !err)
			err = -EPROTO;
	}
	MPI_Type_free(&n.elem);
out:
	free(n.st);
	free(n.pool);
	free(n.reqs);
	free(n.req_of);
	free(n.idx);
	return err;
}

static void plan_params(struct agile_coll_plan_params *pa,
			const struct coll_mpi *c, MPI_Comm comm,
			enum agile_coll_kind kind, size_t count, int root)
{
	int size, rank;

	MPI_Comm_size(comm, &size);
	MPI_Comm_rank(comm, &rank);
	*pa = (struct agile_coll_plan_params){
		.nr_members = (uint32_t)size,
		.rank = (uint32_t)rank,
		.kind = kind,
		.root = (uint32_t)root,
		.count = count,
		.segments = c->opts.segments,
		.interleaved = c->opts.interleaved,
	};
}

static int net_allreduce(struct coll_mpi *c, MPI_Comm comm, const void *send,
			 void *recv, size_t count, enum agile_coll_type type,
			 enum agile_coll_op op)
{
	struct agile_coll_plan_params pa;

	plan_params(&pa, c, comm, AGILE_COLL_KIND_ALLREDUCE, count, 0);
	return net_run(c, comm, &pa, send, recv, recv, type, op);
}

static int net_reduce(struct coll_mpi *c, MPI_Comm comm, const void *send,
		      void *recv, size_t count, enum agile_coll_type type,
		      enum agile_coll_op op, int root)
{
	struct agile_coll_plan_params pa;
	void *work = recv;
	int err;

	plan_params(&pa, c, comm, AGILE_COLL_KIND_REDUCE, count, root);
	if (pa.rank != (uint32_t)root) {
		err = cache_grow(&c->work, &c->work_bytes,
				 count * agile_coll_type_size(type));
		if (err)
			return err;
		work = c->work;
	}
	return net_run(c, comm, &pa, send, work, recv, type, op);
}

static int net_reduce_scatter(struct coll_mpi *c, MPI_Comm comm,
			      const void *send, void *recv, size_t recv_count,
			      enum agile_coll_type type, enum agile_coll_op op)
{
	struct agile_coll_plan_params pa;
	int err;

	plan_params(&pa, c, comm, AGILE_COLL_KIND_REDUCE_SCATTER, recv_count,
		    0);
	err = cache_grow(&c->work, &c->work_bytes,
			 recv_count * pa.nr_members *
				 agile_coll_type_size(type));
	if (err)
		return err;
	return net_run(c, comm, &pa, send, c->work, recv, type, op);
}

static int net_allgather(struct coll_mpi *c, MPI_Comm comm, const void *send,
			 void *recv, size_t count, enum agile_coll_type type)
{
	struct agile_coll_plan_params pa;

	plan_params(&pa, c, comm, AGILE_COLL_KIND_ALLGATHER, count, 0);
	return net_run(c, comm, &pa, send, recv, recv, type, AGILE_COLL_SUM);
}

/* ---- the hierarchy ---- */

/*
 * Is the hierarchical path right for @op?  It needs nodes of one size
 * (each member's block then has one counterpart on every node), and it
 * reduces a node's members first, in their node rank order: only for an op
 * that commutes.
 */
static bool hierarchical(const struct coll_mpi *c, enum agile_coll_op op)
{
	return c->info.hierarchical && op_commutes(c, op);
}

/* One node only: the process scope does it all (if the op commutes). */
static bool node_only(const struct coll_mpi *c, enum agile_coll_op op)
{
	return c->info.nr_nodes == 1 && c->local && op_commutes(c, op);
}

static int any_error(struct coll_mpi *c, int err)
{
	return mpi_any_error(c->comm, err);
}

/*
 * Elements of @esize bytes in one piece of the hierarchical paths: as many
 * as max_bytes holds, in whole multiples of @multiple, but at least
 * @multiple (a max_bytes below that would make the piece empty and the
 * loop never end).
 */
static size_t piece_elems(const struct coll_mpi *c, size_t esize,
			  size_t multiple)
{
	size_t n = c->max_bytes / esize / multiple * multiple;

	return n ? n : multiple;
}

/*
 * Allreduce, node -> network -> node, in pieces the node's exchange
 * buffers take: node reduce-scatter of the piece (each member's block
 * into c->block), network allreduce of the block among the members with
 * the same node rank, node allgather of the blocks into @recv.  The last
 * count % node_size elements take the network path directly.
 */
static int hier_allreduce(struct coll_mpi *c, const void *send, void *recv,
			  size_t count, enum agile_coll_type type,
			  enum agile_coll_op op)
{
	size_t esize = agile_coll_type_size(type),
	       p = (size_t)c->info.node_size;
	size_t body = count / p * p, done = 0;
	size_t piece_max = piece_elems(c, esize, p);
	int err = 0;

	while (done < body && !err) {
		size_t piece = body - done < piece_max ? body - done :
							 piece_max;
		size_t q = piece / p;

		err = cache_grow(&c->block, &c->block_bytes, q * esize);
		if (!err)
			err = agile_coll_reduce_scatter(
				c->local, (const char *)send + done * esize,
				c->block, q, type, op);
		if (!err && c->info.nr_nodes > 1)
			err = net_allreduce(c, c->cross_comm, c->block,
					    c->block, q, type, op);
		if (!err)
			err = agile_coll_allgather(c->local, c->block,
						   (char *)recv + done * esize,
						   q, type);
		done += piece;
	}
	if (!err && count > body)
		err = net_allreduce(c, c->comm,
				    (const char *)send + body * esize,
				    (char *)recv + body * esize, count - body,
				    type, op);
	return err;
}

/*
 * Reduce: node reduce to the member with the root's node rank, then a
 * network reduce among those members to the root, in pieces.
 */
static int hier_reduce(struct coll_mpi *c, const void *send, void *recv,
		       size_t count, enum agile_coll_type type,
		       enum agile_coll_op op, int root)
{
	size_t esize = agile_coll_type_size(type), done = 0;
	size_t piece_max = piece_elems(c, esize, 1);
	int node_root = c->local_of[root], err = 0;
	bool carrier = c->local_rank == node_root;

	while (done < count && !err) {
		size_t piece = count - done < piece_max ? count - done :
							  piece_max;
		char *dst = NULL;

		if (c->rank == root) {
			dst = (char *)recv + done * esize;
		} else if (carrier) {
			err = cache_grow(&c->block, &c->block_bytes,
					 piece * esize);
			dst = c->block;
		}
		if (!err)
			err = agile_coll_reduce(
				c->local, (const char *)send + done * esize,
				dst, piece, type, op, (uint32_t)node_root);
		/* The root's node is its rank in cross_comm (node order). */
		if (!err && carrier && c->info.nr_nodes > 1)
			err = net_reduce(c, c->cross_comm, dst, dst, piece,
					 type, op, c->node_of[root]);
		done += piece;
	}
	return err;
}

/*
 * One node: the process scope's allreduce (@root < 0) or reduce; a vector
 * over max_bytes goes in pieces there (node.c, in_pieces).
 */
static int node_collective(struct coll_mpi *c, const void *send, void *recv,
			   size_t count, enum agile_coll_type type,
			   enum agile_coll_op op, int root)
{
	if (root < 0)
		return agile_coll_allreduce(c->local, send, recv, count, type,
					    op);
	return agile_coll_reduce(c->local, send, recv, count, type, op,
				 (uint32_t)c->local_of[root]);
}

/* ---- the operations agile/coll.h dispatches to ---- */

static struct coll_mpi *to_mpi(struct agile_coll *coll)
{
	return (struct coll_mpi *)coll;
}

static int mpi_allreduce(struct agile_coll *coll, const void *send, void *recv,
			 size_t count, enum agile_coll_type type,
			 enum agile_coll_op op)
{
	struct coll_mpi *c = to_mpi(coll);

	if (node_only(c, op))
		return node_collective(c, send, recv, count, type, op, -1);
	if (hierarchical(c, op))
		return hier_allreduce(c, send, recv, count, type, op);
	return net_allreduce(c, c->comm, send, recv, count, type, op);
}

static int mpi_reduce(struct agile_coll *coll, const void *send, void *recv,
		      size_t count, enum agile_coll_type type,
		      enum agile_coll_op op, uint32_t root)
{
	struct coll_mpi *c = to_mpi(coll);

	if (node_only(c, op))
		return node_collective(c, send, recv, count, type, op,
				       (int)root);
	if (hierarchical(c, op))
		return hier_reduce(c, send, recv, count, type, op, (int)root);
	return net_reduce(c, c->comm, send, recv, count, type, op, (int)root);
}

static int mpi_reduce_scatter(struct agile_coll *coll, const void *send,
			      void *recv, size_t recv_count,
			      enum agile_coll_type type, enum agile_coll_op op)
{
	struct coll_mpi *c = to_mpi(coll);

	return net_reduce_scatter(c, c->comm, send, recv, recv_count, type, op);
}

static int mpi_allgather(struct agile_coll *coll, const void *send, void *recv,
			 size_t count, enum agile_coll_type type)
{
	struct coll_mpi *c = to_mpi(coll);

	return net_allgather(c, c->comm, send, recv, count, type);
}

static int mpi_barrier(struct agile_coll *coll)
{
	return MPI_Barrier(to_mpi(coll)->comm) ? -EPROTO : 0;
}

static void mpi_free(struct coll_mpi *c)
{
	if (c->local)
		agile_coll_destroy(c->local);
	if (c->cross_comm != MPI_COMM_NULL)
		MPI_Comm_free(&c->cross_comm);
	if (c->node_comm != MPI_COMM_NULL)
		MPI_Comm_free(&c->node_comm);
	if (c->comm != MPI_COMM_NULL)
		MPI_Comm_free(&c->comm);
	agile_coll_plan_release(&c->plan);
	free(c->local_of);
	free(c->node_of);
	free(c->tmp);
	free(c->work);
	free(c->block);
	free(c->bounce);
	free(c);
}

/* As the process scope's: a barrier first; freed even if it fails. */
static int mpi_destroy(struct agile_coll *coll)
{
	struct coll_mpi *c = to_mpi(coll);
	int err = MPI_Barrier(c->comm) ? -EPROTO : 0;

	if (c->local) {
		int local_err = agile_coll_destroy(c->local);

		err = err ? err : local_err;
		c->local = NULL;
	}
	mpi_free(c);
	return err;
}

static agile_coll_user_fn mpi_user_fn(const struct agile_coll *coll)
{
	return ((const struct coll_mpi *)coll)->opts.user_fn;
}

/* No alloc/free: the network path has no buffers peers read directly. */
/* The node collective's sticky error (a dead node peer's -EPIPE, ...). */
static int mpi_error(const struct agile_coll *coll)
{
	const struct agile_coll *local = ((const struct coll_mpi *)coll)->local;

	return local && local->ops->error ? local->ops->error(local) : 0;
}

static const struct coll_ops mpi_ops = {
	.allreduce = mpi_allreduce,
	.reduce = mpi_reduce,
	.reduce_scatter = mpi_reduce_scatter,
	.allgather = mpi_allgather,
	.barrier = mpi_barrier,
	.destroy = mpi_destroy,
	.user_fn = mpi_user_fn,
	.error = mpi_error,
};

/* ---- set-up ---- */

/* Split @c->comm into nodes (transport/mpi.h). */
static int split_nodes(struct coll_mpi *c)
{
	struct mpi_nodes nodes;
	int err = mpi_split_nodes(c->comm, c->rank, c->size, &nodes);

	c->node_comm = nodes.node_comm;
	c->node_of = nodes.node_of;
	if (err)
		return err;
	c->info.node_rank = nodes.node_rank;
	c->info.node_size = nodes.node_size;
	c->info.nr_nodes = nodes.nr_nodes;
	c->info.node = nodes.node;
	return 0;
}

/*
 * The node's process-scope communicator: a key from the node's first
 * member; ranked by node rank (the opts' order), not by who joins first,
 * so that a float reduction sums in the same order in every run.
 */
static int join_node(struct coll_mpi *c)
{
	struct agile_coll_opts lopts = c->opts;
	uint64_t key = 0;
	int err = 0;

	if (c->info.node_size == 1)
		return 0;
	if (c->info.node_rank == 0) {
		while (!key)
			if (getrandom(&key, sizeof(key), 0) != sizeof(key))
				key = (uint64_t)getpid() << 32 ^
				      (uint64_t)time(NULL) ^ (uint64_t)c->rank;
	}
	if (MPI_Bcast(&key, 1, MPI_UINT64_T, 0, c->node_comm))
		return -EPROTO;
	lopts.order = (uint32_t)c->info.node_rank;
	err = agile_coll_procs_join(key, (uint32_t)c->info.node_size, &lopts,
				    MPI_JOIN_TIMEOUT_NS, &c->local);
	if (!err)
		c->local_rank = agile_coll_rank(c->local);
	return err;
}

/*
 * Every member must run the same schedule: segments, layout, max_bytes
 * and the user op's commutativity, compared across @c->comm (collective).
 * 0, -EINVAL where any member's differ, -EPROTO when MPI fails.
 */
static int same_schedule(struct coll_mpi *c)
{
	const int64_t v[] = { c->opts.segments, c->opts.interleaved,
			      (int64_t)c->max_bytes, c->opts.user_commutative };

	return mpi_all_equal(c->comm, v, sizeof(v) / sizeof(v[0]));
}

static int check_opts(const struct agile_coll_opts *o)
{
	if (o->segments < 1 || o->segments > AGILE_COLL_SEGMENTS_MAX ||
	    o->interleaved > 1)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(o->reserved) / sizeof(o->reserved[0]);
	     i++)
		if (o->reserved[i])
			return -EINVAL;
	return 0;
}

int agile_coll_mpi_create(MPI_Comm comm, const struct agile_coll_opts *opts,
			  struct agile_coll **out)
{
	struct coll_mpi *c;
	int sizes[2], err, flag = 0;

	if (!out || comm == MPI_COMM_NULL)
		return -EINVAL;
	if (MPI_Initialized(&flag) || !flag)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->comm = c->node_comm = c->cross_comm = MPI_COMM_NULL;
	if (opts)
		c->opts = *opts;
	else
		agile_coll_opts_init(&c->opts);
	c->max_bytes = c->opts.max_bytes ? c->opts.max_bytes : 64ULL << 20;
	err = check_opts(&c->opts);
	if (err) {
		free(c);
		return err;
	}
	if (MPI_Comm_dup(comm, &c->comm)) {
		free(c);
		return -EINVAL;
	}
	MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
	MPI_Comm_rank(c->comm, &c->rank);
	MPI_Comm_size(c->comm, &c->size);
	err = c->size > AGILE_COLL_PLAN_MAX_MEMBERS ? -EINVAL : 0;
	if (!err)
		err = same_schedule(c);
	if (!err)
		err = split_nodes(c);
	err = any_error(c, err);
	if (!err)
		err = any_error(c, join_node(c));
	if (err)
		goto fail;

	/* Hierarchical: several nodes, all of one size above one. */
	sizes[0] = -c->info.node_size;
	sizes[1] = c->info.node_size;
	if (MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MAX, c->comm)) {
		err = -EPROTO;
		goto fail;
	}
	c->info.hierarchical = c->info.nr_nodes > 1 && -sizes[0] == sizes[1] &&
			       sizes[1] > 1;
	c->local_of = malloc((size_t)c->size * sizeof(*c->local_of));
	c->bounce = malloc(COLL_BOUNCE_BYTES);
	if (!c->local_of || !c->bounce)
		err = -ENOMEM;
	else if (MPI_Allgather(&c->local_rank, 1, MPI_INT, c->local_of, 1,
			       MPI_INT, c->comm) ||
		 MPI_Comm_split(c->comm, c->local_rank, c->info.node,
				&c->cross_comm))
		err = -EPROTO;
	if (!err)
		MPI_Comm_set_errhandler(c->cross_comm, MPI_ERRORS_RETURN);
	err = any_error(c, err);
	if (err)
		goto fail;
	coll_init_base(&c->base, &mpi_ops, c->rank, c->size);
	*out = &c->base;
	return 0;
fail:
	mpi_free(c);
	return err;
}

uint64_t coll_mpi_overlapped(const struct agile_coll *coll)
{
	return coll_is(coll, &mpi_ops) ?
		       ((const struct coll_mpi *)coll)->overlapped :
		       0;
}

int agile_coll_mpi_info(const struct agile_coll *coll,
			struct agile_coll_mpi_info *info)
{
	if (!coll || !info || !coll_is(coll, &mpi_ops))
		return -EINVAL;
	*info = ((const struct coll_mpi *)coll)->info;
	return 0;
}
