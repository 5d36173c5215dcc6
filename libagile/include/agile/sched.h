/* SPDX-License-Identifier: MIT */
/*
 * agile/sched.h - the cooperative work-stealing scheduler of libagile
 *
 * A pool of worker threads, one per core (pinned through hwloc), each with
 * a stack of task frames and a Chase-Lev deque.  Three ways to give it work:
 *
 *  - fork/join: tasks declared with AGILE_TASK, spawned and synced with
 *    AGILE_SPAWN / AGILE_SYNC.  A spawn writes a fixed-size frame into the
 *    worker's frame stack (a few plain stores, no atomic read-modify-write,
 *    no heap allocation); a sync pops it and runs it inline when no thief
 *    took it, or helps the thief (leapfrogging) until it is done.
 *
 *  - agile_sched_parallel_for: a range split recursively down to a grain, leaves
 *    run on the CPU.
 *
 *  - agile_sched_run_task: the worker loop of seed 002 (process 500b): a
 *    task of the application's own type, a cutoff predicate, a split
 *    callback and a leaf callback.  Leaves go through the pool's offload
 *    hook, which runs them on the CPU unless an execution-unit layer
 *    installs its own (a doorbell and task register per worker).
 *
 * Frames start private to their worker; only when another worker runs out
 * of work (it raises the victim's "hungry" flag) does the owner publish its
 * oldest private frames on its Chase-Lev deque, where thieves can take them
 * (the split deque of Lace, van Dijk and van de Pol 2014).  So the fast
 * path of spawn and sync touches only the owner's own cache lines.  The
 * few shallowest frames of a stack, the biggest tasks, are published as
 * they are spawned, so they stay stealable while the OS has their worker
 * descheduled.
 *
 * Waiting on another pool: a task of pool B may run work on pool A
 * (AGILE_RUN, agile_sched_run, agile_sched_parallel_for, agile_sched_run_task
 * on A).  The run is queued on A, and the waiting worker of B keeps
 * working for B until it ends: it runs the runs queued on B and steals
 * B's tasks, on top of the waiting task (to a bounded depth).  So pools
 * that wait on each other do not deadlock for want of a free worker: if
 * A has one worker, busy in a task that waits on B, whose task waits on
 * A, that worker runs the run queued on A while it waits.  (The other
 * choice, failing such a wait with -EDEADLK, would refuse programs that
 * are fine whenever A has a free worker.)  Tasks that wait on each
 * other's results in a cycle still deadlock, as they would on one pool;
 * and a thread that is no pool's worker simply sleeps until its run ends.
 *
 * Errors: every function returns 0 or a negative errno and never aborts.
 * The first negative errno recorded in a run (by a task through
 * agile_sched_fail, by a leaf, a parallel-for body or a root function
 * returning it) is what the run returns; later ones are dropped.
 *
 * Thread safety is stated per call.  "Worker context" means code running
 * inside a task of this pool, with the struct agile_worker it was handed.
 */
#ifndef AGILE_SCHED_H
#define AGILE_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef __cplusplus
#include <stdatomic.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The few atomics the inline spawn/sync touch.  C++ before C++23 has no
 * _Atomic: there the fields are plain, with _Atomic's alignment (GCC
 * aligns a lock-free _Atomic to its size), and the inline code uses the
 * __atomic builtins GCC's <stdatomic.h> is made of, with the same orders.
 * The C path is unchanged.  The static assertions after struct
 * agile_worker hold in both languages, so both see one layout.
 */
#ifdef __cplusplus
#define AGILE__ATOMIC(T) T
#define AGILE__ATOMIC_FIELD(T, NAME) alignas(sizeof(T)) T NAME
#define AGILE__ALIGNAS(N) alignas(N)
#define AGILE__STATIC_ASSERT(COND, MSG) static_assert(COND, MSG)
#define AGILE__LOAD_RELAXED(P) __atomic_load_n((P), __ATOMIC_RELAXED)
#define AGILE__STORE_RELAXED(P, V) __atomic_store_n((P), (V), __ATOMIC_RELAXED)
#else
#define AGILE__ATOMIC(T) _Atomic(T)
#define AGILE__ATOMIC_FIELD(T, NAME) _Atomic(T) NAME
#define AGILE__ALIGNAS(N) _Alignas(N)
#define AGILE__STATIC_ASSERT(COND, MSG) _Static_assert(COND, MSG)
#define AGILE__LOAD_RELAXED(P) atomic_load_explicit((P), memory_order_relaxed)
#define AGILE__STORE_RELAXED(P, V) \
	atomic_store_explicit((P), (V), memory_order_relaxed)
#endif

struct agile_sched;
struct agile_worker;
struct agile_run;

/* Bytes of one task frame; a task's argument and result must fit in it. */
#define AGILE_FRAME_SIZE 128
/* Largest task of agile_sched_run_task (struct agile_task_ops.task_size). */
#define AGILE_TASK_MAX_SIZE 64
/* Most children one split of agile_sched_run_task may produce. */
#define AGILE_TASK_SPLIT_MAX 8
/* Most workers one pool may have. */
#define AGILE_SCHED_MAX_WORKERS 1024

/**
 * struct agile_frame - the header every task frame starts with
 * @fn:       runs the task stored in the frame (used by thieves and slow
 *            paths)
 * @run:      the run the task belongs to; set when the frame is published
 * @thief:    the worker that stole the frame, NULL until then
 * @state:    0 published, 1 done (release by the thief, acquire by the
 *            owner), 2 owner asleep on it (futex)
 * @reserved: padding
 *
 * Library internals, shown only because the spawn/sync inline functions
 * need the layout: applications never touch a frame.  Frames are copied
 * with memcpy (spill, slow paths): whatever follows the header must be
 * trivially copyable.
 */
struct agile_frame {
	void (*fn)(struct agile_worker *w, struct agile_frame *f);
	struct agile_run *run;
	AGILE__ATOMIC_FIELD(struct agile_worker *, thief);
	AGILE__ATOMIC_FIELD(uint32_t, state);
	uint32_t reserved;
};

/**
 * union agile_frame_slot - one slot of a worker's frame stack
 * @hdr:   the frame's header
 * @bytes: the whole slot, AGILE_FRAME_SIZE bytes, cache-line aligned
 */
union agile_frame_slot {
	struct agile_frame hdr;
	unsigned char bytes[AGILE_FRAME_SIZE];
} __attribute__((aligned(64)));

/**
 * struct agile_worker - the part of a worker the inline fast paths use
 * @sp:        next free frame
 * @split:     frames in [@split, @sp) are private
 * @eager_end: spawns into [@eager_end, @eager_end + @fast_span bytes) take
 *             the fast path; below it (the shallowest frames, published at
 *             once so a descheduled worker's biggest tasks stay stealable)
 *             and at the end of the frame stack (spill) they take
 *             agile__spawn_slow
 * @fast_span: see @eager_end
 * @nr_spawns: spawns so far; the owner stores, anyone loads
 * @hungry:    raised by a thief that found nothing to steal here
 *
 * Library internals (the rest of a worker is private to sched.c).  The
 * first cache line is written only by the worker's own thread; @hungry
 * sits alone on the next one because other workers write it.
 */
struct agile_worker {
	union agile_frame_slot *sp;
	union agile_frame_slot *split;
	union agile_frame_slot *eager_end;
	uintptr_t fast_span;
	AGILE__ATOMIC_FIELD(uint64_t, nr_spawns);
	AGILE__ALIGNAS(128) AGILE__ATOMIC_FIELD(uint32_t, hungry);
};

AGILE__STATIC_ASSERT(sizeof(struct agile_frame) == 3 * sizeof(void *) + 8,
		     "struct agile_frame: one layout in C and C++");
AGILE__STATIC_ASSERT(offsetof(struct agile_worker, nr_spawns) ==
			     4 * sizeof(void *),
		     "struct agile_worker: one layout in C and C++");
AGILE__STATIC_ASSERT(offsetof(struct agile_worker, hungry) == 128 &&
			     sizeof(struct agile_worker) == 256,
		     "struct agile_worker: one layout in C and C++");

/* Internal ABI used by the inline functions below; not for applications. */
void agile__publish(struct agile_worker *w);
void agile__spawn_slow(struct agile_worker *w, const struct agile_frame *f,
		       size_t size);
struct agile_frame *agile__sync_slow(struct agile_worker *w,
				     struct agile_frame *scratch, size_t size);
int agile__run_frame(struct agile_sched *s, struct agile_frame *f);

/* Owner-only counter bump: a relaxed load and store, no read-modify-write. */
static inline void agile__count(AGILE__ATOMIC(uint64_t) * counter)
{
	AGILE__STORE_RELAXED(counter, AGILE__LOAD_RELAXED(counter) + 1);
}

/*
 * The spawn and sync fast paths, shared by the C task macros and the C++
 * templates of agile/sched.hpp.  Always inlined: a spawn is a few plain
 * stores, not a call.
 *
 * agile__spawn_full - *@slot: where the next frame goes; false when the
 * caller may write it there and agile__spawn_push it, true when the
 * frame must go through agile__spawn_slow instead (a shallow frame, or
 * the frame stack is full).
 */
static inline __attribute__((always_inline, unused)) bool
agile__spawn_full(struct agile_worker *w, union agile_frame_slot **slot)
{
	*slot = w->sp;
	return __builtin_expect(
		(uintptr_t)*slot - (uintptr_t)w->eager_end >= w->fast_span, 0);
}

/* agile__spawn_push - make the frame written at @slot the newest one. */
static inline __attribute__((always_inline, unused)) void
agile__spawn_push(struct agile_worker *w, union agile_frame_slot *slot)
{
	w->sp = slot + 1;
	agile__count(&w->nr_spawns);
	if (__builtin_expect(AGILE__LOAD_RELAXED(&w->hungry), 0))
		agile__publish(w);
}

/*
 * agile__sync_pop - pop @top, the newest frame (sp - 1), if it is still
 * private (nobody can have stolen it): true, and the caller runs it
 * inline; false: the caller goes through agile__sync_slow.  The C task
 * macros spell the same test out: through this helper GCC's inliner
 * weighs recursive tasks differently and lays their code out otherwise.
 */
static inline __attribute__((always_inline, unused)) bool
agile__sync_pop(struct agile_worker *w, union agile_frame_slot *top)
{
	if (__builtin_expect(top >= w->split, 1)) {
		w->sp = top;
		return true;
	}
	return false;
}

/*
 * AGILE__TASK_COMMON - what value and void tasks share: the frame type,
 * spawn (store the frame, publish if a thief is hungry) and the outside
 * entry.  ARG_DECL is "ARGT ARG"; the body follows the macro.
 */
#define AGILE__TASK_COMMON(NAME, W, ARGT, ARG, RES_FIELD)                      \
	struct NAME##__frame {                                                 \
		struct agile_frame hdr;                                        \
		ARGT arg;                                                      \
		RES_FIELD                                                      \
	};                                                                     \
	AGILE__STATIC_ASSERT(sizeof(struct NAME##__frame) <= AGILE_FRAME_SIZE, \
			     "argument and result of task " #NAME              \
			     " exceed a frame");                               \
	static void NAME##__frame_run(struct agile_worker *,                   \
				      struct agile_frame *);                   \
	static inline __attribute__((unused)) void NAME##__spawn(              \
		struct agile_worker *agile__w, ARGT agile__arg)                \
	{                                                                      \
		union agile_frame_slot *slot;                                  \
		struct NAME##__frame *f;                                       \
		if (agile__spawn_full(agile__w, &slot)) {                      \
			struct NAME##__frame tmp;                              \
			tmp.hdr.fn = NAME##__frame_run;                        \
			tmp.arg = agile__arg;                                  \
			agile__spawn_slow(agile__w, &tmp.hdr, sizeof(tmp));    \
			return;                                                \
		}                                                              \
		f = (struct NAME##__frame *)slot;                              \
		f->hdr.fn = NAME##__frame_run;                                 \
		f->arg = agile__arg;                                           \
		agile__spawn_push(agile__w, slot);                             \
	}

/**
 * AGILE_TASK - declare and define a fork/join task returning a value
 * @RET:  result type
 * @NAME: task name; also the name of the plain C function
 * @W:    name of the worker parameter inside the body
 * @ARGT: type of the one argument (use a struct for several)
 * @ARG:  name of the argument inside the body
 *
 * The body follows the macro, as a function body:
 *
 *	AGILE_TASK(int64_t, fib, w, int, n)
 *	{
 *		if (n < 2)
 *			return n;
 *		AGILE_SPAWN(w, fib, n - 1);
 *		int64_t b = AGILE_CALL(w, fib, n - 2);
 *		return AGILE_SYNC(w, fib) + b;
 *	}
 *
 * sizeof(ARGT) + sizeof(RET) must fit in a frame (checked at compile
 * time).  The task and its helpers are static to the file.  In C++, ARGT
 * and RET must be trivially copyable (frames are copied with memcpy).
 */
#define AGILE_TASK(RET, NAME, W, ARGT, ARG)                               \
	AGILE__TASK_COMMON(NAME, W, ARGT, ARG, RET res;)                  \
	static RET NAME(struct agile_worker *W, ARGT ARG);                \
	static void NAME##__frame_run(struct agile_worker *w,             \
				      struct agile_frame *hdr)            \
	{                                                                 \
		struct NAME##__frame *f = (struct NAME##__frame *)hdr;    \
		f->res = NAME(w, f->arg);                                 \
	}                                                                 \
	static inline __attribute__((unused))                             \
	RET NAME##__sync(struct agile_worker *agile__w)                   \
	{                                                                 \
		union agile_frame_slot *slot = agile__w->sp - 1;          \
		if (__builtin_expect(slot >= agile__w->split, 1)) {       \
			agile__w->sp = slot;                              \
			return NAME(agile__w,                             \
				    ((struct NAME##__frame *)slot)->arg); \
		}                                                         \
		struct NAME##__frame tmp;                                 \
		return ((struct NAME##__frame *)agile__sync_slow(         \
				agile__w, &tmp.hdr, sizeof(tmp)))         \
			->res;                                            \
	}                                                                 \
	static inline __attribute__((unused)) int NAME##__run(            \
		struct agile_sched *s, ARGT agile__arg, RET *res)         \
	{                                                                 \
		struct NAME##__frame f;                                   \
		f.hdr.fn = NAME##__frame_run;                             \
		f.arg = agile__arg;                                       \
		int err = agile__run_frame(s, &f.hdr);                    \
		if (!err && res)                                          \
			*res = f.res;                                     \
		return err;                                               \
	}                                                                 \
	static RET NAME(struct agile_worker *W, ARGT ARG)

/**
 * AGILE_VOID_TASK - declare and define a fork/join task with no result
 * @NAME: task name; also the name of the plain C function
 * @W:    name of the worker parameter inside the body
 * @ARGT: type of the one argument
 * @ARG:  name of the argument inside the body
 *
 * As AGILE_TASK without @RET; AGILE_SYNC of it is a statement.
 */
#define AGILE_VOID_TASK(NAME, W, ARGT, ARG)                                  \
	AGILE__TASK_COMMON(NAME, W, ARGT, ARG, )                             \
	static void NAME(struct agile_worker *W, ARGT ARG);                  \
	static void NAME##__frame_run(struct agile_worker *w,                \
				      struct agile_frame *hdr)               \
	{                                                                    \
		NAME(w, ((struct NAME##__frame *)hdr)->arg);                 \
	}                                                                    \
	static inline __attribute__((unused)) void NAME##__sync(             \
		struct agile_worker *agile__w)                               \
	{                                                                    \
		union agile_frame_slot *slot = agile__w->sp - 1;             \
		if (__builtin_expect(slot >= agile__w->split, 1)) {          \
			agile__w->sp = slot;                                 \
			NAME(agile__w, ((struct NAME##__frame *)slot)->arg); \
			return;                                              \
		}                                                            \
		struct NAME##__frame tmp;                                    \
		agile__sync_slow(agile__w, &tmp.hdr, sizeof(tmp));           \
	}                                                                    \
	static inline __attribute__((unused)) int NAME##__run(               \
		struct agile_sched *s, ARGT agile__arg, void *unused)        \
	{                                                                    \
		struct NAME##__frame f;                                      \
		(void)unused;                                                \
		f.hdr.fn = NAME##__frame_run;                                \
		f.arg = agile__arg;                                          \
		return agile__run_frame(s, &f.hdr);                          \
	}                                                                    \
	static void NAME(struct agile_worker *W, ARGT ARG)

/**
 * AGILE_SPAWN - make task NAME(ARG) available to run in parallel
 * @W:    the worker the current task was given
 * @NAME: the task (AGILE_TASK or AGILE_VOID_TASK)
 * @ARG:  its argument, copied into the frame
 *
 * Every spawn must be matched by an AGILE_SYNC of the same task name in
 * the same task, in reverse order (last spawned, first synced).
 *
 * Thread safety: worker context only, on the worker @W the current task
 * was given.
 */
#define AGILE_SPAWN(W, NAME, ARG) NAME##__spawn((W), (ARG))

/**
 * AGILE_SYNC - wait for the most recent unsynced spawn and yield its result
 * @W:    the worker the current task was given
 * @NAME: the task spawned last
 *
 * Runs the task inline if no other worker took it; otherwise works on
 * the thief's tasks until the thief is done.
 *
 * Thread safety: worker context only.
 *
 * Return: the task's result (nothing for an AGILE_VOID_TASK).
 */
#define AGILE_SYNC(W, NAME) NAME##__sync(W)

/**
 * AGILE_CALL - run task NAME(ARG) now, as a plain function call
 * @W:    the worker the current task was given
 * @NAME: the task
 * @ARG:  its argument
 *
 * Thread safety: worker context only.
 *
 * Return: the task's result.
 */
#define AGILE_CALL(W, NAME, ARG) NAME((W), (ARG))

/**
 * AGILE_RUN - run task NAME(ARG) as the root of a run on pool @S
 * @S:    the pool
 * @NAME: the task
 * @ARG:  its argument
 * @RESP: where to store the result (may be NULL); written only on success
 *
 * Evaluates to 0 or the run's first negative errno.  From a thread that is
 * not a worker of @S, the task runs on a worker while the caller sleeps,
 * or, if the caller is a worker of another pool, works for that pool
 * (see "Waiting on another pool" above); from a worker of @S it runs at
 * once on that worker, as a nested run with its own error.
 * For AGILE_VOID_TASK tasks pass NULL as @RESP.
 *
 * Thread safety: thread safe: any number of threads may run at once.
 */
#define AGILE_RUN(S, NAME, ARG, RESP) NAME##__run((S), (ARG), (RESP))

/**
 * struct agile_task_ops - an application task type for agile_sched_run_task
 * @task_size: bytes of one task (1..AGILE_TASK_MAX_SIZE); tasks are copied
 *             by value into frames, so they hold no pointers into themselves
 * @cutoff:    process 500b step 524: true when @task is to run as a leaf
 * @split:     step 526: write 2..AGILE_TASK_SPLIT_MAX children, one after
 *             another @task_size bytes apart, into @children (aligned to
 *             16 bytes); return how many, or a negative errno
 * @leaf:      step 528: run a leaf; 0 or a negative errno.  Called by the
 *             offload hook (the default hook calls it on the worker's CPU)
 *
 * @arg is the pointer given to agile_sched_run_task.  The callbacks run on
 * any worker, concurrently with each other.
 */
struct agile_task_ops {
	size_t task_size;
	bool (*cutoff)(const void *task, void *arg);
	int (*split)(const void *task, void *children, void *arg);
	int (*leaf)(void *task, void *arg);
};

/**
 * agile_offload_fn - the offload hook: hand one leaf to an execution unit
 * @w:        the worker holding the leaf (agile_sched_worker_index says which)
 * @ops:      the leaf's task type
 * @task:     the leaf (valid until the hook returns)
 * @arg:      the run's argument, as given to agile_sched_run_task
 * @hook_arg: agile_sched_opts.offload_arg
 *
 * A hook that posts the leaf to worker k's doorbell and waits (process
 * 600a) may block.  Without a hook the leaf runs as ops->leaf(task, arg).
 *
 * Thread safety: called concurrently from every worker, each with its
 * own @w.
 *
 * Return: 0 when the leaf is done, or a negative errno (which fails the
 * run).
 */
typedef int (*agile_offload_fn)(struct agile_worker *w,
				const struct agile_task_ops *ops, void *task,
				void *arg, void *hook_arg);

/* agile_sched_opts.flags */
#define AGILE_SCHED_NO_PIN (1u << 0) /* do not bind workers to cores */
#define AGILE_SCHED_QUIET (1u << 1) /* no note on stderr when pinning fails */
#define AGILE_SCHED_FLAGS_ALL (AGILE_SCHED_NO_PIN | AGILE_SCHED_QUIET)

/**
 * struct agile_sched_opts - how to build a pool (agile_sched_opts_init)
 * @nr_workers:  worker threads; 0 = one per processing unit this process
 *               may run on; more than there are cores is allowed
 * @flags:       AGILE_SCHED_* flags
 * @max_frames:  in-place frames per worker (outstanding spawns); deeper
 *               spawns spill to a private heap stack where thieves cannot
 *               see them; 0 = 65536.  At least 2.
 * @stack_size:  worker thread stack in bytes; 0 = the system default
 * @offload:     the offload hook for agile_sched_run_task leaves; NULL runs
 *               them on the CPU
 * @offload_arg: passed to @offload as hook_arg
 * @reserved32:  must be zero
 * @reserved:    must be zero
 */
struct agile_sched_opts {
	uint32_t nr_workers;
	uint32_t flags;
	uint32_t max_frames;
	uint32_t reserved32;
	size_t stack_size;
	agile_offload_fn offload;
	void *offload_arg;
	uint64_t reserved[4];
};

/**
 * struct agile_sched_stats - counters summed over the pool's workers
 * @tasks:      tasks run: spawned tasks plus root tasks of runs
 * @steals:     tasks taken from another worker's deque
 * @leaps:      of @steals, those taken while waiting for a stolen child
 * @offloads:   leaves handed to the offload hook
 * @publishes:  times a worker made private frames stealable
 * @sleeps:     times an idle worker went to sleep on the futex
 * @nr_workers: worker threads
 * @nr_pinned:  workers bound to one processing unit
 * @pin_error:  0, or the negative errno that kept workers from being pinned
 *              (-ENOSYS: hwloc topology not available; -EPERM/-EINVAL:
 *              the affinity call failed); 0 also with AGILE_SCHED_NO_PIN
 * @sleeping:   idle workers asleep now (or about to be: past their last
 *              look for work), which only a wake-up gets going again
 */
struct agile_sched_stats {
	uint64_t tasks;
	uint64_t steals;
	uint64_t leaps;
	uint64_t offloads;
	uint64_t publishes;
	uint64_t sleeps;
	uint32_t nr_workers;
	uint32_t nr_pinned;
	int32_t pin_error;
	uint32_t sleeping;
};

/**
 * agile_sched_opts_init - fill @opts with the defaults
 * @opts: the options
 *
 * Thread safety: thread safe.
 *
 * Return: 0, or -EINVAL if @opts is NULL.
 */
int agile_sched_opts_init(struct agile_sched_opts *opts);

/**
 * agile_sched_create - start a pool of workers (process 500a)
 * @opts: NULL for the defaults
 * @out:  receives the pool
 *
 * Workers are pinned one per processing unit, cores first then their SMT
 * siblings, wrapping around when there are more workers than units.  When
 * hwloc cannot give a topology the workers run unpinned, a note goes to
 * stderr (unless AGILE_SCHED_QUIET) and agile_sched_stats reports why.
 * Idle workers spin, then yield, then sleep on a futex: an idle pool uses
 * no CPU.
 *
 * Thread safety: thread safe (each call makes its own pool).
 *
 * Return: 0, -EINVAL (bad @opts, reserved fields not zero), -ENOMEM, or
 * -EAGAIN (threads could not be created).
 */
int agile_sched_create(const struct agile_sched_opts *opts,
		       struct agile_sched **out);

/**
 * agile_sched_destroy - stop the workers and free the pool
 * @s: the pool
 *
 * Joins every worker and frees every frame stack, deque and retired deque
 * array.
 *
 * Thread safety: not thread safe against other calls on the same pool (a
 * run racing with it gets -ESHUTDOWN or makes it fail with -EBUSY, but
 * nothing may touch @s once it returned 0).
 *
 * Return: 0, -EINVAL (@s NULL), -EBUSY (a run is still in progress:
 * nothing is freed) or -EDEADLK (called from one of the pool's workers).
 */
int agile_sched_destroy(struct agile_sched *s);

/**
 * agile_sched_nr_workers - how many workers @s has
 * @s: the pool
 *
 * Thread safety: thread safe.
 *
 * Return: the count, or -EINVAL if @s is NULL.
 */
int agile_sched_nr_workers(const struct agile_sched *s);

/**
 * agile_sched_stats - read the pool's counters into @stats
 * @s:     the pool
 * @stats: receives the counters
 *
 * Counters are read while workers may be running, so they are a recent
 * snapshot, exact once no run is in progress.
 *
 * Thread safety: thread safe.
 *
 * Return: 0 or -EINVAL (NULL pointers).
 */
int agile_sched_stats(struct agile_sched *s, struct agile_sched_stats *stats);

/**
 * agile_sched_run - run @fn(w, @arg) as the root task of a run
 * @s:   the pool
 * @fn:  the root task
 * @arg: passed to @fn
 *
 * @fn may spawn and sync tasks, call agile_sched_parallel_for and so on.
 *
 * Thread safety: thread safe: any number of threads may run at once; from
 * a worker of @s it nests (see AGILE_RUN).
 *
 * Return: 0, the first negative errno of the run (@fn's return value if
 * negative, or one recorded by a task), -EINVAL (@s or @fn NULL) or
 * -ESHUTDOWN (the pool is being destroyed).
 */
int agile_sched_run(struct agile_sched *s,
		    int (*fn)(struct agile_worker *w, void *arg), void *arg);

/**
 * agile_sched_parallel_for - run @body over [@begin, @end) in parallel
 * @s:     the pool
 * @begin: first index
 * @end:   one past the last index
 * @grain: leaves get at most @grain iterations; 0 picks one from the
 *         range and the worker count
 * @body:  runs [lo, hi) on a worker's CPU; 0 or a negative errno
 * @arg:   passed to @body
 *
 * The range is split in halves, one half spawned and the other processed
 * inline, down to @grain; idle workers steal the biggest halves.  Once a
 * body fails, no new body starts.
 *
 * Thread safety: thread safe; from a worker of @s it nests.  @body runs
 * concurrently on every worker.
 *
 * Return: 0, the first body error, -EINVAL (@s or @body NULL, @end <
 * @begin, @grain < 0) or -ESHUTDOWN.
 */
int agile_sched_parallel_for(struct agile_sched *s, int64_t begin, int64_t end,
			     int64_t grain,
			     int (*body)(int64_t lo, int64_t hi, void *arg),
			     void *arg);

/**
 * agile_sched_run_task - run an application task tree (seed 002, 500b)
 * @s:    the pool
 * @ops:  the task type
 * @task: the root task, @ops->task_size bytes (copied)
 * @arg:  passed to every callback
 *
 * Each worker takes a task (its own, or one stolen), tests the cutoff,
 * and either splits it and pushes the children on its deque or hands the
 * leaf to the offload hook.  Once a callback fails, no new leaf starts.
 *
 * Thread safety: thread safe; from a worker of @s it nests.  The
 * callbacks run concurrently on every worker.
 *
 * Return: 0, the first callback error, -EINVAL (NULL arguments, a bad
 * @task_size, a split returning fewer than 2 or more than
 * AGILE_TASK_SPLIT_MAX children) or -ESHUTDOWN.
 */
int agile_sched_run_task(struct agile_sched *s,
			 const struct agile_task_ops *ops, const void *task,
			 void *arg);

/**
 * agile_sched_fail - record @err as the current run's error if it is first
 * @w:   the worker the calling task was given
 * @err: a negative errno
 *
 * For tasks whose result type has no room for an error.
 *
 * Thread safety: worker context only, on @w; tasks of one run may fail
 * concurrently (the first error wins).
 *
 * Return: 0, or -EINVAL (@w NULL or @err not negative).
 */
int agile_sched_fail(struct agile_worker *w, int err);

/**
 * agile_sched_failed - the current run's error so far (0 if none)
 * @w: the worker the calling task was given
 *
 * Lets long tasks stop early once the run has failed.
 *
 * Thread safety: worker context only, on @w.
 *
 * Return: 0 or the negative errno; -EINVAL if @w is NULL.
 */
int agile_sched_failed(const struct agile_worker *w);

/**
 * agile_sched_worker_index - index of worker @w in its pool, 0..nr_workers-1
 * @w: a worker
 *
 * The offload hook uses it to find the worker's execution units (portion k
 * of seed 002).
 *
 * Thread safety: thread safe.
 *
 * Return: the index, or -EINVAL if @w is NULL.
 */
int agile_sched_worker_index(const struct agile_worker *w);

/**
 * agile_sched_worker_self - the worker the calling thread is
 *
 * Thread safety: thread safe (a thread-local variable).
 *
 * Return: the calling thread's worker, or NULL for a thread that is no
 * pool's worker.
 */
struct agile_worker *agile_sched_worker_self(void);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_SCHED_H */
