// SPDX-License-Identifier: MIT
/*
 * agile-bench - libagile's benchmarks, each printed beside its baseline
 * measured in the same run, as a table and (--csv) a CSV file.
 *
 *	agile-bench [options] fib|pfor|doorbell|sleep|pollcost|interference|
 *			      allreduce|segmap|gpu|all|list
 *	agile-bench [options] runtime   (the runtime beside OpenCL on PoCL)
 *
 * Ratios, not absolute times, are the results: they are what SPEC §5's
 * targets are written in, and they survive noisy machines better.
 *
 * Built with -DAGILE_BENCH_NO_TBB (the static build that runs in the test
 * guests: there is no static oneTBB), fib, pfor, interference, allreduce
 * and segmap are left out.
 * So is runtime (no static libOpenCL).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

struct row {
	char bench[16], variant[32];
	int threads;
	struct timing t;
	uint64_t bytes; /* bytes moved per run: bandwidth = bytes / median */
	char na[32]; /* not measured here, and why; "" when measured */
	bool csv_only; /* detail: in the CSV, not in the table */
	bool has_moved; /* data movement counted: moved vs moved_min */
	uint64_t moved,
		moved_min; /* bytes a run moved, and the least it could */
};

struct comparison {
	char bench[16], variant[32], baseline[32], target[16];
	bool speedup;
};

static struct row rows[2048];
static int nr_rows;
static struct comparison comparisons[512];
static int nr_comparisons;
static char notes[64][200];
static int nr_notes;

/*
 * bench_find_program - the helper program @name beside agile-bench (as
 * /proc/self/exe says), or the one $@env names when set.  0 when @path
 * holds an executable, else -ENOENT, -ENAMETOOLONG or readlink's errno.
 */
int bench_find_program(const char *name, const char *env, char *path,
		       size_t len)
{
	const char *given = getenv(env);
	char self[PATH_MAX], *slash;
	ssize_t n;

	if (given && *given) {
		if ((size_t)snprintf(path, len, "%s", given) >= len)
			return -ENAMETOOLONG;
		return access(path, X_OK) ? -ENOENT : 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return -errno;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	if ((size_t)snprintf(path, len, "%s/%s", self, name) >= len)
		return -ENAMETOOLONG;
	return access(path, X_OK) ? -ENOENT : 0;
}

double bench_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void settle(void)
{
	struct timespec ts = { .tv_nsec = 20 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

struct timing bench_summarize(double *ms, int reps)
{
	struct timing t;

	qsort(ms, (size_t)reps, sizeof(ms[0]), cmp_double);
	t.min_ms = ms[0];
	t.median_ms = reps % 2 ? ms[reps / 2] :
				 (ms[reps / 2 - 1] + ms[reps / 2]) / 2;
	/* Nearest rank: the value below which about 10% (90%) of them lie. */
	t.p10_ms = ms[(int)(0.1 * (reps - 1) + 0.5)];
	t.p90_ms = ms[(int)(0.9 * (reps - 1) + 0.5)];
	t.max_ms = ms[reps - 1];
	t.reps = reps;
	return t;
}

#define MAX_REPS 64

/*
 * The progress line of a long run, on stderr when it is a terminal: the
 * benchmark, the contender and its repetition, rewritten in place.
 */
static void progress(const char *bench, const char *variant, int rep, int reps)
{
	static int tty = -1;

	if (tty < 0)
		tty = isatty(STDERR_FILENO);
	if (!tty)
		return;
	if (!bench)
		fprintf(stderr, "\r\033[K");
	else
		fprintf(stderr, "\r\033[K  %s %s: %d/%d", bench, variant, rep,
			reps);
}

void bench_run(const char *bench, const struct contender *c, int nr)
{
	double ms[16][MAX_REPS];
	int done[16] = { 0 };

	if (nr > 16)
		nr = 16;
	/*
	 * Two passes, the second in reverse order (A B C, then C B A), each
	 * timing a block of about half of a contender's repetitions back to
	 * back after an untimed warm-up run: the runtimes are measured warm,
	 * as a loop of runs sees them, and a slow drift in the machine's load
	 * weighs on all of them alike.
	 */
	for (int pass = 0; pass < 2; pass++) {
		for (int k = 0; k < nr; k++) {
			int i = pass ? nr - 1 - k : k;
			int reps = c[i].reps < MAX_REPS ? c[i].reps : MAX_REPS;
			int block = pass ? reps - done[i] : (reps + 1) / 2;

			if (block <= 0)
				continue;
			settle();
			c[i].fn(c[i].arg);
			for (int r = 0; r < block; r++) {
				double start = bench_now_ms();

				progress(bench, c[i].variant, done[i] + 1,
					 reps);
				c[i].fn(c[i].arg);
				ms[i][done[i]++] = bench_now_ms() - start;
			}
		}
	}
	progress(NULL, NULL, 0, 0);
	for (int i = 0; i < nr; i++)
		bench_row(bench, c[i].variant, c[i].threads,
			  bench_summarize(ms[i], done[i] > 0 ? done[i] : 1));
}

void bench_run_rounds(const char *bench, const struct contender *c, int nr)
{
	double ms[16][MAX_REPS];
	int reps = MAX_REPS;

	if (nr > 16)
		nr = 16;
	for (int i = 0; i < nr; i++) {
		if (c[i].reps < reps)
			reps = c[i].reps;
		settle();
		c[i].fn(c[i].arg); /* warm-up */
	}
	/*
	 * Round r runs every contender once, from contender r % nr on: a
	 * drift in the machine's load weighs on all alike, rep by rep.
	 */
	for (int r = 0; r < reps; r++)
		for (int k = 0; k < nr; k++) {
			int i = (r + k) % nr;
			double start = bench_now_ms();

			progress(bench, c[i].variant, r + 1, reps);
			c[i].fn(c[i].arg);
			ms[i][r] = bench_now_ms() - start;
		}
	progress(NULL, NULL, 0, 0);
	for (int i = 0; i < nr; i++)
		bench_row(bench, c[i].variant, c[i].threads,
			  bench_summarize(ms[i], reps > 0 ? reps : 1));
}

void bench_row(const char *bench, const char *variant, int threads,
	       struct timing t)
{
	bench_row_bytes(bench, variant, threads, t, 0);
}

void bench_row_bytes(const char *bench, const char *variant, int threads,
		     struct timing t, uint64_t bytes)
{
	bench_row_bytes_detail(bench, variant, threads, t, bytes, false);
}

void bench_row_bytes_detail(const char *bench, const char *variant, int threads,
			    struct timing t, uint64_t bytes, bool csv_only)
{
	struct row *r;

	if (nr_rows == (int)(sizeof(rows) / sizeof(rows[0]))) {
		fprintf(stderr, "agile-bench: no room for row %s %s\n", bench,
			variant);
		return;
	}
	r = &rows[nr_rows++];
	snprintf(r->bench, sizeof(r->bench), "%s", bench);
	snprintf(r->variant, sizeof(r->variant), "%s", variant);
	r->threads = threads;
	r->t = t;
	r->bytes = bytes;
	r->csv_only = csv_only;
	fprintf(stderr,
		"  %-6s %-22s %3d threads  %10.3f ms median of %d (p10-p90 %.3f-%.3f, min %.3f)\n",
		bench, variant, threads, t.median_ms, t.reps, t.p10_ms,
		t.p90_ms, t.min_ms);
}

void bench_row_moved(const char *bench, const char *variant, uint64_t moved,
		     uint64_t moved_min)
{
	for (int i = 0; i < nr_rows; i++) {
		struct row *r = &rows[i];

		if (strcmp(r->bench, bench) || strcmp(r->variant, variant))
			continue;
		r->has_moved = true;
		r->moved = moved;
		r->moved_min = moved_min;
	}
}

/* Bytes per second at the median time; 0 when the row moves no bytes. */
static double row_bandwidth(const struct row *r)
{
	return r->bytes && r->t.median_ms > 0 ?
		       r->bytes / (r->t.median_ms / 1e3) :
		       0;
}

void bench_row_na(const char *bench, const char *variant, int threads,
		  const char *why)
{
	struct row *r;

	if (nr_rows == (int)(sizeof(rows) / sizeof(rows[0]))) {
		fprintf(stderr, "agile-bench: no room for row %s %s\n", bench,
			variant);
		return;
	}
	r = &rows[nr_rows++];
	memset(r, 0, sizeof(*r));
	snprintf(r->bench, sizeof(r->bench), "%s", bench);
	snprintf(r->variant, sizeof(r->variant), "%s", variant);
	snprintf(r->na, sizeof(r->na), "%s", why);
	r->threads = threads;
	fprintf(stderr, "  %-6s %-22s %3d threads  n/a: %s\n", bench, variant,
		threads, why);
}

/* Every verdict is judged on medians (README: benchmarks). */
void bench_compare(const char *bench, const char *variant, const char *baseline,
		   bool speedup, const char *target)
{
	struct comparison *c;

	if (nr_comparisons ==
	    (int)(sizeof(comparisons) / sizeof(comparisons[0]))) {
		fprintf(stderr, "agile-bench: no room for verdict %s %s\n",
			bench, variant);
		return;
	}
	c = &comparisons[nr_comparisons++];
	snprintf(c->bench, sizeof(c->bench), "%s", bench);
	snprintf(c->variant, sizeof(c->variant), "%s", variant);
	snprintf(c->baseline, sizeof(c->baseline), "%s", baseline);
	snprintf(c->target, sizeof(c->target), "%s", target ? target : "");
	c->speedup = speedup;
}

void bench_note(const char *fmt, ...)
{
	va_list ap;

	if (nr_notes == (int)(sizeof(notes) / sizeof(notes[0])))
		return;
	va_start(ap, fmt);
	vsnprintf(notes[nr_notes++], sizeof(notes[0]), fmt, ap);
	va_end(ap);
}

static const struct row *find_row(const char *bench, const char *variant)
{
	for (int i = 0; i < nr_rows; i++)
		if (!strcmp(rows[i].bench, bench) &&
		    !strcmp(rows[i].variant, variant))
			return &rows[i];
	return NULL;
}

int bench_find_timing(const char *bench, const char *variant, struct timing *t)
{
	const struct row *r = find_row(bench, variant);

	if (!r || r->na[0])
		return -ENOENT;
	*t = r->t;
	return 0;
}

/*
 * A comparison's ratio (from the median times) and verdict.  Slowdown:
 * variant / baseline, target "<= X".  Speedup: baseline / variant (how many
 * times faster the variant is), target ">= X" or "> X".
 */
static double judge(const struct comparison *c, const char **verdict)
{
	const struct row *r = find_row(c->bench, c->variant);
	const struct row *b = find_row(c->bench, c->baseline);
	double ratio, x, rt, bt;

	*verdict = "";
	if ((r && r->na[0]) || (b && b->na[0])) {
		*verdict = "n/a";
		return 0;
	}
	if (!r || !b)
		return 0;
	rt = r->t.median_ms;
	bt = b->t.median_ms;
	if (rt <= 0 || bt <= 0)
		return 0;
	ratio = c->speedup ? bt / rt : rt / bt;
	if (!strncmp(c->target, "<=", 2)) {
		x = atof(c->target + 2);
		*verdict = ratio <= x ? "met" : "NOT met";
	} else if (!strncmp(c->target, ">=", 2)) {
		x = atof(c->target + 2);
		*verdict = ratio >= x ? "met" : "NOT met";
	} else if (c->target[0] == '>') {
		x = atof(c->target + 1);
		*verdict = ratio > x ? "met" : "NOT met";
	}
	return ratio;
}

static void print_table(void)
{
	int printed_moved = 0;

	printf("\n%-9s %-22s %7s %5s %11s %21s %11s %11s\n", "bench", "variant",
	       "threads", "reps", "median ms", "p10-p90 ms", "min ms", "GB/s");
	for (int i = 0; i < nr_rows; i++) {
		const struct row *r = &rows[i];

		if (r->csv_only)
			continue;
		if (r->na[0]) {
			printf("%-9s %-22s %7d %5s n/a: %s\n", r->bench,
			       r->variant, r->threads, "-", r->na);
			continue;
		}
		printf("%-9s %-22s %7d %5d %11.3f %10.3f-%-10.3f %11.3f",
		       r->bench, r->variant, r->threads, r->t.reps,
		       r->t.median_ms, r->t.p10_ms, r->t.p90_ms, r->t.min_ms);
		if (r->bytes)
			printf(" %11.3f", row_bandwidth(r) / 1e9);
		printf("\n");
	}
	printf("\n%-9s %-46s %9s  %-7s %s\n", "bench", "ratio", "value",
	       "target", "");
	for (int i = 0; i < nr_comparisons; i++) {
		const struct comparison *c = &comparisons[i];
		const char *verdict;
		double ratio = judge(c, &verdict);
		char what[96];

		if (c->speedup)
			snprintf(what, sizeof(what), "%s faster than %s (x)",
				 c->variant, c->baseline);
		else
			snprintf(what, sizeof(what), "%s / %s time", c->variant,
				 c->baseline);
		if (!strcmp(verdict, "n/a")) {
			printf("%-9s %-46s %9s  %-7s %s\n", c->bench, what,
			       "n/a", c->target, "");
			continue;
		}
		printf("%-9s %-46s %8.2fx  %-7s %s\n", c->bench, what, ratio,
		       c->target, verdict);
	}
	for (int i = 0; i < nr_rows; i++) {
		const struct row *r = &rows[i];

		if (!r->has_moved)
			continue;
		if (!printed_moved++)
			printf("\n%-9s %-22s %14s %14s %9s\n", "bench",
			       "data moved per run", "bytes", "minimum",
			       "/ minimum");
		printf("%-9s %-22s %14llu %14llu", r->bench, r->variant,
		       (unsigned long long)r->moved,
		       (unsigned long long)r->moved_min);
		if (r->moved_min)
			printf(" %8.2fx\n", (double)r->moved / r->moved_min);
		else
			printf(" %9s\n", r->moved ? "-" : "0");
	}
	for (int i = 0; i < nr_notes; i++)
		printf("note: %s\n", notes[i]);
}

/* @s as one CSV field (RFC 4180: quoted when it holds , " or a newline). */
static void csv_text(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static int write_csv(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f,
		"kind,bench,variant,threads,reps,min_ms,median_ms,baseline,ratio,target,verdict,bytes,bandwidth_Bps,p10_ms,p90_ms,max_ms,moved_bytes,moved_min_bytes\n");
	for (int i = 0; i < nr_rows; i++) {
		const struct row *r = &rows[i];

		fputs(r->na[0] ? "na," : "time,", f);
		csv_text(f, r->bench);
		fputc(',', f);
		csv_text(f, r->variant);
		if (r->na[0]) {
			fprintf(f, ",%d,,,,,,,", r->threads);
			csv_text(f, r->na);
			fputs(",,,,,,,\n", f);
			continue;
		}
		fprintf(f, ",%d,%d,%.6f,%.6f,,,,", r->threads, r->t.reps,
			r->t.min_ms, r->t.median_ms);
		if (r->bytes)
			fprintf(f, ",%llu,%.0f", (unsigned long long)r->bytes,
				row_bandwidth(r));
		else
			fprintf(f, ",,");
		fprintf(f, ",%.6f,%.6f,%.6f", r->t.p10_ms, r->t.p90_ms,
			r->t.max_ms);
		if (r->has_moved)
			fprintf(f, ",%llu,%llu\n", (unsigned long long)r->moved,
				(unsigned long long)r->moved_min);
		else
			fprintf(f, ",,\n");
	}
	for (int i = 0; i < nr_comparisons; i++) {
		const struct comparison *c = &comparisons[i];
		const char *verdict;
		double ratio = judge(c, &verdict);

		fputs(c->speedup ? "speedup," : "slowdown,", f);
		csv_text(f, c->bench);
		fputc(',', f);
		csv_text(f, c->variant);
		fputs(",,,,,", f);
		csv_text(f, c->baseline);
		fprintf(f, ",%.4f,", ratio);
		csv_text(f, c->target);
		fputc(',', f);
		csv_text(f, verdict);
		fputs(",,,,,,,\n", f);
	}
	/* The notes too, in the variant column (tools/agile-bench/report.py). */
	for (int i = 0; i < nr_notes; i++) {
		fputs("note,,", f);
		csv_text(f, notes[i]);
		fputs(",,,,,,,,,,,,,,,\n", f);
	}
	return fclose(f) ? -errno : 0;
}

static const struct {
	const char *name;
	int (*run)(const struct bench_opts *o);
	const char *help;
} benches[] = {
#ifndef AGILE_BENCH_NO_TBB
	{ "fib", bench_fib,
	  "fork/join fib(n), every call a spawn: plain recursion, agile 1 and all workers, oneTBB task_group, OpenMP tasks; 1000 small runs on a pool of one beside a 1-thread oneTBB arena" },
	{ "pfor", bench_pfor,
	  "uneven parallel-for: serial, agile_sched_parallel_for, oneTBB parallel_for, OpenMP dynamic schedule" },
#endif
	{ "doorbell", bench_doorbell,
	  "spinning round trip worker <-> CPU EU (dev and eu layers, user and kmod backends) beside C11 ping-pongs on one line and on the same lines" },
	{ "sleep", bench_sleep,
	  "round trip with both sides asleep (user: futex, kmod: SIGNAL and poller wake) beside a futex ping-pong" },
	{ "pollcost", bench_pollcost,
	  "the module's poller while -S N contexts each have a plain-store sleeper: its time (sysfs), softirq time and a busy loop's slowdown beside N = 0, and another user's plain-store wake time beside them" },
#ifndef AGILE_BENCH_NO_TBB
	{ "interference", bench_interference,
	  "fib, nqueens and an unbalanced tree beside busy loops and a busy process: agile (pinned, unpinned), oneTBB, OpenMP; 1 and -t threads" },
	{ "allreduce", bench_allreduce,
	  "allreduce among -t processes, 4 KiB..64 MiB: agile's process scope beside Open MPI's MPI_Allreduce (agile-bench-mpi) and memcpy" },
	{ "retarget", bench_retarget,
	  "unmodified CUDA kernels (matrix list, tree reduction, tiled transpose + smoothing) translated by agile-retarget on -t threads, beside OpenCL C on PoCL and OpenMP" },
	{ "segmap", bench_segmap,
	  "segmented fields, Q nodes: C = A + B^T and a Jacobi stencil by agile_forall beside plain loops, parallel_for and (stencil) Open MPI; bytes moved vs the least" },
#endif
#ifndef AGILE_BENCH_NO_TBB
	{ "runtime", bench_runtime,
	  "runtime queue beside OpenCL (PoCL, CPU): empty-kernel latency, a chain of 1000 dependent axpys, placement by load vs GPU-only and CPU-only (a stand-in GPU where none is usable); GPU-style kernels (saxpy, tiled sgemm and transpose, reduction) beside PoCL and serial C" },
#endif
	{ "gpu", bench_gpu,
	  "axpy on 4096 doubles through a doorbell to the persistent GPU kernel beside a kernel launch + stream synchronise (skipped without a GPU)" },
};

#define NR_BENCHES (int)(sizeof(benches) / sizeof(benches[0]))

static void usage(FILE *out)
{
	fprintf(out, "usage: agile-bench [options] BENCH...\n"
		     "  BENCH: all, list, or one of:\n");
	for (int i = 0; i < NR_BENCHES; i++)
		fprintf(out, "    %-6s %s\n", benches[i].name, benches[i].help);
	fprintf(out,
		"options:\n"
		"  -c, --csv PATH      also write the rows as CSV\n"
		"  -t, --threads N     threads for \"all workers\", processes for allreduce\n"
		"                      (default: online CPUs)\n"
		"  -r, --reps N        timed repetitions per contender (default 15)\n"
		"  -n, --fib-n N       fib(N) (default 35)\n"
		"  -N, --pfor-n N      parallel-for iterations (default 100000)\n"
		"  -g, --grain N       parallel-for grain / chunk (default 16)\n"
		"  -T, --trips N       doorbell round trips per repetition (default 200000;\n"
		"                      sleep does N / 10)\n"
		"  -P, --no-pin        do not pin agile's workers (shared, busy machines)\n"
		"  -S, --sleepers LIST pollcost: sleeping contexts, comma-separated\n"
		"                      (default 0,100,1000,3000)\n"
		"  -p, --period-ms N   pollcost: milliseconds per measurement (default 1000)\n"
		"      --procs LIST    allreduce: process counts, comma-separated\n"
		"                      (default: -t and twice -t)\n"
		"      --sizes MIN:MAX allreduce: sizes in bytes (K, M suffixes), powers\n"
		"                      of 4 from MIN (default 4K:64M); at least 15\n"
		"                      repetitions (-r if more), 4x that below 1M\n"
		"      --cold-from B   allreduce: rewrite the send buffers before every\n"
		"                      call from B bytes up (default 1M; 0: all, off: never)\n"
		"      --mpi-algs LIST allreduce: Open MPI coll_tuned_allreduce_algorithm\n"
		"                      values forced beside the default (default\n"
		"                      1,2,3,4,5,6; none: the default only)\n"
		"      --seg-n N       segmap: matrix and stencil side, a multiple of 6\n"
		"                      and of --seg-nodes (default 1536)\n"
		"      --seg-iters N   segmap: stencil iterations per run (default 10)\n"
		"      --seg-nodes Q   segmap: compute nodes, and MPI ranks (default 4)\n"
		"      --quick         interference: fib(28), nqueens(10), at most 3 rounds\n"
		"                      (default fib(30), nqueens(11), -r rounds)\n"
		"  -h, --help          this text\n"
		"      --version       the version, then exit\n"
		"exit status: 0 done, 1 a benchmark failed, 2 usage\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "csv", required_argument, NULL, 'c' },
		{ "threads", required_argument, NULL, 't' },
		{ "reps", required_argument, NULL, 'r' },
		{ "fib-n", required_argument, NULL, 'n' },
		{ "pfor-n", required_argument, NULL, 'N' },
		{ "grain", required_argument, NULL, 'g' },
		{ "no-pin", no_argument, NULL, 'P' },
		{ "trips", required_argument, NULL, 'T' },
		{ "sleepers", required_argument, NULL, 'S' },
		{ "period-ms", required_argument, NULL, 'p' },
		{ "procs", required_argument, NULL, 1 },
		{ "sizes", required_argument, NULL, 2 },
		{ "cold-from", required_argument, NULL, 3 },
		{ "mpi-algs", required_argument, NULL, 4 },
		{ "quick", no_argument, NULL, 5 },
		{ "seg-n", required_argument, NULL, 6 },
		{ "seg-iters", required_argument, NULL, 7 },
		{ "seg-nodes", required_argument, NULL, 8 },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 9 },
		{ 0 }
	};
	struct bench_opts o = {
		.threads = (int)sysconf(_SC_NPROCESSORS_ONLN),
		.reps = 15,
		.fib_n = 35,
		.pfor_n = 100000,
		.grain = 16,
		.trips = 200000,
		.period_ms = 1000,
		.seg_n = 1536,
		.seg_iters = 10,
		.seg_nodes = 4,
	};
	const char *csv = NULL;
	int c, err = 0;

	while ((c = getopt_long(argc, argv, "c:t:r:n:N:g:PT:S:p:h", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'c':
			csv = optarg;
			break;
		case 't':
			o.threads = atoi(optarg);
			break;
		case 'r':
			o.reps = atoi(optarg);
			break;
		case 'n':
			o.fib_n = atoi(optarg);
			break;
		case 'N':
			o.pfor_n = atoll(optarg);
			break;
		case 'g':
			o.grain = atoll(optarg);
			break;
		case 'P':
			o.no_pin = true;
			break;
		case 'T':
			o.trips = atoll(optarg);
			break;
		case 'S':
			o.sleepers = optarg;
			break;
		case 'p':
			o.period_ms = atoi(optarg);
			break;
		case 1:
			o.ar_procs = optarg;
			break;
		case 2:
			o.ar_sizes = optarg;
			break;
		case 3:
			o.ar_cold_from = optarg;
			break;
		case 4:
			o.ar_mpi_algs = optarg;
			break;
		case 5:
			o.quick = true;
			break;
		case 6:
			o.seg_n = atoll(optarg);
			break;
		case 7:
			o.seg_iters = atoi(optarg);
			break;
		case 8:
			o.seg_nodes = atoi(optarg);
			break;
		case 9:
			printf("agile-bench %s\n", AGILE_PROJECT_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind == argc || o.threads < 1 || o.reps < 1 || o.fib_n < 1 ||
	    o.fib_n > 45 || o.pfor_n < 1 || o.grain < 1 || o.trips < 1 ||
	    o.period_ms < 1 || o.seg_iters < 1 || o.seg_nodes < 1 ||
	    o.seg_n < 6 || o.seg_n % 6 || o.seg_n % o.seg_nodes) {
		usage(stderr);
		return 2;
	}
	for (int i = optind; i < argc && !err; i++) {
		bool all = !strcmp(argv[i], "all"), found = all;

		if (!strcmp(argv[i], "list")) {
			for (int b = 0; b < NR_BENCHES; b++)
				printf("%s\n", benches[b].name);
			continue;
		}
		for (int b = 0; b < NR_BENCHES && !err; b++) {
			if (all || !strcmp(argv[i], benches[b].name)) {
				found = true;
				fprintf(stderr, "agile-bench %s:\n",
					benches[b].name);
				err = benches[b].run(&o);
			}
		}
		if (!found) {
			fprintf(stderr, "agile-bench: no benchmark \"%s\"\n",
				argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if (nr_rows) {
		double load[3];

		/* Other processes on the machine skew the parallel rows: say so. */
		if (getloadavg(load, 3) == 3 && load[0] > 0.5)
			bench_note(
				"load average %.2f on %ld CPUs while measuring: other processes competed",
				load[0], sysconf(_SC_NPROCESSORS_ONLN));
		print_table();
		if (csv) {
			int e = write_csv(csv);

			if (e)
				fprintf(stderr, "agile-bench: %s: %s\n", csv,
					strerror(-e));
			else
				printf("csv: %s\n", csv);
			err = err ? err : e;
		}
	}
	if (err)
		fprintf(stderr, "agile-bench: %s\n", strerror(-err));
	return err ? 1 : 0;
}
