// SPDX-License-Identifier: MIT
/*
 * spread.c - a pool's threads keep off each other's CPU.
 *
 * Beside a busy process on one CPU of two, the kernel can leave two
 * unpinned workers of one pool sharing the other CPU: each worker that
 * wakes goes to the CPU that is idle at that moment, and the load
 * balancer does not move one of them back (two tasks against one is as
 * balanced as one against two).  The pool then gets one CPU, the time of
 * a 1-worker pool, where a worker beside the busy process would have
 * added half a CPU more (issue 12, docs/sched.md).
 *
 * So every worker publishes the CPU it was last seen on (-1 while it
 * sleeps or while nobody holds worker 0), and a pool thread that steals
 * a task while a peer is on its own CPU binds itself to the CPUs of its
 * affinity mask that no worker of the pool is on; the kernel migrates it
 * at once, and picks among those as it would among all (an idle one
 * first).  It stays bound until it goes to sleep, or until its first
 * steal HOLD_NS or more after the move that finds the peer it moved off
 * gone from that CPU (asleep, or moved), and then gives its mask back.
 * Without the hold the balancer takes it back to its peer's CPU, the one
 * with fewer tasks: bound for an instant only, the thread was beside the
 * busy loop in 58% of sched-spread's looks under ThreadSanitizer, where
 * steals come further apart (71% with a plain 20 ms hold).  Moves are
 * rare (a conflict, at most one per HOLD_NS per worker) and checks cheap
 * (sched_getcpu reads the thread's rseq area).  The caller's thread, worker 0, is never moved:
 * it is the user's.  A pinned pool never moves, and
 * AGILE_SCHED_SPREAD=0 turns moving off (a measurement knob).  A mask
 * that someone else sets on a pool thread while it is bound is lost when
 * the hold ends.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "env.h"
#include "sched/sched_impl.h"

/* A moved worker stays bound this long (and moves at most this often). */
#define HOLD_NS 20000000

static uint64_t spread_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool sched_spread_wanted(void)
{
	const char *env = getenv("AGILE_SCHED_SPREAD");

	if (env && *env && strcmp(env, "0") && strcmp(env, "1"))
		agile__env_invalid("AGILE_SCHED_SPREAD", env,
				   "0 (workers stay where the kernel puts "
				   "them) or 1; spread");
	return !env || strcmp(env, "0");
}

void sched_cpu_seen(struct worker *w)
{
	atomic_store_explicit(&w->cpu, sched_getcpu(), memory_order_relaxed);
}

void sched_cpu_gone(struct worker *w)
{
	atomic_store_explicit(&w->cpu, -1, memory_order_relaxed);
}

/* Is @cpu some other worker's of @w's pool, as last seen? */
static bool cpu_taken(const struct worker *w, int cpu)
{
	const struct agile_sched *s = w->sched;

	for (uint32_t i = 0; i < s->nr_workers; i++)
		if (i != w->index &&
		    atomic_load_explicit(&s->workers[i]->cpu,
					 memory_order_relaxed) == cpu)
			return true;
	return false;
}

/*
 * Bind @w's thread to the CPUs of its mask that no peer is on, if there
 * are any, and keep the mask to give back.  The kernel migrates it at
 * once, and picks among those CPUs as it would among all: an idle one
 * before one that runs another process.
 */
static void move_off(struct worker *w, int from, uint64_t now)
{
	const struct agile_sched *s = w->sched;
	cpu_set_t away;

	if (sched_getaffinity(0, sizeof(w->mask), &w->mask))
		return;
	away = w->mask;
	for (uint32_t i = 0; i < s->nr_workers; i++) {
		int cpu = atomic_load_explicit(&s->workers[i]->cpu,
					       memory_order_relaxed);

		if (cpu >= 0 && cpu < CPU_SETSIZE)
			CPU_CLR(cpu, &away);
	}
	if (!CPU_COUNT(&away) || sched_setaffinity(0, sizeof(away), &away))
		return;
	w->bound_until = now + HOLD_NS;
	w->left_cpu = from;
	atomic_store_explicit(&w->cpu, sched_getcpu(), memory_order_relaxed);
	atomic_fetch_add_explicit(&w->nr_moves, 1, memory_order_relaxed);
}

void sched_unbind(struct worker *w)
{
	if (!w->bound_until)
		return;
	w->bound_until = 0;
	sched_setaffinity(0, sizeof(w->mask), &w->mask);
}

void sched_spread(struct worker *w)
{
	int cpu = sched_getcpu();
	uint64_t now;

	atomic_store_explicit(&w->cpu, cpu, memory_order_relaxed);
	if (!w->may_move)
		return;
	if (w->bound_until) {
		now = spread_now_ns();
		if (now < w->bound_until)
			return;
		/* The peer it moved off is still there: stay away. */
		if (!cpu_taken(w, cpu) && cpu_taken(w, w->left_cpu)) {
			w->bound_until = now + HOLD_NS;
			return;
		}
		sched_unbind(w);
	}
	if (cpu < 0 || !cpu_taken(w, cpu))
		return;
	now = spread_now_ns();
	if (now - w->moved_at < HOLD_NS)
		return;
	w->moved_at = now;
	move_off(w, cpu, now);
}
