// SPDX-License-Identifier: MIT
/*
 * eu.c - segment maps whose nodes are groups of execution units, and
 * agile_forall_eu: a registered kernel per algorithmic tile, posted
 * through the doorbell of an EU of the tile's owner.
 *
 * The scope is the threads scope (every node in this process) with its
 * home memory replaced: from the EU pool's arena (agile_eu_pool_alloc),
 * mapped for the EUs, so that a GPU EU can read and write a node's
 * segments (the device address of a home is kept beside it).
 * Owner-copies stay the core's (plain heap, field.c); on GPU EUs
 * forall_eu shows the ones its tasks read through mirrors from the same
 * arena, taken for the length of the forall and given back at its end,
 * before written fields' copies are dropped.  Nothing here maps or
 * unmaps memory itself: a GPU pool's registrations last until its
 * destroy, and the arena's chunks, mapped once, are reused by every
 * field and forall, so they stop growing.  The map must therefore be
 * destroyed before its pool.
 */
#include <agile/eu.h>
#include <agile/error.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "segmap/segmap_impl.h"

/* The EU side of a map: sc->priv of a scope whose ops are eu_ops. */
struct eu_scope {
	const struct segmap_scope_ops *threads; /* what the scope was */
	struct agile_eu_pool *eus;
	bool gpu;
	uint32_t nr_eus;
};

/*
 * One field's home memory: node q's bytes at mem[q], whole pages, mapped
 * for the EUs at eu[q].  The core sees it as the opaque struct
 * segmap_home of scope.h and hands it back to these ops only.
 */
struct eu_home {
	struct eu_scope *es;
	uint32_t nr_nodes;
	struct {
		unsigned char *mem; /* agile_eu_pool_alloc's */
		size_t bytes;
		uint64_t eu;
	} node[];
};

static struct eu_home *eu_home_of(struct segmap_home *h)
{
	return (struct eu_home *)(void *)h;
}

static const struct segmap_scope_ops eu_ops;

static struct eu_scope *eu_scope_of(const struct agile_segmap *sm)
{
	if (!sm || sm->scope->ops != &eu_ops)
		return NULL;
	return sm->scope->priv;
}

static void eu_home_free(struct segmap_scope *sc, struct segmap_home *handle)
{
	struct eu_home *h = eu_home_of(handle);

	(void)sc;
	for (uint32_t q = 0; q < h->nr_nodes; q++)
		agile_eu_pool_free(h->es->eus, h->node[q].mem);
	free(h);
}

static int eu_home_alloc(struct segmap_scope *sc, const uint64_t *bytes,
			 struct segmap_home **out)
{
	struct eu_scope *es = sc->priv;
	struct eu_home *h;
	int err = 0;

	h = calloc(1, sizeof(*h) + sc->nr_nodes * sizeof(h->node[0]));
	if (!h)
		return -ENOMEM;
	h->es = es;
	h->nr_nodes = sc->nr_nodes;
	for (uint32_t q = 0; q < sc->nr_nodes && !err; q++) {
		void *mem = NULL;

		if ((uint64_t)(size_t)bytes[q] != bytes[q]) {
			err = -ENOMEM;
			break;
		}
		/* zeroed, whole pages, mapped: a node without bytes gets one */
		h->node[q].bytes = bytes[q] ? (size_t)bytes[q] : 1;
		err = agile_eu_pool_alloc(es->eus, h->node[q].bytes, &mem,
					  &h->node[q].eu);
		h->node[q].mem = mem;
	}
	if (err) {
		eu_home_free(sc, (struct segmap_home *)(void *)h);
		return err;
	}
	*out = (struct segmap_home *)(void *)h;
	return 0;
}

static void *eu_home_addr(struct segmap_home *handle, uint32_t node)
{
	struct eu_home *h = eu_home_of(handle);

	return node < h->nr_nodes ? h->node[node].mem : NULL;
}

static int eu_home_get(struct segmap_home *handle, uint32_t node, uint64_t off,
		       void *dst, size_t bytes)
{
	memcpy(dst, eu_home_of(handle)->node[node].mem + off, bytes);
	return 0;
}

static int eu_home_put(struct segmap_home *handle, uint32_t node, uint64_t off,
		       const void *src, size_t bytes)
{
	memcpy(eu_home_of(handle)->node[node].mem + off, src, bytes);
	return 0;
}

static int eu_barrier(struct segmap_scope *sc)
{
	struct eu_scope *es = sc->priv;

	return es->threads->barrier(sc);
}

static int eu_agree(struct segmap_scope *sc, int err)
{
	struct eu_scope *es = sc->priv;

	return es->threads->agree(sc, err);
}

static int eu_allreduce(struct segmap_scope *sc, const void *send, void *recv,
			size_t count, enum agile_coll_type type,
			enum agile_coll_op op)
{
	struct eu_scope *es = sc->priv;

	return es->threads->allreduce(sc, send, recv, count, type, op);
}

static void eu_destroy(struct segmap_scope *sc)
{
	struct eu_scope *es = sc->priv;

	sc->ops = es->threads;
	sc->priv = NULL;
	free(es);
	sc->ops->destroy(sc);
}

static const struct segmap_scope_ops eu_ops = {
	.name = "eus",
	.home_alloc = eu_home_alloc,
	.home_free = eu_home_free,
	.home_addr = eu_home_addr,
	.home_get = eu_home_get,
	.home_put = eu_home_put,
	.barrier = eu_barrier,
	.agree = eu_agree,
	.allreduce = eu_allreduce,
	.destroy = eu_destroy,
};

int agile_segmap_eus(struct agile_eu_pool *eus, uint32_t nr_nodes,
		     struct agile_sched *pool, struct agile_segmap **out)
{
	struct agile_eu_pool_info info;
	struct segmap_scope *sc;
	struct eu_scope *es;
	int nr_eus, err;

	segmap_why_clear();
	if (!eus || !out)
		return segmap_fail(-EINVAL, "segmap eus: NULL argument");
	nr_eus = agile_eu_pool_nr_eus(eus);
	if (nr_eus < 1 || agile_eu_pool_info(eus, &info))
		return segmap_fail(-EINVAL, "segmap eus: a pool without EUs");
	if (nr_nodes < 1 || nr_nodes > (uint32_t)nr_eus ||
	    nr_nodes > AGILE_SEGMAP_MAX_NODES)
		return segmap_fail(
			-EINVAL,
			"segmap eus: %u nodes is not 1..%d (one EU each)",
			nr_nodes, nr_eus);
	es = calloc(1, sizeof(*es));
	if (!es)
		return -ENOMEM;
	err = segmap_scope_threads(nr_nodes, &sc);
	if (err) {
		free(es);
		return err;
	}
	es->threads = sc->ops;
	es->eus = eus;
	es->gpu = info.kind == AGILE_EU_KIND_GPU;
	es->nr_eus = (uint32_t)nr_eus;
	sc->ops = &eu_ops;
	sc->priv = es;
	sc->kind = es->gpu ? AGILE_NODE_GPU : AGILE_NODE_CPU;
	return agile__segmap_create(sc, pool, out);
}

/* Node @node's EUs: the split agile/offload.h makes among workers. */
static void node_eus(const struct eu_scope *es, uint32_t nr_nodes,
		     uint32_t node, uint32_t *first, uint32_t *count)
{
	uint32_t per = es->nr_eus / nr_nodes, extra = es->nr_eus % nr_nodes;

	*first = node * per + (node < extra ? node : extra);
	*count = per + (node < extra);
}

int agile_segmap_node_eus(const struct agile_segmap *sm, uint32_t node,
			  uint32_t *first, uint32_t *count)
{
	const struct eu_scope *es = eu_scope_of(sm);
	uint32_t f, c;

	segmap_why_clear();
	if (!es)
		return segmap_fail(-EINVAL,
				   "segmap eus: not a map of agile_segmap_eus");
	if (node >= sm->scope->nr_nodes)
		return segmap_fail(-EINVAL, "segmap eus: node %u of %u", node,
				   sm->scope->nr_nodes);
	node_eus(es, sm->scope->nr_nodes, node, &f, &c);
	if (first)
		*first = f;
	if (count)
		*count = c;
	return 0;
}

/* ---- agile_forall_eu ---- */

/*
 * A copy a GPU forall's tasks read: the core's copy (@copy, heap) shown
 * to the EUs through @mirror, from the pool's arena for this forall, at
 * @eu.  Heap copies are not mapped themselves: they share pages with
 * other allocations, GPU runtimes register whole pages, refusing a page
 * that is registered already, and nothing can be unregistered while the
 * GPU EUs live (agile_eu_pool_unmap).
 */
struct eu_mapping {
	unsigned char *copy;
	unsigned char *mirror;
	uint64_t eu;
};

struct eu_run {
	struct agile_segmap *sm;
	struct eu_scope *es;
	struct agile_field *iter;
	const struct agile_forall_eu_opts *opts;
	const struct agile_forall_field *fields;
	uint32_t nr_fields;
	uint32_t nr_args;
	_Atomic int err;
	_Atomic uint64_t tasks;
	pthread_mutex_t lock; /* guards maps, nr_maps, max_maps */
	struct eu_mapping *maps;
	size_t nr_maps, max_maps;
};

static void run_record(struct eu_run *run, int err)
{
	int none = 0;

	if (err)
		atomic_compare_exchange_strong_explicit(&run->err, &none, err,
							memory_order_relaxed,
							memory_order_relaxed);
}

/*
 * The EU address of copy @copy of @bytes: its mirror's, taken from the
 * arena and filled at the first use in this forall.  Copies are read-only during a
 * forall (a node writes only its own blocks), so the mirror stays equal.
 */
static int map_copy(struct eu_run *run, unsigned char *copy, size_t bytes,
		    uint64_t *eu)
{
	struct eu_mapping m = { copy, NULL, 0 };
	void *mirror;
	int err = 0;

	pthread_mutex_lock(&run->lock);
	for (size_t i = 0; i < run->nr_maps; i++)
		if (run->maps[i].copy == copy) {
			*eu = run->maps[i].eu;
			goto out;
		}
	if (run->nr_maps == run->max_maps) {
		size_t n = run->max_maps ? 2 * run->max_maps : 16;
		struct eu_mapping *more = realloc(run->maps, n * sizeof(*more));

		if (!more) {
			err = -ENOMEM;
			goto out;
		}
		run->maps = more;
		run->max_maps = n;
	}
	err = agile_eu_pool_alloc(run->es->eus, bytes ? bytes : 1, &mirror,
				  &m.eu);
	if (err)
		goto out;
	m.mirror = mirror;
	memcpy(m.mirror, copy, bytes);
	run->maps[run->nr_maps++] = m;
	*eu = m.eu;
out:
	pthread_mutex_unlock(&run->lock);
	return err;
}

static void unmap_copies(struct eu_run *run)
{
	for (size_t i = 0; i < run->nr_maps; i++)
		agile_eu_pool_free(run->es->eus, run->maps[i].mirror);
	free(run->maps);
	run->maps = NULL;
	run->nr_maps = run->max_maps = 0;
}

/*
 * The EU address of @host, a tile of block @b of @f as node @node got it:
 * in the block's home, or in @node's copy of it.
 */
static int eu_address(struct eu_run *run, struct agile_field *f, uint64_t b,
		      uint32_t node, unsigned char *host, uint64_t *eu)
{
	struct segmap_store *st = f->st;
	const struct segmap_block *blk = &st->blocks[b];
	struct eu_home *h = eu_home_of(st->home);
	_Atomic(unsigned char *) *tab;
	unsigned char *copy;
	uint64_t bytes = st->elem_size, base;
	int err;

	if (!run->es->gpu) {
		*eu = (uint64_t)(uintptr_t)host;
		return 0;
	}
	if (host >= h->node[blk->home].mem &&
	    host < h->node[blk->home].mem + h->node[blk->home].bytes) {
		*eu = h->node[blk->home].eu +
		      (uint64_t)(host - h->node[blk->home].mem);
		return 0;
	}
	/* pairs with field.c's release stores publishing a copy */
	tab = atomic_load_explicit(&st->copies[node], memory_order_acquire);
	copy = tab ? atomic_load_explicit(&tab[b], memory_order_acquire) : NULL;
	for (uint32_t d = 0; d < st->rank; d++)
		bytes *= blk->grid.extent.n[d];
	if (!copy || host < copy || host >= copy + bytes)
		return segmap_fail(
			-EINVAL,
			"forall eu: a tile of block %llu is in no memory of node %u",
			(unsigned long long)b, node);
	err = map_copy(run, copy, (size_t)bytes, &base);
	if (err)
		return err;
	*eu = base + (uint64_t)(host - copy);
	return 0;
}

/* Field @k's tile for the iterated tile @tidx (its extent @ext). */
static int field_tile(struct eu_run *run, uint32_t k, struct agile_acc *acc,
		      const int64_t *tidx, const uint64_t *ext,
		      struct agile_eu_tile *out)
{
	uint32_t map = run->opts->tile_map ? run->opts->tile_map[k] :
					     AGILE_EU_TILE_SAME;
	uint32_t rank = acc->rank;
	int64_t idx[AGILE_SEGMAP_MAX_RANK];
	struct agile_tile t;
	int err;

	memcpy(idx, tidx, sizeof(idx));
	if (map == AGILE_EU_TILE_SWAP) {
		idx[0] = tidx[1];
		idx[1] = tidx[0];
	}
	err = agile_tile_get(acc, idx, &t);
	if (err)
		return err;
	if (map == AGILE_EU_TILE_SWAP) {
		int64_t s = t.stride[0];
		uint64_t n = t.grid.extent.n[0];

		t.stride[0] = t.stride[1];
		t.stride[1] = s;
		t.grid.extent.n[0] = t.grid.extent.n[1];
		t.grid.extent.n[1] = n;
	}
	for (uint32_t d = 0; d < rank; d++)
		if (t.grid.extent.n[d] != ext[d])
			return segmap_fail(
				-EINVAL,
				"forall eu: field %u's tile has %llu elements on axis %u, the iterated tile %llu",
				k, (unsigned long long)t.grid.extent.n[d], d,
				(unsigned long long)ext[d]);
	memset(out, 0, sizeof(*out));
	memcpy(out->stride, t.stride, rank * sizeof(t.stride[0]));
	return eu_address(run, acc->field, t.block, acc->node, t.base,
			  &out->base);
}

/* The default layout: extent, then per field base and strides. */
static int encode_default(const struct agile_forall_eu_task *task,
			  uint64_t *args, uint32_t nr_args, void *arg)
{
	uint32_t w = 0;

	(void)arg;
	if (task->rank + task->nr_fields * (1 + task->rank) > nr_args)
		return -E2BIG;
	for (uint32_t d = 0; d < task->rank; d++)
		args[w++] = task->grid.extent.n[d];
	for (uint32_t k = 0; k < task->nr_fields; k++) {
		args[w++] = task->field[k].base;
		for (uint32_t d = 0; d < task->rank; d++)
			args[w++] = (uint64_t)task->field[k].stride[d];
	}
	return 0;
}

/* Resolve tile @tidx for @node, and post it to EU @eu. */
static int post_tile(struct eu_run *run, uint32_t node, uint32_t eu,
		     struct agile_acc *acc, const int64_t *tidx,
		     uint64_t *words)
{
	const struct agile_forall_eu_opts *o = run->opts;
	struct agile_forall_eu_task task;
	struct agile_task_reg *reg;
	struct agile_tile it;
	uint32_t nr_args;
	int err;

	memset(&task, 0, sizeof(task));
	task.node = node;
	task.eu = eu;
	task.rank = acc[run->nr_fields].rank;
	task.nr_fields = run->nr_fields;
	memcpy(task.tile_idx, tidx, sizeof(task.tile_idx));
	/* the iterated field's own tile: the node's, nothing moves */
	err = agile_tile_get(&acc[run->nr_fields], tidx, &it);
	if (err)
		return err;
	task.grid = it.grid;
	for (uint32_t k = 0; k < run->nr_fields && !err; k++)
		err = field_tile(run, k, &acc[k], tidx, it.grid.extent.n,
				 &task.field[k]);
	if (err)
		return err;
	memset(words, 0, run->nr_args * sizeof(*words));
	err = (o->encode ? o->encode : encode_default)(
		&task, words, run->nr_args, o->encode ? o->encode_arg : NULL);
	if (err)
		return err;
	err = agile_eu_task_reg(run->es->eus, eu, &reg, &nr_args);
	if (err)
		return err;
	reg->opcode = o->opcode;
	reg->nr_parts = o->nr_lanes ? o->nr_lanes : 1;
	reg->flags = 0;
	for (uint32_t w = 0; w < nr_args && w < run->nr_args; w++)
		reg->args[w] = words[w];
	err = agile_eu_submit(run->es->eus, eu);
	if (!err)
		atomic_fetch_add_explicit(&run->tasks, 1, memory_order_relaxed);
	return err;
}

/* Tile @t of @count (flatten order, axis 0 fastest) after @first. */
static void tile_at(uint32_t rank, const int64_t *first, const uint64_t *count,
		    uint64_t t, int64_t *tidx)
{
	memset(tidx, 0, AGILE_SEGMAP_MAX_RANK * sizeof(*tidx));
	for (uint32_t d = 0; d < rank; d++) {
		tidx[d] = first[d] + (int64_t)(t % count[d]);
		t /= count[d];
	}
}

static int node_accessors(struct eu_run *run, uint32_t node,
			  struct agile_acc *acc)
{
	int err = 0;

	for (uint32_t k = 0; k < run->nr_fields && !err; k++)
		err = agile_acc_init(&acc[k], run->fields[k].field, node,
				     run->fields[k].mode);
	if (!err)
		err = agile_acc_init(&acc[run->nr_fields], run->iter, node,
				     AGILE_ACC_READ);
	return err;
}

/*
 * Node @node's tiles, in order, to its EUs in turn; an EU's previous
 * task is waited for before it gets the next, every one at the end.
 */
static int node_run(struct eu_run *run, uint32_t node)
{
	struct agile_acc acc[SEGMAP_FORALL_MAX_FIELDS + 1];
	struct agile_tile_cursor cur;
	uint32_t first, count, turn = 0;
	uint64_t *words;
	bool *busy;
	int err;

	node_eus(run->es, run->sm->scope->nr_nodes, node, &first, &count);
	busy = calloc(count, sizeof(*busy));
	words = calloc(run->nr_args ? run->nr_args : 1, sizeof(*words));
	err = busy && words ? node_accessors(run, node, acc) : -ENOMEM;
	memset(&cur, 0, sizeof(cur));
	while (!err && !atomic_load_explicit(&run->err, memory_order_relaxed)) {
		uint64_t nr_tiles = 1;

		err = agile_tile_reset(&cur, run->iter, node);
		if (err == -ENOENT) {
			err = 0;
			break;
		}
		for (uint32_t d = 0; d < run->iter->grid.extent.rank; d++)
			nr_tiles *= cur.count[d];
		for (uint64_t t = 0; t < nr_tiles && !err; t++) {
			uint32_t e = turn++ % count;
			int64_t tidx[AGILE_SEGMAP_MAX_RANK];

			if (busy[e]) {
				busy[e] = false;
				err = agile_eu_wait(run->es->eus, first + e,
						    AGILE_TIMEOUT_INFINITE,
						    NULL);
				if (err)
					break;
			}
			tile_at(run->iter->grid.extent.rank, cur.first,
				cur.count, t, tidx);
			err = post_tile(run, node, first + e, acc, tidx, words);
			busy[e] = !err;
		}
	}
	for (uint32_t e = 0; busy && e < count; e++) {
		int werr;

		if (!busy[e])
			continue;
		werr = agile_eu_wait(run->es->eus, first + e,
				     AGILE_TIMEOUT_INFINITE, NULL);
		if (!err)
			err = werr;
	}
	free(busy);
	free(words);
	run_record(run, err);
	return err;
}

static int nodes_body(int64_t lo, int64_t hi, void *arg)
{
	struct eu_run *run = arg;
	int err = 0;

	for (int64_t q = lo; q < hi; q++) {
		int e = node_run(run, (uint32_t)q);

		if (!err)
			err = e;
	}
	return err;
}

static int forall_eu_check(struct agile_segmap *sm, struct agile_field *iter,
			   const struct agile_forall_eu_opts *opts,
			   const struct agile_forall_field *fields,
			   uint32_t nr_fields)
{
	const struct agile_kernel *kernel;
	struct agile_kernels *reg;

	if (!sm || !iter || !opts || (nr_fields && !fields))
		return segmap_fail(-EINVAL, "forall eu: NULL argument");
	if (!eu_scope_of(sm))
		return segmap_fail(-EINVAL,
				   "forall eu: not a map of agile_segmap_eus");
	if (nr_fields > SEGMAP_FORALL_MAX_FIELDS)
		return segmap_fail(-EINVAL, "forall eu: %u fields, at most %u",
				   nr_fields, SEGMAP_FORALL_MAX_FIELDS);
	if (opts->nr_lanes > AGILE_MAX_LANES)
		return segmap_fail(-EINVAL, "forall eu: %u lanes, at most %u",
				   opts->nr_lanes, AGILE_MAX_LANES);
	for (uint32_t i = 0; i < 4; i++)
		if (opts->reserved[i])
			return segmap_fail(-EINVAL,
					   "forall eu: reserved options set");
	if (iter->st->sm != sm)
		return segmap_fail(
			-EINVAL,
			"forall eu: the iterated field is on another segment map");
	for (uint32_t k = 0; k < nr_fields; k++) {
		uint32_t map = opts->tile_map ? opts->tile_map[k] :
						AGILE_EU_TILE_SAME;

		if (!fields[k].field || fields[k].field->st->sm != sm ||
		    fields[k].field->grid.extent.rank != iter->grid.extent.rank)
			return segmap_fail(
				-EINVAL,
				"forall eu: field %u is NULL, on another segment map or of another rank",
				k);
		if (!fields[k].mode || (fields[k].mode & ~AGILE_ACC_RW))
			return segmap_fail(-EINVAL,
					   "forall eu: field %u: mode %#x", k,
					   fields[k].mode);
		if (map > AGILE_EU_TILE_SWAP ||
		    (map == AGILE_EU_TILE_SWAP && iter->grid.extent.rank < 2))
			return segmap_fail(-EINVAL,
					   "forall eu: field %u: tile map %u",
					   k, map);
	}
	if (agile_eu_pool_kernels(eu_scope_of(sm)->eus, &reg) ||
	    agile_kernels_lookup(reg, opts->opcode, &kernel))
		return segmap_fail(
			-AGILE_E_OPCODE,
			"forall eu: no kernel registered at opcode %u",
			opts->opcode);
	return 0;
}

int agile_forall_eu(struct agile_segmap *sm, struct agile_field *iter,
		    const struct agile_forall_eu_opts *opts,
		    const struct agile_forall_field *fields, uint32_t nr_fields,
		    struct agile_forall_stats *stats)
{
	struct agile_tile_cursor probe;
	struct agile_task_reg *reg;
	struct eu_run run;
	int err;

	segmap_why_clear();
	err = forall_eu_check(sm, iter, opts, fields, nr_fields);
	if (err)
		return err;
	/* the cursor refuses what forall_eu cannot iterate, with a why */
	memset(&probe, 0, sizeof(probe));
	err = agile_tile_reset(&probe, iter, 0);
	if (err && err != -ENOENT)
		return err;
	memset(&run, 0, sizeof(run));
	run.sm = sm;
	run.es = eu_scope_of(sm);
	run.iter = iter;
	run.opts = opts;
	run.fields = fields;
	run.nr_fields = nr_fields;
	atomic_init(&run.err, 0);
	atomic_init(&run.tasks, 0);
	/* every register has the size of the device's: set even on -EBUSY */
	agile_eu_task_reg(run.es->eus, 0, &reg, &run.nr_args);
	if (!opts->encode &&
	    iter->grid.extent.rank + nr_fields * (1 + iter->grid.extent.rank) >
		    run.nr_args)
		return segmap_fail(
			-E2BIG,
			"forall eu: %u fields of rank %u need %u argument words, a task register holds %u",
			nr_fields, iter->grid.extent.rank,
			iter->grid.extent.rank +
				nr_fields * (1 + iter->grid.extent.rank),
			run.nr_args);
	pthread_mutex_init(&run.lock, NULL);
	if (sm->pool)
		err = agile_sched_parallel_for(sm->pool, 0, sm->scope->nr_nodes,
					       1, nodes_body, &run);
	else
		err = nodes_body(0, sm->scope->nr_nodes, &run);
	if (!err)
		err = atomic_load(&run.err);
	/* every task has been waited for: nothing points at a copy now */
	unmap_copies(&run);
	pthread_mutex_destroy(&run.lock);
	for (uint32_t k = 0; k < nr_fields; k++)
		if (fields[k].mode & AGILE_ACC_WRITE)
			segmap_store_drop_copies(fields[k].field->st);
	if (stats) {
		stats->calls = atomic_load(&run.tasks);
		stats->steals = 0;
	}
	return err;
}
