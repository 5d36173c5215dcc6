// SPDX-License-Identifier: MIT
/*
 * steal.c - the work-stealing core (seed 002, process 500b): spawn
 * and sync slow paths, publishing, stealing, leapfrogging, the idle loop.
 * The layout of a worker's frames is in sched_impl.h.
 */
#define _GNU_SOURCE
#include <agile/sched.h>

#include <assert.h>
#include <errno.h>
#ifndef AGILE_NO_HWLOC
#include <hwloc.h>
#include <hwloc/glibc-sched.h>
#endif
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <agile/error.h>

#include "sched/sched_impl.h"
#include "sys.h"

_Thread_local struct worker *sched_current_worker;

static inline uint64_t next_random(struct worker *w)
{
	/* xorshift64* */
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return w->rng * 0x2545f4914f6cdd1dULL;
}

static void run_in(struct worker *w, struct agile_frame *f,
		   struct agile_run *run)
{
	struct agile_run *saved = w->run;
	union agile_frame_slot *saved_base = w->run_base;

	w->run = run;
	w->run_base = w->pub.sp;
	f->fn(&w->pub, f);
	w->run = saved;
	w->run_base = saved_base;
}

/* Wake one sleeping worker, if there is one, after making work visible. */
static void wake_one(struct agile_sched *s)
{
	/*
	 * Pairs with the fence in sleep_idle: either that sleeper sees the
	 * work made visible before this fence, or this load sees it counted.
	 */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&s->nr_sleepers, memory_order_relaxed) > 0) {
		atomic_fetch_add_explicit(&s->wake_seq, 1,
					  memory_order_release);
		agile_futex(&s->wake_seq, FUTEX_WAKE, 1, NULL, 0);
	}
}

void sched_wake_all(struct agile_sched *s)
{
	atomic_fetch_add_explicit(&s->wake_seq, 1, memory_order_seq_cst);
	agile_futex(&s->wake_seq, FUTEX_WAKE, INT32_MAX, NULL, 0);
}

/*
 * Raise @victim's hungry flag, and zero its fast_span so that its next
 * spawn takes agile__spawn_slow and publishes.  The fence pairs with the
 * one in agile__spawn_slow: either the owner's look at hungry sees this
 * request, or this zero comes after the owner's restore of fast_span
 * (and the next spawn is slow again), so no request is lost.
 */
static void ask_for_work(struct worker *victim)
{
	/* Load first: the flag's line stays shared while it is already up. */
	if (atomic_load_explicit(&victim->pub.hungry, memory_order_relaxed))
		return;
	atomic_store_explicit(&victim->pub.hungry, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	atomic_store_explicit(&victim->pub.fast_span, 0, memory_order_relaxed);
}

static struct agile_frame *steal_from(struct worker *victim)
{
	void *x = agile_deque_steal(&victim->deque);

	if (x == AGILE_DEQUE_ABORT)
		return NULL;
	if (!x)
		ask_for_work(victim);
	return x;
}

static struct agile_frame *steal_random(struct worker *w)
{
	struct agile_sched *s = w->sched;
	uint32_t n = s->nr_workers, start, k;

	if (n < 2)
		return NULL;
	start = (uint32_t)(next_random(w) % n);
	for (k = 0; k < n; k++) {
		uint32_t v = (start + k) % n;
		struct agile_frame *f;

		if (v == w->index)
			continue;
		f = steal_from(s->workers[v]);
		if (f)
			return f;
	}
	return NULL;
}

/* Run a frame taken from another worker's deque, in place. */
static void run_stolen(struct worker *w, struct agile_frame *f)
{
	agile__count(&w->nr_steals);
	/* A pool thread on a peer's CPU moves off before it runs @f. */
	sched_spread(w);
	/* There may be more where this came from: pass the wake-up on. */
	if (atomic_load_explicit(&w->sched->nr_sleepers, memory_order_relaxed))
		wake_one(w->sched);
	atomic_store_explicit(&f->thief, &w->pub, memory_order_relaxed);
	run_in(w, f, f->run);
	/* Release: the result is visible before FRAME_DONE (acquire in wait_stolen). */
	if (atomic_exchange_explicit(&f->state, FRAME_DONE,
				     memory_order_release) == FRAME_SLEEPER)
		agile_futex(&f->state, FUTEX_WAKE, 1, NULL, 0);
}

static void spin_pause(void)
{
	for (int i = 0; i < SPIN_PAUSES; i++)
		agile_cpu_relax();
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Where an idle or waiting worker is in its back-off: @rounds looks for
 * work so far, @yield_from when it started yielding (0: not yet).
 */
struct idle {
	unsigned int rounds;
	uint64_t yield_from;
};

#define IDLE_INIT ((struct idle){ 0, 0 })

/*
 * One more idle round: a pause for SPIN_ROUNDS rounds, then a sched_yield
 * each round for YIELD_NS, and only then (false) a sleep.  The yield
 * phase is the one that matters on a shared machine: a worker that waits
 * for work another thread holds (its thief, a worker that has not
 * published yet) hands its CPU to whoever is runnable there, which may be
 * that very thread, and keeps looking; a sleeper only looks again when
 * woken.  On a machine of our own the yield returns at once, and costs a
 * system call per look for YIELD_NS before the worker sleeps.
 */
static bool back_off(struct idle *idle)
{
	uint64_t now;

	idle->rounds++;
	if (idle->rounds <= SPIN_ROUNDS) {
		spin_pause();
		return true;
	}
	now = now_ns();
	if (!idle->yield_from)
		idle->yield_from = now;
	if (now - idle->yield_from < YIELD_NS) {
		sched_yield();
		return true;
	}
	return false;
}

/* Past the yield phase: the next back_off without work sleeps again. */
static void idle_sleepy(struct idle *idle)
{
	idle->rounds = SPIN_ROUNDS;
	idle->yield_from = now_ns() - YIELD_NS;
}

/* The owner of stolen frame @f helps until the thief is done with it. */
static void wait_stolen(struct worker *w, struct agile_frame *f)
{
	const struct timespec nap = { .tv_nsec = WAIT_SLEEP_NS };
	struct idle idle = IDLE_INIT;

	sched_cpu_seen(w);
	/* Acquire pairs with the release exchange in run_stolen. */
	while (atomic_load_explicit(&f->state, memory_order_acquire) !=
	       FRAME_DONE) {
		struct agile_worker *thief =
			atomic_load_explicit(&f->thief, memory_order_relaxed);
		struct agile_frame *g = NULL;
		uint32_t state = FRAME_PUBLIC;

		/* Leapfrogging: the thief's frames descend from @f. */
		if (thief)
			g = steal_from(to_worker(thief));
		if (g) {
			agile__count(&w->nr_leaps);
			run_stolen(w, g);
			idle = IDLE_INIT;
			continue;
		}
		if (idle.rounds >= LEAP_TRIES &&
		    w->random_nest < MAX_RANDOM_NEST) {
			g = steal_random(w);
			if (g) {
				agile__count(&w->nr_leaps);
				w->random_nest++;
				run_stolen(w, g);
				w->random_nest--;
				idle = IDLE_INIT;
				continue;
			}
		}
		if (back_off(&idle))
			continue;
		if (atomic_compare_exchange_strong(&f->state, &state,
						   FRAME_SLEEPER) ||
		    state == FRAME_SLEEPER) {
			/*
			 * The thief's exchange sees FRAME_SLEEPER and wakes
			 * us; the nap's timeout is for looking for other
			 * work now and then, and then napping again.
			 */
			sched_cpu_gone(w);
			agile_futex(&f->state, FUTEX_WAIT, FRAME_SLEEPER, &nap,
				    0);
			sched_cpu_seen(w);
			idle_sleepy(&idle);
		}
	}
}

/* Mark @f published in @w's current run and push it; 0 or -ENOMEM. */
static int publish_frame(struct worker *w, struct agile_frame *f)
{
	f->run = w->run;
	atomic_store_explicit(&f->thief, NULL, memory_order_relaxed);
	atomic_store_explicit(&f->state, FRAME_PUBLIC, memory_order_relaxed);
	/* The push's release store makes these and the task visible. */
	return agile_deque_push(&w->deque, f);
}

void agile__publish(struct agile_worker *aw)
{
	struct worker *w = to_worker(aw);
	union agile_frame_slot *split = aw->split;
	size_t nr, i;

	atomic_store_explicit(&aw->hungry, 0, memory_order_relaxed);
	/* A thief asked: it is about to look where we are (spread.c). */
	sched_cpu_seen(w);
	/* Spilled frames are never published (the spawn path keeps out). */
	if (w->side_depth || w->side_lost)
		return;
	nr = (size_t)((aw->sp - split) + 1) / 2;
	for (i = 0; i < nr; i++)
		if (publish_frame(w, &split[i].hdr))
			break;
	aw->split = split + i;
	if (i) {
		agile__count(&w->nr_publishes);
		wake_one(w->sched);
	}
}

/*
 * Before a nested run switches w->run, publish every private frame, so a
 * frame is always published with the run it was spawned in (see
 * publish_frame).  0 or -ENOMEM.
 */
static int publish_all(struct worker *w)
{
	struct agile_worker *aw = &w->pub;
	union agile_frame_slot *slot;

	/* Spilled: nothing is published until the spill is synced. */
	if (w->side_depth || w->side_lost)
		return 0;
	for (slot = aw->split; slot < aw->sp; slot++) {
		if (publish_frame(w, &slot->hdr)) {
			aw->split = slot;
			return -ENOMEM;
		}
	}
	if (aw->split != aw->sp) {
		aw->split = aw->sp;
		agile__count(&w->nr_publishes);
		wake_one(w->sched);
	}
	return 0;
}

/* Spawns are counted only in a pool created to count them. */
static void count_spawn(struct worker *w)
{
	if (w->sched->flags & AGILE_SCHED_COUNT_SPAWNS)
		agile__count(&w->pub.nr_spawns);
}

static void leave_spill_if_empty(struct worker *w)
{
	if (!w->side_depth && !w->side_lost)
		w->pub.split = w->split_saved;
}

/*
 * A spawn past frames_end: onto the side stack (or, without memory for
 * it, lost: the run fails with -ENOMEM).  sp runs on past frames_end, one
 * slot per spilled frame, so that the tasks' bases and the checks of
 * AGILE_SYNC count spilled frames as any others; nothing past frames_end
 * is ever read through sp.  split is SPLIT_SPILLED meanwhile, which sends
 * every sync to the slow path (and sp past frames_end every spawn).
 */
static void spawn_spill(struct worker *w, const struct agile_frame *f,
			size_t size)
{
	struct agile_worker *aw = &w->pub;

	if (!w->side_depth && !w->side_lost) {
		w->split_saved = aw->split;
		aw->split = SPLIT_SPILLED;
	}
	if (!w->side_lost && w->side_depth == w->side_cap) {
		size_t cap = w->side_cap ? 2 * w->side_cap : 64;
		void *side = NULL;

		if (!posix_memalign(&side, _Alignof(union agile_frame_slot),
				    cap * sizeof(*w->side))) {
			if (w->side_depth)
				memcpy(side, w->side,
				       w->side_depth * sizeof(*w->side));
			free(w->side);
			w->side = side;
			w->side_cap = cap;
		}
	}
	aw->sp++;
	count_spawn(w);
	if (w->side_lost || w->side_depth == w->side_cap) {
		/* Keep spawn and sync paired; the run reports the loss. */
		w->side_lost++;
		agile_sched_fail(aw, -ENOMEM);
		return;
	}
	memcpy(&w->side[w->side_depth++], f, size);
}

void agile__spawn_slow(struct agile_worker *aw, const struct agile_frame *f,
		       size_t size)
{
	struct worker *w = to_worker(aw);
	union agile_frame_slot *slot = aw->sp;

	if (slot >= w->frames_end) {
		spawn_spill(w, f, size);
		return;
	}
	memcpy(slot, f, size);
	aw->sp = slot + 1;
	count_spawn(w);
	if (slot >= aw->eager_end) {
		/*
		 * A private frame, slow because fast_span is 0: a thief asked
		 * (ask_for_work), or the pool counts its spawns.  Restore the
		 * fast path, then look for the request (the fence: see
		 * ask_for_work).
		 */
		if (!(w->sched->flags & AGILE_SCHED_COUNT_SPAWNS)) {
			atomic_store_explicit(&aw->fast_span,
					      fast_span_bytes(w),
					      memory_order_relaxed);
			atomic_thread_fence(memory_order_seq_cst);
		}
		if (atomic_load_explicit(&aw->hungry, memory_order_relaxed))
			agile__publish(aw);
		return;
	}
	/* A shallow frame: published at once, with any private ones below. */
	atomic_store_explicit(&aw->hungry, 0, memory_order_relaxed);
	publish_all(w);
}

/*
 * Sync the newest frame (sp - 1) and pop it: run it inline, or take it
 * back from the deque and run it, or help its thief until it is done.
 * @fn: the task the sync expects (NULL: any); a frame of another task is
 * left where it is and NULL returned.  A private or spilled frame is
 * copied into @scratch (@size bytes, the frame's type's) and popped before
 * it runs there.  Returns the finished frame, whose result the caller
 * reads.
 */
static struct agile_frame *sync_top(struct worker *w,
				    void (*fn)(struct agile_worker *,
					       struct agile_frame *),
				    struct agile_frame *scratch, size_t size)
{
	struct agile_worker *aw = &w->pub;
	union agile_frame_slot *top = aw->sp - 1;
	void *x;

	if (top >= w->frames_end) {
		if (w->side_lost) {
			/* Never stored (-ENOMEM failed the run): zeroed. */
			w->side_lost--;
			aw->sp = top;
			leave_spill_if_empty(w);
			memset(scratch, 0, size);
			return scratch;
		}
		if (fn && w->side[w->side_depth - 1].hdr.fn != fn)
			return NULL;
		memcpy(scratch, &w->side[--w->side_depth], size);
		aw->sp = top;
		leave_spill_if_empty(w);
		scratch->fn(aw, scratch);
		return scratch;
	}
	if (fn && top->hdr.fn != fn)
		return NULL;
	if (top >= aw->split) {
		/*
		 * Private: popped first and run from @scratch, as the inline
		 * sync runs it: left in place it would be among the private
		 * frames its own spawns may publish, and a thief could run it
		 * a second time.
		 */
		memcpy(scratch, top, size);
		aw->sp = top;
		scratch->fn(aw, scratch);
		return scratch;
	}
	/* Published: the deque's bottom item (split == sp). */
	x = agile_deque_take(&w->deque);
	assert(x == &top->hdr || x == NULL);
	/* The frame stays reserved (sp above it) while it runs or is waited on. */
	aw->split = aw->sp;
	if (x)
		top->hdr.fn(aw, &top->hdr);
	else
		wait_stolen(w, &top->hdr);
	aw->sp = top;
	aw->split = top;
	return &top->hdr;
}

/* Misuse of spawn and sync: the run fails with AGILE_E_SYNC. */
static void sync_misuse(struct agile_worker *aw)
{
	agile_sched_fail(aw, -AGILE_E_SYNC);
}

/* The base of a sync outside a task body: the current run's. */
static const union agile_frame_slot *base_of(const struct worker *w,
					     const union agile_frame_slot *base)
{
	return base ? base : w->run_base;
}

struct agile_frame *
agile__sync_check(struct agile_worker *aw, const union agile_frame_slot *base,
		  void (*fn)(struct agile_worker *, struct agile_frame *),
		  struct agile_frame *scratch, size_t size)
{
	struct worker *w = to_worker(aw);
	struct agile_frame *f = NULL;

	/* Nothing of the current task's left to sync: a sync too many. */
	if ((uintptr_t)(aw->sp - 1) >= (uintptr_t)base_of(w, base))
		f = sync_top(w, fn, scratch, size);
	if (!f) {
		sync_misuse(aw);
		memset(scratch, 0, size);
		return scratch;
	}
	return f;
}

void agile__sync_all(struct agile_worker *aw,
		     const union agile_frame_slot *base)
{
	struct worker *w = to_worker(aw);
	union agile_frame_slot scratch;

	base = base_of(w, base);
	while ((uintptr_t)aw->sp > (uintptr_t)base)
		sync_top(w, NULL, &scratch.hdr, sizeof(scratch));
}

void agile__unbalanced(struct agile_worker *aw, union agile_frame_slot *base)
{
	/*
	 * A task returned with spawns left (run and popped here, so nobody
	 * syncs them in its caller's name), or with frames below its base
	 * popped (its caller's: they are gone).  Either way the run fails.
	 */
	agile__sync_all(aw, base);
	sync_misuse(aw);
}

int agile_sched_fail(struct agile_worker *aw, int err)
{
	struct worker *w = to_worker(aw);
	int none = 0;

	if (!aw || err >= 0)
		return -EINVAL;
	if (w->run)
		atomic_compare_exchange_strong(&w->run->error, &none, err);
	return 0;
}

int agile_sched_failed(const struct agile_worker *aw)
{
	const struct worker *w = (const struct worker *)aw;

	if (!aw)
		return -EINVAL;
	return w->run ? atomic_load_explicit(&w->run->error,
					     memory_order_relaxed) :
			0;
}

int agile_sched_worker_index(const struct agile_worker *aw)
{
	return aw ? (int)((const struct worker *)aw)->index : -EINVAL;
}

struct agile_worker *agile_sched_worker_self(void)
{
	return sched_current_worker ? &sched_current_worker->pub : NULL;
}

static void wait_helping(struct worker *w, _Atomic uint32_t *done);

/* Its address tells the threads apart: agile_sched.holder. */
static _Thread_local char slot_token;

/* Take the caller's slot (worker 0) of @s: true when it was free. */
static bool take_slot(struct agile_sched *s)
{
	uint32_t free_slot = 0;

	if (atomic_load_explicit(&s->caller_busy, memory_order_relaxed) ||
	    !atomic_compare_exchange_strong(&s->caller_busy, &free_slot, 1))
		return false;
	atomic_store_explicit(&s->holder, &slot_token, memory_order_relaxed);
	sched_cpu_seen(s->workers[0]);
	return true;
}

/* Does this thread hold the slot of @s, somewhere down its stack? */
static bool holds_slot(struct agile_sched *s)
{
	return atomic_load_explicit(&s->holder, memory_order_relaxed) ==
	       &slot_token;
}

/*
 * Give the slot back.  On a pool of one, a run still queued then is
 * kicked (RUN_KICKED): its submitter, asleep because the slot was taken,
 * takes the slot and runs the queue from there.  A submitter queues its
 * run under the lock before it tries the slot, so either this sees its run
 * or it sees the slot free.
 */
static void give_slot(struct agile_sched *s)
{
	struct agile_run *head;
	uint32_t pending = RUN_PENDING;

	atomic_store_explicit(&s->holder, NULL, memory_order_relaxed);
	sched_cpu_gone(s->workers[0]);
	/* Release: the next holder sees worker 0 as this one left it. */
	atomic_store_explicit(&s->caller_busy, 0, memory_order_release);
	if (s->nr_threads)
		return;
	pthread_mutex_lock(&s->lock);
	head = s->roots_head;
	if (head &&
	    atomic_compare_exchange_strong(&head->done, &pending, RUN_KICKED))
		agile_futex(&head->done, FUTEX_WAKE, 1, NULL, 0);
	pthread_mutex_unlock(&s->lock);
}

/*
 * A thread that is no pool's worker runs @run itself, as worker 0 of @s,
 * if the slot is free (sched_impl.h: caller_busy): it starts at once, on
 * this thread, and the pool's threads steal from it as from any worker.
 * false when another caller has the slot.
 */
static bool run_as_caller(struct agile_sched *s, struct agile_run *run)
{
	struct worker *w;

	if (!take_slot(s))
		return false;
	w = s->workers[0];
	sched_current_worker = w;
	agile__count(&w->nr_roots);
	run_in(w, run->root, run);
	sched_current_worker = NULL;
	/* Every spawn of the root was synced: the run is over. */
	atomic_fetch_sub(&s->nr_active, 1);
	give_slot(s);
	return true;
}

static struct agile_run *pop_root(struct agile_sched *s);
static void run_root(struct worker *w, struct agile_run *r);
static bool run_some_work(struct worker *w, struct agile_sched *s);

/*
 * The holder of the slot of a pool of one runs the queued runs in order,
 * as worker 0, until @run, its own, is done (it is in the queue until
 * then: only the holder takes runs off it).
 */
static void hold_slot(struct agile_sched *s, struct agile_run *run)
{
	struct worker *saved = sched_current_worker, *w0 = s->workers[0];
	struct agile_run *r;

	sched_current_worker = w0;
	while (atomic_load_explicit(&run->done, memory_order_acquire) !=
	       RUN_DONE) {
		r = pop_root(s);
		if (!r)
			break;
		run_root(w0, r);
	}
	sched_current_worker = saved;
	give_slot(s);
}

/*
 * A pool of one has no thread (sched_impl.h): @run is queued, and
 * whichever submitter holds the slot runs the queue.  This one takes the
 * slot when it is free or when it is kicked (give_slot), and otherwise
 * waits for its run to be done by the holder.  A worker @w of another
 * pool works for its own meanwhile (wait_helping's rule): two pools of one
 * whose runs call into each other both go on, each holder running the
 * other's queued run on top of its wait.
 */
static void run_in_turn(struct agile_sched *s, struct worker *w,
			struct agile_run *run)
{
	const struct timespec nap = { .tv_nsec = WAIT_SLEEP_NS };
	struct idle idle = IDLE_INIT;
	bool help = false;
	uint32_t d;

	pthread_mutex_lock(&s->lock);
	*s->roots_tail = run;
	s->roots_tail = &run->next;
	atomic_fetch_add_explicit(&s->nr_roots, 1, memory_order_relaxed);
	pthread_mutex_unlock(&s->lock);
	if (w) {
		help = w->random_nest < MAX_RANDOM_NEST && !publish_all(w);
		w->random_nest++;
	}
	for (;;) {
		d = atomic_load_explicit(&run->done, memory_order_acquire);
		if (d == RUN_DONE)
			break;
		if (d == RUN_KICKED)
			atomic_compare_exchange_strong(&run->done, &d,
						       RUN_PENDING);
		if (take_slot(s)) {
			hold_slot(s, run);
			continue;
		}
		if (help && run_some_work(w, w->sched)) {
			idle = IDLE_INIT;
			continue;
		}
		if (!back_off(&idle))
			agile_futex(&run->done, FUTEX_WAIT, RUN_PENDING,
				    help ? &nap : NULL, 0);
	}
	if (w)
		w->random_nest--;
}

int agile__run_frame(struct agile_sched *s, struct agile_frame *f)
{
	struct worker *w = sched_current_worker;
	struct agile_run run;
	int err;

	if (!s || !f)
		return -EINVAL;
	atomic_init(&run.error, 0);
	atomic_init(&run.done, 0);
	run.root = f;
	run.next = NULL;

	if (w && w->sched == s) {
		/* Nested: run it here, with its own error. */
		err = publish_all(w);
		if (err)
			return err;
		run_in(w, f, &run);
		return atomic_load_explicit(&run.error, memory_order_relaxed);
	}
	if (holds_slot(s)) {
		/*
		 * This thread is worker 0 of @s further down its stack (its
		 * run went through another pool and came back): a nested run
		 * there, not a wait for a slot that only it can give back.
		 */
		struct worker *w0 = s->workers[0];

		sched_current_worker = w0;
		err = publish_all(w0);
		if (!err)
			run_in(w0, f, &run);
		sched_current_worker = w;
		return err ? err :
			     atomic_load_explicit(&run.error,
						  memory_order_relaxed);
	}

	/* Pairs with agile_sched_destroy: it sees nr_active, or we see closing. */
	atomic_fetch_add(&s->nr_active, 1);
	if (atomic_load(&s->closing)) {
		atomic_fetch_sub(&s->nr_active, 1);
		return -ESHUTDOWN;
	}
	if (!s->nr_threads) {
		run_in_turn(s, w, &run);
		return atomic_load_explicit(&run.error, memory_order_relaxed);
	}
	if (!w && run_as_caller(s, &run))
		return atomic_load_explicit(&run.error, memory_order_relaxed);
	pthread_mutex_lock(&s->lock);
	*s->roots_tail = &run;
	s->roots_tail = &run.next;
	atomic_fetch_add_explicit(&s->nr_roots, 1, memory_order_relaxed);
	pthread_mutex_unlock(&s->lock);
	wake_one(s);

	if (w) {
		/* A worker of another pool: it works for its own meanwhile. */
		wait_helping(w, &run.done);
	} else {
		/* Acquire pairs with the release store in run_root. */
		while (!atomic_load_explicit(&run.done, memory_order_acquire))
			agile_futex(&run.done, FUTEX_WAIT, 0, NULL, 0);
	}
	return atomic_load_explicit(&run.error, memory_order_relaxed);
}

static struct agile_run *pop_root(struct agile_sched *s)
{
	struct agile_run *r;

	pthread_mutex_lock(&s->lock);
	r = s->roots_head;
	if (r) {
		s->roots_head = r->next;
		if (!s->roots_head)
			s->roots_tail = &s->roots_head;
		atomic_fetch_sub_explicit(&s->nr_roots, 1,
					  memory_order_relaxed);
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

static void run_root(struct worker *w, struct agile_run *r)
{
	struct agile_sched *s = w->sched;

	agile__count(&w->nr_roots);
	sched_cpu_seen(w);
	/* A new run will have work to share: start waking a helper now. */
	if (atomic_load_explicit(&s->nr_sleepers, memory_order_relaxed))
		wake_one(s);
	run_in(w, r->root, r);
	/* Every spawn of the root was synced: the run is over. */
	atomic_fetch_sub(&s->nr_active, 1);
	atomic_store_explicit(&r->done, RUN_DONE, memory_order_release);
	/* @r may be gone now; a wake on its old address is harmless. */
	agile_futex(&r->done, FUTEX_WAKE, 1, NULL, 0);
}

/*
 * What an idle worker @w of @s does: a run queued on @s, else a task
 * stolen from another worker.  Returns true when it ran one.
 */
static bool run_some_work(struct worker *w, struct agile_sched *s)
{
	struct agile_frame *f;

	if (atomic_load_explicit(&s->nr_roots, memory_order_relaxed)) {
		struct agile_run *r = pop_root(s);

		if (r) {
			run_root(w, r);
			return true;
		}
	}
	f = steal_random(w);
	if (f) {
		run_stolen(w, f);
		return true;
	}
	return false;
}

/*
 * A worker @w of one pool waits for a run it queued on another: until
 * *@done, it runs its own pool's queued runs and steals its tasks, as an
 * idle worker would, so that two pools waiting on each other make
 * progress (a pool's only worker, waiting on the other pool, still runs
 * the runs queued on its own).  The tasks run on top of the waiting one,
 * on its C stack: MAX_RANDOM_NEST bounds how deep, and past it, or when
 * its frames could not all be published, it just waits.  Its private
 * frames are published first, so that none is published later under the
 * run of a task it helps with (publish_frame).
 */
static void wait_helping(struct worker *w, _Atomic uint32_t *done)
{
	const struct timespec nap = { .tv_nsec = WAIT_SLEEP_NS };
	struct agile_sched *own = w->sched;
	bool help = w->random_nest < MAX_RANDOM_NEST && !publish_all(w);
	struct idle idle = IDLE_INIT;

	w->random_nest++;
	/* Acquire pairs with the release store in run_root. */
	while (!atomic_load_explicit(done, memory_order_acquire)) {
		if (help && run_some_work(w, own)) {
			idle = IDLE_INIT;
			continue;
		}
		/*
		 * run_root's wake ends the nap at once; its timeout is for
		 * looking at our own pool's work again.
		 */
		if (!back_off(&idle)) {
			sched_cpu_gone(w);
			agile_futex(done, FUTEX_WAIT, 0, help ? &nap : NULL, 0);
			sched_cpu_seen(w);
		}
	}
	w->random_nest--;
}

static bool work_visible(struct agile_sched *s)
{
	if (atomic_load(&s->stop) || atomic_load(&s->nr_roots))
		return true;
	for (uint32_t i = 0; i < s->nr_workers; i++)
		if (!agile_deque_looks_empty(&s->workers[i]->deque))
			return true;
	return false;
}

static void sleep_idle(struct worker *w)
{
	struct agile_sched *s = w->sched;
	uint32_t seq;

	atomic_fetch_add(&s->nr_sleepers, 1);
	/* Pairs with the fence in wake_one. */
	atomic_thread_fence(memory_order_seq_cst);
	seq = atomic_load_explicit(&s->wake_seq, memory_order_acquire);
	/* Busy workers publish at their next spawn, and that wakes us. */
	for (uint32_t i = 0; i < s->nr_workers; i++)
		if (i != w->index)
			ask_for_work(s->workers[i]);
	if (!work_visible(s)) {
		agile__count(&w->nr_sleeps);
		/* Release: agile_sched_stats sees this sleep counted. */
		atomic_fetch_add_explicit(&s->nr_asleep, 1,
					  memory_order_release);
		/* A moved thread sleeps with its own mask, not bound. */
		sched_unbind(w);
		sched_cpu_gone(w);
		agile_futex(&s->wake_seq, FUTEX_WAIT, seq, NULL, 0);
		atomic_fetch_sub_explicit(&s->nr_asleep, 1,
					  memory_order_relaxed);
		/* Woken for work, perhaps onto the waker's CPU. */
		sched_spread(w);
	}
	atomic_fetch_sub(&s->nr_sleepers, 1);
}

void *sched_worker_main(void *arg)
{
	struct worker *w = arg;
	struct agile_sched *s = w->sched;
	struct idle idle = IDLE_INIT;

	sched_current_worker = w;
	while (!atomic_load_explicit(&s->stop, memory_order_acquire)) {
		if (run_some_work(w, s)) {
			idle = IDLE_INIT;
			continue;
		}
		if (!back_off(&idle)) {
			sleep_idle(w);
			idle = IDLE_INIT;
		}
	}
	sched_current_worker = NULL;
	return NULL;
}
