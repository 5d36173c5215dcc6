// SPDX-License-Identifier: MIT
/*
 * queue.c - the queue: entries with priorities, explicit and data-flow
 * dependencies, and one runner thread per EU of the context that takes
 * the best ready group it may run (placement.c), posts it to its EU and
 * waits for it.
 */
#define _GNU_SOURCE
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/runtime.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels_impl.h"
#include "runtime_impl.h"

/* run_range hands the lanes functions its whole argument array. */
_Static_assert(AGILE_RT_MAX_ARGS >= AGILE__LANES_ARGS,
	       "the lanes functions read AGILE__LANES_ARGS words");

/*
 * How often a runner with entries it could not take looks again: for
 * events of other queues (nothing here wakes it for those) and for a GPU
 * turning busy (its doorbells change without the queue's lock).
 */
#define RT_RECHECK_NS 1000000L

/*
 * Where an entry stands; it changes under the queue's lock.
 *
 *   BLOCKED  waits for entries of this queue only (@nr_links), in no list
 *   WAITING  waits for other events too (@nr_foreign): the waiting list,
 *            looked at by every pick
 *   READY    groups left to hand out: the ready list
 *   DEAD     a strict dependency failed: the dead list, a runner fails it
 *   RUNNING  every group handed out (or being failed): in no list
 *   FINISHED event completed, dependents released, yet still in the
 *            dependents list of an entry that has not finished
 *            (@nr_links): that entry's release frees it
 */
enum rt_state {
	RT_BLOCKED,
	RT_WAITING,
	RT_READY,
	RT_DEAD,
	RT_RUNNING,
	RT_FINISHED
};

/*
 * One dependency of an entry: the event (a reference) and, when it is the
 * event of a pending entry of the same queue, the link in that entry's
 * list of dependents.  Lives in the dependent's @deps array, which does
 * not move once the entry is enqueued.
 */
struct rt_dep {
	struct agile_rt_event *ev;
	struct rt_entry *entry; /* the dependent */
	struct rt_dep *next; /* in the upstream entry's @dependents */
	/*
	 * A failure fails the entry (after-events, read after write), else
	 * it only orders (write after read, write after write of an entry
	 * that does not read the buffer: it overwrites what failed).
	 */
	bool strict;
	/* Pending and of no entry of this queue: the waiting list's. */
	bool foreign;
};

struct rt_entry {
	/* In the ready, waiting or dead list (by @state); queue's lock. */
	struct rt_entry *next, *prev;
	struct agile_rt_kernel *kernel;
	uint32_t threads; /* a group's, x * y * z */
	uint32_t block[3]; /* a group's shape */
	uint32_t grid[3]; /* the groups' shape */
	uint64_t groups; /* grid x * y * z */
	uint32_t local_bytes;
	bool cpu_only; /* GPU EUs cannot run it: its shape or local memory */
	int32_t priority;
	uint32_t place;
	uint32_t nr_args;
	struct agile_rt_arg args[AGILE_RT_MAX_ARGS];
	struct rt_dep *deps;
	uint32_t nr_deps;
	uint32_t deps_cap;
	struct agile_rt_event *ev; /* the entry's reference */
	/* Under the queue's lock: */
	uint64_t seq; /* enqueue order, for priority ties */
	enum rt_state state;
	/* Dependencies on entries of this queue not yet released. */
	uint32_t nr_links;
	/* Other pending events it waits for (the waiting list's). */
	uint32_t nr_foreign;
	/*
	 * Its dependents in this queue, released when it finishes, in
	 * enqueue order (so that those of one priority join the ready list
	 * at its end).
	 */
	struct rt_dep *dependents, **dependents_tail;
	uint64_t next_group; /* groups handed to runners */
	uint64_t done_groups;
	int error; /* the first failed group's */
};

/* A list of entries, linked through their @next and @prev. */
struct rt_list {
	struct rt_entry *first, *last;
};

struct rt_runner {
	struct agile_rt_queue *q;
	uint32_t dev; /* index in ctx->devs */
	uint32_t eu;
	pthread_t thread;
	/* CPU devices: the groups' states, shared and local memory. */
	void *scratch;
	size_t scratch_size;
};

struct agile_rt_queue {
	struct rt_ctx *ctx; /* the queue's context reference */
	struct agile_rt_place_opts place;
	/*
	 * @lock guards the lists, every pending entry's fields marked so,
	 * the entries' events' bindings (agile__rt_event_bind), @stopping
	 * and the counters; @cond wakes runners (an enqueue, an entry
	 * finished, destroy).  Never held across an EU wait or a user
	 * callback; the context's lock nests inside it.
	 */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* By priority, highest first, then enqueue order. */
	struct rt_list ready;
	struct rt_list waiting;
	struct rt_list dead;
	/* Groups of the ready list's entries not handed out yet. */
	uint64_t ready_groups;
	bool stopping;
	uint64_t enqueued, completed, failed, dep_failed, pending;
	uint64_t cpu_fallback;
	uint32_t nr_runners;
	struct rt_runner *runners;
};

static int add_dep(struct rt_entry *e, struct agile_rt_event *ev, bool strict)
{
	for (uint32_t i = 0; i < e->nr_deps; i++)
		if (e->deps[i].ev == ev) {
			e->deps[i].strict |= strict;
			return 0;
		}
	if (e->nr_deps == e->deps_cap) {
		uint32_t cap = e->deps_cap ? 2 * e->deps_cap : 8;
		void *p = realloc(e->deps, cap * sizeof(*e->deps));

		if (!p)
			return -ENOMEM;
		e->deps = p;
		e->deps_cap = cap;
	}
	agile_rt_event_retain(ev);
	e->deps[e->nr_deps++] =
		(struct rt_dep){ .ev = ev, .entry = e, .strict = strict };
	return 0;
}

static int add_reader(struct agile_rt_buffer *b, struct agile_rt_event *ev)
{
	uint32_t kept = 0;

	/* Readers that finished well constrain no later writer. */
	for (uint32_t i = 0; i < b->nr_readers; i++) {
		if (agile_rt_event_status(b->readers[i]) == 0)
			agile_rt_event_release(b->readers[i]);
		else
			b->readers[kept++] = b->readers[i];
	}
	b->nr_readers = kept;
	if (b->nr_readers == b->readers_cap) {
		uint32_t cap = b->readers_cap ? 2 * b->readers_cap : 8;
		void *p = realloc(b->readers, cap * sizeof(*b->readers));

		if (!p)
			return -ENOMEM;
		b->readers = p;
		b->readers_cap = cap;
	}
	agile_rt_event_retain(ev);
	b->readers[b->nr_readers++] = ev;
	return 0;
}

/*
 * The data-flow dependencies of @e (read after write, write after write,
 * write after read), then @e recorded as the buffers' newest writer or
 * reader.  Caller holds the context's lock.
 */
static int data_flow(struct rt_entry *e)
{
	int err = 0;

	for (uint32_t i = 0; i < e->nr_args && !err; i++) {
		struct agile_rt_buffer *b = e->args[i].buf;

		if (e->args[i].kind != AGILE_RT_ARG_BUFFER)
			continue;
		if (b->last_writer)
			err = add_dep(e, b->last_writer,
				      e->args[i].access & AGILE_RT_READ);
		for (uint32_t r = 0; r < b->nr_readers && !err &&
				     e->args[i].access & AGILE_RT_WRITE;
		     r++)
			err = add_dep(e, b->readers[r], false);
	}
	for (uint32_t i = 0; i < e->nr_args && !err; i++) {
		struct agile_rt_buffer *b = e->args[i].buf;

		if (e->args[i].kind != AGILE_RT_ARG_BUFFER)
			continue;
		if (e->args[i].access & AGILE_RT_WRITE) {
			if (b->last_writer)
				agile_rt_event_release(b->last_writer);
			agile_rt_event_retain(e->ev);
			b->last_writer = e->ev;
			for (uint32_t r = 0; r < b->nr_readers; r++)
				agile_rt_event_release(b->readers[r]);
			b->nr_readers = 0;
		} else {
			err = add_reader(b, e->ev);
		}
	}
	return err;
}

static void entry_free(struct rt_entry *e)
{
	for (uint32_t i = 0; i < e->nr_deps; i++)
		agile_rt_event_release(e->deps[i].ev);
	for (uint32_t i = 0; i < e->nr_args; i++)
		if (e->args[i].kind == AGILE_RT_ARG_BUFFER)
			agile__rt_buffer_put(e->args[i].buf);
	if (e->ev)
		agile_rt_event_release(e->ev);
	free(e->deps);
	free(e);
}

static void list_remove(struct rt_list *l, struct rt_entry *e)
{
	*(e->prev ? &e->prev->next : &l->first) = e->next;
	*(e->next ? &e->next->prev : &l->last) = e->prev;
	e->next = e->prev = NULL;
}

static void list_append(struct rt_list *l, struct rt_entry *e)
{
	e->next = NULL;
	e->prev = l->last;
	*(l->last ? &l->last->next : &l->first) = e;
	l->last = e;
}

/* Whether @a runs before @b: higher priority, then enqueued earlier. */
static bool runs_before(const struct rt_entry *a, const struct rt_entry *b)
{
	return a->priority > b->priority ||
	       (a->priority == b->priority && a->seq < b->seq);
}

/*
 * @e into the ready list, in its place.  Looked for from the end: a new
 * entry of the usual priority goes last at once.  Queue's lock held.
 */
static void make_ready(struct agile_rt_queue *q, struct rt_entry *e)
{
	struct rt_entry *pos = q->ready.last;

	while (pos && runs_before(e, pos))
		pos = pos->prev;
	e->prev = pos;
	e->next = pos ? pos->next : q->ready.first;
	*(e->next ? &e->next->prev : &q->ready.last) = e;
	*(pos ? &pos->next : &q->ready.first) = e;
	e->state = RT_READY;
	q->ready_groups += e->groups - e->next_group;
}

/*
 * A strict dependency of @e failed: onto the dead list, where a runner
 * fails it.  It may still be in the dependents lists of entries not
 * finished (@nr_links): their releases leave it alone until the last
 * frees it.  Queue's lock held.
 */
static void make_dead(struct agile_rt_queue *q, struct rt_entry *e)
{
	if (e->state == RT_WAITING)
		list_remove(&q->waiting, e);
	else if (e->state != RT_BLOCKED)
		return; /* dead already, or being failed */
	list_append(&q->dead, e);
	e->state = RT_DEAD;
}

/* @e waits for nothing more (not dead): ready, or blocked by entries. */
static void unblock(struct agile_rt_queue *q, struct rt_entry *e)
{
	if (e->state == RT_WAITING)
		list_remove(&q->waiting, e);
	if (e->nr_links) {
		e->state = RT_BLOCKED;
		return;
	}
	make_ready(q, e);
}

/*
 * A new entry's dependencies, sorted once under the queue's lock: one
 * that failed fails it (dead); one on a pending entry of this queue is
 * linked into that entry's dependents (released when it finishes); any
 * other pending one makes it wait (the waiting list).  Then it is put
 * where it belongs.
 */
static void link_deps(struct agile_rt_queue *q, struct rt_entry *e)
{
	for (uint32_t i = 0; i < e->nr_deps; i++) {
		int s = agile_rt_event_status(e->deps[i].ev);

		/*
		 * An upstream entry between completing its event and
		 * releasing its dependents is still bound: it releases
		 * this one too.  Else its status is final already.
		 */
		if (s != AGILE_RT_PENDING && s && e->deps[i].strict &&
		    !agile__rt_event_entry(e->deps[i].ev, q)) {
			list_append(&q->dead, e);
			e->state = RT_DEAD;
			return;
		}
	}
	for (uint32_t i = 0; i < e->nr_deps; i++) {
		struct rt_dep *d = &e->deps[i];
		struct rt_entry *up = agile__rt_event_entry(d->ev, q);

		if (up) {
			d->next = NULL;
			*up->dependents_tail = d;
			up->dependents_tail = &d->next;
			e->nr_links++;
		} else if (agile_rt_event_status(d->ev) == AGILE_RT_PENDING) {
			d->foreign = true;
			e->nr_foreign++;
		}
	}
	if (e->nr_foreign) {
		list_append(&q->waiting, e);
		e->state = RT_WAITING;
	} else {
		unblock(q, e);
	}
}

/*
 * Looks at @e's other events: each one found completed is forgotten; a
 * strict one failed makes @e dead; none left, @e is unblocked.  Queue's
 * lock held.
 */
static void foreign_wait(struct agile_rt_queue *q, struct rt_entry *e)
{
	for (uint32_t i = 0; i < e->nr_deps && e->nr_foreign; i++) {
		struct rt_dep *d = &e->deps[i];
		int s;

		if (!d->foreign)
			continue;
		s = agile_rt_event_status(d->ev);
		if (s == AGILE_RT_PENDING)
			continue;
		if (s && d->strict) {
			make_dead(q, e);
			return;
		}
		d->foreign = false;
		e->nr_foreign--;
	}
	if (!e->nr_foreign)
		unblock(q, e);
}

/*
 * @e finished with @status and its event is completed: each dependent in
 * this queue has one link less, fails when the link was strict and
 * @status an error, and is ready when nothing else keeps it.  Entries
 * that may be freed now (@e among them, unless a dependency of its own
 * still links it) are pushed on *@freeable, through @next.  Queue's lock
 * held; after this no completion touches @e.
 */
static void release(struct agile_rt_queue *q, struct rt_entry *e, int status,
		    struct rt_entry **freeable)
{
	struct rt_dep *d, *next;

	agile__rt_event_unbind(e->ev);
	for (d = e->dependents; d; d = next) {
		struct rt_entry *down = d->entry;

		next = d->next;
		down->nr_links--;
		if (status && d->strict)
			make_dead(q, down);
		if (down->nr_links)
			continue;
		if (down->state == RT_BLOCKED) {
			make_ready(q, down);
		} else if (down->state == RT_FINISHED) {
			down->next = *freeable;
			*freeable = down;
		}
	}
	e->dependents = NULL;
	e->dependents_tail = &e->dependents;
	if (e->nr_links) {
		e->state = RT_FINISHED;
	} else {
		e->next = *freeable;
		*freeable = e;
	}
}

/*
 * The best group runner @r may take now: the first entry of the ready
 * list its device may run (the highest priority, ties the earliest
 * enqueued).  Entries waiting for other queues' events are looked at
 * first; a dead entry is taken off the dead list (counted) and returned
 * in *@dead instead.  *@ready_groups: the groups of every ready entry not
 * yet handed out, whoever may run them.  Caller holds the queue's lock.
 * Work: the waiting list, plus the ready entries this runner may not run.
 */
static struct rt_entry *pick(struct agile_rt_queue *q,
			     const struct rt_runner *r, bool *fallback,
			     struct rt_entry **dead, uint64_t *ready_groups)
{
	struct rt_entry *e, *next;

	for (e = q->waiting.first; e; e = next) {
		next = e->next;
		foreign_wait(q, e);
	}
	*dead = q->dead.first;
	*ready_groups = q->ready_groups;
	*fallback = false;
	if (*dead) {
		list_remove(&q->dead, *dead);
		(*dead)->state = RT_RUNNING;
		q->pending--;
		q->completed++;
		q->dep_failed++;
		return NULL;
	}
	for (e = q->ready.first; e; e = e->next)
		if (agile__rt_place_allows(q->ctx, r->dev, e->kernel,
					   e->cpu_only ? AGILE_RT_PLACE_CPU :
							 e->place,
					   &q->place, fallback))
			return e;
	*fallback = false;
	return NULL;
}

static uint64_t dim3_word(const uint32_t d[3])
{
	return AGILE_RT_DIM3_WORD(d[0], d[1], d[2]);
}

/*
 * @e's argument words as device @dev sees them for group @g, local memory
 * at @local (an EU address).
 */
static void fill_args(const struct rt_entry *e, uint32_t dev, uint64_t g,
		      uint64_t local, __u64 *out)
{
	uint32_t id[3];

	for (uint32_t i = 0; i < e->nr_args; i++) {
		const struct agile_rt_arg *a = &e->args[i];

		switch (a->kind) {
		case AGILE_RT_ARG_BUFFER:
			out[i] = a->buf->eu_addr[dev] + a->value;
			break;
		case AGILE_RT_ARG_GROUP:
			out[i] = g;
			break;
		case AGILE_RT_ARG_GROUP_ID:
			agile__group_id(e->grid, g, id);
			out[i] = dim3_word(id);
			break;
		case AGILE_RT_ARG_NR_GROUPS:
			out[i] = dim3_word(e->grid);
			break;
		case AGILE_RT_ARG_GROUP_SIZE:
			out[i] = dim3_word(e->block);
			break;
		case AGILE_RT_ARG_LOCAL:
			out[i] = local;
			break;
		default:
			out[i] = a->value;
		}
	}
}

/*
 * Runs group @g of @e on GPU runner @r's EU: posts it through the EU's
 * doorbell and waits.  The group's outcome.
 */
static int post_group(struct rt_runner *r, struct rt_entry *e, uint64_t g)
{
	struct rt_dev *d = &r->q->ctx->devs[r->dev];
	int t = RT_TYPE_INDEX(d->type);
	struct agile_kernels *pool_reg;
	struct agile_task_reg *tr;
	uint32_t nr_args, lane;
	int err;

	/* The registry is the pool's: an opcode means nothing elsewhere. */
	agile_eu_pool_kernels(d->pool, &pool_reg);
	if (e->kernel->on[t].reg != pool_reg)
		return -AGILE_E_OPCODE;
	err = agile_eu_task_reg(d->pool, r->eu, &tr, &nr_args);
	if (err)
		return err;
	if (e->nr_args > nr_args)
		return -E2BIG;
	tr->opcode = e->kernel->on[t].opcode;
	tr->nr_parts = e->threads;
	tr->flags = 0;
	fill_args(e, r->dev, g, 0, tr->args);
	return agile_eu_call(d->pool, r->eu, AGILE_TIMEOUT_INFINITE, &lane);
}

static size_t round64(size_t n)
{
	return (n + 63) / 64 * 64;
}

/*
 * Runs groups @g .. @g + @n - 1 of @e on CPU runner @r, on the runner's
 * own thread: a loop over the groups, each the kernel's lanes run by the
 * kernels layer (agile__kernels_run_group, with the lanes functions a
 * compiled program has), in the runner's scratch (the lanes' states, the
 * kernel's block-shared memory, then the entry's local memory).  Posting
 * to a CPU EU thread and waiting for it would put two threads on every
 * core the device has, the waiting one spinning on the core the working
 * one needs (measured: 162 us a task in a chain on two cores, where PoCL
 * took 2 us); and a group a task cost a post and the queue's lock each.
 * inline_busy stands for the doorbells.  The first failed group's error;
 * the other groups still run.
 */
static int run_range(struct rt_runner *r, struct rt_entry *e, uint64_t g,
		     uint64_t n)
{
	struct rt_dev *d = &r->q->ctx->devs[r->dev];
	int t = RT_TYPE_INDEX(d->type);
	struct agile_kernels *pool_reg;
	const struct agile_kernel *k = NULL;
	__u64 args[AGILE_RT_MAX_ARGS] = { 0 };
	uint32_t varying[AGILE_RT_MAX_ARGS], nr_varying = 0;
	size_t states = 0, shared = 0, size;
	uint64_t failed = 0;
	int first = 0, err;

	agile_eu_pool_kernels(d->pool, &pool_reg);
	err = e->kernel->on[t].reg == pool_reg ?
		      agile_kernels_lookup(pool_reg, e->kernel->on[t].opcode,
					   &k) :
		      -AGILE_E_OPCODE;
	if (!err && e->threads > agile__kernels_max_group(k))
		err = -EINVAL;
	if (!err) {
		states = agile__kernels_states_size(k, e->threads);
		shared = round64(k->shared_size);
		size = round64(states + shared + e->local_bytes);
		if (size > r->scratch_size) {
			void *mem = aligned_alloc(64, size);

			if (mem) {
				free(r->scratch);
				r->scratch = mem;
				r->scratch_size = size;
			} else {
				err = -ENOMEM;
			}
		}
	}
	/* The words once; then per group only those that name the group. */
	if (!err)
		fill_args(e, r->dev, g,
			  (uint64_t)(uintptr_t)((unsigned char *)r->scratch +
						states + shared),
			  args);
	for (uint32_t i = 0; i < e->nr_args; i++)
		if (e->args[i].kind == AGILE_RT_ARG_GROUP ||
		    e->args[i].kind == AGILE_RT_ARG_GROUP_ID)
			varying[nr_varying++] = i;
	atomic_fetch_add_explicit(&d->inline_busy, 1, memory_order_relaxed);
	for (uint64_t i = 0; !err && i < n; i++) {
		unsigned char *mem = r->scratch;
		struct agile__group_result res;
		int gerr;

		for (uint32_t v = 0; i && v < nr_varying; v++) {
			uint32_t w = varying[v], id[3];

			if (e->args[w].kind == AGILE_RT_ARG_GROUP) {
				args[w] = g + i;
				continue;
			}
			agile__group_id(e->grid, g + i, id);
			args[w] = dim3_word(id);
		}
		gerr = agile__kernels_run_group(k, e->threads, args,
						AGILE_RT_MAX_ARGS, mem,
						mem + states, &res);
		if (!gerr)
			gerr = res.error;
		if (gerr) {
			failed++;
			if (!first)
				first = gerr;
		}
	}
	if (err) {
		failed = n;
		first = err;
	}
	atomic_fetch_sub_explicit(&d->inline_busy, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&d->inline_tasks, n, memory_order_relaxed);
	atomic_fetch_add_explicit(&d->inline_failed, failed,
				  memory_order_relaxed);
	return first;
}

/*
 * @e's end, by runner code holding the queue's lock, @e in no list and
 * counted finished: completes its event with @status with the lock
 * dropped (callbacks run), then releases its dependents, so that theirs
 * complete after it; frees what may be freed with the lock dropped
 * again.  The runners are not woken here (but for the last entry of a
 * stopping queue: they leave then): the one that finished looks for work
 * next and wakes the others only when there is more than it takes
 * (runner_main), which spares a chain of dependent entries a wake-up of
 * every runner per entry.
 */
static void entry_finish(struct agile_rt_queue *q, struct rt_entry *e,
			 int status)
{
	struct rt_entry *freeable = NULL, *next;

	pthread_mutex_unlock(&q->lock);
	agile__rt_event_complete(e->ev, status);
	pthread_mutex_lock(&q->lock);
	release(q, e, status, &freeable);
	pthread_mutex_unlock(&q->lock);
	for (; freeable; freeable = next) {
		next = freeable->next;
		entry_free(freeable);
	}
	pthread_mutex_lock(&q->lock);
	if (q->stopping && !q->pending)
		pthread_cond_broadcast(&q->cond);
}

/*
 * Sleeps until woken; with entries waiting for other queues' events, or
 * ready ones this runner declined (placement), only RT_RECHECK_NS.
 */
static void wait_a_while(struct agile_rt_queue *q)
{
	struct timespec t;

	if (!q->waiting.first && !q->ready.first) {
		pthread_cond_wait(&q->cond, &q->lock);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_nsec += RT_RECHECK_NS;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&q->cond, &q->lock, &t);
}

static void *runner_main(void *arg)
{
	struct rt_runner *r = arg;
	struct agile_rt_queue *q = r->q;
	struct rt_dev *d = &q->ctx->devs[r->dev];

	bool finished = false; /* since this runner last looked */

	pthread_mutex_lock(&q->lock);
	for (;;) {
		struct rt_entry *e, *dead;
		uint64_t ready;
		bool fallback, last;
		uint64_t g, n = 1;
		int err;

		e = pick(q, r, &fallback, &dead, &ready);
		if (dead) {
			entry_finish(q, dead, -AGILE_E_DEPENDENCY);
			finished = true;
			continue;
		}
		/*
		 * More ready groups than this runner takes, after an entry
		 * finished here (it may have made them ready): wake the
		 * others.  Only then, so that runners that cannot take them
		 * do not wake each other in turn.
		 */
		if (ready > (e ? 1u : 0u) && finished)
			pthread_cond_broadcast(&q->cond);
		finished = false;
		if (!e) {
			if (q->stopping && !q->pending)
				break;
			wait_a_while(q);
			continue;
		}
		/* A CPU runner takes a range: a group costs a loop turn. */
		g = e->next_group;
		if (d->eu_kind == AGILE_EU_KIND_CPU)
			n = agile__range_size(e->groups - g, q->nr_runners);
		e->next_group += n;
		q->ready_groups -= n;
		if (e->next_group == e->groups) {
			list_remove(&q->ready, e);
			e->state = RT_RUNNING;
		}
		q->cpu_fallback += fallback ? n : 0;
		pthread_mutex_unlock(&q->lock);

		atomic_fetch_add_explicit(&d->groups, n, memory_order_relaxed);
		if (fallback)
			atomic_fetch_add_explicit(&d->fallback_in, n,
						  memory_order_relaxed);
		err = d->eu_kind == AGILE_EU_KIND_CPU ? run_range(r, e, g, n) :
							post_group(r, e, g);

		pthread_mutex_lock(&q->lock);
		if (err && !e->error)
			e->error = err;
		e->done_groups += n;
		last = e->done_groups == e->groups;
		if (last) {
			q->pending--;
			q->completed++;
			q->failed += !!e->error;
			entry_finish(q, e, e->error);
			finished = true;
		}
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

static void queue_stop(struct agile_rt_queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->stopping = true;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

static void queue_free(struct agile_rt_queue *q)
{
	pthread_mutex_lock(&q->ctx->lock);
	if (q->ctx->queue == q)
		q->ctx->queue = NULL;
	pthread_mutex_unlock(&q->ctx->lock);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	agile__rt_ctx_put(q->ctx);
	for (uint32_t i = 0; q->runners && i < q->nr_runners; i++)
		free(q->runners[i].scratch);
	free(q->runners);
	free(q);
}

int agile_rt_queue_create(agile_rt_ctx handle,
			  const struct agile_rt_place_opts *place,
			  struct agile_rt_queue **out)
{
	struct agile_rt_queue *q;
	pthread_condattr_t attr;
	struct rt_ctx *ctx;
	uint32_t started = 0;
	int err = 0;

	if (!out ||
	    (place && (place->gpu_busy_pct < 1 || place->gpu_busy_pct > 100 ||
		       place->cpu_busy_pct < 1 || place->cpu_busy_pct > 100 ||
		       place->reserved[0] || place->reserved[1])))
		return -EINVAL;
	ctx = agile__rt_ctx_get(handle);
	if (!ctx)
		return -AGILE_E_INVALID_CONTEXT;
	q = calloc(1, sizeof(*q));
	if (!q) {
		agile__rt_ctx_put(ctx);
		return -ENOMEM;
	}
	q->ctx = ctx;
	pthread_mutex_init(&q->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cond, &attr);
	pthread_condattr_destroy(&attr);
	if (place)
		q->place = *place;
	else
		err = agile_rt_place_opts_init(&q->place);
	pthread_mutex_lock(&ctx->lock);
	if (!err && ctx->queue)
		err = -EBUSY;
	else if (!err)
		ctx->queue = q;
	pthread_mutex_unlock(&ctx->lock);
	for (uint32_t i = 0; i < ctx->nr_devs; i++)
		q->nr_runners += ctx->devs[i].nr_eus;
	q->runners = err ? NULL : calloc(q->nr_runners, sizeof(*q->runners));
	if (!err && !q->runners)
		err = -ENOMEM;
	for (uint32_t i = 0, n = 0; !err && i < ctx->nr_devs; i++)
		for (uint32_t eu = 0; eu < ctx->devs[i].nr_eus; eu++, n++) {
			q->runners[n] = (struct rt_runner){ .q = q,
							    .dev = i,
							    .eu = eu };
		}
	for (; !err && started < q->nr_runners; started++)
		err = -pthread_create(&q->runners[started].thread, NULL,
				      runner_main, &q->runners[started]);
	if (err) {
		if (started) {
			started--; /* the failed one */
			queue_stop(q);
			for (uint32_t i = 0; i < started; i++)
				pthread_join(q->runners[i].thread, NULL);
		}
		queue_free(q);
		return err;
	}
	*out = q;
	return 0;
}

int agile_rt_queue_destroy(struct agile_rt_queue *q)
{
	if (!q)
		return -EINVAL;
	/* The runners leave once every entry has finished. */
	queue_stop(q);
	for (uint32_t i = 0; i < q->nr_runners; i++)
		pthread_join(q->runners[i].thread, NULL);
	queue_free(q);
	return 0;
}

/* Why the calling thread's last enqueue was refused. */
static _Thread_local char rt_msg[160];

const char *agile_rt_error_message(void)
{
	return rt_msg;
}

__attribute__((format(printf, 2, 3))) static int refuse(int err,
							const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rt_msg, sizeof(rt_msg), fmt, ap);
	va_end(ap);
	return err;
}

/* @en's group and grid shapes, a 0 in y or z meaning 1. */
static void shape_of(const struct agile_rt_entry *en, uint32_t block[3],
		     uint32_t grid[3])
{
	block[0] = en->threads;
	block[1] = en->threads_y ? en->threads_y : 1;
	block[2] = en->threads_z ? en->threads_z : 1;
	grid[0] = en->groups;
	grid[1] = en->groups_y ? en->groups_y : 1;
	grid[2] = en->groups_z ? en->groups_z : 1;
}

/* Whether GPU EUs cannot run @e: more threads than lanes, local memory. */
static bool cpu_only(const struct rt_entry *e)
{
	return e->threads > AGILE_MAX_LANES || e->local_bytes;
}

/* The shape's limits (runtime.h, docs/runtime.md's table). */
static int shape_check(const struct agile_rt_entry *en)
{
	uint32_t b[3], g[3];
	uint64_t threads;

	shape_of(en, b, g);
	if (!b[0] || !g[0])
		return refuse(-EINVAL, "%s is 0", !b[0] ? "threads" : "groups");
	if (b[0] > AGILE_RT_MAX_GROUP_THREADS ||
	    b[1] > AGILE_RT_MAX_GROUP_THREADS)
		return refuse(-E2BIG,
			      "threads_%s %u over AGILE_RT_MAX_GROUP_THREADS "
			      "(%u)",
			      b[0] > AGILE_RT_MAX_GROUP_THREADS ? "x" : "y",
			      b[0] > AGILE_RT_MAX_GROUP_THREADS ? b[0] : b[1],
			      AGILE_RT_MAX_GROUP_THREADS);
	if (b[2] > AGILE_RT_MAX_GROUP_Z)
		return refuse(-E2BIG,
			      "threads_z %u over AGILE_RT_MAX_GROUP_Z (%u)",
			      b[2], AGILE_RT_MAX_GROUP_Z);
	threads = (uint64_t)b[0] * b[1] * b[2];
	if (threads > AGILE_RT_MAX_GROUP_THREADS)
		return refuse(-E2BIG,
			      "threads %u x %u x %u = %llu over "
			      "AGILE_RT_MAX_GROUP_THREADS (%u)",
			      b[0], b[1], b[2], (unsigned long long)threads,
			      AGILE_RT_MAX_GROUP_THREADS);
	if (g[1] > AGILE_RT_MAX_GROUPS_YZ || g[2] > AGILE_RT_MAX_GROUPS_YZ)
		return refuse(-E2BIG,
			      "groups_%s %u over AGILE_RT_MAX_GROUPS_YZ (%u)",
			      g[1] > AGILE_RT_MAX_GROUPS_YZ ? "y" : "z",
			      g[1] > AGILE_RT_MAX_GROUPS_YZ ? g[1] : g[2],
			      AGILE_RT_MAX_GROUPS_YZ);
	if (en->local_bytes > AGILE_RT_MAX_LOCAL)
		return refuse(-E2BIG,
			      "local_bytes %u over AGILE_RT_MAX_LOCAL (%u)",
			      en->local_bytes, AGILE_RT_MAX_LOCAL);
	return 0;
}

/*
 * The kernel's own bound on a CPU group: its max_lanes as registered (0:
 * AGILE_RT_MAX_GROUP_THREADS).
 */
static int kernel_check(const struct agile_rt_queue *q,
			const struct agile_rt_entry *en, uint32_t threads)
{
	int t = RT_TYPE_INDEX(AGILE_RT_DEVICE_CPU);
	const struct agile_kernel *k;

	(void)q;
	if (!en->kernel->on[t].opcode ||
	    agile_kernels_lookup(en->kernel->on[t].reg,
				 en->kernel->on[t].opcode, &k))
		return 0;
	if (threads > agile__kernels_max_group(k))
		return refuse(-E2BIG,
			      "threads %u over kernel %s's max_lanes (%u)",
			      threads, en->kernel->name,
			      agile__kernels_max_group(k));
	return 0;
}

static int entry_check(const struct agile_rt_queue *q,
		       const struct agile_rt_entry *en)
{
	uint32_t b[3], g[3], threads;
	int err;

	if (!en->kernel || en->kernel->ctx != q->ctx)
		return refuse(-EINVAL, "no kernel, or one of another context");
	if (en->nr_args > AGILE_RT_MAX_ARGS || (en->nr_args && !en->args))
		return refuse(-EINVAL,
			      "nr_args %u over AGILE_RT_MAX_ARGS (%u)"
			      " or no args",
			      en->nr_args, AGILE_RT_MAX_ARGS);
	if (en->nr_after > AGILE_RT_MAX_AFTER || (en->nr_after && !en->after))
		return refuse(-EINVAL,
			      "nr_after %u over AGILE_RT_MAX_AFTER (%u) or "
			      "no after",
			      en->nr_after, AGILE_RT_MAX_AFTER);
	if (en->place > AGILE_RT_PLACE_GPU_ONLY || en->reserved)
		return refuse(-EINVAL, "place %u unknown, or reserved set",
			      en->place);
	err = shape_check(en);
	if (err)
		return err;
	for (uint32_t i = 0; i < en->nr_after; i++)
		if (!en->after[i])
			return refuse(-EINVAL, "after[%u] is NULL", i);
	for (uint32_t i = 0; i < en->nr_args; i++) {
		const struct agile_rt_arg *a = &en->args[i];

		if (a->kind > AGILE_RT_ARG_LOCAL)
			return refuse(-EINVAL, "args[%u]: kind %u unknown", i,
				      a->kind);
		if (a->kind == AGILE_RT_ARG_BUFFER &&
		    (!a->buf || a->buf->ctx != q->ctx || !a->access ||
		     a->access & ~(AGILE_RT_READ | AGILE_RT_WRITE) ||
		     a->value >= a->buf->bytes))
			return refuse(-EINVAL,
				      "args[%u]: no buffer, one of another "
				      "context, bad access bits or an offset "
				      "past its end",
				      i);
	}
	shape_of(en, b, g);
	threads = b[0] * b[1] * b[2];
	if (threads > AGILE_MAX_LANES || en->local_bytes) {
		/* GPU EUs cannot run it: CPU EUs do, whatever the place. */
		if (en->place == AGILE_RT_PLACE_GPU_ONLY)
			return refuse(-E2BIG,
				      "GPU EUs run groups of at most "
				      "AGILE_MAX_LANES (%u) threads and no "
				      "local memory: threads %u, local_bytes "
				      "%u",
				      AGILE_MAX_LANES, threads,
				      en->local_bytes);
		err = kernel_check(q, en, threads);
		if (err)
			return err;
		if (!agile__rt_place_possible(q->ctx, en->kernel,
					      AGILE_RT_PLACE_CPU))
			return refuse(-ENODEV,
				      "threads %u or local memory: only CPU "
				      "EUs run it, and the context has none "
				      "with kernel %s",
				      threads, en->kernel->name);
		return 0;
	}
	err = kernel_check(q, en, threads);
	if (err)
		return err;
	return agile__rt_place_possible(q->ctx, en->kernel, en->place) ?
		       0 :
		       refuse(-ENODEV,
			      "no device of the context runs kernel %s as "
			      "placed (%u)",
			      en->kernel->name, en->place);
}

int agile_rt_enqueue(struct agile_rt_queue *q,
		     const struct agile_rt_entry *entry,
		     struct agile_rt_event **event)
{
	struct rt_entry *e;
	bool was_waiting;
	int err;

	rt_msg[0] = '\0';
	if (!q || !entry)
		return refuse(-EINVAL, "no queue or no entry");
	err = entry_check(q, entry);
	if (err)
		return err;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->kernel = entry->kernel;
	e->dependents_tail = &e->dependents;
	shape_of(entry, e->block, e->grid);
	e->threads = e->block[0] * e->block[1] * e->block[2];
	e->groups = (uint64_t)e->grid[0] * e->grid[1] * e->grid[2];
	e->local_bytes = entry->local_bytes;
	e->cpu_only = cpu_only(e);
	e->priority = entry->priority;
	e->place = entry->place;
	e->nr_args = entry->nr_args;
	if (e->nr_args)
		memcpy(e->args, entry->args, e->nr_args * sizeof(e->args[0]));
	for (uint32_t i = 0; i < e->nr_args; i++)
		if (e->args[i].kind == AGILE_RT_ARG_BUFFER)
			agile__rt_buffer_get(e->args[i].buf);
		else
			e->args[i].buf = NULL;
	e->ev = agile__rt_event_new();
	if (!e->ev) {
		entry_free(e);
		return -ENOMEM;
	}
	/* Before anyone sees the event: later entries link to @e by it. */
	agile__rt_event_bind(e->ev, q, e);
	for (uint32_t i = 0; i < entry->nr_after && !err; i++)
		err = add_dep(e, entry->after[i], true);

	pthread_mutex_lock(&q->lock);
	if (!err && q->stopping)
		err = -ESHUTDOWN;
	if (!err) {
		pthread_mutex_lock(&q->ctx->lock);
		err = data_flow(e);
		pthread_mutex_unlock(&q->ctx->lock);
	}
	if (err) {
		/* Nobody may link to it now: it is freed below. */
		agile__rt_event_unbind(e->ev);
		pthread_mutex_unlock(&q->lock);
		/*
		 * Recorded as a buffer's writer or reader already, maybe:
		 * completed as failed, so whoever depends on it fails too.
		 */
		agile__rt_event_complete(e->ev, err);
		entry_free(e);
		return err;
	}
	was_waiting = q->waiting.first;
	e->seq = q->enqueued++;
	q->pending++;
	link_deps(q, e);
	if (event) {
		agile_rt_event_retain(e->ev);
		*event = e->ev;
	}
	/*
	 * Runners are woken for an entry that can run (or fail) now, and for
	 * the first on the waiting list (they sleep without a timeout while
	 * it is empty: wait_a_while).  One blocked by entries of this queue
	 * is made ready by the runner that finishes the last of them
	 * (release), which looks for work next (runner_main).
	 */
	if (e->state == RT_READY || e->state == RT_DEAD ||
	    (e->state == RT_WAITING && !was_waiting))
		pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

int agile_rt_stats(struct agile_rt_queue *q, struct agile_rt_stats *s)
{
	struct rt_ctx *ctx;

	if (!q || !s)
		return -EINVAL;
	ctx = q->ctx;
	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&q->lock);
	s->enqueued = q->enqueued;
	s->completed = q->completed;
	s->failed = q->failed;
	s->dep_failed = q->dep_failed;
	s->pending = q->pending;
	s->cpu_fallback = q->cpu_fallback;
	pthread_mutex_unlock(&q->lock);
	s->gpu_busy_pct = q->place.gpu_busy_pct;
	s->cpu_busy_pct = q->place.cpu_busy_pct;
	s->nr_devices = ctx->nr_devs;
	for (uint32_t i = 0; i < ctx->nr_devs; i++) {
		struct agile_rt_device_stats *ds = &s->devices[i];
		const struct rt_dev *d = &ctx->devs[i];

		ds->device = d->id;
		ds->type = d->type;
		ds->eu_kind = d->eu_kind;
		ds->nr_eus = d->nr_eus;
		ds->busy = agile__rt_dev_busy(d);
		for (uint32_t eu = 0; eu < d->nr_eus; eu++) {
			struct agile_eu_stats es;

			if (agile_eu_stats(d->pool, eu, &es))
				continue;
			ds->tasks += es.tasks;
			ds->failed += es.failed;
		}
		ds->tasks += atomic_load_explicit(&d->inline_tasks,
						  memory_order_relaxed);
		ds->failed += atomic_load_explicit(&d->inline_failed,
						   memory_order_relaxed);
		ds->groups =
			atomic_load_explicit(&d->groups, memory_order_relaxed);
		ds->fallback_in = atomic_load_explicit(&d->fallback_in,
						       memory_order_relaxed);
	}
	return 0;
}
