// SPDX-License-Identifier: MIT
/*
 * coll.c - collective reduce (SPEC §3, layer 6; agile/coll.h): the public
 * calls, their argument checks, and the two shared-memory scopes' set-up
 * and buffers.  The schedule is coll_plan.c's, the transport
 * coll_shm.c's, the kernels coll_ops.c's; the machines scope is
 * libagile-mpi's (coll_mpi.c), reached through the same calls.
 *
 * Threads scope (agile_coll_threads_create): one dev context of 2 x N
 * slots (two banks of sequence words, coll_shm.c); each member's SEND is
 * the caller's send buffer and its WORK the caller's recv where it holds
 * the whole vector (allreduce, allgather, the reduce root), else a
 * scratch buffer the member keeps.  Peers read those buffers directly.
 *
 * Processes scope (agile_coll_procs_join): a dev group of the same shape,
 * and per member one segment: max_bytes of EXCHANGE area, then
 * 2 x max_bytes of HEAP for agile_coll_alloc.  Each member creates its
 * own, puts its id and size in the user words of its doorbell line (and
 * its affinity mask in its exchange area) and publishes 1; once every
 * member has (the rendezvous), each maps the others' and counts the CPUs
 * of all the masks (AGILE_COLL_SPIN_AUTO), then publishes 2 and waits for
 * all again.  In a collective, WORK is the caller's recv when it lies in
 * the segment, else the exchange area; a send buffer outside the segment
 * is read by its owner where it is, and only what peers read of it (the
 * plan's outgoing SEND runs: half the vector in halving round 0, a folded
 * member's whole vector) is copied into the exchange area.  The plans use
 * flat_gather: every member takes each block of the result straight from
 * its holder into its recv, so nothing is copied out afterwards (but for
 * allgather, which collects in WORK).  Buffers from agile_coll_alloc save
 * the copy in.
 *
 * Limits (documented in agile/coll.h): at most AGILE_COLL_MAX_MEMBERS
 * threads, AGILE_GROUP_MAX_MEMBERS processes; a process-scope collective
 * of more than max_bytes (allgather and reduce_scatter: the whole N x
 * count vector) runs in pieces of max_bytes (in_pieces); a count whose
 * bytes overflow a size_t is -EOVERFLOW.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll_shm.h"
#include "sys.h"

#define MAX_BYTES_DEFAULT (64ULL << 20)
/* piece_limit: cache-sized pieces of an allreduce or reduce */
#define COLL_PIECE_PER_MEMBER (256U << 10)
#define COLL_PIECE_MIN (1U << 20)
#define ALLOC_ALIGN 64

/**
 * struct agile_coll_team - the threads scope's shared state
 * @dev:     the doorbells of all members (2 x @nr_members slots)
 * @addrs:   each member's SEND and WORK for the running collective
 * @members: the members' handles
 */
struct agile_coll_team {
	struct agile_dev *dev;
	uint32_t nr_members;
	struct coll_shm_addrs *addrs;
	struct coll_shm *members;
};

/* ---- options ---- */

int agile_coll_opts_init(struct agile_coll_opts *opts)
{
	if (!opts)
		return -EINVAL;
	memset(opts, 0, sizeof(*opts));
	opts->segments = AGILE_COLL_SEGMENTS_DEFAULT;
	opts->backend = AGILE_BACKEND_AUTO;
	opts->mode = 0600;
	opts->spin_ns = AGILE_COLL_SPIN_AUTO;
	opts->max_bytes = MAX_BYTES_DEFAULT;
	return 0;
}

uint64_t coll_spin_ns(uint64_t requested, uint32_t nr_members, long nr_cpus,
		      uint64_t *yield_ns)
{
	const char *env = getenv("AGILE_SPIN_NS");
	struct agile_dev_opts dev;

	*yield_ns = 0;
	if (requested != AGILE_COLL_SPIN_AUTO)
		return requested;
	if ((!env || !*env) && nr_cpus > 0 && nr_members > (uint64_t)nr_cpus) {
		*yield_ns = COLL_YIELD_NS;
		return 0;
	}
	agile_dev_opts_init(&dev); /* $AGILE_SPIN_NS or the default */
	return dev.spin_ns;
}

/* The CPUs this process's threads may run on; 0: unknown. */
static long affinity_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	return CPU_COUNT(&set);
}

static int check_opts(const struct agile_coll_opts *o)
{
	for (size_t i = 0; i < sizeof(o->reserved) / sizeof(o->reserved[0]);
	     i++)
		if (o->reserved[i])
			return -EINVAL;
	if (!o->segments || o->segments > AGILE_COLL_SEGMENTS_MAX ||
	    o->interleaved > 1 || o->backend > AGILE_BACKEND_USER ||
	    (o->mode & ~(uint32_t)AGILE_GROUP_MODE_MASK) ||
	    o->user_commutative > 1)
		return -EINVAL;
	return 0;
}

static int take_opts(const struct agile_coll_opts *opts,
		     struct agile_coll_opts *out)
{
	if (opts)
		*out = *opts;
	else
		agile_coll_opts_init(out);
	if (!out->max_bytes)
		out->max_bytes = MAX_BYTES_DEFAULT;
	return check_opts(out);
}

/* ---- the collectives of both shared-memory scopes ---- */

static struct coll_shm *to_shm(struct agile_coll *coll)
{
	return (struct coll_shm *)coll;
}

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
			err = shm_collective(c, desc, kind, tmp,
					     out + at * es, n, type, op, root);
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

	err = coll_reducer_init(
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
		return coll_shm_run(c, desc, send, send, work, recv, &rd);
	}

	xchg = c->seg[c->base.rank];
	if (active)
		work = result_in_work && in_my_segment(c, recv, bytes) ? recv :
									 xchg;
	if (!in_my_segment(c, send, send_bytes)) {
		copy_in(c, send, xchg, es);
		shared = xchg;
	}
	err = coll_shm_run(c, desc, send, shared, work, recv, &rd);
	/* allgather collects in WORK; allreduce and reduce straight in recv */
	if (!err && kind == AGILE_COLL_KIND_ALLGATHER && work && work != recv)
		memcpy(recv, work, bytes);
	return err;
}

static int shm_allreduce(struct agile_coll *coll, const void *send, void *recv,
			 size_t count, enum agile_coll_type type,
			 enum agile_coll_op op)
{
	struct coll_desc d = coll_desc_of(AGILE_COLL_KIND_ALLREDUCE, count,
					  type, op, 0);

	return shm_collective(to_shm(coll), &d, AGILE_COLL_KIND_ALLREDUCE,
			      send, recv, count, type, op, 0);
}

static int shm_reduce(struct agile_coll *coll, const void *send, void *recv,
		      size_t count, enum agile_coll_type type,
		      enum agile_coll_op op, uint32_t root)
{
	struct coll_desc d = coll_desc_of(AGILE_COLL_KIND_REDUCE, count, type,
					  op, root);

	return shm_collective(to_shm(coll), &d, AGILE_COLL_KIND_REDUCE, send,
			      recv, count, type, op, root);
}

static int shm_reduce_scatter(struct agile_coll *coll, const void *send,
			      void *recv, size_t recv_count,
			      enum agile_coll_type type, enum agile_coll_op op)
{
	struct coll_desc d = coll_desc_of(AGILE_COLL_KIND_REDUCE_SCATTER,
					  recv_count, type, op, 0);

	return shm_collective(to_shm(coll), &d, AGILE_COLL_KIND_REDUCE_SCATTER,
			      send, recv, recv_count, type, op, 0);
}

static int shm_allgather(struct agile_coll *coll, const void *send, void *recv,
			 size_t count, enum agile_coll_type type)
{
	struct coll_desc d = coll_desc_of(AGILE_COLL_KIND_ALLGATHER, count,
					  type, AGILE_COLL_SUM, 0);

	return shm_collective(to_shm(coll), &d, AGILE_COLL_KIND_ALLGATHER,
			      send, recv, count, type, AGILE_COLL_SUM, 0);
}

static int shm_barrier(struct agile_coll *coll)
{
	return coll_shm_barrier(to_shm(coll));
}

static agile_coll_user_fn shm_user_fn(const struct agile_coll *coll)
{
	return ((const struct coll_shm *)coll)->opts.user_fn;
}

static int shm_error(const struct agile_coll *coll)
{
	return ((const struct coll_shm *)coll)->broken;
}

/* ---- the heap of agile_coll_alloc, in the member's segment ---- */

static void *heap_alloc(struct agile_coll *coll, size_t bytes)
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

static bool heap_free(struct agile_coll *coll, void *ptr)
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

/* ---- threads scope ---- */

const struct coll_ops coll_threads_ops = {
	.allreduce = shm_allreduce,
	.reduce = shm_reduce,
	.reduce_scatter = shm_reduce_scatter,
	.allgather = shm_allgather,
	.barrier = shm_barrier,
	.user_fn = shm_user_fn,
	.error = shm_error,
};

int agile_coll_threads_create(uint32_t nr_members,
			      const struct agile_coll_opts *opts,
			      struct agile_coll_team **out)
{
	struct agile_coll_team *team;
	struct agile_dev_opts dopts;
	struct agile_coll_opts o;
	uint64_t yield_ns;
	int err;

	if (!out || !nr_members || nr_members > AGILE_COLL_MAX_MEMBERS)
		return -EINVAL;
	err = take_opts(opts, &o);
	if (err)
		return err;
	o.spin_ns =
		coll_spin_ns(o.spin_ns, nr_members, affinity_cpus(), &yield_ns);
	team = calloc(1, sizeof(*team));
	if (!team)
		return -ENOMEM;
	team->nr_members = nr_members;
	team->addrs = aligned_alloc(_Alignof(struct coll_shm_addrs),
				    nr_members * sizeof(*team->addrs));
	team->members = calloc(nr_members, sizeof(*team->members));
	if (!team->addrs || !team->members) {
		err = -ENOMEM;
		goto fail;
	}
	memset(team->addrs, 0, nr_members * sizeof(*team->addrs));
	agile_dev_opts_init(&dopts);
	dopts.nr_slots = 2 * nr_members;
	dopts.backend = o.backend;
	dopts.spin_ns = o.spin_ns;
	err = agile_dev_open(&dopts, &team->dev);
	if (err)
		goto fail;
	for (uint32_t r = 0; r < nr_members; r++) {
		struct coll_shm *c = &team->members[r];

		coll_init_base(&c->base, &coll_threads_ops, (int)r,
			       (int)nr_members);
		c->scope = COLL_SCOPE_THREADS;
		c->dev = team->dev;
		c->spin_ns = o.spin_ns;
		c->yield_ns = yield_ns;
		c->opts = o;
		c->team = team;
		c->addrs = team->addrs;
		err = coll_shm_init(c);
		if (err)
			goto fail;
	}
	*out = team;
	return 0;
fail:
	agile_coll_threads_destroy(team);
	return err;
}

int agile_coll_threads_member(struct agile_coll_team *team, uint32_t rank,
			      struct agile_coll **out)
{
	if (!team || !out || rank >= team->nr_members)
		return -EINVAL;
	*out = &team->members[rank].base;
	return 0;
}

int agile_coll_threads_destroy(struct agile_coll_team *team)
{
	if (!team)
		return -EINVAL;
	for (uint32_t r = 0; team->members && r < team->nr_members; r++) {
		coll_shm_release(&team->members[r]);
		free(team->members[r].scratch);
	}
	if (team->dev)
		agile_dev_close(team->dev);
	free(team->members);
	free(team->addrs);
	free(team);
	return 0;
}

/* ---- processes scope ---- */

static int procs_destroy(struct agile_coll *coll);

const struct coll_ops coll_procs_ops = {
	.allreduce = shm_allreduce,
	.reduce = shm_reduce,
	.reduce_scatter = shm_reduce_scatter,
	.allgather = shm_allgather,
	.barrier = shm_barrier,
	.destroy = procs_destroy,
	.alloc = heap_alloc,
	.free = heap_free,
	.user_fn = shm_user_fn,
	.error = shm_error,
};

static void procs_free(struct coll_shm *c)
{
	coll_shm_release(c);
	if (c->dev)
		agile_dev_close(c->dev); /* unmaps the segments */
	free(c->seg);
	free(c->heap);
	free(c);
}

static int procs_destroy(struct agile_coll *coll)
{
	struct coll_shm *c = to_shm(coll);
	int err = c->broken ? 0 : coll_shm_barrier(c);

	procs_free(c);
	return err;
}

/* Round up to whole pages; false on overflow. */
static bool page_round(uint64_t bytes, uint64_t *out)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	if (bytes > UINT64_MAX - page)
		return false;
	*out = (bytes + page - 1) / page * page;
	return true;
}

/*
 * What shapes the schedule or the result, as every member publishes it
 * at join: the segments, the layout, and whether a user op may be
 * reduced in any order.
 */
static uint32_t schedule_word(const struct coll_shm *c)
{
	return c->opts.segments | c->opts.interleaved << 16 |
	       !!c->opts.user_commutative << 17;
}

/* Map every other member's segment, from the ids in their doorbell lines. */
static int map_peers(struct coll_shm *c)
{
	for (int q = 0; q < c->base.size; q++) {
		struct agile_doorbell *db;
		uint64_t bytes;
		uint32_t id;
		void *addr;
		int err;

		if (q == c->base.rank)
			continue;
		agile_dev_slot(c->dev, (uint32_t)q, &db, NULL);
		id = __atomic_load_n(&db->user[COLL_WORD_SEG_ID],
				     __ATOMIC_RELAXED);
		bytes = (uint64_t)__atomic_load_n(
				&db->user[COLL_WORD_SEG_BYTES],
				__ATOMIC_RELAXED) |
			(uint64_t)__atomic_load_n(
				&db->user[COLL_WORD_SEG_BYTES + 1],
				__ATOMIC_RELAXED)
				<< 32;
		/*
		 * Every member must size its segment alike (max_bytes) and
		 * run the same schedule (segments, layout).
		 */
		if (bytes != c->seg_bytes ||
		    __atomic_load_n(&db->user[COLL_WORD_SCHEDULE],
				    __ATOMIC_RELAXED) != schedule_word(c))
			return -EINVAL;
		err = agile_dev_seg_map(c->dev, id, (size_t)bytes, &addr);
		if (err)
			return err;
		c->seg[q] = addr;
	}
	return 0;
}

/*
 * From the join index (agile_dev_member: the line of the join's words and
 * rendezvous) to the rank: by the members' orders, ties in join order, so
 * that every member computes the same ranks.  After the last rendezvous
 * nothing reads the join's words, and every line of bank 0 holds 2, so
 * the lines can be indexed by rank from here on; @c->seg follows.
 */
static void take_rank(struct coll_shm *c)
{
	uint32_t n = (uint32_t)c->base.size, me = (uint32_t)c->base.rank;
	uint32_t order[AGILE_GROUP_MAX_MEMBERS];
	char *seg[AGILE_GROUP_MAX_MEMBERS];
	uint32_t rank = 0;

	for (uint32_t q = 0; q < n; q++) {
		struct agile_doorbell *db;

		agile_dev_slot(c->dev, q, &db, NULL);
		order[q] = __atomic_load_n(&db->user[COLL_WORD_ORDER],
					   __ATOMIC_RELAXED);
	}
	for (uint32_t q = 0; q < n; q++) {
		uint32_t r = 0;

		for (uint32_t m = 0; m < n; m++)
			if (order[m] < order[q] ||
			    (order[m] == order[q] && m < q))
				r++;
		seg[r] = c->seg[q];
		if (q == me)
			rank = r;
	}
	memcpy(c->seg, seg, n * sizeof(*seg));
	c->base.rank = (int)rank;
}

/* Publish @value and wait until every member has (before @deadline). */
static int rendezvous(struct coll_shm *c, uint32_t value, uint64_t deadline)
{
	int err = agile_dev_signal(c->dev, (uint32_t)c->base.rank, value);

	for (int q = 0; !err && q < c->base.size; q++) {
		uint64_t left = AGILE_TIMEOUT_INFINITE, now;

		if (q == c->base.rank)
			continue;
		if (deadline) {
			now = agile_mono_ns();
			left = now < deadline ? deadline - now : 0;
		}
		err = agile_dev_wait_spin(c->dev, (uint32_t)q, AGILE_CMP_GE,
					  value, c->spin_ns, left, NULL);
	}
	return err;
}

/*
 * The CPUs the members may run on, for AGILE_COLL_SPIN_AUTO: each member
 * leaves its affinity mask at the start of its exchange area before the
 * rendezvous's value 1 (which orders it for the readers) and counts the
 * union after it; value 2 says all have, so the areas are free.  Neither
 * the online CPUs (a container's cpuset is smaller) nor one member's mask
 * (mpirun binds each rank to its cores) would tell whether the members
 * have a CPU each.
 */
static void publish_cpus(struct coll_shm *c)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		memset(&set, 0xff, sizeof(set)); /* unknown: any */
	memcpy(c->seg[c->base.rank], &set, sizeof(set));
}

static long members_cpus(const struct coll_shm *c)
{
	cpu_set_t all, one;

	CPU_ZERO(&all);
	for (int q = 0; q < c->base.size; q++) {
		memcpy(&one, c->seg[q], sizeof(one));
		CPU_OR(&all, &all, &one);
	}
	return CPU_COUNT(&all);
}

int agile_coll_procs_join(uint64_t key, uint32_t nr_members,
			  const struct agile_coll_opts *opts,
			  uint64_t timeout_ns, struct agile_coll **out)
{
	struct agile_dev_group_opts gopts;
	struct agile_doorbell *db;
	struct agile_coll_opts o;
	uint64_t xchg, seg_bytes, deadline, yield_ns, spin_asked;
	struct coll_shm *c;
	void *addr;
	uint32_t id;
	int rank, err;

	if (!out || !nr_members || nr_members > AGILE_GROUP_MAX_MEMBERS)
		return -EINVAL;
	err = take_opts(opts, &o);
	if (err)
		return err;
	spin_asked = o.spin_ns;
	/* until the members' masks are known (members_cpus) */
	o.spin_ns = coll_spin_ns(o.spin_ns, nr_members,
				 sysconf(_SC_NPROCESSORS_ONLN), &yield_ns);
	if (!page_round(o.max_bytes, &xchg) || xchg > SIZE_MAX / 4)
		return -EINVAL;
	seg_bytes = 3 * xchg; /* exchange area, then a heap of twice it */
	deadline = timeout_ns == AGILE_TIMEOUT_INFINITE ?
			   0 :
			   agile_mono_ns() + timeout_ns;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	agile_dev_group_opts_init(&gopts);
	gopts.dev.nr_slots = 2 * nr_members;
	gopts.dev.backend = o.backend;
	gopts.dev.spin_ns = o.spin_ns;
	gopts.key = key;
	gopts.max_members = nr_members;
	gopts.mode = o.mode;
	gopts.flags = AGILE_DEV_GROUP_CREATE;
	err = agile_dev_group_join(&gopts, &c->dev);
	if (err) {
		free(c);
		return err;
	}
	rank = agile_dev_member(c->dev);
	if (rank < 0 || (uint32_t)rank >= nr_members) {
		err = rank < 0 ? rank : -EPROTO;
		goto fail;
	}
	coll_init_base(&c->base, &coll_procs_ops, rank, (int)nr_members);
	c->scope = COLL_SCOPE_PROCS;
	c->spin_ns = o.spin_ns;
	c->yield_ns = yield_ns;
	c->opts = o;
	c->xchg_bytes = (size_t)xchg;
	c->seg_bytes = (size_t)seg_bytes;
	err = coll_shm_init(c);
	if (err)
		goto fail;
	c->seg = calloc(nr_members, sizeof(*c->seg));
	c->heap = malloc(16 * sizeof(*c->heap));
	c->pieces = malloc(c->xchg_bytes); /* in_pieces' (virtual until used) */
	if (!c->seg || !c->heap || !c->pieces) {
		err = -ENOMEM;
		goto fail;
	}
	c->cap_heap = 16;
	c->nr_heap = 1;
	c->heap[0] = (struct coll_heap_block){ c->xchg_bytes,
					       c->seg_bytes - c->xchg_bytes,
					       false };
	err = agile_dev_seg_create(c->dev, c->seg_bytes, &id, &addr);
	if (err)
		goto fail;
	c->seg[rank] = addr;
	publish_cpus(c);

	/*
	 * The rendezvous: the segment's id and size, then value 1 (a release
	 * store: the words are visible to whoever acquires it).
	 */
	agile_dev_slot(c->dev, (uint32_t)rank, &db, NULL);
	__atomic_store_n(&db->user[COLL_WORD_SEG_ID], id, __ATOMIC_RELAXED);
	__atomic_store_n(&db->user[COLL_WORD_SEG_BYTES], (uint32_t)seg_bytes,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&db->user[COLL_WORD_SEG_BYTES + 1],
			 (uint32_t)(seg_bytes >> 32), __ATOMIC_RELAXED);
	__atomic_store_n(&db->user[COLL_WORD_SCHEDULE], schedule_word(c),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&db->user[COLL_WORD_ORDER], o.order, __ATOMIC_RELAXED);
	err = rendezvous(c, 1, deadline);
	if (!err)
		err = map_peers(c);
	if (err)
		goto fail;
	c->spin_ns = coll_spin_ns(spin_asked, nr_members, members_cpus(c),
				  &c->yield_ns);
	/*
	 * value 2: every member has read the masks, the segment ids and the
	 * orders; the areas are free, and every line of bank 0 holds 2
	 */
	err = rendezvous(c, 2, deadline);
	if (err)
		goto fail;
	take_rank(c);
	c->seq_base = 2;
	*out = &c->base;
	return 0;
fail:
	procs_free(c);
	return err;
}

/* ---- the public calls ---- */

int agile_coll_destroy(struct agile_coll *coll)
{
	if (!coll || !coll->ops || !coll->ops->destroy)
		return -EINVAL;
	return coll->ops->destroy(coll);
}

int agile_coll_rank(const struct agile_coll *coll)
{
	return coll ? coll->rank : -EINVAL;
}

int agile_coll_size(const struct agile_coll *coll)
{
	return coll ? coll->size : -EINVAL;
}

void *agile_coll_alloc(struct agile_coll *coll, size_t bytes)
{
	size_t size = (bytes + ALLOC_ALIGN - 1) & ~(size_t)(ALLOC_ALIGN - 1);

	if (!coll || !bytes || size < bytes)
		return NULL;
	if (coll->ops && coll->ops->alloc)
		return coll->ops->alloc(coll, bytes);
	return aligned_alloc(ALLOC_ALIGN, size);
}

void agile_coll_free(struct agile_coll *coll, void *ptr)
{
	if (!ptr)
		return;
	if (coll && coll->ops && coll->ops->free && coll->ops->free(coll, ptr))
		return;
	free(ptr);
}

/* Type, op and the user op's callback. */
static int check_type_op(const struct agile_coll *coll,
			 enum agile_coll_type type, enum agile_coll_op op)
{
	if (!agile_coll_type_size(type) ||
	    (unsigned int)op >= AGILE_COLL_NR_OPS)
		return -EINVAL;
	if (op == AGILE_COLL_USER && coll->ops->user_fn &&
	    !coll->ops->user_fn(coll))
		return -EINVAL;
	return 0;
}

/* Bytes of @count x @members elements of @type; -EOVERFLOW. */
static int vector_bytes(enum agile_coll_type type, size_t count, size_t members,
			size_t *bytes)
{
	size_t n;

	if (__builtin_mul_overflow(count, members, &n) ||
	    __builtin_mul_overflow(n, agile_coll_type_size(type), bytes))
		return -EOVERFLOW;
	return 0;
}

static bool overlap(const void *a, size_t na, const void *b, size_t nb)
{
	const char *x = a, *y = b;

	return x < y + nb && y < x + na;
}

static bool valid(const struct agile_coll *coll)
{
	return coll && coll->ops;
}

/*
 * A call with nothing to move still reports a communicator that is out of
 * step: coll.h promises every call after an error returns that error.
 */
static int nothing_to_do(const struct agile_coll *coll)
{
	return coll->ops->error ? coll->ops->error(coll) : 0;
}

/*
 * What every collective checks first: the handle, the type and op, and
 * that @count x @members elements fit a size_t (their bytes in *@bytes).
 */
static int check_call(const struct agile_coll *coll, enum agile_coll_type type,
		      enum agile_coll_op op, size_t count, size_t members,
		      size_t *bytes)
{
	int err;

	if (!valid(coll))
		return -EINVAL;
	err = check_type_op(coll, type, op);
	if (err)
		return err;
	return vector_bytes(type, count, members, bytes);
}

int agile_coll_allreduce(struct agile_coll *coll, const void *send, void *recv,
			 size_t count, enum agile_coll_type type,
			 enum agile_coll_op op)
{
	size_t bytes;
	int err = check_call(coll, type, op, count, 1, &bytes);

	if (err)
		return err;
	if (!count)
		return nothing_to_do(coll);
	if (!send || !recv ||
	    (send != recv && overlap(send, bytes, recv, bytes)))
		return -EINVAL;
	return coll->ops->allreduce(coll, send, recv, count, type, op);
}

int agile_coll_reduce(struct agile_coll *coll, const void *send, void *recv,
		      size_t count, enum agile_coll_type type,
		      enum agile_coll_op op, uint32_t root)
{
	size_t bytes;
	int err = check_call(coll, type, op, count, 1, &bytes);

	if (!err && root >= (uint32_t)coll->size)
		err = -EINVAL;
	if (err)
		return err;
	if (!count)
		return nothing_to_do(coll);
	if (!send || (root == (uint32_t)coll->rank && !recv))
		return -EINVAL;
	if (recv && send != recv && overlap(send, bytes, recv, bytes))
		return -EINVAL;
	return coll->ops->reduce(coll, send, recv, count, type, op, root);
}

int agile_coll_reduce_scatter(struct agile_coll *coll, const void *send,
			      void *recv, size_t recv_count,
			      enum agile_coll_type type, enum agile_coll_op op)
{
	size_t bytes;
	int err = check_call(coll, type, op, recv_count,
			     valid(coll) ? (size_t)coll->size : 0, &bytes);

	if (err)
		return err;
	if (!recv_count)
		return nothing_to_do(coll);
	if (!send || !recv ||
	    overlap(send, bytes, recv, recv_count * agile_coll_type_size(type)))
		return -EINVAL;
	return coll->ops->reduce_scatter(coll, send, recv, recv_count, type,
					 op);
}

int agile_coll_allgather(struct agile_coll *coll, const void *send, void *recv,
			 size_t count, enum agile_coll_type type)
{
	size_t bytes, one;
	int err = check_call(coll, type, AGILE_COLL_SUM, count,
			     valid(coll) ? (size_t)coll->size : 0, &bytes);

	if (err)
		return err;
	if (!count)
		return nothing_to_do(coll);
	one = count * agile_coll_type_size(type);
	/* In place: @send is the member's own block of @recv. */
	if (!send || !recv ||
	    (send != (char *)recv + (size_t)coll->rank * one &&
	     overlap(send, one, recv, bytes)))
		return -EINVAL;
	return coll->ops->allgather(coll, send, recv, count, type);
}

int agile_coll_barrier(struct agile_coll *coll)
{
	if (!valid(coll))
		return -EINVAL;
	return coll->ops->barrier(coll);
}
