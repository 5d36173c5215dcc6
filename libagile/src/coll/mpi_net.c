// SPDX-License-Identifier: MIT
/*
 * mpi_net.c - coll's machines scope over the network: a member's plan
 * (plan.h) executed with MPI point-to-point; see mpi.c for the design.
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

#include "coll/mpi_impl.h"
#include "coll/ops.h"
#include "transport/mpi.h"

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
			agile__coll_reduce(&n->rd, dst + off,
					   (st->peer_left ? peer : left) + off,
					   (st->peer_left ? left : peer) + off,
					   len);
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

	err = agile__coll_reducer_init(&n.rd, type, op, c->opts.user_fn,
				       c->opts.user_arg,
				       c->opts.user_commutative);
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
	err = coll_mpi_cache_grow(&c->tmp, &c->tmp_bytes, tmp_count * n.esize);
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

int coll_net_allreduce(struct coll_mpi *c, MPI_Comm comm, const void *send,
		       void *recv, size_t count, enum agile_coll_type type,
		       enum agile_coll_op op)
{
	struct agile_coll_plan_params pa;

	plan_params(&pa, c, comm, AGILE_COLL_KIND_ALLREDUCE, count, 0);
	return net_run(c, comm, &pa, send, recv, recv, type, op);
}

int coll_net_reduce(struct coll_mpi *c, MPI_Comm comm, const void *send,
		    void *recv, size_t count, enum agile_coll_type type,
		    enum agile_coll_op op, int root)
{
	struct agile_coll_plan_params pa;
	void *work = recv;
	int err;

	plan_params(&pa, c, comm, AGILE_COLL_KIND_REDUCE, count, root);
	if (pa.rank != (uint32_t)root) {
		err = coll_mpi_cache_grow(&c->work, &c->work_bytes,
					  count * agile_coll_type_size(type));
		if (err)
			return err;
		work = c->work;
	}
	return net_run(c, comm, &pa, send, work, recv, type, op);
}

int coll_net_reduce_scatter(struct coll_mpi *c, MPI_Comm comm, const void *send,
			    void *recv, size_t recv_count,
			    enum agile_coll_type type, enum agile_coll_op op)
{
	struct agile_coll_plan_params pa;
	int err;

	plan_params(&pa, c, comm, AGILE_COLL_KIND_REDUCE_SCATTER, recv_count,
		    0);
	err = coll_mpi_cache_grow(&c->work, &c->work_bytes,
				  recv_count * pa.nr_members *
					  agile_coll_type_size(type));
	if (err)
		return err;
	return net_run(c, comm, &pa, send, c->work, recv, type, op);
}

int coll_net_allgather(struct coll_mpi *c, MPI_Comm comm, const void *send,
		       void *recv, size_t count, enum agile_coll_type type)
{
	struct agile_coll_plan_params pa;

	plan_params(&pa, c, comm, AGILE_COLL_KIND_ALLGATHER, count, 0);
	return net_run(c, comm, &pa, send, recv, recv, type, AGILE_COLL_SUM);
}
