// SPDX-License-Identifier: MIT
/*
 * fib - fork/join spawn cost: fib(n) with every call a spawn (no cutoff),
 * beside the plain recursive function, oneTBB's task_group and OpenMP tasks
 * with the same thread count, and the same task built without the inline
 * sync's misuse checks (fib_unchecked.c), to show what they cost.  SPEC
 * §5: one agile worker <= 3x plain (issue 12: <= 1.8x); all
 * workers >= 5x faster than task_group and faster than OpenMP tasks.
 */
#include <agile/sched.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "tasks.h"

static int64_t fib_plain(int n)
{
	return n < 2 ? n : fib_plain(n - 1) + fib_plain(n - 2);
}

/*
 * The same recursion kept a tree of real calls: GCC at -O2 inlines
 * fib_plain into itself and turns part of it into a loop (about twice as
 * fast), which it cannot do across a spawn.  Shown beside, not judged.
 */
static __attribute__((noinline)) int64_t fib_calls(int n)
{
	return n < 2 ? n : fib_calls(n - 1) + fib_calls(n - 2);
}

AGILE_TASK_IMPL(int64_t, fib, w, int, n)
{
	int64_t b;

	if (n < 2)
		return n;
	AGILE_SPAWN(w, fib, n - 1);
	b = AGILE_CALL(w, fib, n - 2);
	return AGILE_SYNC(w, fib) + b;
}

struct fib_job {
	int n, threads;
	struct agile_sched *sched;
	struct tbb_arena *arena;
	int64_t result;
	int err;
};

static void run_plain(void *arg)
{
	struct fib_job *j = arg;

	j->result = fib_plain(j->n);
	__asm__ __volatile__("" : : "r"(j->result) : "memory");
}

static void run_calls(void *arg)
{
	struct fib_job *j = arg;

	j->result = fib_calls(j->n);
	__asm__ __volatile__("" : : "r"(j->result) : "memory");
}

static void run_agile(void *arg)
{
	struct fib_job *j = arg;
	int err = AGILE_RUN(j->sched, fib, j->n, &j->result);

	if (err && !j->err)
		j->err = err;
}

static void run_unchecked(void *arg)
{
	struct fib_job *j = arg;
	int err = bench_fib_unchecked(j->sched, j->n, &j->result);

	if (err && !j->err)
		j->err = err;
}

static void run_tbb(void *arg)
{
	struct fib_job *j = arg;

	j->result = tbb_fib(j->arena, j->n);
}

static void run_omp(void *arg)
{
	struct fib_job *j = arg;

	j->result = omp_fib(j->n, j->threads);
}

/*
 * Small runs, one after another: RUN_CALLS runs of fib(RUN_N) from the
 * bench's thread per repetition, what a program that enters the pool
 * often for little work pays on top of the work (a pool of one has no
 * thread: the caller runs it).
 */
#define RUN_CALLS 1000
#define RUN_N 5

static void runs_plain(void *arg)
{
	struct fib_job *j = arg;

	for (int i = 0; i < RUN_CALLS; i++) {
		j->result = fib_plain(j->n);
		__asm__ __volatile__("" : : "r"(j->result) : "memory");
	}
}

static void runs_agile(void *arg)
{
	for (int i = 0; i < RUN_CALLS; i++)
		run_agile(arg);
}

static void runs_tbb(void *arg)
{
	for (int i = 0; i < RUN_CALLS; i++)
		run_tbb(arg);
}

static int agile_pool(const struct bench_opts *o, struct fib_job *j,
		      int workers)
{
	struct agile_sched_opts opts;

	agile_sched_opts_init(&opts);
	opts.flags = o->no_pin ? AGILE_SCHED_NO_PIN : 0;
	opts.nr_workers = (uint32_t)workers;
	return agile_sched_create(&opts, &j->sched);
}

static void agile_note(struct fib_job *j, const char *variant, int runs)
{
	struct agile_sched_stats st;

	agile_sched_stats(j->sched, &st);
	if (st.pin_error)
		bench_note("%s: workers not pinned (%s)", variant,
			   strerror(-st.pin_error));
	bench_note("%s: %llu steals, %llu publishes over %d runs", variant,
		   (unsigned long long)st.steals,
		   (unsigned long long)st.publishes, runs);
}

int bench_fib(const struct bench_opts *o)
{
	struct fib_job plain = { .n = o->fib_n }, one = plain, all = plain;
	struct fib_job calls = plain;
	struct fib_job unchecked = plain;
	struct fib_job tbb = { .n = o->fib_n },
		       omp = { .n = o->fib_n, .threads = o->threads };
	struct fib_job small_plain = { .n = RUN_N }, small_one = small_plain,
		       small_tbb = small_plain;
	int64_t expect = fib_plain(o->fib_n);
	/* Spawn-heavy baselines are slow: fewer repetitions for them. */
	int slow_reps = o->reps < 3 ? o->reps : 3;
	char all_name[32];
	int err;

	snprintf(all_name, sizeof(all_name), "agile-%dw", o->threads);
	err = agile_pool(o, &one, 1);
	if (err)
		return err;
	unchecked.sched = one.sched;
	err = agile_pool(o, &all, o->threads);
	if (err) {
		agile_sched_destroy(one.sched);
		return err;
	}
	tbb.arena = tbb_arena_new(o->threads);
	small_one.sched = one.sched;
	small_tbb.arena = tbb_arena_new(1);

	/* The four of one worker in rounds, rep by rep (their ratios). */
	const struct contender one_cpu[] = {
		{ "plain", 1, run_plain, &plain, o->reps },
		{ "plain-calls", 1, run_calls, &calls, o->reps },
		{ "agile-1w", 1, run_agile, &one, o->reps },
		{ "agile-1w-unchecked", 1, run_unchecked, &unchecked, o->reps },
	};
	const struct contender c[] = {
		{ all_name, o->threads, run_agile, &all, o->reps },
		{ "tbb-task_group", o->threads, run_tbb, &tbb, slow_reps },
		{ "omp-tasks", o->threads, run_omp, &omp, slow_reps },
	};
	const struct contender small[] = {
		{ "runs-plain", 1, runs_plain, &small_plain, o->reps },
		{ "runs-agile-1w", 1, runs_agile, &small_one, o->reps },
		{ "runs-tbb-arena1", 1, runs_tbb, &small_tbb, o->reps },
	};
	bench_run_rounds("fib", one_cpu, sizeof(one_cpu) / sizeof(one_cpu[0]));
	bench_run("fib", c, sizeof(c) / sizeof(c[0]));
	bench_run_rounds("fib", small, sizeof(small) / sizeof(small[0]));

	agile_note(&one, "agile-1w", o->reps + 2); /* + a warm-up per pass */
	agile_note(&all, all_name, o->reps + 2);
	agile_sched_destroy(one.sched);
	agile_sched_destroy(all.sched);
	tbb_arena_free(tbb.arena);
	tbb_arena_free(small_tbb.arena);
	if (one.err || all.err || unchecked.err || small_one.err)
		return one.err	     ? one.err :
		       all.err	     ? all.err :
		       unchecked.err ? unchecked.err :
				       small_one.err;
	if (small_plain.result != 5 || small_one.result != 5 ||
	    small_tbb.result != 5)
		return -EPROTO;
	if (plain.result != expect || calls.result != expect ||
	    one.result != expect || unchecked.result != expect ||
	    all.result != expect || tbb.result != expect ||
	    omp.result != expect)
		return -EPROTO;

	bench_compare("fib", "agile-1w", "plain", false, "<= 1.8");
	bench_compare("fib", "agile-1w", "plain-calls", false, NULL);
	bench_compare("fib", "agile-1w", "agile-1w-unchecked", false,
		      "<= 1.05");
	bench_compare("fib", all_name, "tbb-task_group", true, ">= 5");
	bench_compare("fib", all_name, "omp-tasks", true, "> 1");
	bench_compare("fib", all_name, "agile-1w", true, NULL);
	bench_compare("fib", all_name, "plain", true, NULL);
	bench_compare("fib", "tbb-task_group", "plain", false, NULL);
	bench_compare("fib", "omp-tasks", "plain", false, NULL);
	bench_compare("fib", "runs-agile-1w", "runs-tbb-arena1", true, NULL);
	bench_compare("fib", "runs-agile-1w", "runs-plain", false, NULL);
	bench_note("fib(%d), every call a spawn: %lld calls", o->fib_n,
		   (long long)(2 * fib_plain(o->fib_n + 1) - 1));
	bench_note("runs-*: %d runs of fib(%d) one after another from the "
		   "bench's thread, per repetition: agile's pool of one, "
		   "oneTBB's task_group in a 1-thread task_arena, plain calls",
		   RUN_CALLS, RUN_N);
	return 0;
}
