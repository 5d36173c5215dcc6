// SPDX-License-Identifier: MIT
/*
 * pool.c - a scheduler's start-up (seed 002, process 500a), stats
 * and shutdown.
 *
 * Workers run unpinned unless pinning is asked for ($AGILE_SCHED_PIN=1,
 * and not AGILE_SCHED_NO_PIN): seed 002's step 3 is kept, but off by
 * default.  On a machine shared with other processes a pinned worker
 * cannot leave a busy core: a 1-worker pool pinned to CPU 0 beside a busy
 * process there ran 2x slower while oneTBB and OpenMP moved to the free
 * CPU (issue 12), and a pinned worker descheduled there holds frames its
 * peers wait for.  An unpinned one is moved to an idle CPU by the kernel.
 * agile-bench interference measured both (docs/sched.md); on a 2-CPU VM
 * under a load average of 7-10 the two were within each other's noise,
 * so nothing measured pays for the risk of the busy core.  Unpinned
 * pool threads keep off each other's CPU (spread.c).
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

#include "env.h"
#include "sched/placement.h"
#include "sched/sched_impl.h"
#include "sys.h"

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
	for (size_t i = 0; i < sizeof(o->reserved) / sizeof(o->reserved[0]);
	     i++)
		if (o->reserved[i])
			return -EINVAL;
	if (o->reserved32 || (o->flags & ~AGILE_SCHED_FLAGS_ALL) ||
	    o->nr_workers > AGILE_SCHED_MAX_WORKERS ||
	    (o->max_frames && o->max_frames < 2) || o->max_frames > (1u << 24))
		return -EINVAL;
	return 0;
}

/* Pinning is asked for: $AGILE_SCHED_PIN is "1" (and not AGILE_SCHED_NO_PIN). */
static bool pin_asked(uint32_t flags)
{
	const char *env = getenv("AGILE_SCHED_PIN");

	if (env && *env && strcmp(env, "0") && strcmp(env, "1"))
		agile__env_invalid("AGILE_SCHED_PIN", env,
				   "1 (pin the workers) or 0; unpinned");
	return !(flags & AGILE_SCHED_NO_PIN) && env && !strcmp(env, "1");
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
	atomic_init(&w->cpu, -1);
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
		w->pub.eager_end += max_frames / 2 < EAGER_FRAMES ?
					    max_frames / 2 :
					    EAGER_FRAMES;
	/* A pool that counts its spawns counts them in agile__spawn_slow. */
	atomic_init(&w->pub.fast_span, s->flags & AGILE_SCHED_COUNT_SPAWNS ?
					       0 :
					       fast_span_bytes(w));
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
		err = pthread_create(&w->thread, &attr, sched_worker_main, w);
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
	sched_wake_all(s);
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
	/*
	 * Worker 0 is the caller's (sched_impl.h): threads start at 1 and
	 * take the units from the first on.
	 */
	const uint32_t first = 1;

	for (uint32_t i = first; i < s->nr_workers; i++) {
		struct worker *w = s->workers[i];
		cpu_set_t cpus;
		int err = EINVAL;

		if (place->pus) {
			if (!sched_placement_cpus(place, i - first, &cpus))
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
		w->may_move = sched_spread_wanted();
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

	if (pin_asked(opts->flags)) {
		s->pin_error = sched_placement_load(&place);
		if (s->pin_error && !(opts->flags & AGILE_SCHED_QUIET))
			fprintf(stderr,
				"agile: no hwloc topology (%s): workers are not pinned to cores\n",
				strerror(-s->pin_error));
	}
	s->nr_workers = opts->nr_workers;
	if (!s->nr_workers) {
		/* One per CPU the process may use: affinity, cgroup quota. */
		s->nr_workers = agile_sys_cpus();
		if (place.pus && (uint32_t)place.nr_pus < s->nr_workers)
			s->nr_workers = (uint32_t)place.nr_pus;
	}
	if (s->nr_workers > AGILE_SCHED_MAX_WORKERS)
		s->nr_workers = AGILE_SCHED_MAX_WORKERS;

	s->nr_threads = s->nr_workers - 1;

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
	sched_placement_free(&place);
	*out = s;
	return 0;

err_stop:
	stop_workers(s);
err_free:
	sched_placement_free(&place);
	sched_free(s);
	return err;
}

int agile_sched_destroy(struct agile_sched *s)
{
	if (!s)
		return -EINVAL;
	if (sched_current_worker && sched_current_worker->sched == s)
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
	/*
	 * Sleepers first: acquire pairs with sleep_idle's release, so a
	 * worker counted here as asleep has its sleep counted below.
	 */
	st->sleeping =
		atomic_load_explicit(&s->nr_asleep, memory_order_acquire);
	for (uint32_t i = 0; i < s->nr_workers; i++) {
		struct worker *w = s->workers[i];

#define LOAD(c) atomic_load_explicit(&w->c, memory_order_relaxed)
		st->tasks += LOAD(pub.nr_spawns) + LOAD(nr_roots);
		st->steals += LOAD(nr_steals);
		st->leaps += LOAD(nr_leaps);
		st->offloads += LOAD(nr_offloads);
		st->publishes += LOAD(nr_publishes);
		st->sleeps += LOAD(nr_sleeps);
		st->moves += LOAD(nr_moves);
#undef LOAD
	}
	st->nr_workers = s->nr_workers;
	st->nr_threads = s->nr_threads;
	st->nr_pinned = s->nr_pinned;
	st->pin_error = s->pin_error;
	return 0;
}
