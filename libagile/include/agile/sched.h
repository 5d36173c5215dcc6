/* SPDX-License-Identifier: MIT */
/*
 * agile/sched.h - the cooperative work-stealing scheduler of libagile
 *
 * A pool of worker threads, one per core (unpinned by default; pinned
 * through hwloc with $AGILE_SCHED_PIN=1), each with a stack of task frames
 * and a Chase-Lev deque.  Three ways to give it work:
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
 * other's results in a cycle still deadlock, as they would on one pool.
 * A thread that is no pool's worker runs its run itself as the pool's
 * worker 0 when that slot is free (agile_sched_create), and otherwise
 * sleeps until the run ends (on a pool of one: until it is its turn to
 * hold the slot).
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
 * @fast_span: see @eager_end; 0 sends every spawn to agile__spawn_slow:
 *             in a pool that counts its spawns (AGILE_SCHED_COUNT_SPAWNS)
 *             always, and in any pool from a thief's request (@hungry)
 *             until the owner's next spawn has answered it.  First, at
 *             offset 0: GCC then loads it without a register of its own
 *             for the address (at offset 24 it kept one, spilled across
 *             the calls of a recursive task)
 * @sp:        next free frame
 * @split:     frames in [@split, @sp) are private
 * @eager_end: spawns into [@eager_end, @eager_end + @fast_span bytes) take
 *             the fast path; below it (the shallowest frames, published at
 *             once so a descheduled worker's biggest tasks stay stealable)
 *             and at the end of the frame stack (spill) they take
 *             agile__spawn_slow
 * @nr_spawns: spawns counted so far (AGILE_SCHED_COUNT_SPAWNS); the owner
 *             stores, anyone loads
 * @hungry:    raised by a thief that found nothing to steal here
 *
 * Library internals (the rest of a worker is private to sched.c).  The
 * first cache line is written by the worker's own thread, and by a thief
 * only when it raises @hungry (it then zeroes @fast_span, once); @hungry
 * sits alone on the next one because other workers write it.
 */
struct agile_worker {
	AGILE__ATOMIC_FIELD(uintptr_t, fast_span);
	union agile_frame_slot *sp;
	union agile_frame_slot *split;
	union agile_frame_slot *eager_end;
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
struct agile_frame *
agile__sync_check(struct agile_worker *w, const union agile_frame_slot *base,
		  void (*fn)(struct agile_worker *, struct agile_frame *),
		  struct agile_frame *scratch, size_t size);
void agile__sync_all(struct agile_worker *w,
		     const union agile_frame_slot *base);
void agile__unbalanced(struct agile_worker *w, union agile_frame_slot *base);
int agile__run_frame(struct agile_sched *s, struct agile_frame *f);

/*
 * agile__base: the frame stack's height when the current task began.  A
 * task body gets it as a hidden parameter of that name, which hides this
 * one; outside a task body (an agile_sched_run root function, a helper
 * called from a task) this NULL stands for "since the run began".
 * AGILE_SYNC refuses to pop below it; AGILE_SYNC_ALL syncs down to it.
 */
static const union agile_frame_slot *const agile__base = 0;

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
	return __builtin_expect((uintptr_t)*slot - (uintptr_t)w->eager_end >=
					AGILE__LOAD_RELAXED(&w->fast_span),
				0);
}

/*
 * agile__spawn_push - make the frame written at @slot the newest one.
 * Nothing else: a thief's request for work zeroes @fast_span, so the
 * next spawn takes agile__spawn_slow, which publishes; and spawns are
 * not counted here (a pool that counts them sends every spawn to
 * agile__spawn_slow).  A counter bumped in memory and a test of @hungry
 * at every spawn cost fib 10-20% each (docs/sched.md).
 */
static inline __attribute__((always_inline, unused)) void
agile__spawn_push(struct agile_worker *w, union agile_frame_slot *slot)
{
	w->sp = slot + 1;
}

/*
 * agile__sync_pop - pop @top, the newest frame (sp - 1), and let the
 * caller run it inline, if it is private (no thief can have it), the
 * current task's own (at or above @base) and a frame of the task whose
 * frames run @fn: true.  Otherwise false, and agile__sync_check decides:
 * the slow path for a published or spilled frame, an error (AGILE_E_SYNC)
 * for a frame of another task or a sync with no spawn left.  @top is read
 * only once it is known to be a private frame.  One test, one unlikely
 * branch each: with the three folded into one condition GCC laid the
 * inline run out of line, and fib paid 10-20% more than without the
 * checks; this way it pays about 4% (agile-bench fib: agile-1w against
 * agile-1w-unchecked).
 */
static inline __attribute__((always_inline, unused)) bool
agile__sync_pop(struct agile_worker *w, union agile_frame_slot *top,
		const union agile_frame_slot *base,
		void (*fn)(struct agile_worker *, struct agile_frame *))
{
	if (__builtin_expect(top < w->split, 0))
		return false;
#ifdef AGILE_SCHED_UNCHECKED
	/*
	 * Only for measuring what the checks cost (agile-bench fib): no
	 * misuse is caught on the inline path.  Not for applications.
	 */
	(void)base;
	(void)fn;
#else
	if (__builtin_expect((uintptr_t)top < (uintptr_t)base, 0))
		return false;
	if (__builtin_expect(top->hdr.fn != fn, 0))
		return false;
#endif
	w->sp = top;
	return true;
}

/*
 * agile__balanced - after a task body that began at @base returned: its
 * spawns must all have been synced.  If not, agile__unbalanced syncs what
 * is left and fails the run with AGILE_E_SYNC.
 */
static inline __attribute__((always_inline, unused)) void
agile__balanced(struct agile_worker *w, union agile_frame_slot *base)
{
	if (__builtin_expect(w->sp != base, 0))
		agile__unbalanced(w, base);
}

/* ---- argument lists: a task takes 1 to AGILE_TASK_MAX_ARGS arguments ---- */

/* Most arguments of one task. */
#define AGILE_TASK_MAX_ARGS 6

#define AGILE__CAT(A, B) AGILE__CAT_(A, B)
#define AGILE__CAT_(A, B) A##B
/* How many arguments, 1 to 12. */
#define AGILE__NARG(...) \
	AGILE__NARG_(__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define AGILE__NARG_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, N, \
		     ...)                                                  \
	N
/* Pairs "type, name": their number (an odd count has no macro). */
#define AGILE__PAIRS_2 1
#define AGILE__PAIRS_4 2
#define AGILE__PAIRS_6 3
#define AGILE__PAIRS_8 4
#define AGILE__PAIRS_10 5
#define AGILE__PAIRS_12 6
#define AGILE__NPAIRS(...) AGILE__CAT(AGILE__PAIRS_, AGILE__NARG(__VA_ARGS__))

/* From types T1..Tn: the frame's fields, typed parameters a1..an, ... */
#define AGILE__FIELDS_1(T1) T1 agile__a1;
#define AGILE__FIELDS_2(T1, T2) AGILE__FIELDS_1(T1) T2 agile__a2;
#define AGILE__FIELDS_3(T1, T2, T3) AGILE__FIELDS_2(T1, T2) T3 agile__a3;
#define AGILE__FIELDS_4(T1, T2, T3, T4) \
	AGILE__FIELDS_3(T1, T2, T3) T4 agile__a4;
#define AGILE__FIELDS_5(T1, T2, T3, T4, T5) \
	AGILE__FIELDS_4(T1, T2, T3, T4) T5 agile__a5;
#define AGILE__FIELDS_6(T1, T2, T3, T4, T5, T6) \
	AGILE__FIELDS_5(T1, T2, T3, T4, T5) T6 agile__a6;
#define AGILE__PARAMS_1(T1) T1 agile__a1
#define AGILE__PARAMS_2(T1, T2) AGILE__PARAMS_1(T1), T2 agile__a2
#define AGILE__PARAMS_3(T1, T2, T3) AGILE__PARAMS_2(T1, T2), T3 agile__a3
#define AGILE__PARAMS_4(T1, T2, T3, T4) \
	AGILE__PARAMS_3(T1, T2, T3), T4 agile__a4
#define AGILE__PARAMS_5(T1, T2, T3, T4, T5) \
	AGILE__PARAMS_4(T1, T2, T3, T4), T5 agile__a5
#define AGILE__PARAMS_6(T1, T2, T3, T4, T5, T6) \
	AGILE__PARAMS_5(T1, T2, T3, T4, T5), T6 agile__a6
/* ... the parameters' names, the frame's fields as arguments, stores. */
#define AGILE__NAMES_1 agile__a1
#define AGILE__NAMES_2 AGILE__NAMES_1, agile__a2
#define AGILE__NAMES_3 AGILE__NAMES_2, agile__a3
#define AGILE__NAMES_4 AGILE__NAMES_3, agile__a4
#define AGILE__NAMES_5 AGILE__NAMES_4, agile__a5
#define AGILE__NAMES_6 AGILE__NAMES_5, agile__a6
#define AGILE__FROM_1(F) (F)->agile__a1
#define AGILE__FROM_2(F) AGILE__FROM_1(F), (F)->agile__a2
#define AGILE__FROM_3(F) AGILE__FROM_2(F), (F)->agile__a3
#define AGILE__FROM_4(F) AGILE__FROM_3(F), (F)->agile__a4
#define AGILE__FROM_5(F) AGILE__FROM_4(F), (F)->agile__a5
#define AGILE__FROM_6(F) AGILE__FROM_5(F), (F)->agile__a6
#define AGILE__STORE_1(F) (F)->agile__a1 = agile__a1;
#define AGILE__STORE_2(F) AGILE__STORE_1(F)(F)->agile__a2 = agile__a2;
#define AGILE__STORE_3(F) AGILE__STORE_2(F)(F)->agile__a3 = agile__a3;
#define AGILE__STORE_4(F) AGILE__STORE_3(F)(F)->agile__a4 = agile__a4;
#define AGILE__STORE_5(F) AGILE__STORE_4(F)(F)->agile__a5 = agile__a5;
#define AGILE__STORE_6(F) AGILE__STORE_5(F)(F)->agile__a6 = agile__a6;
/* From pairs T1, n1, ..., Tn, nn: the types, and the named parameters. */
#define AGILE__TYPES_1(T1, n1) T1
#define AGILE__TYPES_2(T1, n1, T2, n2) T1, T2
#define AGILE__TYPES_3(T1, n1, T2, n2, T3, n3) T1, T2, T3
#define AGILE__TYPES_4(T1, n1, T2, n2, T3, n3, T4, n4) T1, T2, T3, T4
#define AGILE__TYPES_5(T1, n1, T2, n2, T3, n3, T4, n4, T5, n5) \
	T1, T2, T3, T4, T5
#define AGILE__TYPES_6(T1, n1, T2, n2, T3, n3, T4, n4, T5, n5, T6, n6) \
	T1, T2, T3, T4, T5, T6
#define AGILE__NAMED_1(T1, n1) T1 n1
#define AGILE__NAMED_2(T1, n1, T2, n2) T1 n1, T2 n2
#define AGILE__NAMED_3(T1, n1, T2, n2, T3, n3) T1 n1, T2 n2, T3 n3
#define AGILE__NAMED_4(T1, n1, T2, n2, T3, n3, T4, n4) \
	T1 n1, T2 n2, T3 n3, T4 n4
#define AGILE__NAMED_5(T1, n1, T2, n2, T3, n3, T4, n4, T5, n5) \
	T1 n1, T2 n2, T3 n3, T4 n4, T5 n5
#define AGILE__NAMED_6(T1, n1, T2, n2, T3, n3, T4, n4, T5, n5, T6, n6) \
	T1 n1, T2 n2, T3 n3, T4 n4, T5 n5, T6 n6

/* What value (1) and void (0) tasks do differently. */
#define AGILE__SLOW_1(NAME, CALL) return ((struct NAME##__frame *)(CALL))->res;
#define AGILE__SLOW_0(NAME, CALL) (void)(CALL);
#define AGILE__KEEP_1(F, CALL) (F)->res = CALL;
#define AGILE__KEEP_0(F, CALL) CALL;
#define AGILE__GIVE_1(F, RES) \
	if (RES)              \
		*(RES) = (F).res;
#define AGILE__GIVE_0(F, RES) (void)(RES);

/*
 * AGILE__DECL - a task's frame type and its inline spawn, plain call,
 * sync and run, from @N argument types (the task's declaration: in a
 * header, or at the top of the one file that uses it).  @LINK is the
 * linkage of the task's two out-of-line functions, NAME##__body and
 * NAME##__frame_run: static, or empty for a task declared in a header and
 * defined in one file.  @RES is the frame's result field ("RET res;" or
 * nothing); @V 1 for a task with a result, 0 for a void one.
 */
#define AGILE__DECL(LINK, RET, RES, V, NAME, N, ...)                           \
	struct NAME##__frame {                                                 \
		struct agile_frame hdr;                                        \
		AGILE__CAT(AGILE__FIELDS_, N)(__VA_ARGS__) RES                 \
	};                                                                     \
	AGILE__STATIC_ASSERT(sizeof(struct NAME##__frame) <= AGILE_FRAME_SIZE, \
			     "arguments and result of task " #NAME             \
			     " exceed a frame");                               \
	LINK void NAME##__frame_run(struct agile_worker *,                     \
				    struct agile_frame *);                     \
	LINK RET NAME##__body(struct agile_worker *, union agile_frame_slot *, \
			      AGILE__CAT(AGILE__PARAMS_, N)(__VA_ARGS__));     \
	static inline __attribute__((unused)) void NAME##__spawn(              \
		struct agile_worker *agile__w,                                 \
		AGILE__CAT(AGILE__PARAMS_, N)(__VA_ARGS__))                    \
	{                                                                      \
		union agile_frame_slot *slot;                                  \
		struct NAME##__frame *f;                                       \
		if (agile__spawn_full(agile__w, &slot)) {                      \
			struct NAME##__frame tmp;                              \
			tmp.hdr.fn = NAME##__frame_run;                        \
			AGILE__CAT(AGILE__STORE_, N)                           \
			(&tmp) agile__spawn_slow(agile__w, &tmp.hdr,           \
						 sizeof(tmp));                 \
			return;                                                \
		}                                                              \
		f = (struct NAME##__frame *)slot;                              \
		f->hdr.fn = NAME##__frame_run;                                 \
		AGILE__CAT(AGILE__STORE_, N)                                   \
		(f) agile__spawn_push(agile__w, slot);                         \
	}                                                                      \
	/* The task as a plain call (its balance is checked by its run). */    \
	static inline __attribute__((unused)) RET NAME(                        \
		struct agile_worker *agile__w,                                 \
		AGILE__CAT(AGILE__PARAMS_, N)(__VA_ARGS__))                    \
	{                                                                      \
		return NAME##__body(agile__w, agile__w->sp,                    \
				    AGILE__CAT(AGILE__NAMES_, N));             \
	}                                                                      \
	/* Not always_inline: GCC then splits a recursive task (fnsplit) */    \
	/* and inlines its leaf test at the call sites, as for plain C. */     \
	static inline __attribute__((unused))                                  \
	RET NAME##__sync(struct agile_worker *agile__w,                        \
			 const union agile_frame_slot *agile__b)               \
	{                                                                      \
		union agile_frame_slot *slot = agile__w->sp - 1;               \
		if (agile__sync_pop(agile__w, slot, agile__b,                  \
				    NAME##__frame_run)) {                      \
			struct NAME##__frame *f =                              \
				(struct NAME##__frame *)slot;                  \
			return NAME##__body(agile__w, slot,                    \
					    AGILE__CAT(AGILE__FROM_, N)(f));   \
		} else {                                                       \
			struct NAME##__frame tmp;                              \
			AGILE__SLOW_##V(NAME, agile__sync_check(               \
						      agile__w, agile__b,      \
						      NAME##__frame_run,       \
						      &tmp.hdr, sizeof(tmp)))  \
		}                                                              \
	}                                                                      \
	static inline __attribute__((unused)) int NAME##__run(                 \
		struct agile_sched *agile__s,                                  \
		AGILE__CAT(AGILE__PARAMS_, N)(__VA_ARGS__), RET *agile__res)   \
	{                                                                      \
		struct NAME##__frame f;                                        \
		int agile__err;                                                \
		f.hdr.fn = NAME##__frame_run;                                  \
		AGILE__CAT(AGILE__STORE_, N)                                   \
		(&f) agile__err = agile__run_frame(agile__s, &f.hdr);          \
		if (!agile__err) {                                             \
			AGILE__GIVE_##V(f, agile__res)                         \
		}                                                              \
		return agile__err;                                             \
	}

/*
 * AGILE__IMPL - a task's two out-of-line functions: the frame runner
 * (thieves and slow paths run a frame through it) and the head of the
 * body, which the caller's braces complete.  The body gets the hidden
 * parameter agile__base, the frame stack's height when it began.
 */
#define AGILE__IMPL(LINK, RET, V, NAME, W, N, ...)                            \
	LINK void NAME##__frame_run(struct agile_worker *agile__w,            \
				    struct agile_frame *agile__hdr)           \
	{                                                                     \
		struct NAME##__frame *f = (struct NAME##__frame *)agile__hdr; \
		union agile_frame_slot *agile__b = agile__w->sp;              \
		AGILE__KEEP_##V(f,                                            \
				NAME##__body(agile__w, agile__b,              \
					     AGILE__CAT(AGILE__FROM_, N)(f))) \
			agile__balanced(agile__w, agile__b);                  \
	}                                                                     \
	LINK RET NAME##__body(struct agile_worker *W,                         \
			      union agile_frame_slot *agile__base             \
			      __attribute__((unused)),                        \
			      AGILE__CAT(AGILE__NAMED_, N)(__VA_ARGS__))

/**
 * AGILE_TASK - declare and define a fork/join task returning a value
 * @RET:  result type
 * @NAME: task name; also the name of a plain function calling it
 * @W:    name of the worker parameter inside the body
 * @...:  1 to AGILE_TASK_MAX_ARGS pairs: argument type, argument name
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
 *	AGILE_TASK(double, dot, w, const double *, x, const double *, y,
 *		   size_t, n) { ... }
 *
 * The arguments and the result must fit in a frame together (checked at
 * compile time: AGILE_FRAME_SIZE less a 32-byte header).  The task is
 * static to the file; AGILE_TASK_DECL and AGILE_TASK_IMPL split it for
 * use from several files.  In C++, argument and result types must be
 * trivially copyable (frames are copied with memcpy).
 *
 * Every spawn must be synced by the task that spawned it before it
 * returns, last spawned first (AGILE_SYNC, or AGILE_SYNC_ALL).  A task
 * that returns with spawns left, a sync of another task's frame than
 * the newest, and a sync with no spawn left fail the run with
 * AGILE_E_SYNC (what was left is still run; the sync yields a zeroed
 * result and pops nothing).
 */
#define AGILE_TASK(RET, NAME, W, ...)                                    \
	AGILE__DECL(static, RET, RET res;                                \
		    , 1, NAME, AGILE__NPAIRS(__VA_ARGS__),               \
		    AGILE__CAT(AGILE__TYPES_,                            \
			       AGILE__NPAIRS(__VA_ARGS__))(__VA_ARGS__)) \
	AGILE__IMPL(static, RET, 1, NAME, W, AGILE__NPAIRS(__VA_ARGS__), \
		    __VA_ARGS__)

/**
 * AGILE_VOID_TASK - declare and define a fork/join task with no result
 * @NAME: task name
 * @W:    name of the worker parameter inside the body
 * @...:  1 to AGILE_TASK_MAX_ARGS pairs: argument type, argument name
 *
 * As AGILE_TASK without a result; AGILE_SYNC of it is a statement.
 */
#define AGILE_VOID_TASK(NAME, W, ...)                                     \
	AGILE__DECL(static, void, , 0, NAME, AGILE__NPAIRS(__VA_ARGS__),  \
		    AGILE__CAT(AGILE__TYPES_,                             \
			       AGILE__NPAIRS(__VA_ARGS__))(__VA_ARGS__))  \
	AGILE__IMPL(static, void, 0, NAME, W, AGILE__NPAIRS(__VA_ARGS__), \
		    __VA_ARGS__)

/**
 * AGILE_TASK_DECL - declare a task defined once elsewhere (for a header)
 * @RET:  result type
 * @NAME: task name
 * @...:  its 1 to AGILE_TASK_MAX_ARGS argument types
 *
 *	// fib.h
 *	AGILE_TASK_DECL(int64_t, fib, int);
 *	// fib.c
 *	AGILE_TASK_IMPL(int64_t, fib, w, int, n) { ... }
 *
 * Every file that includes the declaration may spawn, sync, call and run
 * the task; exactly one defines it with AGILE_TASK_IMPL, with the same
 * types.  (A trailing semicolon after the declaration is allowed.)
 */
#define AGILE_TASK_DECL(RET, NAME, ...)                               \
	AGILE__DECL(, RET, RET res;                                   \
		    , 1, NAME, AGILE__NARG(__VA_ARGS__), __VA_ARGS__) \
	struct NAME##__frame

/**
 * AGILE_VOID_TASK_DECL - AGILE_TASK_DECL for a task with no result
 * @NAME: task name
 * @...:  its 1 to AGILE_TASK_MAX_ARGS argument types
 */
#define AGILE_VOID_TASK_DECL(NAME, ...)                                       \
	AGILE__DECL(, void, , 0, NAME, AGILE__NARG(__VA_ARGS__), __VA_ARGS__) \
	struct NAME##__frame

/**
 * AGILE_TASK_IMPL - define a task declared with AGILE_TASK_DECL
 * @RET:  result type, as declared
 * @NAME: task name
 * @W:    name of the worker parameter inside the body
 * @...:  the argument pairs: type (as declared), name
 *
 * The body follows, as with AGILE_TASK.
 */
#define AGILE_TASK_IMPL(RET, NAME, W, ...) \
	AGILE__IMPL(, RET, 1, NAME, W, AGILE__NPAIRS(__VA_ARGS__), __VA_ARGS__)

/**
 * AGILE_VOID_TASK_IMPL - define a task declared with AGILE_VOID_TASK_DECL
 * @NAME: task name
 * @W:    name of the worker parameter inside the body
 * @...:  the argument pairs: type (as declared), name
 */
#define AGILE_VOID_TASK_IMPL(NAME, W, ...) \
	AGILE__IMPL(, void, 0, NAME, W, AGILE__NPAIRS(__VA_ARGS__), __VA_ARGS__)

/**
 * AGILE_SPAWN - make task NAME(args) available to run in parallel
 * @W:    the worker the current task was given
 * @NAME: the task
 * @...:  its arguments, copied into the frame (they may contain commas,
 *        as in a compound literal)
 *
 * Thread safety: worker context only, on the worker @W the current task
 * was given.
 */
#define AGILE_SPAWN(W, NAME, ...) AGILE__SPAWN(W, NAME, __VA_ARGS__)
#define AGILE__SPAWN(W, NAME, ...) NAME##__spawn((W), __VA_ARGS__)

/**
 * AGILE_SYNC - wait for the newest unsynced spawn and yield its result
 * @W:    the worker the current task was given
 * @NAME: the task spawned last
 *
 * Runs the task inline if no other worker took it; otherwise works on
 * the thief's tasks until the thief is done.  The newest spawn must be
 * a spawn of @NAME by the current task; if it is not, or there is none,
 * the run fails with AGILE_E_SYNC and the sync yields a zeroed result.
 *
 * Thread safety: worker context only.
 *
 * Return: the task's result (nothing for a void task).
 */
#define AGILE_SYNC(W, NAME) AGILE__SYNC(W, NAME)
#define AGILE__SYNC(W, NAME) NAME##__sync((W), agile__base)

/**
 * AGILE_SYNC_ALL - wait for every unsynced spawn of the current task
 * @W: the worker the current task was given
 *
 * Syncs them newest first, discarding their results: the way to join
 * void tasks spawned in a loop.  Outside a task body (a root function of
 * agile_sched_run, or a helper function) it syncs every spawn since the
 * run began.
 *
 * Thread safety: worker context only.
 */
#define AGILE_SYNC_ALL(W) agile__sync_all((W), agile__base)

/**
 * AGILE_CALL - run task NAME(args) now, as a plain function call
 * @W:    the worker the current task was given
 * @NAME: the task
 * @...:  its arguments
 *
 * Thread safety: worker context only.
 *
 * Return: the task's result.
 */
#define AGILE_CALL(W, NAME, ...) NAME((W), __VA_ARGS__)

/**
 * AGILE_RUN - run task NAME(args) as the root of a run on pool @S
 * @S:    the pool
 * @NAME: the task
 * @...:  its arguments, then RESP: where to store the result (may be
 *        NULL; NULL for a void task), written only on success
 *
 * Evaluates to 0 or the run's first negative errno.  From a thread that is
 * no pool's worker, the task runs on this thread as the pool's worker 0
 * (the pool's threads steal from it) when that slot is free, else on a
 * worker while the caller sleeps (on a pool of one, which has no thread:
 * on this thread too, once the slot is its turn); if the caller is a
 * worker of another pool, it works for that pool meanwhile (see "Waiting
 * on another pool" above); from a worker of @S it runs at once on that
 * worker, as a nested run with its own error.
 *
 *	err = AGILE_RUN(s, fib, 30, &result);
 *
 * Thread safety: thread safe: any number of threads may run at once.
 */
#define AGILE_RUN(S, NAME, ...) AGILE__RUN(S, NAME, __VA_ARGS__)
#define AGILE__RUN(S, NAME, ...) NAME##__run((S), __VA_ARGS__)

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
/*
 * Workers are not pinned by default: a pinned worker cannot leave a core
 * that another process keeps busy (agile-bench interference,
 * docs/sched.md).  Set AGILE_SCHED_PIN=1 in the environment to pin them
 * one per processing unit (seed 002, step 3); AGILE_SCHED_NO_PIN forbids
 * pinning even then.
 */
#define AGILE_SCHED_NO_PIN (1u << 0) /* never bind workers to cores */
#define AGILE_SCHED_QUIET (1u << 1) /* no note on stderr when pinning fails */
/*
 * Count every spawn in agile_sched_stats.tasks.  Off by default: spawns
 * then take a call into the library instead of the inline path (fib(32)
 * with every call a spawn, one worker: 4-5x the time), for tests and
 * tuning.
 */
#define AGILE_SCHED_COUNT_SPAWNS (1u << 2)
#define AGILE_SCHED_FLAGS_ALL \
	(AGILE_SCHED_NO_PIN | AGILE_SCHED_QUIET | AGILE_SCHED_COUNT_SPAWNS)

/**
 * struct agile_sched_opts - how to build a pool (agile_sched_opts_init)
 * @nr_workers:  worker threads; 0 = one per processing unit this process
 *               may run on, at most its cgroups' CPU quota (rounded up);
 *               more than there are cores is allowed
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
 * @tasks:      tasks run: root tasks of runs, plus spawned tasks in a
 *              pool created with AGILE_SCHED_COUNT_SPAWNS (others do not
 *              count their spawns)
 * @steals:     tasks taken from another worker's deque
 * @leaps:      of @steals, those taken while waiting for a stolen child
 * @offloads:   leaves handed to the offload hook
 * @publishes:  times a worker made private frames stealable
 * @sleeps:     times an idle worker went to sleep on the futex
 * @nr_workers: workers
 * @nr_threads: the pool's own threads: one per worker, but for worker 0
 *              of a pool of two or more, which is the thread that calls
 *              AGILE_RUN (or agile_sched_run...) for as long as its run
 *              lasts (see agile_sched_create)
 * @nr_pinned:  threads bound to one processing unit
 * @pin_error:  0, or the negative errno that kept workers from being pinned
 *              (-ENOSYS: hwloc topology not available; -EPERM/-EINVAL:
 *              the affinity call failed); 0 also with AGILE_SCHED_NO_PIN
 * @sleeping:   idle workers asleep now (or about to be: past their last
 *              look for work), which only a wake-up gets going again
 * @moves:      times an unpinned pool thread that found another worker
 *              of the pool on its CPU moved to a CPU where none was
 *              (beside a busy process, two workers would otherwise share
 *              the one CPU it leaves free)
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
	uint32_t nr_threads;
	uint32_t moves;
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
 * A pool starts one thread fewer than it has workers: its worker 0 is
 * the thread that runs something on it (AGILE_RUN, agile_sched_run, a
 * parallel loop) from outside any pool, which then works on its own run
 * instead of sleeping until a worker has done it, one such thread at a
 * time; a second one meanwhile, and a worker of another pool, queue
 * their runs for the pool's threads.  A pool of one starts no thread:
 * its runs are queued, and the thread that holds worker 0's slot runs
 * them in order until its own is done, then hands the slot to the next
 * queued run's thread, a worker of another pool included (which works
 * for its own pool while it waits for its turn).
 * By default workers run unpinned.  With $AGILE_SCHED_PIN=1 (and not
 * AGILE_SCHED_NO_PIN) they are pinned one per processing unit, cores
 * first then their SMT siblings, wrapping around when there are more
 * workers than units; when hwloc cannot give a topology they run
 * unpinned, a note goes to stderr (unless AGILE_SCHED_QUIET) and
 * agile_sched_stats reports why.  An unpinned pool thread that finds
 * another worker of its pool on its CPU when it steals or wakes binds
 * itself to the CPUs of its affinity mask where no worker is (until it
 * sleeps, or until a steal 20 ms or more later finds the peer gone from
 * the CPU it left; at most one move per 20 ms): beside a busy process
 * the kernel can leave two workers sharing one CPU
 * (agile_sched_stats counts the moves; $AGILE_SCHED_SPREAD=0 turns this
 * off, docs/sched.md).  The thread that runs something, worker 0, is
 * never moved.  Idle and waiting workers spin briefly,
 * yield the CPU for about 2 ms while they look for work, then sleep on a
 * futex: an idle pool uses no CPU.
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
 * agile_sched_parallel_for_w - agile_sched_parallel_for from inside a task
 * @w:     the worker the calling task was given
 * @begin: first index
 * @end:   one past the last index
 * @grain: leaves get at most @grain iterations; 0 picks one
 * @body:  runs [lo, hi); 0 or a negative errno
 * @arg:   passed to @body
 *
 * The loop's tasks are spawned on @w within the current run (no pool
 * pointer, no nested run): idle workers of the pool steal them.  Once a
 * body fails no new body starts, and the error is returned to the caller
 * without failing the run.
 *
 * Thread safety: worker context only, on @w.
 *
 * Return: 0, the first body error, or -EINVAL (@w or @body NULL, @end <
 * @begin, @grain < 0).
 */
int agile_sched_parallel_for_w(struct agile_worker *w, int64_t begin,
			       int64_t end, int64_t grain,
			       int (*body)(int64_t lo, int64_t hi, void *arg),
			       void *arg);

/* Largest accumulator of agile_sched_parallel_reduce (bytes). */
#define AGILE_REDUCE_MAX_SIZE 4096

/**
 * agile_sched_parallel_reduce - reduce [@begin, @end) in parallel
 * @s:        the pool
 * @begin:    first index
 * @end:      one past the last index
 * @grain:    leaves get at most @grain iterations; 0 picks one
 * @size:     bytes of one accumulator (1..AGILE_REDUCE_MAX_SIZE)
 * @identity: the accumulator a leaf starts from (@size bytes)
 * @body:     accumulates [lo, hi) into @acc; 0 or a negative errno
 * @combine:  folds @other into @acc (@acc holds the lower indices)
 * @arg:      passed to @body and @combine
 * @result:   receives the reduction (@size bytes); the identity for an
 *            empty range
 *
 * The range is cut in halves down to @grain; each leaf accumulates from
 * the identity, and halves are combined lower with upper.  The order of
 * combination depends only on the range and @grain, never on which
 * worker ran what, so a floating-point reduction gives the same bits in
 * every run with the same arguments.  Accumulators live on the workers'
 * C stacks.  Once a body fails no new body starts.
 *
 *	static int sum(int64_t lo, int64_t hi, void *acc, void *arg)
 *	{
 *		const double *x = arg;
 *		for (int64_t i = lo; i < hi; i++)
 *			*(double *)acc += x[i];
 *		return 0;
 *	}
 *	static void add(void *acc, const void *other, void *arg)
 *	{
 *		*(double *)acc += *(const double *)other;
 *	}
 *	double zero = 0, total;
 *	err = agile_sched_parallel_reduce(s, 0, n, 0, sizeof(double), &zero,
 *					  sum, add, x, &total);
 *
 * Thread safety: thread safe; from a worker of @s it nests.  @body and
 * @combine run concurrently on every worker.
 *
 * Return: 0, the first body error, -EINVAL (NULL pointers, a bad @size,
 * @end < @begin, @grain < 0) or -ESHUTDOWN.
 */
int agile_sched_parallel_reduce(
	struct agile_sched *s, int64_t begin, int64_t end, int64_t grain,
	size_t size, const void *identity,
	int (*body)(int64_t lo, int64_t hi, void *acc, void *arg),
	void (*combine)(void *acc, const void *other, void *arg), void *arg,
	void *result);

/**
 * agile_sched_parallel_reduce_w - agile_sched_parallel_reduce from a task
 * @w:        the worker the calling task was given
 * @begin:    first index
 * @end:      one past the last index
 * @grain:    leaves get at most @grain iterations; 0 picks one
 * @size:     bytes of one accumulator (1..AGILE_REDUCE_MAX_SIZE)
 * @identity: the accumulator a leaf starts from
 * @body:     accumulates [lo, hi) into @acc; 0 or a negative errno
 * @combine:  folds @other into @acc
 * @arg:      passed to @body and @combine
 * @result:   receives the reduction
 *
 * As agile_sched_parallel_for_w is to agile_sched_parallel_for: spawned on
 * @w in the current run; a body's error is returned, the run goes on.
 *
 * Thread safety: worker context only, on @w.
 *
 * Return: 0, the first body error, or -EINVAL.
 */
int agile_sched_parallel_reduce_w(
	struct agile_worker *w, int64_t begin, int64_t end, int64_t grain,
	size_t size, const void *identity,
	int (*body)(int64_t lo, int64_t hi, void *acc, void *arg),
	void (*combine)(void *acc, const void *other, void *arg), void *arg,
	void *result);

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
