// SPDX-License-Identifier: MIT
/*
 * node.c - the collectives of both shared-memory scopes (threads,
 * processes): copying a private send buffer in, running a call in pieces,
 * and the heap agile_coll_alloc hands out of a member's segment
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll/shm.h"
#include "sys.h"

/* piece_limit: cache-sized pieces of an allreduce or reduce */
#define COLL_PIECE_PER_MEMBER (256U << 10)
#define COLL_PIECE_MIN (1U << 20)
#define ALLOC_ALIGN 64

/* ---- the collectives of both shared-memory scopes ---- */

/* Threads: a WORK of @bytes that is not the caller's. */
static void *scratch(struct coll_shm *c, size_t bytes)
{
	if (bytes > c->scratch_bytes) {
		size_t size = (bytes + ALLOC_ALIGN - 1) &
			      ~(size_t)(ALLOC_ALIGN - 1);
		void *p = aligned_alloc(ALLOC_ALIGN, size);

		if (!p)
			return NULL;
		free(c->scratch);
		c->scratch = p;
		c->scratch_bytes = size;
	}
	return c->scratch;
}

/* Processes: is [@p, @p + @bytes) in this member's segment? */
static bool in_my_segment(const struct coll_shm *c, const void *p, size_t bytes)
{
	const char *seg = c->seg[c->base.rank];

	return (const char *)p >= seg && bytes <= c->seg_bytes &&
	       (size_t)((const char *)p - seg) <= c->seg_bytes - bytes;
}

/* Elements of the whole vector of a collective. */
static size_t total_count(const struct coll_shm *c, uint32_t kind, size_t count)
{
	if (kind == AGILE_COLL_KIND_REDUCE_SCATTER ||
	    kind == AGILE_COLL_KIND_ALLGATHER)
		return count * (size_t)c->base.size; /* checked by the caller */
	return count;
}

/*
 * Processes: copy into the exchange area, at the same offsets, the parts
 * of @send that peers read (the plan's outgoing SEND runs: the half sent
 * in halving round 0, an extra's whole vector); the member reads the rest
 * from @send itself.  No peer reads the area before value 1.
 */
static void copy_in(const struct coll_shm *c, const void *send, char *area,
		    size_t es)
{
	const struct agile_coll_plan *plan = &c->plan;

	for (uint32_t k = 0; k < plan->nr_steps; k++) {
		const struct agile_coll_step *s = &plan->steps[k];

		if (s->send_buf != AGILE_COLL_BUF_SEND || s->send_peer < 0)
			continue;
		for (uint32_t i = 0; i < s->nr_send_runs; i++) {
			const struct agile_coll_run *r =
				&plan->runs[s->send_run + i];

			memcpy(area + r->src * es,
			       (const char *)send + r->src * es, r->len * es);
		}
	}
}

static int shm_collective(struct coll_shm *c, const struct coll_desc *desc,
			  uint32_t kind, const void *send, void *recv,
			  size_t count, enum agile_coll_type type,
			  enum agile_coll_op op, uint32_t root);

/*
 * Processes: a collective larger than @limit bytes, as one collective per
 * piece, cut alike by every member (@limit depends on the member count
 * and max_bytes only, and max_bytes is the same for all: map_peers).
 * Allreduce and reduce are element-wise: piece j of the
 * vector is a collective of its own (recv may be NULL: a reduce's
 * non-root).  Allgather and reduce_scatter have a block per member:
 * piece j is elements [at, at + n) of every block, gathered from / spread
 * into the blocks through @c->pieces, max_bytes long (allocated at join).
 * Every piece publishes the whole call's @desc.
 */
static int in_pieces(struct coll_shm *c, const struct coll_desc *desc,
		     size_t limit, uint32_t kind, const void *send, void *recv,
		     size_t count, enum agile_coll_type type,
		     enum agile_coll_op op, uint32_t root)
{
	size_t es = agile_coll_type_size(type), nr = (size_t)c->base.size;
	bool blocks = kind == AGILE_COLL_KIND_ALLGATHER ||
		      kind == AGILE_COLL_KIND_REDUCE_SCATTER;
	size_t piece = limit / es / (blocks ? nr : 1);
	const char *in = send;
	char *out = recv, *tmp = c->pieces;

	for (size_t at = 0; at < count; at += piece) {
		size_t n = count - at < piece ? count - at : piece;
		int err;

		if (!blocks) {
			err = shm_collective(c, desc, kind, in + at * es,
					     out ? out + at * es : NULL, n,
					     type, op, root);
		} else if (kind == AGILE_COLL_KIND_ALLGATHER) {
			err = shm_collective(c, desc, kind, in + at * es, tmp,
					     n, type, op, root);
			for (size_t r = 0; !err && r < nr; r++)
				memcpy(out + (r * count + at) * es,
				       tmp + r * n * es, n * es);
		} else {
			for (size_t r = 0; r < nr; r++)
				memcpy(tmp + r * n * es,
				       in + (r * count + at) * es, n * es);
			err = shm_collective(c, desc, kind, tmp, out + at * es,
					     n, type, op, root);
		}
		if (err)
			return err;
	}
	return 0;
}

/*
 * Processes: the most bytes one collective moves at once.  The exchange
 * area bounds every kind; allreduce and reduce, element-wise, also go in
 * cache-sized pieces (a quarter MiB per member, at least 1 MiB): a piece's
 * reduced blocks are still in the caches when the members gather them,
 * and a copied-in send buffer is read there too.  On the 2-core
 * development VM, 2 processes, 1 MiB pieces against none, interleaved
 * runs: agile_coll_alloc buffers 4 MiB 0.19-0.31 -> 0.10-0.19 ms, 16 MiB
 * 1.4-2.2 -> 1.1-1.7 ms, 64 MiB 4.2-9.9 -> 6.7-8.0 ms; private buffers
 * 64 MiB 13.4-16.9 -> 7.6-9.4 ms.
 */
static size_t piece_limit(const struct coll_shm *c, uint32_t kind)
{
	size_t cache = (size_t)c->base.size * COLL_PIECE_PER_MEMBER;

	if (kind != AGILE_COLL_KIND_ALLREDUCE && kind != AGILE_COLL_KIND_REDUCE)
		return c->xchg_bytes;
	if (cache < COLL_PIECE_MIN)
		cache = COLL_PIECE_MIN;
	return cache < c->xchg_bytes ? cache : c->xchg_bytes;
}

/*
 * One collective (or one piece of one: @desc is the whole call's).  It
 * has started: every error from here on ends it for all the members
 * (coll_shm_abort, coll_shm_run), so that none goes on alone; what could
 * fail on one member only (the bounce and pieces buffers) is allocated at
 * join, but for the threads' scratch.
 */
static int shm_collective(struct coll_shm *c, const struct coll_desc *desc,
			  uint32_t kind, const void *send, void *recv,
			  size_t count, enum agile_coll_type type,
			  enum agile_coll_op op, uint32_t root)
{
	bool procs = c->scope == COLL_SCOPE_PROCS;
	struct agile_coll_plan_params pa = {
		.nr_members = (uint32_t)c->base.size,
		.rank = (uint32_t)c->base.rank,
		.kind = kind,
		.root = root,
		.count = count,
		.segments = c->opts.segments,
		.interleaved = c->opts.interleaved,
		/* processes: straight into a private recv, one pass */
		.flat_gather = procs,
	};
	bool active = agile_coll_plan_newrank(pa.nr_members, pa.rank) >= 0;
	bool result_in_work =
		active && (kind == AGILE_COLL_KIND_ALLREDUCE ||
			   kind == AGILE_COLL_KIND_ALLGATHER ||
			   (kind == AGILE_COLL_KIND_REDUCE && root == pa.rank));
	struct coll_reducer rd = { 0 };
	size_t es = agile_coll_type_size(type);
	size_t total = total_count(c, kind, count), bytes = total * es;
	size_t send_bytes = kind == AGILE_COLL_KIND_ALLGATHER ? count * es :
								bytes;
	size_t limit = procs ? piece_limit(c, kind) : SIZE_MAX;
	const void *shared = send;
	char *xchg;
	void *work = NULL;
	int err;

	err = agile__coll_reducer_init(
		&rd, type,
		kind == AGILE_COLL_KIND_ALLGATHER ? AGILE_COLL_SUM : op,
		c->opts.user_fn, c->opts.user_arg, c->opts.user_commutative);
	if (!err && op == AGILE_COLL_USER && !rd.commutative && !c->bounce)
		err = -ENOMEM; /* not set up at join: cannot happen */
	if (err)
		return coll_shm_abort(c, err);
	rd.bounce = c->bounce;
	if (procs && bytes > limit)
		return in_pieces(c, desc, limit, kind, send, recv, count, type,
				 op, root);
	err = coll_shm_plan(c, &pa);
	if (err)
		return coll_shm_abort(c, err);

	if (!procs) {
		if (result_in_work)
			work = recv;
		else if (active)
			work = scratch(c, bytes);
		if (active && !work)
			return coll_shm_abort(c, -ENOMEM);
		return coll_shm_run(c, desc, send, send, work, recv, &rd,
				    false);
	}

	xchg = c->seg[c->base.rank];
	if (active)
		work = result_in_work && in_my_segment(c, recv, bytes) ? recv :
									 xchg;
	if (!in_my_segment(c, send, send_bytes)) {
		copy_in(c, send, xchg, es);
		shared = xchg;
	}
	err = coll_shm_run(c, desc, send, shared, work, recv, &rd,
			   recv && work != recv &&
				   total_count(c, kind, desc->count) * es >=
					   c->stream_from);
	/* allgather collects in WORK; allreduce and reduce straight in recv */
	if (!err && kind == AGILE_COLL_KIND_ALLGATHER && work && work != recv)
		memcpy(recv, work, bytes);
	return err;
}

/*
 * Processes: an allreduce by CMA (cma.c), where every member has agreed at
 * join that it may, from cma_from bytes up: the same decision on every
 * member, as the count (the descriptor) is the same.
 */
static int cma_allreduce(struct coll_shm *c, const struct coll_desc *desc,
			 const void *send, void *recv, size_t count,
			 enum agile_coll_type type, enum agile_coll_op op)
{
	struct coll_reducer rd = { 0 };
	int err = agile__coll_reducer_init(&rd, type, op, c->opts.user_fn,
					   c->opts.user_arg,
					   c->opts.user_commutative);

	if (!err && op == AGILE_COLL_USER && !rd.commutative && !c->bounce)
		err = -ENOMEM; /* not set up at join: cannot happen */
	if (err)
		return coll_shm_abort(c, err);
	rd.bounce = c->bounce;
	return coll_cma_allreduce(c, desc, send, recv, count, &rd);
}

int coll_node_allreduce(struct agile_coll *coll, const void *send, void *recv,
			size_t count, enum agile_coll_type type,
			enum agile_coll_op op)
{
	struct coll_shm *c = to_shm(coll);
	struct coll_desc d =
		coll_desc_of(AGILE_COLL_KIND_ALLREDUCE, count, type, op, 0);

	if (coll_cma_wanted(c, count * agile_coll_type_size(type)))
		return cma_allreduce(c, &d, send, recv, count, type, op);
	return shm_collective(c, &d, AGILE_COLL_KIND_ALLREDUCE, send, recv,
			      count, type, op, 0);
}

int coll_node_reduce(struct agile_coll *coll, const void *send, void *recv,
		     size_t count, enum agile_coll_type type,
		     enum agile_coll_op op, uint32_t root)
{
	struct coll_desc d =
		coll_desc_of(AGILE_COLL_KIND_REDUCE, count, type, op, root);

	return shm_collective(to_shm(coll), &d, AGILE_COLL_KIND_REDUCE, send,
			      recv, count, type, op, root);
}

int coll_node_reduce_scatter(struct agile_coll *coll, const void *send,
			     void *recv, size_t recv_count,
			     enum agile_coll_type type, enum agile_coll_op op)
{
	struct coll_desc d = coll_desc_of(AGILE_COLL_KIND_REDUCE_SCATTER,
					  recv_count, type, op, 0);

	return shm_collective(to_shm(coll), &d, AGILE_COLL_KIND_REDUCE_SCATTER,
			      send, recv, recv_count, type, op, 0);
}

int coll_node_allgather(struct agile_coll *coll, const void *send, void *recv,
			size_t count, enum agile_coll_type type)
{
	struct coll_desc d = coll_desc_of(AGILE_COLL_KIND_ALLGATHER, count,
					  type, AGILE_COLL_SUM, 0);

	return shm_collective(to_shm(coll), &d, AGILE_COLL_KIND_ALLGATHER, send,
			      recv, count, type, AGILE_COLL_SUM, 0);
}

int coll_node_barrier(struct agile_coll *coll)
{
	return coll_shm_barrier(to_shm(coll));
}

agile_coll_user_fn coll_node_user_fn(const struct agile_coll *coll)
{
	return ((const struct coll_shm *)coll)->opts.user_fn;
}

int coll_node_error(const struct agile_coll *coll)
{
	return ((const struct coll_shm *)coll)->broken;
}

/* ---- the heap of agile_coll_alloc, in the member's segment ---- */

void *coll_heap_alloc(struct agile_coll *coll, size_t bytes)
{
	struct coll_shm *c = to_shm(coll);
	size_t need = (bytes + ALLOC_ALIGN - 1) & ~(size_t)(ALLOC_ALIGN - 1);

	if (!bytes || need < bytes)
		return NULL;
	for (uint32_t i = 0; i < c->nr_heap; i++) {
		struct coll_heap_block *b = &c->heap[i];

		if (b->used || b->bytes < need)
			continue;
		if (b->bytes > need) {
			/* split: the rest stays free, right after */
			if (c->nr_heap == c->cap_heap) {
				uint32_t cap = c->cap_heap * 2;
				void *h = realloc(c->heap,
						  cap * sizeof(*c->heap));

				if (!h)
					return NULL;
				c->heap = h;
				c->cap_heap = cap;
				b = &c->heap[i];
			}
			memmove(b + 2, b + 1,
				(c->nr_heap - i - 1) * sizeof(*b));
			b[1] = (struct coll_heap_block){ b->off + need,
							 b->bytes - need,
							 false };
			b->bytes = need;
			c->nr_heap++;
		}
		b->used = true;
		return c->seg[coll->rank] + b->off;
	}
	return NULL;
}

bool coll_heap_free(struct agile_coll *coll, void *ptr)
{
	struct coll_shm *c = to_shm(coll);
	char *seg = c->seg[coll->rank];
	size_t off;

	if ((char *)ptr < seg + c->xchg_bytes ||
	    (char *)ptr >= seg + c->seg_bytes)
		return false;
	off = (size_t)((char *)ptr - seg);
	for (uint32_t i = 0; i < c->nr_heap; i++) {
		struct coll_heap_block *b = &c->heap[i];

		if (b->off != off || !b->used)
			continue;
		b->used = false;
		/* merge with the free neighbours */
		if (i + 1 < c->nr_heap && !b[1].used) {
			b->bytes += b[1].bytes;
			memmove(b + 1, b + 2,
				(c->nr_heap - i - 2) * sizeof(*b));
			c->nr_heap--;
		}
		if (i > 0 && !b[-1].used) {
			b[-1].bytes += b->bytes;
			memmove(b, b + 1, (c->nr_heap - i - 1) * sizeof(*b));
			c->nr_heap--;
		}
		return true;
	}
	return true; /* in the heap but not a block: ignore it */
}
