/* SPDX-License-Identifier: MIT */
/*
 * bench.h - what agile-bench's benchmarks share: timing, rows of results
 * (each beside its baseline), the table and the CSV.
 */
#ifndef AGILE_BENCH_H
#define AGILE_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bench_opts {
	int threads; /* "all workers": agile, oneTBB and OpenMP alike */
	int reps; /* timed repetitions per contender (plus one warm-up) */
	int fib_n; /* fib(n) */
	int64_t pfor_n; /* iterations of the uneven parallel-for */
	int64_t grain; /* its grain (agile grain, OpenMP chunk, TBB grainsize) */
	bool no_pin; /* agile workers unpinned (AGILE_SCHED_NO_PIN) */
	bool quick; /* interference: smaller trees, fewer rounds */
	int64_t trips; /* round trips per repetition of doorbell (sleep: / 10) */
	const char *sleepers; /* pollcost: comma-separated sleeper counts */
	int period_ms; /* pollcost: milliseconds measured per repetition */
	const char *ar_procs; /* allreduce: process counts, comma-separated */
	const char *ar_sizes; /* allreduce: "MIN:MAX" bytes, powers of 4 */
	const char *ar_cold_from; /* allreduce: rewrite send buffers from here */
	const char *ar_mpi_algs; /* allreduce: Open MPI algorithms to force */
	int64_t seg_n; /* segmap: the matrices' and the stencil's side */
	int seg_iters; /* segmap: stencil iterations per run */
	int seg_nodes; /* segmap: compute nodes (Q), MPI ranks alike */
};

/* One contender's timing. */
struct timing {
	double min_ms, median_ms;
	double p10_ms, p90_ms,
		max_ms; /* the spread (nearest-rank percentiles) */
	int reps;
};

/* One contender of a benchmark: a variant run @reps times. */
struct contender {
	const char *variant;
	int threads;
	void (*fn)(void *arg);
	void *arg;
	int reps;
};

/*
 * Time every contender, @reps times each, in two passes (the second in
 * reverse order) of warm back-to-back blocks, with a short pause whenever
 * the contender changes so the previous runtime's threads go idle.  Adds a
 * row for each contender.
 */
void bench_run(const char *bench, const struct contender *c, int nr);
/* The same in interleaved rounds: each round runs every contender once. */
void bench_run_rounds(const char *bench, const struct contender *c, int nr);

/* CLOCK_MONOTONIC in milliseconds. */
double bench_now_ms(void);
int bench_find_program(const char *name, const char *env, char *path,
		       size_t len);

/* Min, median, p10, p90 and max of @reps timings (sorts @ms). */
struct timing bench_summarize(double *ms, int reps);

/* Add a timing row. */
void bench_row(const char *bench, const char *variant, int threads,
	       struct timing t);

/* Add a timing row of a run that moves @bytes: the table adds bandwidth. */
void bench_row_bytes(const char *bench, const char *variant, int threads,
		     struct timing t, uint64_t bytes);

/*
 * The same; @csv_only: the row goes to the CSV but not to the table (the
 * detail behind a row that is in it).
 */
void bench_row_bytes_detail(const char *bench, const char *variant, int threads,
			    struct timing t, uint64_t bytes, bool csv_only);

/*
 * Say how many bytes one run of a row moved between nodes (@moved), and
 * the least its decomposition needs (@moved_min): the table lists them
 * apart, the CSV in its last two columns.
 */
void bench_row_moved(const char *bench, const char *variant, uint64_t moved,
		     uint64_t moved_min);

/* Add a row that could not be measured here, and why ("no /dev/agile"). */
void bench_row_na(const char *bench, const char *variant, int threads,
		  const char *why);

/* The timing of a measured row: 0, or -ENOENT. */
int bench_find_timing(const char *bench, const char *variant, struct timing *t);

/*
 * Add a ratio between two rows of @bench, judged on their medians.
 * @speedup false: time of @variant / time of @baseline, @target like "<= 3".  @speedup true: how
 * many times faster @variant is, @target like ">= 5" or "> 1".  @target
 * may be NULL (reported, not judged).
 */
void bench_compare(const char *bench, const char *variant, const char *baseline,
		   bool speedup, const char *target);

void bench_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int bench_fib(const struct bench_opts *o);
int bench_pfor(const struct bench_opts *o);
int bench_doorbell(const struct bench_opts *o);
int bench_sleep(const struct bench_opts *o);
int bench_pollcost(const struct bench_opts *o);
int bench_gpu(const struct bench_opts *o);
int bench_allreduce(const struct bench_opts *o);
int bench_interference(const struct bench_opts *o);
int bench_segmap(const struct bench_opts *o);
int bench_runtime(const struct bench_opts *o);
/* runtime_kernels.c: runtime's GPU-style kernel rows (saxpy, sgemm ...). */
int bench_runtime_kernels(const struct bench_opts *o);
int bench_retarget(const struct bench_opts *o);

/* Baselines in their own files (C++ for oneTBB, -fopenmp for OpenMP). */
struct tbb_arena;
struct tbb_arena *tbb_arena_new(int threads);
void tbb_arena_free(struct tbb_arena *a);
int64_t tbb_fib(struct tbb_arena *a, int n);
void tbb_pfor(struct tbb_arena *a, int64_t n, int64_t grain,
	      void (*body)(int64_t lo, int64_t hi, void *arg), void *arg);

int64_t tbb_nqueens(struct tbb_arena *a, int n);
int64_t tbb_uts(struct tbb_arena *a);

int64_t omp_fib(int n, int threads);
/* fib_unchecked.c: fib.c's task without the inline sync checks. */
struct agile_sched;
int bench_fib_unchecked(struct agile_sched *s, int n, int64_t *result);
int64_t omp_nqueens(int n, int threads);
int64_t omp_uts(int threads);
void omp_pfor(int64_t n, int64_t chunk, int threads,
	      void (*body)(int64_t lo, int64_t hi, void *arg), void *arg);

#endif /* AGILE_BENCH_H */
