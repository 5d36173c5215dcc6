// SPDX-License-Identifier: MIT
/*
 * procs.c - the processes scope (agile_coll_procs_join): a dev group,
 * one segment per member, the join's rendezvous (coll.c)
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
#include "transport/procs.h"

/* ---- processes scope ---- */

static int procs_destroy(struct agile_coll *coll);

const struct coll_ops coll_procs_ops = {
	.allreduce = coll_node_allreduce,
	.reduce = coll_node_reduce,
	.reduce_scatter = coll_node_reduce_scatter,
	.allgather = coll_node_allgather,
	.barrier = coll_node_barrier,
	.destroy = procs_destroy,
	.alloc = coll_heap_alloc,
	.free = coll_heap_free,
	.user_fn = coll_node_user_fn,
	.error = coll_node_error,
};

static void procs_free(struct coll_shm *c)
{
	coll_shm_release(c);
	if (c->dev)
		agile_dev_close(c->dev); /* unmaps the segments */
	free(c->seg);
	free(c->heap);
	free(c->pid);
	free(c->probe);
	free(c->cma_scratch);
	free(c);
}

static int procs_destroy(struct agile_coll *coll)
{
	struct coll_shm *c = to_shm(coll);
	int err = c->broken ? 0 : coll_shm_barrier(c);

	procs_free(c);
	return err;
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
		bytes = procs_word_pair(db, COLL_WORD_SEG_BYTES);
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
 * the lines can be indexed by rank from here on; @c->seg, @c->pid and
 * @c->probe follow.
 */
static void take_rank(struct coll_shm *c)
{
	uint32_t n = (uint32_t)c->base.size, me = (uint32_t)c->base.rank;
	uint32_t order[AGILE_GROUP_MAX_MEMBERS] = { 0 };
	uint32_t to_rank[AGILE_GROUP_MAX_MEMBERS];
	char *seg[AGILE_GROUP_MAX_MEMBERS];
	int pid[AGILE_GROUP_MAX_MEMBERS];
	uint64_t probe[2 * AGILE_GROUP_MAX_MEMBERS];

	for (uint32_t q = 0; q < n; q++) {
		struct agile_doorbell *db;

		agile_dev_slot(c->dev, q, &db, NULL);
		order[q] = __atomic_load_n(&db->user[COLL_WORD_ORDER],
					   __ATOMIC_RELAXED);
	}
	c->base.rank = (int)procs_rank_by_order(order, n, me, to_rank);
	for (uint32_t q = 0; q < n; q++) {
		seg[to_rank[q]] = c->seg[q];
		pid[to_rank[q]] = c->pid[q];
		probe[2 * to_rank[q]] = c->probe[2 * q];
		probe[2 * to_rank[q] + 1] = c->probe[2 * q + 1];
	}
	memcpy(c->seg, seg, n * sizeof(*seg));
	memcpy(c->pid, pid, n * sizeof(*pid));
	memcpy(c->probe, probe, 2 * n * sizeof(*probe));
}

/* Publish @value and wait until every member has (before @deadline). */
static int rendezvous(struct coll_shm *c, uint32_t value, uint64_t deadline)
{
	return procs_rendezvous(c->dev, (uint32_t)c->base.rank,
				(uint32_t)c->base.size, value, c->spin_ns,
				deadline);
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
	err = coll_take_opts(opts, &o);
	if (err)
		return err;
	spin_asked = o.spin_ns;
	/* until the members' masks are known (procs_count_cpus) */
	o.spin_ns = agile__coll_spin_ns(o.spin_ns, nr_members,
					sysconf(_SC_NPROCESSORS_ONLN),
					&yield_ns);
	if (!procs_page_round(o.max_bytes, &xchg) || xchg > SIZE_MAX / 4)
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
	c->pid = calloc(nr_members, sizeof(*c->pid));
	c->probe = calloc(2 * nr_members, sizeof(*c->probe));
	c->heap = malloc(16 * sizeof(*c->heap));
	c->pieces = malloc(c->xchg_bytes); /* in_pieces' (virtual until used) */
	if (!c->seg || !c->pid || !c->probe || !c->heap || !c->pieces) {
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
	/* For AGILE_COLL_SPIN_AUTO, read by all after value 1 (procs.h). */
	procs_publish_cpus(c->seg[rank]);

	/*
	 * The rendezvous: the segment's id and size, then value 1 (a release
	 * store: the words are visible to whoever acquires it).
	 */
	agile_dev_slot(c->dev, (uint32_t)rank, &db, NULL);
	__atomic_store_n(&db->user[COLL_WORD_SEG_ID], id, __ATOMIC_RELAXED);
	procs_set_word_pair(db, COLL_WORD_SEG_BYTES, seg_bytes);
	__atomic_store_n(&db->user[COLL_WORD_SCHEDULE], schedule_word(c),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&db->user[COLL_WORD_ORDER], o.order, __ATOMIC_RELAXED);
	coll_cma_probe_publish(c);
	err = rendezvous(c, 1, deadline);
	if (!err)
		err = map_peers(c);
	if (err)
		goto fail;
	coll_cma_probe(c); /* its verdict published before value 2 */
	c->spin_ns = agile__coll_spin_ns(spin_asked, nr_members,
					 procs_count_cpus((void *const *)c->seg,
							  nr_members),
					 &c->yield_ns);
	/*
	 * value 2: every member has read the masks, the segment ids and the
	 * orders, and published its CMA verdict; the areas are free, and
	 * every line of bank 0 holds 2
	 */
	err = rendezvous(c, 2, deadline);
	if (err)
		goto fail;
	coll_cma_agree(c);
	take_rank(c);
	c->seq_base = 2;
	*out = &c->base;
	return 0;
fail:
	procs_free(c);
	return err;
}
