// SPDX-License-Identifier: MIT
/*
 * scope_procs.c - the processes scope of segmap (scope.h): node q is
 * member q of a dev group on this machine (kmod where /dev/agile exists,
 * else the user backend: agile_dev_group_join's AGILE_BACKEND_AUTO, so
 * $AGILE_BACKEND chooses), in join order.
 *
 * Home memory: for each field, each member creates one group segment of
 * its own home bytes (rounded to pages), publishes its id in its doorbell
 * line's words (transport/procs.h) before a rendezvous, and maps every
 * peer's; a get or put is one memcpy out of or into the peer's mapping.
 *
 * The dev layer cannot free a segment: a group's segments live until the
 * context closes, and the group holds at most AGILE_MAX_SEGMENTS (64) of
 * them, every member's together.  So home_free keeps the member's segment
 * for the next home_alloc, which takes the smallest kept segment that is
 * large enough (zeroing it) before it creates one: creating and freeing
 * fields of the same sizes over and over takes no new segment.  The live
 * homes, and the kept segments of distinct sizes, of all members together
 * are limited to 64 (a node whose home is 0 bytes takes none); past that
 * home_alloc fails with -ENOSPC on every member.  On the kmod backend the
 * segments also count against each member's RLIMIT_MEMLOCK (-ENOMEM), as
 * kept ones still do.  A home larger than one segment can be (kmod's
 * max_segment_bytes, 256 MiB by default; user: 1 GiB) is -ENOSPC too.
 *
 * Meeting points: the doorbell value of member q's slot is q's rendezvous
 * count, raised by one at every collective (procs_rendezvous); the words a
 * collective publishes sit in one of two halves of the line's user words,
 * by the count's parity, so that a member that runs ahead into the next
 * collective never overwrites words a slow peer has still to read (it
 * cannot reach the count after that before the peer has read them).
 *
 * allreduce goes through a coll communicator of the same processes
 * (agile_coll_procs_join on key ^ SEGMAP_PROCS_COLL_KEY_XOR, joined with
 * the scope, the member's node as its order so that its rank is the
 * node), with 64 KiB exchange pieces to keep its pinned memory small.
 *
 * A member that dies ends both groups: every later collective of the
 * others returns -EPIPE, without waiting; gets and puts return -EPIPE
 * once a collective has seen it (the pages stay mapped, so a get from a
 * dead member's home still reads its memory, never faults).  Each
 * collective of the scope's own waits at most the join's timeout_ns
 * (-ETIMEDOUT), after which the scope is out of step and every call
 * returns that error; allreduce waits as coll's collectives do, with no
 * timeout (a member that lives but never calls it holds the others).
 *
 * Locking: collectives (home_alloc, home_free, barrier, agree, allreduce,
 * destroy) are made by one thread per process, as scope.h says; they
 * alone change the scope's state.  home_get, home_put and home_addr only
 * read a home, which a collective made before, and the broken word (an
 * atomic); any number of threads may call them at once, while no
 * collective of the same process runs.
 */
#include <agile/dev.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "segmap/scope.h"
#include "sys.h"
#include "transport/procs.h"

/* The scope's coll communicator's key: key ^ "sgmapcol". */
#define SEGMAP_PROCS_COLL_KEY_XOR 0x73676d6170636f6cULL
/* Its exchange pieces: allreduces of a field's sums, not of fields. */
#define SEGMAP_PROCS_COLL_BYTES (64u << 10)

/*
 * The words a collective publishes, in the half of the user words its
 * count's parity picks: an errno, and a segment's id and size.
 */
#define WORD_ERR 0
#define WORD_SEG_ID 1
#define WORD_SEG_BYTES 2 /* and 3 */
#define WORDS_HALF 8
#define NO_SEGMENT UINT32_MAX

/* One segment this member created: in a live home, or kept for reuse. */
struct own_segment {
	uint32_t id;
	bool busy;
	uint64_t bytes; /* as created (whole pages) */
	void *addr;
};

struct procs_scope {
	struct segmap_scope base;
	struct agile_dev *dev;
	struct agile_coll *coll;
	uint64_t timeout_ns; /* of each collective; AGILE_TIMEOUT_INFINITE */
	uint64_t spin_ns;
	uint32_t count; /* the last rendezvous count, ours and everyone's */
	int broken; /* atomic: 0, or the error that put us out of step */
	uint32_t nr_own;
	struct own_segment own[AGILE_MAX_SEGMENTS];
};

/*
 * struct segmap_home - one field's home memory
 * @ps:    the scope
 * @own:   this member's segment, or NULL where its home is 0 bytes
 * @empty: where home_addr points for a node whose home is 0 bytes
 * @bytes: every node's home bytes
 * @addr:  every node's home, as mapped here
 */
struct segmap_home {
	struct procs_scope *ps;
	struct own_segment *own;
	char empty;
	uint64_t *bytes;
	char **addr;
};

static inline struct procs_scope *to_procs(struct segmap_scope *sc)
{
	return (struct procs_scope *)sc;
}

static int broken(const struct procs_scope *ps)
{
	return __atomic_load_n(&ps->broken, __ATOMIC_RELAXED);
}

static void set_broken(struct procs_scope *ps, int err)
{
	int none = 0;

	__atomic_compare_exchange_n(&ps->broken, &none, err, false,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

static uint64_t deadline_of(const struct procs_scope *ps)
{
	if (ps->timeout_ns == AGILE_TIMEOUT_INFINITE)
		return 0;
	return agile_mono_ns() + ps->timeout_ns;
}

/* The first word of count @count's half of a doorbell line's user words. */
static inline int half(uint32_t count)
{
	return (int)(count & 1) * WORDS_HALF;
}

static struct agile_doorbell *line(struct procs_scope *ps, uint32_t node)
{
	struct agile_doorbell *db = NULL;

	agile_dev_slot(ps->dev, node, &db, NULL);
	return db;
}

/*
 * publish - write @err and a segment's @id and @bytes into this member's
 * words for the next count, then meet everyone there.  The words are
 * relaxed stores; the rendezvous' release store of the count publishes
 * them to whoever acquires it (procs.h).  0, -EPIPE, -ETIMEDOUT: after
 * an error the scope is out of step (broken).
 */
static int publish(struct procs_scope *ps, int err, uint32_t id, uint64_t bytes)
{
	uint32_t count = ps->count + 1;
	struct agile_doorbell *db = line(ps, ps->base.self);
	int rc = broken(ps);

	if (rc)
		return rc;
	__atomic_store_n(&db->user[half(count) + WORD_ERR], (uint32_t)err,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&db->user[half(count) + WORD_SEG_ID], id,
			 __ATOMIC_RELAXED);
	procs_set_word_pair(db, half(count) + WORD_SEG_BYTES, bytes);
	rc = procs_rendezvous(ps->dev, ps->base.self, ps->base.nr_nodes, count,
			      ps->spin_ns, deadline_of(ps));
	ps->count = count;
	if (rc)
		set_broken(ps, rc);
	return rc;
}

/* The most negative of the errors every member published at the last count. */
static int worst_published(struct procs_scope *ps)
{
	int worst = 0;

	for (uint32_t q = 0; q < ps->base.nr_nodes; q++) {
		int e = (int)__atomic_load_n(
			&line(ps, q)->user[half(ps->count) + WORD_ERR],
			__ATOMIC_RELAXED);

		if (e < worst)
			worst = e;
	}
	return worst;
}

static int procs_agree(struct segmap_scope *sc, int err)
{
	struct procs_scope *ps = to_procs(sc);
	int rc = publish(ps, err, NO_SEGMENT, 0);

	return rc ? rc : worst_published(ps);
}

static int procs_barrier(struct segmap_scope *sc)
{
	return publish(to_procs(sc), 0, NO_SEGMENT, 0);
}

/*
 * take_segment - a segment of at least @bytes for this member's home: the
 * smallest kept one that is large enough, zeroed, else a new one (zeroed
 * by the dev layer).  -ENOSPC (64 in the group, or too large), -ENOMEM.
 */
static int take_segment(struct procs_scope *ps, uint64_t bytes,
			struct own_segment **out)
{
	struct own_segment *best = NULL, *s;
	uint64_t pages;
	int err;

	if (!procs_page_round(bytes, &pages))
		return -ENOSPC;
	for (uint32_t k = 0; k < ps->nr_own; k++) {
		s = &ps->own[k];
		if (!s->busy && s->bytes >= pages &&
		    (!best || s->bytes < best->bytes))
			best = s;
	}
	if (best) {
		memset(best->addr, 0, (size_t)bytes);
	} else {
		if (ps->nr_own == AGILE_MAX_SEGMENTS)
			return -ENOSPC;
		best = &ps->own[ps->nr_own];
		err = agile_dev_seg_create(ps->dev, (size_t)pages, &best->id,
					   &best->addr);
		if (err)
			return err;
		best->bytes = pages;
		ps->nr_own++;
	}
	best->busy = true;
	*out = best;
	return 0;
}

/* Map every peer's home from the segment ids they published. */
static int map_peers(struct procs_scope *ps, struct segmap_home *h)
{
	for (uint32_t q = 0; q < ps->base.nr_nodes; q++) {
		struct agile_doorbell *db = line(ps, q);
		uint32_t id;
		uint64_t seg_bytes;
		void *addr;
		int err;

		if (q == ps->base.self || !h->bytes[q])
			continue;
		id = __atomic_load_n(&db->user[half(ps->count) + WORD_SEG_ID],
				     __ATOMIC_RELAXED);
		seg_bytes =
			procs_word_pair(db, half(ps->count) + WORD_SEG_BYTES);
		/* The members' @bytes disagree. */
		if (id == NO_SEGMENT || seg_bytes < h->bytes[q])
			return -EINVAL;
		/* A peer's kept segment, mapped before: the same address. */
		err = agile_dev_seg_map(ps->dev, id, (size_t)seg_bytes, &addr);
		if (err)
			return err;
		h->addr[q] = addr;
	}
	return 0;
}

static void release(struct segmap_home *h)
{
	if (h->own)
		h->own->busy = false;
	free(h);
}

static int procs_home_alloc(struct segmap_scope *sc, const uint64_t *bytes,
			    struct segmap_home **out)
{
	struct procs_scope *ps = to_procs(sc);
	uint32_t n = sc->nr_nodes, self = sc->self;
	struct segmap_home *h;
	int err = 0, rc;

	if (!bytes || !out)
		return -EINVAL;
	/* One block: the home, then its two arrays (pointers aligned). */
	h = calloc(1, sizeof(*h) + n * (sizeof(*h->addr) + sizeof(*h->bytes)));
	if (!h)
		return -ENOMEM;
	h->ps = ps;
	h->addr = (char **)(h + 1);
	h->bytes = (uint64_t *)(h->addr + n);
	memcpy(h->bytes, bytes, n * sizeof(*bytes));
	for (uint32_t q = 0; q < n; q++)
		h->addr[q] = &h->empty;
	if (bytes[self])
		err = take_segment(ps, bytes[self], &h->own);
	if (h->own)
		h->addr[self] = h->own->addr;

	/* Everyone's segment, or everyone's error. */
	rc = publish(ps, err, h->own ? h->own->id : NO_SEGMENT,
		     h->own ? h->own->bytes : 0);
	if (!rc)
		rc = worst_published(ps);
	if (!rc)
		rc = procs_agree(sc, map_peers(ps, h));
	if (rc) {
		release(h);
		return rc;
	}
	*out = h;
	return 0;
}

static void procs_home_free(struct segmap_scope *sc, struct segmap_home *h)
{
	if (!h)
		return;
	/*
	 * No peer reads or writes our segment after this: it can be handed
	 * out again.  When the barrier fails there are no peers any more.
	 */
	procs_barrier(sc);
	release(h);
}

static void *procs_home_addr(struct segmap_home *h, uint32_t node)
{
	return node < h->ps->base.nr_nodes ? h->addr[node] : NULL;
}

/* 0, or why @bytes at @off of @node's home cannot be moved. */
static int check_span(const struct segmap_home *h, uint32_t node, uint64_t off,
		      size_t bytes)
{
	int err = broken(h->ps);

	if (err)
		return err;
	if (node >= h->ps->base.nr_nodes || off > h->bytes[node] ||
	    bytes > h->bytes[node] - off)
		return -EINVAL;
	return 0;
}

static int procs_home_get(struct segmap_home *h, uint32_t node, uint64_t off,
			  void *dst, size_t bytes)
{
	int err = check_span(h, node, off, bytes);

	if (!err && bytes)
		memcpy(dst, h->addr[node] + off, bytes);
	return err;
}

static int procs_home_put(struct segmap_home *h, uint32_t node, uint64_t off,
			  const void *src, size_t bytes)
{
	int err = check_span(h, node, off, bytes);

	if (!err && bytes)
		memcpy(h->addr[node] + off, src, bytes);
	return err;
}

static int procs_allreduce(struct segmap_scope *sc, const void *send,
			   void *recv, size_t count, enum agile_coll_type type,
			   enum agile_coll_op op)
{
	struct procs_scope *ps = to_procs(sc);
	int err = broken(ps);

	if (err)
		return err;
	err = agile_coll_allreduce(ps->coll, send, recv, count, type, op);
	if (err == -EPIPE)
		set_broken(ps, err);
	return err;
}

/*
 * Leave the scope's group first: a peer still waiting in one of our
 * collectives (it called one more than we did) gets -EPIPE at once, while
 * a peer whose last rendezvous we completed finds its condition holding.
 * The communicator's destroy is then the barrier after which nothing of
 * ours is read: its segments go, and peers' mappings of our homes stay
 * valid until they close (the dev layer's pages outlive a member).
 */
static void procs_free(struct procs_scope *ps)
{
	if (ps->dev)
		agile_dev_close(ps->dev); /* unmaps every segment */
	if (ps->coll)
		agile_coll_destroy(ps->coll);
	free(ps);
}

static void procs_destroy(struct segmap_scope *sc)
{
	if (sc)
		procs_free(to_procs(sc));
}

static const struct segmap_scope_ops procs_ops = {
	.name = "procs",
	.home_alloc = procs_home_alloc,
	.home_free = procs_home_free,
	.home_addr = procs_home_addr,
	.home_get = procs_home_get,
	.home_put = procs_home_put,
	.barrier = procs_barrier,
	.agree = procs_agree,
	.allreduce = procs_allreduce,
	.destroy = procs_destroy,
};

/* The scope's coll communicator: its ranks are our nodes. */
static int join_coll(struct procs_scope *ps, uint64_t key, uint64_t deadline)
{
	struct agile_coll_opts o;
	uint64_t left = AGILE_TIMEOUT_INFINITE, now;
	int err;

	agile_coll_opts_init(&o);
	o.backend = (uint32_t)agile_dev_backend(ps->dev);
	o.max_bytes = SEGMAP_PROCS_COLL_BYTES;
	o.order = ps->base.self;
	if (deadline) {
		now = agile_mono_ns();
		left = now < deadline ? deadline - now : 0;
	}
	err = agile_coll_procs_join(key ^ SEGMAP_PROCS_COLL_KEY_XOR,
				    ps->base.nr_nodes, &o, left, &ps->coll);
	if (!err && agile_coll_rank(ps->coll) != (int)ps->base.self)
		err = -EPROTO;
	return err;
}

/*
 * agile__segmap_scope_procs_join - see scope.h.  Returns once all @nr_nodes
 * have joined, or -ETIMEDOUT after @timeout_ns; then the errors of
 * agile_dev_group_join and agile_coll_procs_join (-EINVAL where another
 * member asked for another @nr_nodes, -EPIPE where the key's group
 * ended).  Thread safe (each call makes its own scope).
 */
int agile__segmap_scope_procs_join(uint64_t key, uint32_t nr_nodes,
				   uint64_t timeout_ns,
				   struct segmap_scope **out)
{
	struct agile_dev_group_opts gopts;
	struct procs_scope *ps;
	uint64_t deadline;
	int member, err;

	if (!out || !nr_nodes || nr_nodes > AGILE_SEGMAP_MAX_NODES ||
	    nr_nodes > AGILE_GROUP_MAX_MEMBERS)
		return -EINVAL;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	ps->base.ops = &procs_ops;
	ps->base.kind = AGILE_NODE_PROC;
	ps->base.nr_nodes = nr_nodes;
	ps->base.priv = ps;
	ps->timeout_ns = timeout_ns;
	deadline = deadline_of(ps);

	agile_dev_group_opts_init(&gopts);
	gopts.dev.nr_slots = nr_nodes;
	gopts.key = key;
	gopts.max_members = nr_nodes;
	gopts.flags = AGILE_DEV_GROUP_CREATE;
	ps->spin_ns = gopts.dev.spin_ns;
	err = agile_dev_group_join(&gopts, &ps->dev);
	if (err) {
		free(ps);
		return err;
	}
	member = agile_dev_member(ps->dev);
	if (member < 0 || (uint32_t)member >= nr_nodes) {
		err = member < 0 ? member : -EPROTO;
		goto fail;
	}
	ps->base.self = (uint32_t)member;

	/* Count 1: everyone has joined. */
	err = procs_rendezvous(ps->dev, ps->base.self, nr_nodes, 1, ps->spin_ns,
			       deadline);
	if (err)
		goto fail;
	ps->count = 1;
	/* Count 2: everyone has its communicator, or everyone fails. */
	err = procs_agree(&ps->base, join_coll(ps, key, deadline));
	if (err)
		goto fail;
	*out = &ps->base;
	return 0;
fail:
	set_broken(ps, err);
	procs_free(ps);
	return err;
}

int agile_segmap_procs_join(uint64_t key, uint32_t nr_nodes,
			    uint64_t timeout_ns, struct agile_sched *pool,
			    struct agile_segmap **out)
{
	struct segmap_scope *sc;
	int err;

	if (!out)
		return -EINVAL;
	err = agile__segmap_scope_procs_join(key, nr_nodes, timeout_ns, &sc);
	if (err)
		return err;
	return agile__segmap_create(sc, pool, out); /* takes @sc over */
}
