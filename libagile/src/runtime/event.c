// SPDX-License-Identifier: MIT
/*
 * event.c - events: a status that goes from pending to final once,
 * waiters, completion callbacks, reference counts.
 */
#define _GNU_SOURCE
#include <agile/runtime.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "runtime_impl.h"

struct rt_callback {
	struct rt_callback *next;
	agile_rt_event_fn fn;
	void *arg;
};

struct agile_rt_event {
	atomic_uint refs;
	/*
	 * AGILE_RT_PENDING until agile__rt_event_complete's release store, which
	 * agile_rt_event_status's acquire load pairs with.
	 */
	atomic_int status;
	/* @lock guards @done and @callbacks; @cond waits for @done. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	struct rt_callback *callbacks, **tail;
	/*
	 * The queue whose entry this is the event of (NULL: none), set
	 * before the event is published and never changed; and that entry
	 * while it may still take dependents (queue.c), under @queue's lock.
	 * Another queue reads neither: it compares @queue only.
	 */
	const struct agile_rt_queue *queue;
	struct rt_entry *entry;
};

struct agile_rt_event *agile__rt_event_new(void)
{
	struct agile_rt_event *ev = calloc(1, sizeof(*ev));
	pthread_condattr_t attr;

	if (!ev)
		return NULL;
	atomic_init(&ev->refs, 1);
	atomic_init(&ev->status, AGILE_RT_PENDING);
	pthread_mutex_init(&ev->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&ev->cond, &attr);
	pthread_condattr_destroy(&attr);
	ev->tail = &ev->callbacks;
	return ev;
}

void agile__rt_event_complete(struct agile_rt_event *ev, int status)
{
	struct rt_callback *cb, *next;

	agile_rt_event_retain(ev); /* for the callbacks */
	pthread_mutex_lock(&ev->lock);
	atomic_store_explicit(&ev->status, status, memory_order_release);
	ev->done = true;
	cb = ev->callbacks;
	ev->callbacks = NULL;
	ev->tail = &ev->callbacks;
	pthread_cond_broadcast(&ev->cond);
	pthread_mutex_unlock(&ev->lock);
	/* No lock held across a user callback. */
	for (; cb; cb = next) {
		next = cb->next;
		cb->fn(ev, status, cb->arg);
		free(cb);
	}
	agile_rt_event_release(ev);
}

void agile__rt_event_bind(struct agile_rt_event *ev,
			  const struct agile_rt_queue *q,
			  struct rt_entry *entry)
{
	ev->queue = q;
	ev->entry = entry;
}

struct rt_entry *agile__rt_event_entry(const struct agile_rt_event *ev,
				       const struct agile_rt_queue *q)
{
	return ev->queue == q ? ev->entry : NULL;
}

void agile__rt_event_unbind(struct agile_rt_event *ev)
{
	ev->entry = NULL;
}

int agile_rt_event_status(struct agile_rt_event *ev)
{
	if (!ev)
		return -EINVAL;
	return atomic_load_explicit(&ev->status, memory_order_acquire);
}

int agile_rt_event_wait(struct agile_rt_event *ev, uint64_t timeout_ns)
{
	struct timespec deadline;
	int err = 0;

	if (!ev)
		return -EINVAL;
	if (timeout_ns != AGILE_TIMEOUT_INFINITE) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += (time_t)(timeout_ns / 1000000000ULL);
		deadline.tv_nsec += (long)(timeout_ns % 1000000000ULL);
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&ev->lock);
	while (!ev->done && err != ETIMEDOUT)
		err = timeout_ns == AGILE_TIMEOUT_INFINITE ?
			      pthread_cond_wait(&ev->cond, &ev->lock) :
			      pthread_cond_timedwait(&ev->cond, &ev->lock,
						     &deadline);
	err = ev->done ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&ev->lock);
	return err ? err : agile_rt_event_status(ev);
}

int agile_rt_event_on_complete(struct agile_rt_event *ev, agile_rt_event_fn fn,
			       void *arg)
{
	struct rt_callback *cb;
	bool now;

	if (!ev || !fn)
		return -EINVAL;
	cb = malloc(sizeof(*cb));
	if (!cb)
		return -ENOMEM;
	cb->next = NULL;
	cb->fn = fn;
	cb->arg = arg;
	pthread_mutex_lock(&ev->lock);
	now = ev->done;
	if (!now) {
		*ev->tail = cb;
		ev->tail = &cb->next;
	}
	pthread_mutex_unlock(&ev->lock);
	if (now) {
		fn(ev, agile_rt_event_status(ev), arg);
		free(cb);
	}
	return 0;
}

int agile_rt_event_retain(struct agile_rt_event *ev)
{
	if (!ev)
		return -EINVAL;
	atomic_fetch_add_explicit(&ev->refs, 1, memory_order_relaxed);
	return 0;
}

int agile_rt_event_release(struct agile_rt_event *ev)
{
	struct rt_callback *cb, *next;

	if (!ev)
		return -EINVAL;
	/* acq_rel: the last holder sees every other holder's writes. */
	if (atomic_fetch_sub_explicit(&ev->refs, 1, memory_order_acq_rel) != 1)
		return 0;
	for (cb = ev->callbacks; cb; cb = next) {
		next = cb->next;
		free(cb);
	}
	pthread_cond_destroy(&ev->cond);
	pthread_mutex_destroy(&ev->lock);
	free(ev);
	return 0;
}
