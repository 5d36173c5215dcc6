// SPDX-License-Identifier: MIT
/*
 * sched.c - the cooperative work-stealing scheduler (SPEC §3, layer 4)
 *
 * Seed 002, processes 500a (start-up) and 500b (the worker loop), on CPU
 * leaves; the offload hook is where an execution-unit layer will take the
 * leaves over.
 *
 * Each worker owns a frame stack and a Chase-Lev deque (deque.h):
 *
 *	frames:  [ published ........ | private ...... | free ... ]
 *	         ^frames              ^split           ^sp        ^frames_end
 *
 * A spawn writes a frame at sp.  Frames below split have been published:
 * pushed, oldest first, on the deque, where thieves take them from the
 * top in the same order.  A sync pops the frame at sp - 1: a private one
 * it runs at once (no atomics, the inline fast path in sched.h); a
 * published one it takes back from the deque with the Chase-Lev take, and
 * if a thief got there first, every older published frame was stolen too
 * and the worker helps the thief (leapfrogging) until the frame is done.
 * A stolen frame stays where it is: the thief runs it in place and stores
 * FRAME_DONE with release when it is done.  Spawns past frames_end spill
 * to a private heap stack (spawn_spill).
 *
 * Frames get published when a thief asks: a thief that finds a deque
 * empty raises its owner's hungry flag, and the owner's next spawn
 * publishes half of its private frames.  The few shallowest frames of the
 * stack (EAGER_FRAMES) are published as they are spawned.
 *
 * Idle workers steal from random victims, spin, yield, then sleep on
 * wake_seq; whoever makes work visible (a publish, a new run, a thief
 * that got work while others sleep) wakes one sleeper.
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

#include "deque.h"
#include "sys.h"

#define DEFAULT_MAX_FRAMES 65536
/*
 * The shallowest frames of a worker's stack are published as they are
 * spawned: they hold the biggest tasks, and a worker the OS has
 * descheduled cannot answer a hungry thief.  Deeper ones wait to be asked.
 */
#define EAGER_FRAMES 8
/* Initial deque capacity (log2); it grows on demand. */
#define DEQUE_LOG_SIZE 6
/* Idle and waiting workers: steal rounds spinning, then yielding, then sleeping. */
#define SPIN_ROUNDS 256
#define YIELD_ROUNDS 64
#define SPIN_PAUSES 32
/* A worker waiting for a thief tries the thief this often before anyone else. */
#define LEAP_TRIES 16
/* Nesting bound for tasks stolen from random victims while waiting (C stack). */
#define MAX_RANDOM_NEST 32
/* A waiting worker asleep on its stolen frame looks for work this often. */
#define WAIT_SLEEP_NS 200000
/* Default grain of agile_sched_parallel_for: this many leaves per worker. */
#define PFOR_LEAVES_PER_WORKER 32

enum frame_state {
	FRAME_PUBLIC = 0,
	FRAME_DONE = 1,
	FRAME_SLEEPER = 2,
};

struct agile_run {
	_Atomic int error;     /* first negative errno wins (compare-and-swap) */
	_Atomic uint32_t done; /* futex word of an outside caller */
	struct agile_frame *root;
	struct agile_run *next; /* in agile_sched.roots_head */
};

struct worker {
	struct agile_worker pub; /* first: to_worker() casts back */
	struct agile_sched *sched;
	uint32_t index;
	struct agile_run *run; /* the run of the task this worker is executing */
	union agile_frame_slot *frames, *frames_end;
	size_t frames_bytes;
	/*
	 * Spawns beyond frames_end go to this private heap stack, where no
	 * thief sees them (so it may move); while it is in use pub.split is
	 * frames_end, which sends every spawn and sync to the slow paths.
	 */
	union agile_frame_slot *side;
	size_t side_depth, side_cap;
	size_t side_lost; /* spawns that found no memory: their run fails */
	union agile_frame_slot *split_saved;
	uint64_t rng;
	unsigned int random_nest;
	pthread_t thread;
	bool started;
	/* Owner stores, agile_sched_stats loads. */
	_Atomic uint64_t nr_roots, nr_steals, nr_leaps, nr_offloads;
	_Atomic uint64_t nr_publishes, nr_sleeps;
	struct agile_deque deque;
};

struct agile_sched {
	uint32_t nr_workers;
	uint32_t flags;
	agile_offload_fn offload;
	void *offload_arg;
	struct worker **workers;
	int pin_error;
	uint32_t nr_pinned;
	/* Runs submitted by threads that are not workers, oldest first. */
	pthread_mutex_t lock;
	struct agile_run *roots_head, **roots_tail;
	_Atomic uint32_t nr_roots;  /* queued, not yet picked up */
	_Atomic uint32_t nr_active; /* submitted and not yet done */
	_Atomic bool closing;       /* agile_sched_destroy started */
	_Atomic bool stop;          /* workers leave their loop */
	/* Sleepers wait on wake_seq; its own line, touched only by idle paths. */
	_Alignas(128) _Atomic uint32_t wake_seq;
	_Atomic int32_t nr_sleepers;
	/*
	 * Of those, the ones past their last look for work: only a wake-up
	 * gets them going again (agile_sched_stats.sleeping).
	 */
	_Atomic uint32_t nr_asleep;
};

/*
 * The worker the calling thread is.  Thread-local state is the point: it
 * lets agile_sched_run and agile_sched_parallel_for nest when called from a task.
 */
static _Thread_local struct worker *current_worker;

static inline struct worker *to_worker(const struct agile_worker *aw)
{
	return (struct worker *)aw;
}

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

	w->run = run;
	f->fn(&w->pub, f);
	w->run = saved;
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
		atomic_fetch_add_explicit(&s->wake_seq, 1, memory_order_release);
		agile_futex(&s->wake_seq, FUTEX_WAKE, 1, NULL, 0);
	}
}

static void wake_all(struct agile_sched *s)
{
	atomic_fetch_add_explicit(&s->wake_seq, 1, memory_order_seq_cst);
	agile_futex(&s->wake_seq, FUTEX_WAKE, INT32_MAX, NULL, 0);
}

static void ask_for_work(struct worker *victim)
{
	/* Load first: the flag's line stays shared while it is already up. */
	if (!atomic_load_explicit(&victim->pub.hungry, memory_order_relaxed))
		atomic_store_explicit(&victim->pub.hungry, 1, memory_order_relaxed);
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

/* The owner of stolen frame @f helps until the thief is done with it. */
static void wait_stolen(struct worker *w, struct agile_frame *f)
{
	const struct timespec nap = { .tv_nsec = WAIT_SLEEP_NS };
	unsigned int idle = 0;

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
			idle = 0;
			continue;
		}
		if (idle >= LEAP_TRIES && w->random_nest < MAX_RANDOM_NEST) {
			g = steal_random(w);
			if (g) {
				agile__count(&w->nr_leaps);
				w->random_nest++;
				run_stolen(w, g);
				w->random_nest--;
				idle = 0;
				continue;
			}
		}
		idle++;
		if (idle < SPIN_ROUNDS) {
			spin_pause();
		} else if (idle < SPIN_ROUNDS + YIELD_ROUNDS) {
			sched_yield();
		} else if (atomic_compare_exchange_strong(&f->state, &state,
							  FRAME_SLEEPER) ||
			   state == FRAME_SLEEPER) {
			/*
			 * The thief's exchange sees FRAME_SLEEPER and wakes
			 * us; the nap's timeout is for looking for other
			 * work now and then, and then napping again.
			 */
			agile_futex(&f->state, FUTEX_WAIT, FRAME_SLEEPER, &nap,
				    0);
			idle = SPIN_ROUNDS + YIELD_ROUNDS - 1;
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
	size_t nr = (size_t)((aw->sp - split) + 1) / 2, i;

	atomic_store_explicit(&aw->hungry, 0, memory_order_relaxed);
	/* Spilled frames are never published (the spawn path keeps out). */
	if (w->side_depth || w->side_lost)
		return;
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

static void leave_spill_if_empty(struct worker *w)
{
	if (!w->side_depth && !w->side_lost)
		w->pub.split = w->split_saved;
}

static void spawn_spill(struct worker *w, const struct agile_frame *f,
			size_t size)
{
	struct agile_worker *aw = &w->pub;

	if (!w->side_depth && !w->side_lost) {
		w->split_saved = aw->split;
		aw->split = w->frames_end;
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
	if (w->side_lost || w->side_depth == w->side_cap) {
		/* Keep spawn and sync paired; the run reports the loss. */
		w->side_lost++;
		agile_sched_fail(aw, -ENOMEM);
		return;
	}
	memcpy(&w->side[w->side_depth++], f, size);
	agile__count(&aw->nr_spawns);
}

void agile__spawn_slow(struct agile_worker *aw, const struct agile_frame *f,
		       size_t size)
{
	struct worker *w = to_worker(aw);
	union agile_frame_slot *slot = aw->sp;

	if (slot == w->frames_end) {
		spawn_spill(w, f, size);
		return;
	}
	/* A shallow frame: published at once, with any private ones below. */
	memcpy(slot, f, size);
	aw->sp = slot + 1;
	agile__count(&aw->nr_spawns);
	atomic_store_explicit(&aw->hungry, 0, memory_order_relaxed);
	publish_all(w);
}

struct agile_frame *agile__sync_slow(struct agile_worker *aw,
				     struct agile_frame *scratch, size_t size)
{
	struct worker *w = to_worker(aw);
	union agile_frame_slot *slot;
	struct agile_frame *f;
	void *x;

	if (w->side_lost) {
		w->side_lost--;
		leave_spill_if_empty(w);
		memset(scratch, 0, size);
		return scratch;
	}
	if (w->side_depth) {
		/* Copied out: the side stack may move while the task runs. */
		memcpy(scratch, &w->side[--w->side_depth], size);
		leave_spill_if_empty(w);
		scratch->fn(aw, scratch);
		return scratch;
	}

	/* A published frame: sp - 1 == split - 1, the deque's bottom item. */
	slot = aw->sp - 1;
	f = &slot->hdr;
	x = agile_deque_take(&w->deque);
	assert(x == f || x == NULL);
	/* The frame stays reserved (sp above it) while it runs or is waited on. */
	aw->split = aw->sp;
	if (x)
		f->fn(aw, f);
	else
		wait_stolen(w, f);
	aw->sp = slot;
	aw->split = slot;
	return f;
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
					     memory_order_relaxed)
		      : 0;
}

int agile_sched_worker_index(const struct agile_worker *aw)
{
	return aw ? (int)((const struct worker *)aw)->index : -EINVAL;
}

struct agile_worker *agile_sched_worker_self(void)
{
	return current_worker ? &current_worker->pub : NULL;
}

static void wait_helping(struct worker *w, _Atomic uint32_t *done);

int agile__run_frame(struct agile_sched *s, struct agile_frame *f)
{
	struct worker *w = current_worker;
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

	/* Pairs with agile_sched_destroy: it sees nr_active, or we see closing. */
	atomic_fetch_add(&s->nr_active, 1);
	if (atomic_load(&s->closing)) {
		atomic_fetch_sub(&s->nr_active, 1);
		return -ESHUTDOWN;
	}
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
		atomic_fetch_sub_explicit(&s->nr_roots, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

static void run_root(struct worker *w, struct agile_run *r)
{
	struct agile_sched *s = w->sched;

	agile__count(&w->nr_roots);
	/* A new run will have work to share: start waking a helper now. */
	if (atomic_load_explicit(&s->nr_sleepers, memory_order_relaxed))
		wake_one(s);
	run_in(w, r->root, r);
	/* Every spawn of the root was synced: the run is over. */
	atomic_fetch_sub(&s->nr_active, 1);
	atomic_store_explicit(&r->done, 1, memory_order_release);
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
 * One more idle round (*@idle counts them, up to the first sleep): a
 * pause for SPIN_ROUNDS rounds, then a sched_yield for YIELD_ROUNDS.
 * Returns false when it is time to sleep instead.
 */
static bool back_off(unsigned int *idle)
{
	if (*idle < SPIN_ROUNDS + YIELD_ROUNDS)
		(*idle)++;
	if (*idle < SPIN_ROUNDS) {
		spin_pause();
		return true;
	}
	if (*idle < SPIN_ROUNDS + YIELD_ROUNDS) {
		sched_yield();
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
	unsigned int idle = 0;

	w->random_nest++;
	/* Acquire pairs with the release store in run_root. */
	while (!atomic_load_explicit(done, memory_order_acquire)) {
		if (help && run_some_work(w, own)) {
			idle = 0;
			continue;
		}
		/*
		 * run_root's wake ends the nap at once; its timeout is for
		 * looking at our own pool's work again.
		 */
		if (!back_off(&idle))
			agile_futex(done, FUTEX_WAIT, 0, help ? &nap : NULL,
				    0);
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
		atomic_fetch_add_explicit(&s->nr_asleep, 1,
					  memory_order_relaxed);
		agile_futex(&s->wake_seq, FUTEX_WAIT, seq, NULL, 0);
		atomic_fetch_sub_explicit(&s->nr_asleep, 1,
					  memory_order_relaxed);
	}
	atomic_fetch_sub(&s->nr_sleepers, 1);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct agile_sched *s = w->sched;
	unsigned int idle = 0;

	current_worker = w;
	while (!atomic_load_explicit(&s->stop, memory_order_acquire)) {
		if (run_some_work(w, s)) {
			idle = 0;
			continue;
		}
		if (!back_off(&idle)) {
			sleep_idle(w);
			idle = 0;
		}
	}
	current_worker = NULL;
	return NULL;
}

/* ---- fork/join tasks the library itself is made of ---- */

struct root_call {
	int (*fn)(struct agile_worker *w, void *arg);
	void *arg;
};

AGILE_TASK(int, root_task, w, struct root_call, call)
{
	int err = call.fn(w, call.arg);

	if (err < 0)
		agile_sched_fail(w, err);
	return err;
}

int agile_sched_run(struct agile_sched *s,
		    int (*fn)(struct agile_worker *w, void *arg), void *arg)
{
	struct root_call call = { .fn = fn, .arg = arg };

	if (!s || !fn)
		return -EINVAL;
	return AGILE_RUN(s, root_task, call, NULL);
}

struct pfor_ctx {
	int (*body)(int64_t lo, int64_t hi, void *arg);
	void *arg;
	int64_t grain;
};

struct pfor_range {
	const struct pfor_ctx *ctx;
	int64_t lo, hi;
};

/* Split off right halves (biggest first, for thieves), run the leaf, sync. */
AGILE_TASK(int, pfor_task, w, struct pfor_range, r)
{
	int nr = 0, err = 0;

	while (r.hi - r.lo > r.ctx->grain) {
		int64_t mid = r.lo + (r.hi - r.lo) / 2;
		struct pfor_range right = { r.ctx, mid, r.hi };

		AGILE_SPAWN(w, pfor_task, right);
		r.hi = mid;
		nr++;
	}
	if (!agile_sched_failed(w)) {
		err = r.ctx->body(r.lo, r.hi, r.ctx->arg);
		if (err < 0)
			agile_sched_fail(w, err);
		else
			err = 0;
	}
	while (nr--) {
		int e = AGILE_SYNC(w, pfor_task);

		if (!err)
			err = e;
	}
	return err;
}

int agile_sched_parallel_for(struct agile_sched *s, int64_t begin, int64_t end,
		       int64_t grain,
		       int (*body)(int64_t lo, int64_t hi, void *arg), void *arg)
{
	struct pfor_ctx ctx = { .body = body, .arg = arg, .grain = grain };
	struct pfor_range range = { .ctx = &ctx, .lo = begin, .hi = end };
	int64_t n;

	if (!s || !body || grain < 0 || end < begin ||
	    __builtin_sub_overflow(end, begin, &n))
		return -EINVAL;
	if (!n)
		return 0;
	if (!grain) {
		grain = n / ((int64_t)s->nr_workers * PFOR_LEAVES_PER_WORKER);
		ctx.grain = grain > 0 ? grain : 1;
	}
	return AGILE_RUN(s, pfor_task, range, NULL);
}

/* ---- seed 002: cutoff, split, offload ---- */

struct tree_node {
	const struct agile_task_ops *ops;
	void *arg;
	_Alignas(16) unsigned char task[AGILE_TASK_MAX_SIZE];
};

static int tree_process(struct agile_worker *w, const struct agile_task_ops *ops,
			void *arg, void *task);

AGILE_TASK(int, tree_task, w, struct tree_node, node)
{
	return tree_process(w, node.ops, node.arg, node.task);
}

/* Step 528: the leaf goes to the offload hook, by default the CPU. */
static int offload_leaf(struct agile_worker *aw, const struct agile_task_ops *ops,
			void *arg, void *task)
{
	struct worker *w = to_worker(aw);
	struct agile_sched *s = w->sched;
	int err;

	agile__count(&w->nr_offloads);
	if (s->offload)
		err = s->offload(aw, ops, task, arg, s->offload_arg);
	else
		err = ops->leaf(task, arg);
	if (err < 0) {
		agile_sched_fail(aw, err);
		return err;
	}
	return 0;
}

static int tree_fail(struct agile_worker *w, int err)
{
	agile_sched_fail(w, err);
	return err;
}

/* Process 500b for one task: cutoff (524), split and push (526), or leaf. */
static int tree_process(struct agile_worker *w, const struct agile_task_ops *ops,
			void *arg, void *task)
{
	_Alignas(16) unsigned char children[AGILE_TASK_SPLIT_MAX *
					    AGILE_TASK_MAX_SIZE];
	struct tree_node node = { .ops = ops, .arg = arg };
	int nr, i, err;

	if (agile_sched_failed(w))
		return 0;
	if (ops->cutoff(task, arg))
		return offload_leaf(w, ops, arg, task);
	nr = ops->split(task, children, arg);
	if (nr < 0)
		return tree_fail(w, nr);
	if (nr < 2 || nr > AGILE_TASK_SPLIT_MAX)
		return tree_fail(w, -EINVAL);
	for (i = 1; i < nr; i++) {
		memcpy(node.task, children + (size_t)i * ops->task_size,
		       ops->task_size);
		AGILE_SPAWN(w, tree_task, node);
	}
	err = tree_process(w, ops, arg, children);
	for (i = 1; i < nr; i++) {
		int e = AGILE_SYNC(w, tree_task);

		if (!err)
			err = e;
	}
	return err;
}

int agile_sched_run_task(struct agile_sched *s,
			 const struct agile_task_ops *ops, const void *task,
			 void *arg)
{
	struct tree_node root = { .ops = ops, .arg = arg };

	if (!s || !ops || !task || !ops->cutoff || !ops->split || !ops->leaf ||
	    !ops->task_size || ops->task_size > AGILE_TASK_MAX_SIZE)
		return -EINVAL;
	memcpy(root.task, task, ops->task_size);
	return AGILE_RUN(s, tree_task, root, NULL);
}

/* ---- pool: start-up (process 500a), stats, shutdown ---- */

int agile_sched_opts_init(struct agile_sched_opts *opts)
{
	if (!opts)
		return -EINVAL;
	memset(opts, 0, sizeof(*opts));
	opts->max_frames = DEFAULT_MAX_FRAMES;
	return 0;
}

static int check_opts(const struct agile_sched_opts *o)
{
	for (size_t i = 0; i < sizeof(o->reserved) / sizeof(o->reserved[0]); i++)
		if (o->reserved[i])
			return -EINVAL;
	if (o->reserved32 || (o->flags & ~AGILE_SCHED_FLAGS_ALL) ||
	    o->nr_workers > AGILE_SCHED_MAX_WORKERS ||
	    (o->max_frames && o->max_frames < 2) ||
	    o->max_frames > (1u << 24))
		return -EINVAL;
	return 0;
}

#ifdef AGILE_NO_HWLOC
/*
 * Built without hwloc (the static build for the test guests: Debian ships
 * no static libudev, which a static libhwloc needs): no topology, so the
 * workers run unpinned and agile_sched_stats reports -ENOSYS, as when
 * hwloc finds no topology at run time.
 */
struct placement {
	void *pus;
	int nr_pus;
};

static int placement_load(struct placement *p)
{
	memset(p, 0, sizeof(*p));
	return -ENOSYS;
}

static void placement_free(struct placement *p)
{
	(void)p;
}

static int placement_cpus(struct placement *p, uint32_t i, cpu_set_t *cpus)
{
	(void)p;
	(void)i;
	(void)cpus;
	return EINVAL;
}
#else
/*
 * Processing units in placement order: the first unit of every core, then
 * the second of every core, and so on (cores before SMT siblings).
 */
struct placement {
	hwloc_topology_t topo;
	hwloc_obj_t *pus;
	int nr_pus;
};

static int placement_load(struct placement *p)
{
	int nr_cores, k = 0;

	memset(p, 0, sizeof(*p));
	if (hwloc_topology_init(&p->topo) < 0)
		return -ENOSYS;
	if (hwloc_topology_load(p->topo) < 0)
		goto err_topo;
	p->nr_pus = hwloc_get_nbobjs_by_type(p->topo, HWLOC_OBJ_PU);
	if (p->nr_pus <= 0)
		goto err_topo;
	p->pus = calloc((size_t)p->nr_pus, sizeof(*p->pus));
	if (!p->pus) {
		hwloc_topology_destroy(p->topo);
		return -ENOMEM;
	}
	nr_cores = hwloc_get_nbobjs_by_type(p->topo, HWLOC_OBJ_CORE);
	for (int rank = 0; nr_cores > 0 && k < p->nr_pus; rank++) {
		int placed = 0;

		for (int c = 0; c < nr_cores; c++) {
			hwloc_obj_t core = hwloc_get_obj_by_type(p->topo,
								 HWLOC_OBJ_CORE, c);
			hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(
				p->topo, core->cpuset, HWLOC_OBJ_PU,
				(unsigned int)rank);

			if (pu && k < p->nr_pus) {
				p->pus[k++] = pu;
				placed++;
			}
		}
		if (!placed)
			break;
	}
	if (k != p->nr_pus) /* units outside any core: plain order */
		for (k = 0; k < p->nr_pus; k++)
			p->pus[k] = hwloc_get_obj_by_type(p->topo, HWLOC_OBJ_PU,
							  (unsigned int)k);
	return 0;

err_topo:
	hwloc_topology_destroy(p->topo);
	return -ENOSYS;
}

static void placement_free(struct placement *p)
{
	if (p->pus) {
		free(p->pus);
		hwloc_topology_destroy(p->topo);
	}
}

/* The cpu set of unit @i (modulo the units); 0 or a positive errno. */
static int placement_cpus(struct placement *p, uint32_t i, cpu_set_t *cpus)
{
	hwloc_obj_t pu = p->pus[i % (uint32_t)p->nr_pus];

	CPU_ZERO(cpus);
	return hwloc_cpuset_to_glibc_sched_affinity(p->topo, pu->cpuset, cpus,
						    sizeof(*cpus)) ?
		       EINVAL :
		       0;
}
#endif /* AGILE_NO_HWLOC */

static uint32_t online_cpus(void)
{
	cpu_set_t set;
	long n;

	if (!sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 0)
		return (uint32_t)CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (uint32_t)n : 1;
}

static void worker_free(struct worker *w)
{
	if (!w)
		return;
	if (w->frames)
		munmap(w->frames, w->frames_bytes);
	agile_deque_destroy(&w->deque);
	free(w->side);
	free(w);
}

static struct worker *worker_new(struct agile_sched *s, uint32_t index,
				 uint32_t nr_workers, uint32_t max_frames)
{
	struct worker *w = aligned_alloc(_Alignof(struct worker), sizeof(*w));

	if (!w)
		return NULL;
	memset(w, 0, sizeof(*w));
	w->sched = s;
	w->index = index;
	w->rng = 0x9e3779b97f4a7c15ULL * (index + 1);
	if (agile_deque_init(&w->deque, DEQUE_LOG_SIZE)) {
		free(w);
		return NULL;
	}
	/* Reserved, not committed: pages appear as the stack gets deep. */
	w->frames_bytes = (size_t)max_frames * sizeof(union agile_frame_slot);
	w->frames = mmap(NULL, w->frames_bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (w->frames == MAP_FAILED) {
		w->frames = NULL;
		worker_free(w);
		return NULL;
	}
	w->pub.sp = w->frames;
	w->pub.split = w->frames;
	w->frames_end = w->frames + max_frames;
	w->pub.eager_end = w->frames;
	if (nr_workers > 1)
		w->pub.eager_end += max_frames / 2 < EAGER_FRAMES ? max_frames / 2
								 : EAGER_FRAMES;
	w->pub.fast_span = (uintptr_t)w->frames_end - (uintptr_t)w->pub.eager_end;
	return w;
}

/* Start worker @w, bound to @cpus when not NULL; 0 or a positive errno. */
static int worker_start(struct worker *w, size_t stack_size,
			const cpu_set_t *cpus)
{
	pthread_attr_t attr;
	int err;

	err = pthread_attr_init(&attr);
	if (err)
		return err;
	if (stack_size)
		err = pthread_attr_setstacksize(&attr, stack_size);
	if (!err && cpus)
		err = pthread_attr_setaffinity_np(&attr, sizeof(*cpus), cpus);
	if (!err)
		err = pthread_create(&w->thread, &attr, worker_main, w);
	pthread_attr_destroy(&attr);
	if (!err) {
		char name[16];

		w->started = true;
		snprintf(name, sizeof(name), "agile-w%u", w->index);
		pthread_setname_np(w->thread, name);
	}
	return err;
}

static void stop_workers(struct agile_sched *s)
{
	atomic_store_explicit(&s->stop, true, memory_order_release);
	wake_all(s);
	for (uint32_t i = 0; i < s->nr_workers; i++) {
		if (s->workers[i] && s->workers[i]->started) {
			pthread_join(s->workers[i]->thread, NULL);
			s->workers[i]->started = false;
		}
	}
}

static void sched_free(struct agile_sched *s)
{
	for (uint32_t i = 0; i < s->nr_workers; i++)
		worker_free(s->workers[i]);
	free(s->workers);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static int start_all(struct agile_sched *s, const struct agile_sched_opts *o,
		     struct placement *place)
{
	for (uint32_t i = 0; i < s->nr_workers; i++) {
		struct worker *w = s->workers[i];
		cpu_set_t cpus;
		int err = EINVAL;

		if (place->pus) {
			if (!placement_cpus(place, i, &cpus))
				err = worker_start(w, o->stack_size, &cpus);
			if (!err) {
				s->nr_pinned++;
				continue;
			}
			if (err == EAGAIN)
				return -EAGAIN;
			if (!s->pin_error)
				s->pin_error = -err;
		}
		err = worker_start(w, o->stack_size, NULL);
		if (err)
			return err == EAGAIN ? -EAGAIN : -err;
	}
	return 0;
}

int agile_sched_create(const struct agile_sched_opts *opts,
		       struct agile_sched **out)
{
	struct agile_sched_opts defaults;
	struct placement place = { 0 };
	struct agile_sched *s;
	uint32_t max_frames;
	int err;

	if (!out)
		return -EINVAL;
	if (!opts) {
		agile_sched_opts_init(&defaults);
		opts = &defaults;
	}
	err = check_opts(opts);
	if (err)
		return err;
	max_frames = opts->max_frames ? opts->max_frames : DEFAULT_MAX_FRAMES;

	s = aligned_alloc(_Alignof(struct agile_sched), sizeof(*s));
	if (!s)
		return -ENOMEM;
	memset(s, 0, sizeof(*s));
	s->flags = opts->flags;
	s->offload = opts->offload;
	s->offload_arg = opts->offload_arg;
	s->roots_tail = &s->roots_head;
	pthread_mutex_init(&s->lock, NULL);

	if (!(opts->flags & AGILE_SCHED_NO_PIN)) {
		s->pin_error = placement_load(&place);
		if (s->pin_error && !(opts->flags & AGILE_SCHED_QUIET))
			fprintf(stderr,
				"agile: no hwloc topology (%s): workers are not pinned to cores\n",
				strerror(-s->pin_error));
	}
	s->nr_workers = opts->nr_workers;
	if (!s->nr_workers)
		s->nr_workers = place.pus ? (uint32_t)place.nr_pus
					  : online_cpus();
	if (s->nr_workers > AGILE_SCHED_MAX_WORKERS)
		s->nr_workers = AGILE_SCHED_MAX_WORKERS;

	err = -ENOMEM;
	s->workers = calloc(s->nr_workers, sizeof(*s->workers));
	if (!s->workers)
		goto err_free;
	for (uint32_t i = 0; i < s->nr_workers; i++) {
		s->workers[i] = worker_new(s, i, s->nr_workers, max_frames);
		if (!s->workers[i])
			goto err_free;
	}
	err = start_all(s, opts, &place);
	if (err)
		goto err_stop;
	if (s->pin_error && s->nr_pinned && !(opts->flags & AGILE_SCHED_QUIET))
		fprintf(stderr,
			"agile: %u of %u workers pinned; binding the others failed (%s)\n",
			s->nr_pinned, s->nr_workers, strerror(-s->pin_error));
	placement_free(&place);
	*out = s;
	return 0;

err_stop:
	stop_workers(s);
err_free:
	placement_free(&place);
	sched_free(s);
	return err;
}

int agile_sched_destroy(struct agile_sched *s)
{
	if (!s)
		return -EINVAL;
	if (current_worker && current_worker->sched == s)
		return -EDEADLK;
	/* Pairs with agile__run_frame: it sees closing, or we see its run. */
	atomic_store(&s->closing, true);
	if (atomic_load(&s->nr_active)) {
		atomic_store(&s->closing, false);
		return -EBUSY;
	}
	stop_workers(s);
	sched_free(s);
	return 0;
}

int agile_sched_nr_workers(const struct agile_sched *s)
{
	return s ? (int)s->nr_workers : -EINVAL;
}

int agile_sched_stats(struct agile_sched *s, struct agile_sched_stats *st)
{
	if (!s || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	for (uint32_t i = 0; i < s->nr_workers; i++) {
		struct worker *w = s->workers[i];

#define LOAD(c) atomic_load_explicit(&w->c, memory_order_relaxed)
		st->tasks += LOAD(pub.nr_spawns) + LOAD(nr_roots);
		st->steals += LOAD(nr_steals);
		st->leaps += LOAD(nr_leaps);
		st->offloads += LOAD(nr_offloads);
		st->publishes += LOAD(nr_publishes);
		st->sleeps += LOAD(nr_sleeps);
#undef LOAD
	}
	st->nr_workers = s->nr_workers;
	st->nr_pinned = s->nr_pinned;
	st->pin_error = s->pin_error;
	st->sleeping = atomic_load_explicit(&s->nr_asleep,
					    memory_order_relaxed);
	return 0;
}
