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
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime_impl.h"

/*
 * How often a runner with entries it could not take looks again: for
 * events of other queues (nothing here wakes it for those) and for a GPU
 * turning busy (its doorbells change without the queue's lock).
 */
#define RT_RECHECK_NS 1000000L

struct rt_entry {
	struct rt_entry *next;
	struct agile_rt_kernel *kernel;
	uint32_t threads;
	uint32_t groups;
	int32_t priority;
	uint32_t place;
	uint32_t nr_args;
	struct agile_rt_arg args[AGILE_RT_MAX_ARGS];
	/*
	 * What it waits for, a reference each; @strict[i]: a failure of
	 * deps[i] fails the entry (after-events, read after write), else
	 * it only orders (write after read, write after write of an entry
	 * that does not read the buffer: it overwrites what failed).
	 */
	struct agile_rt_event **deps;
	bool *strict;
	uint32_t nr_deps;
	uint32_t deps_cap;
	bool ready; /* every dependency completed, all succeeded */
	struct agile_rt_event *ev; /* the entry's reference */
	/* Under the queue's lock: */
	uint32_t next_group; /* groups handed to runners */
	uint32_t done_groups;
	int error; /* the first failed group's */
};

struct rt_runner {
	struct agile_rt_queue *q;
	uint32_t dev; /* index in ctx->devs */
	uint32_t eu;
	pthread_t thread;
	/* CPU devices: the task register the runner runs groups from. */
	struct agile_task_reg *reg;
	uint32_t nr_args;
};

struct agile_rt_queue {
	struct rt_ctx *ctx; /* the queue's context reference */
	struct agile_rt_place_opts place;
	/*
	 * @lock guards the entry list, @stopping and the counters; @cond
	 * wakes runners (an enqueue, an entry finished, destroy).  Never
	 * held across an EU wait or a user callback.
	 */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct rt_entry *head, **tail;
	bool stopping;
	uint64_t enqueued, completed, failed, dep_failed, pending;
	uint64_t cpu_fallback;
	uint32_t nr_runners;
	struct rt_runner *runners;
};

static int add_dep(struct rt_entry *e, struct agile_rt_event *ev, bool strict)
{
	for (uint32_t i = 0; i < e->nr_deps; i++)
		if (e->deps[i] == ev) {
			e->strict[i] |= strict;
			return 0;
		}
	if (e->nr_deps == e->deps_cap) {
		uint32_t cap = e->deps_cap ? 2 * e->deps_cap : 8;
		void *p = realloc(e->deps, cap * sizeof(*e->deps));

		if (!p)
			return -ENOMEM;
		e->deps = p;
		p = realloc(e->strict, cap * sizeof(*e->strict));
		if (!p)
			return -ENOMEM;
		e->strict = p;
		e->deps_cap = cap;
	}
	agile_rt_event_retain(ev);
	e->strict[e->nr_deps] = strict;
	e->deps[e->nr_deps++] = ev;
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
		agile_rt_event_release(e->deps[i]);
	for (uint32_t i = 0; i < e->nr_args; i++)
		if (e->args[i].kind == AGILE_RT_ARG_BUFFER)
			agile__rt_buffer_put(e->args[i].buf);
	if (e->ev)
		agile_rt_event_release(e->ev);
	free(e->deps);
	free(e->strict);
	free(e);
}

/* 0 ready, 1 waiting, -AGILE_E_DEPENDENCY a dependency failed. */
static int deps_state(struct rt_entry *e)
{
	int waiting = 0;

	if (e->ready)
		return 0;
	for (uint32_t i = 0; i < e->nr_deps; i++) {
		int s = agile_rt_event_status(e->deps[i]);

		if (s == AGILE_RT_PENDING)
			waiting = 1;
		else if (s && e->strict[i])
			return -AGILE_E_DEPENDENCY;
	}
	e->ready = !waiting;
	return waiting;
}

static void unlink_entry(struct agile_rt_queue *q, struct rt_entry *e)
{
	struct rt_entry **pp = &q->head;

	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
	if (q->tail == &e->next)
		q->tail = pp;
	q->pending--;
	q->completed++;
}

/*
 * The best group runner @r may take now: the highest priority among
 * ready entries its device may run (ties: the earliest enqueued).  An
 * entry found with a failed dependency is unlinked and returned in
 * *@dead instead.  *@ready_groups: the groups of every ready entry not
 * yet handed out, whoever may run them.  Caller holds the queue's lock.
 */
static struct rt_entry *pick(struct agile_rt_queue *q,
			     const struct rt_runner *r, bool *fallback,
			     struct rt_entry **dead, uint64_t *ready_groups)
{
	struct rt_entry *best = NULL;
	bool best_fb = false;

	*dead = NULL;
	*ready_groups = 0;
	for (struct rt_entry *e = q->head; e; e = e->next) {
		bool fb;
		int st;

		if (e->next_group == e->groups)
			continue;
		st = deps_state(e);
		if (st < 0) {
			unlink_entry(q, e);
			q->dep_failed++;
			*dead = e;
			return NULL;
		}
		if (st)
			continue;
		*ready_groups += e->groups - e->next_group;
		if (best && e->priority <= best->priority)
			continue;
		if (!agile__rt_place_allows(q->ctx, r->dev, e->kernel, e->place,
					    &q->place, &fb))
			continue;
		best = e;
		best_fb = fb;
	}
	*fallback = best_fb;
	return best;
}

/*
 * Runs group @g of @e on runner @r's EU; the group's outcome.
 *
 * A GPU device's runner posts the group through its EU's doorbell and
 * waits.  A CPU device's runner runs it itself, on its own thread, with
 * the EU's code (agile_eu_run_inline) from a task register of its own:
 * posting to a CPU EU thread and waiting for it would put two threads on
 * every core the device has, the waiting one spinning on the core the
 * working one needs (measured: 162 us a task in a chain on two cores,
 * where PoCL took 2 us).  inline_busy then stands for the doorbells.
 */
static int run_group(struct rt_runner *r, struct rt_entry *e, uint32_t g)
{
	struct rt_dev *d = &r->q->ctx->devs[r->dev];
	int t = RT_TYPE_INDEX(d->type);
	struct agile_kernels *pool_reg;
	struct agile_task_reg *tr = r->reg;
	uint32_t nr_args = r->nr_args, lane;
	int err;

	/* The registry is the pool's: an opcode means nothing elsewhere. */
	agile_eu_pool_kernels(d->pool, &pool_reg);
	if (e->kernel->on[t].reg != pool_reg)
		return -AGILE_E_OPCODE;
	if (!tr) {
		err = agile_eu_task_reg(d->pool, r->eu, &tr, &nr_args);
		if (err)
			return err;
	}
	if (e->nr_args > nr_args)
		return -E2BIG;
	tr->opcode = e->kernel->on[t].opcode;
	tr->nr_parts = e->threads;
	tr->flags = 0;
	for (uint32_t i = 0; i < e->nr_args; i++) {
		const struct agile_rt_arg *a = &e->args[i];

		switch (a->kind) {
		case AGILE_RT_ARG_BUFFER:
			tr->args[i] = a->buf->eu_addr[r->dev] + a->value;
			break;
		case AGILE_RT_ARG_GROUP:
			tr->args[i] = g;
			break;
		default:
			tr->args[i] = a->value;
		}
	}
	if (tr != r->reg)
		return agile_eu_call(d->pool, r->eu, AGILE_TIMEOUT_INFINITE,
				     &lane);
	atomic_fetch_add_explicit(&d->inline_busy, 1, memory_order_relaxed);
	err = agile_eu_run_inline(d->pool, tr, &lane);
	atomic_fetch_sub_explicit(&d->inline_busy, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&d->inline_tasks, 1, memory_order_relaxed);
	if (err)
		atomic_fetch_add_explicit(&d->inline_failed, 1,
					  memory_order_relaxed);
	return err;
}

/* A CPU device's runner: its own task register, as big as the EU's. */
static int runner_reg(struct rt_runner *r)
{
	struct rt_dev *d = &r->q->ctx->devs[r->dev];
	struct agile_task_reg *tr;
	int err;

	if (d->eu_kind != AGILE_EU_KIND_CPU)
		return 0;
	err = agile_eu_task_reg(d->pool, r->eu, &tr, &r->nr_args);
	if (err)
		return err;
	r->reg = calloc(1, sizeof(*r->reg) + r->nr_args * sizeof(__u64));
	return r->reg ? 0 : -ENOMEM;
}

/*
 * Completes @e's event with @status and frees it.  No lock held.  The
 * runners are not woken here: the one that finished looks for work next
 * and wakes the others only when there is more than it takes
 * (runner_main), which spares a chain of dependent entries a wake-up of
 * every runner per entry.
 */
static void entry_finish(struct rt_entry *e, int status)
{
	agile__rt_event_complete(e->ev, status);
	entry_free(e);
}

static void wait_a_while(struct agile_rt_queue *q)
{
	struct timespec t;

	if (!q->head) {
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
		uint32_t g;
		int err;

		e = pick(q, r, &fallback, &dead, &ready);
		if (dead) {
			pthread_mutex_unlock(&q->lock);
			entry_finish(dead, -AGILE_E_DEPENDENCY);
			pthread_mutex_lock(&q->lock);
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
			if (q->stopping && !q->head)
				break;
			wait_a_while(q);
			continue;
		}
		g = e->next_group++;
		q->cpu_fallback += fallback;
		pthread_mutex_unlock(&q->lock);

		atomic_fetch_add_explicit(&d->groups, 1, memory_order_relaxed);
		if (fallback)
			atomic_fetch_add_explicit(&d->fallback_in, 1,
						  memory_order_relaxed);
		err = run_group(r, e, g);

		pthread_mutex_lock(&q->lock);
		if (err && !e->error)
			e->error = err;
		last = ++e->done_groups == e->groups;
		if (last) {
			unlink_entry(q, e);
			q->failed += !!e->error;
			pthread_mutex_unlock(&q->lock);
			entry_finish(e, e->error);
			pthread_mutex_lock(&q->lock);
			finished = true;
			/* The last entry gone: a stopping queue's runners leave. */
			if (q->stopping && !q->head)
				pthread_cond_broadcast(&q->cond);
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
		free(q->runners[i].reg);
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
	q->tail = &q->head;
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
	for (uint32_t i = 0; !err && i < q->nr_runners; i++)
		err = runner_reg(&q->runners[i]);
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

static int entry_check(const struct agile_rt_queue *q,
		       const struct agile_rt_entry *en)
{
	if (!en->kernel || en->kernel->ctx != q->ctx || !en->threads ||
	    en->threads > AGILE_MAX_LANES || !en->groups ||
	    en->nr_args > AGILE_RT_MAX_ARGS ||
	    en->nr_after > AGILE_RT_MAX_AFTER ||
	    en->place > AGILE_RT_PLACE_GPU_ONLY || (en->nr_args && !en->args) ||
	    (en->nr_after && !en->after))
		return -EINVAL;
	for (uint32_t i = 0; i < en->nr_after; i++)
		if (!en->after[i])
			return -EINVAL;
	for (uint32_t i = 0; i < en->nr_args; i++) {
		const struct agile_rt_arg *a = &en->args[i];

		if (a->kind > AGILE_RT_ARG_GROUP)
			return -EINVAL;
		if (a->kind == AGILE_RT_ARG_BUFFER &&
		    (!a->buf || a->buf->ctx != q->ctx || !a->access ||
		     a->access & ~(AGILE_RT_READ | AGILE_RT_WRITE) ||
		     a->value >= a->buf->bytes))
			return -EINVAL;
	}
	return agile__rt_place_possible(q->ctx, en->kernel, en->place) ?
		       0 :
		       -ENODEV;
}

int agile_rt_enqueue(struct agile_rt_queue *q,
		     const struct agile_rt_entry *entry,
		     struct agile_rt_event **event)
{
	struct rt_entry *e;
	bool was_empty;
	int err;

	if (!q || !entry)
		return -EINVAL;
	err = entry_check(q, entry);
	if (err)
		return err;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->kernel = entry->kernel;
	e->threads = entry->threads;
	e->groups = entry->groups;
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
		pthread_mutex_unlock(&q->lock);
		/*
		 * Recorded as a buffer's writer or reader already, maybe:
		 * completed as failed, so whoever depends on it fails too.
		 */
		agile__rt_event_complete(e->ev, err);
		entry_free(e);
		return err;
	}
	was_empty = !q->head;
	*q->tail = e;
	q->tail = &e->next;
	q->enqueued++;
	q->pending++;
	if (event) {
		agile_rt_event_retain(e->ev);
		*event = e->ev;
	}
	/*
	 * Runners are woken for an entry that can run (or fail) now, and
	 * when the queue was empty (they sleep without a timeout then).  One
	 * that waits for another entry is taken up by the runner that
	 * finishes that one (runner_main), or at the next look
	 * (RT_RECHECK_NS) when it waits for an event of another queue.
	 */
	if (was_empty || deps_state(e) != 1)
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
