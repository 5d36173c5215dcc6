/* SPDX-License-Identifier: MIT */
/*
 * deque.h - Chase-Lev work-stealing deque of pointers
 *
 * The C11 version of Lê, Pop, Cohen and Zappa Nardelli, "Correct and
 * Efficient Work-Stealing for Weak Memory Models" (PPoPP 2013), figure 1,
 * with a growable circular array.  One owner pushes and takes at the
 * bottom; any number of thieves steal at the top.  Indices only grow, so a
 * thief's compare-and-swap on top cannot succeed on a stale index (no ABA).
 *
 * Growth copies the live items into an array twice the size and publishes
 * it with a release store; the old array is kept on a list, because a
 * thief may still be reading it, and freed by agile_deque_destroy.  Arrays
 * only double, so the retired ones together are smaller than the current.
 *
 * Differences from the paper, all free on x86: every store of bottom is a
 * release (the paper has relaxed ones after the push), so a thief that
 * reads any value of bottom synchronizes with every push before it; this
 * is what lets the scheduler's frames (plain memory the pointers lead to)
 * be read by thieves without data races, in the model ThreadSanitizer
 * checks as well.
 */
#ifndef AGILE_DEQUE_H
#define AGILE_DEQUE_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* agile_deque_steal lost a race with another thief or the owner. */
#define AGILE_DEQUE_ABORT ((void *)1)

struct agile_deque_array {
	int64_t size; /* a power of two */
	struct agile_deque_array *retired_next;
	_Atomic(void *) items[];
};

struct agile_deque {
	/* Thieves compare-and-swap top: its own line. */
	_Alignas(128) _Atomic int64_t top;
	/* Written by the owner only; read by thieves. */
	_Alignas(128) _Atomic int64_t bottom;
	_Atomic(struct agile_deque_array *) array;
	struct agile_deque_array *retired; /* owner only */
};

static inline struct agile_deque_array *agile_deque_array_new(int64_t size)
{
	struct agile_deque_array *a;

	a = malloc(sizeof(*a) + (size_t)size * sizeof(a->items[0]));
	if (!a)
		return NULL;
	a->size = size;
	a->retired_next = NULL;
	for (int64_t i = 0; i < size; i++)
		atomic_init(&a->items[i], NULL);
	return a;
}

/* 0 or -ENOMEM; @log_size: log2 of the initial capacity (at most 30). */
static inline int agile_deque_init(struct agile_deque *dq,
				   unsigned int log_size)
{
	struct agile_deque_array *a;

	if (log_size > 30)
		return -EINVAL;
	a = agile_deque_array_new((int64_t)1 << log_size);
	if (!a)
		return -ENOMEM;
	atomic_init(&dq->top, 0);
	atomic_init(&dq->bottom, 0);
	atomic_init(&dq->array, a);
	dq->retired = NULL;
	return 0;
}

/* Frees the array and every retired one.  No thief may be running. */
static inline void agile_deque_destroy(struct agile_deque *dq)
{
	struct agile_deque_array *a =
		atomic_load_explicit(&dq->array, memory_order_relaxed);

	free(a);
	while (dq->retired) {
		a = dq->retired;
		dq->retired = a->retired_next;
		free(a);
	}
	atomic_store_explicit(&dq->array, NULL, memory_order_relaxed);
}

/* Owner only.  Copies items [t, b) into a new array of twice the size. */
static inline struct agile_deque_array *
agile_deque_grow(struct agile_deque *dq, struct agile_deque_array *a, int64_t t,
		 int64_t b)
{
	struct agile_deque_array *na = agile_deque_array_new(a->size * 2);

	if (!na)
		return NULL;
	for (int64_t i = t; i < b; i++) {
		void *x = atomic_load_explicit(&a->items[i & (a->size - 1)],
					       memory_order_relaxed);
		atomic_store_explicit(&na->items[i & (na->size - 1)], x,
				      memory_order_relaxed);
	}
	a->retired_next = dq->retired;
	dq->retired = a;
	/* Pairs with the acquire load of array in agile_deque_steal. */
	atomic_store_explicit(&dq->array, na, memory_order_release);
	return na;
}

/*
 * Owner only: push @x (not NULL, not AGILE_DEQUE_ABORT) at the bottom.
 * 0, or -ENOMEM when the deque was full and could not grow.
 */
static inline int agile_deque_push(struct agile_deque *dq, void *x)
{
	int64_t b = atomic_load_explicit(&dq->bottom, memory_order_relaxed);
	int64_t t = atomic_load_explicit(&dq->top, memory_order_acquire);
	struct agile_deque_array *a =
		atomic_load_explicit(&dq->array, memory_order_relaxed);

	if (b - t > a->size - 1) {
		a = agile_deque_grow(dq, a, t, b);
		if (!a)
			return -ENOMEM;
	}
	atomic_store_explicit(&a->items[b & (a->size - 1)], x,
			      memory_order_relaxed);
	/*
	 * Release: the item, and whatever it points to, is visible before
	 * the new bottom.  Pairs with the acquire load of bottom in steal.
	 */
	atomic_store_explicit(&dq->bottom, b + 1, memory_order_release);
	return 0;
}

/* Owner only: take the bottom item, or NULL when the deque is empty. */
static inline void *agile_deque_take(struct agile_deque *dq)
{
	int64_t b = atomic_load_explicit(&dq->bottom, memory_order_relaxed) - 1;
	struct agile_deque_array *a =
		atomic_load_explicit(&dq->array, memory_order_relaxed);
	int64_t t;
	void *x = NULL;

	atomic_store_explicit(&dq->bottom, b, memory_order_release);
	/*
	 * Store-load fence: the new bottom is visible to thieves before top
	 * is read, pairing with the seq_cst fence in steal, so the owner and
	 * a thief cannot both take the last item.
	 */
	atomic_thread_fence(memory_order_seq_cst);
	t = atomic_load_explicit(&dq->top, memory_order_relaxed);
	if (t <= b) {
		x = atomic_load_explicit(&a->items[b & (a->size - 1)],
					 memory_order_relaxed);
		if (t == b) {
			/* The last item: race the thieves for it. */
			if (!atomic_compare_exchange_strong_explicit(
				    &dq->top, &t, t + 1, memory_order_seq_cst,
				    memory_order_relaxed))
				x = NULL;
			atomic_store_explicit(&dq->bottom, b + 1,
					      memory_order_release);
		}
	} else {
		atomic_store_explicit(&dq->bottom, b + 1, memory_order_release);
	}
	return x;
}

/*
 * Any thread: steal the top item.  Returns it, NULL when the deque looked
 * empty, or AGILE_DEQUE_ABORT when another thread won the race for it.
 */
static inline void *agile_deque_steal(struct agile_deque *dq)
{
	int64_t t = atomic_load_explicit(&dq->top, memory_order_acquire);
	int64_t b;

	/* Pairs with the fence in take (see there). */
	atomic_thread_fence(memory_order_seq_cst);
	b = atomic_load_explicit(&dq->bottom, memory_order_acquire);
	if (t < b) {
		/* Acquire pairs with the release store in agile_deque_grow. */
		struct agile_deque_array *a =
			atomic_load_explicit(&dq->array, memory_order_acquire);
		void *x = atomic_load_explicit(&a->items[t & (a->size - 1)],
					       memory_order_relaxed);

		if (!atomic_compare_exchange_strong_explicit(
			    &dq->top, &t, t + 1, memory_order_seq_cst,
			    memory_order_relaxed))
			return AGILE_DEQUE_ABORT;
		return x;
	}
	return NULL;
}

/* Any thread: a hint (racy by nature) whether there is anything to steal. */
static inline bool agile_deque_looks_empty(struct agile_deque *dq)
{
	int64_t t = atomic_load_explicit(&dq->top, memory_order_seq_cst);
	int64_t b = atomic_load_explicit(&dq->bottom, memory_order_seq_cst);

	return t >= b;
}

#endif /* AGILE_DEQUE_H */
