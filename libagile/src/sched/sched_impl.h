/* SPDX-License-Identifier: MIT */
/*
 * sched_impl.h - the scheduler's private state, shared by its files:
 * steal.c (spawn, steal, sync, the idle loop), run.c (the fork/join tasks
 * the library is made of, seed 002's tree), pool.c (start-up and
 * shutdown), placement.c (where pinned workers run) and spread.c
 * (unpinned ones keep off each other's CPU).  SPEC §3, layer 4;
 * offload.c hands leaves to an execution-unit pool (agile/offload.h).
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
 * Idle workers steal from random victims, spin briefly, yield for a
 * while (so that on a shared machine the thread that holds the work gets
 * the CPU), then sleep on wake_seq; whoever makes work visible (a publish, a new run, a thief
 * that got work while others sleep) wakes one sleeper.
 */
#ifndef AGILE_SCHED_IMPL_H
#define AGILE_SCHED_IMPL_H

#include <agile/offload.h>
#include <agile/sched.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "sched/deque.h"

#define DEFAULT_MAX_FRAMES 65536
/*
 * The shallowest frames of a worker's stack are published as they are
 * spawned: they hold the biggest tasks, and a worker the OS has
 * descheduled cannot answer a hungry thief.  Deeper ones wait to be asked.
 */
#define EAGER_FRAMES 8
/* Initial deque capacity (log2); it grows on demand. */
#define DEQUE_LOG_SIZE 6
/*
 * Idle and waiting workers: steal rounds spinning (SPIN_ROUNDS of
 * SPIN_PAUSES pauses each: some microseconds), then yielding the CPU for
 * YIELD_NS, then sleeping (steal.c, back_off).
 */
#define SPIN_ROUNDS 32
#define SPIN_PAUSES 32
#define YIELD_NS 2000000
/* A worker waiting for a thief tries the thief this often before anyone else. */
#define LEAP_TRIES 16
/* Nesting bound for tasks stolen from random victims while waiting (C stack). */
#define MAX_RANDOM_NEST 32
/* A waiting worker asleep on its stolen frame looks for work this often. */
#define WAIT_SLEEP_NS 200000
/* Default grain of agile_sched_parallel_for: this many leaves per worker. */
#define PFOR_LEAVES_PER_WORKER 32

/* pub.split while frames are spilled: above every sp. */
#define SPLIT_SPILLED ((union agile_frame_slot *)UINTPTR_MAX)

enum frame_state {
	FRAME_PUBLIC = 0,
	FRAME_DONE = 1,
	FRAME_SLEEPER = 2,
};

/* agile_run.done */
enum run_state {
	RUN_PENDING = 0,
	RUN_DONE = 1,
	/* Pool of one: the slot was given back with this run at the queue's head. */
	RUN_KICKED = 2,
};

struct agile_run {
	_Atomic int error; /* first negative errno wins (compare-and-swap) */
	_Atomic uint32_t done; /* enum run_state; futex word of its submitter */
	struct agile_frame *root;
	struct agile_run *next; /* in agile_sched.roots_head */
};

struct worker {
	struct agile_worker pub; /* first: to_worker() casts back */
	struct agile_sched *sched;
	uint32_t index;
	struct agile_run *run; /* the run of the task this worker is executing */
	/* sp when that run began here: AGILE_SYNC's base outside a task body */
	union agile_frame_slot *run_base;
	union agile_frame_slot *frames, *frames_end;
	size_t frames_bytes;
	/*
	 * Spawns beyond frames_end go to this private heap stack, where no
	 * thief sees them (so it may move); while it is in use pub.sp runs
	 * on past frames_end, one slot per spilled frame (never read through
	 * it), and pub.split is SPLIT_SPILLED, which sends every spawn and
	 * sync to the slow paths (steal.c: spawn_spill).
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
	/*
	 * spread.c: the CPU this worker was last seen on, -1 while it
	 * sleeps (any worker stores, its peers load); whether its thread
	 * may move off a peer's CPU; its last move; while it is bound after
	 * a move (bound_until not 0), until when at least, the CPU it left
	 * and the mask to give back; moves so far.  All but cpu and
	 * nr_moves: its own thread's.
	 */
	_Atomic int cpu;
	bool may_move;
	int left_cpu;
	uint64_t moved_at, bound_until;
	cpu_set_t mask;
	_Atomic uint32_t nr_moves;
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
	_Atomic uint32_t nr_roots; /* queued, not yet picked up */
	_Atomic uint32_t nr_active; /* submitted and not yet done */
	_Atomic bool closing; /* agile_sched_destroy started */
	/*
	 * Worker 0 has no thread: a thread that runs something on the pool
	 * becomes it for a while, one at a time (caller_busy: 0 free, 1
	 * taken; compare-and-swap to take, release store to give back;
	 * holder: the taker's thread token, steal.c).  On a pool of two or
	 * more, a thread that is no pool's worker takes it for the length of
	 * its run (agile__run_frame); the others queue their runs for the
	 * nr_threads = nr_workers - 1 threads.  A pool of one has no thread
	 * at all (nr_threads 0): every run is queued, and the submitter that
	 * holds the slot runs the queue until its own run is done, then
	 * gives the slot to the next queued run's submitter (steal.c:
	 * run_in_turn).
	 */
	uint32_t nr_threads;
	_Atomic uint32_t caller_busy;
	_Atomic(void *) holder;
	_Atomic bool stop; /* workers leave their loop */
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
extern _Thread_local struct worker *sched_current_worker;

static inline struct worker *to_worker(const struct agile_worker *aw)
{
	return (struct worker *)aw;
}

/* What agile_worker.fast_span holds while spawns take the fast path. */
static inline uintptr_t fast_span_bytes(const struct worker *w)
{
	return (uintptr_t)w->frames_end - (uintptr_t)w->pub.eager_end;
}

/*
 * spread.c: publish the CPU a worker is on (or -1: asleep), and move a
 * pool thread off a CPU that a peer is on.
 */
bool sched_spread_wanted(void);
void sched_cpu_seen(struct worker *w);
void sched_cpu_gone(struct worker *w);
void sched_spread(struct worker *w);
void sched_unbind(struct worker *w);

/* steal.c: a worker thread's loop, and waking every sleeper. */
void *sched_worker_main(void *arg);
void sched_wake_all(struct agile_sched *s);

#endif /* AGILE_SCHED_IMPL_H */
