// SPDX-License-Identifier: MIT
/*
 * interference - fork/join task trees on a machine that is not ours
 * alone: fib (every call a spawn), nqueens and an unbalanced uts tree
 * (trees.h), each run by agile (workers pinned, and not), oneTBB
 * task_groups and OpenMP tasks, on 1 and on all threads, while another
 * process competes for the CPUs:
 *
 *   alone     nothing else runs;
 *   busy-cpu0 a busy loop pinned to the first CPU we may use (a 1-worker
 *             pool pinned there runs at half speed; an unpinned one moves);
 *   busy-all  a busy loop pinned to every CPU we may use (a spinning MPI
 *             job bound to the cores): every worker is descheduled now
 *             and then, holding work its peers wait for;
 *   multi     a second process with as many spinning threads as we have
 *             CPUs, unpinned.
 *
 * The competing processes are forked at start-up (before any runtime
 * starts a thread) and wait on a pipe until their configuration begins;
 * they are killed when it ends.  Within a configuration every contender
 * of every workload and thread count runs once per round, in an order
 * that rotates from round to round, so the machine's drift weighs on all
 * alike; the medians (p10-p90, min) of the rounds are compared.  Every
 * result is checked.  Targets: agile at least as fast as oneTBB in every
 * row, and an agile pool of all workers never slower than one of one.
 */
#define _GNU_SOURCE
#include <agile/sched.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "tasks.h"
#include "trees.h"

/* ---- the workloads on agile ---- */

static int64_t fib_plain(int n)
{
	return n < 2 ? n : fib_plain(n - 1) + fib_plain(n - 2);
}

AGILE_TASK(int64_t, nqueens, w, struct nq_board, b)
{
	int64_t sum = 0;
	int nr = 0;

	if (!nq_spawns(&b))
		return nq_serial(&b);
	for (int col = 0; col < b.n; col++) {
		if (nq_safe(&b, col)) {
			AGILE_SPAWN(w, nqueens, nq_place(&b, col));
			nr++;
		}
	}
	while (nr--)
		sum += AGILE_SYNC(w, nqueens);
	return sum;
}

AGILE_TASK(int64_t, uts, w, struct uts_span, s)
{
	struct uts_span left = s, right = s;
	int64_t b;

	if (s.hi - s.lo == 1) {
		struct uts_span d = uts_down(&s);

		return 1 + (d.hi ? AGILE_CALL(w, uts, d) : 0);
	}
	left.hi = right.lo = s.lo + (s.hi - s.lo) / 2;
	AGILE_SPAWN(w, uts, left);
	b = AGILE_CALL(w, uts, right);
	return AGILE_SYNC(w, uts) + b;
}

enum { WL_FIB, WL_NQUEENS, WL_UTS, NR_WORKLOADS };
enum { C_PIN, C_NOPIN, C_TBB, C_OMP, NR_CONTENDERS };
enum { CF_ALONE, CF_BUSY0, CF_BUSYALL, CF_MULTI, NR_CONFIGS };

static const char *const workload_names[NR_WORKLOADS] = { "fib", "nqueens",
							  "uts" };
static const char *const contender_names[NR_CONTENDERS] = { "agile-pin",
							    "agile-nopin",
							    "tbb", "omp" };
static const char *const config_names[NR_CONFIGS] = { "alone", "busy-cpu0",
						      "busy-all", "multi" };

struct intf {
	int fib_n, nq_n, max_threads, nr_threads;
	int threads[2];
	int64_t expect[NR_WORKLOADS];
	struct agile_sched *pools[2][2]; /* [pinned?0:1][thread index] */
	struct tbb_arena *arenas[2];
	int err;
};

static int64_t run_one(struct intf *x, int wl, int contender, int ti)
{
	int threads = x->threads[ti];
	int64_t r = -1;
	int err = 0;

	switch (contender) {
	case C_PIN:
	case C_NOPIN: {
		struct agile_sched *s = x->pools[contender == C_NOPIN][ti];

		if (wl == WL_FIB)
			err = AGILE_RUN(s, fib, x->fib_n, &r);
		else if (wl == WL_NQUEENS)
			err = AGILE_RUN(s, nqueens, nq_root(x->nq_n), &r);
		else
			err = AGILE_RUN(s, uts, uts_root(), &r);
		if (err && !x->err)
			x->err = err;
		if (wl == WL_UTS)
			r++; /* the root */
		break;
	}
	case C_TBB:
		r = wl == WL_FIB     ? tbb_fib(x->arenas[ti], x->fib_n) :
		    wl == WL_NQUEENS ? tbb_nqueens(x->arenas[ti], x->nq_n) :
				       tbb_uts(x->arenas[ti]) + 1;
		break;
	case C_OMP:
		r = wl == WL_FIB     ? omp_fib(x->fib_n, threads) :
		    wl == WL_NQUEENS ? omp_nqueens(x->nq_n, threads) :
				       omp_uts(threads) + 1;
		break;
	}
	return r;
}

/* ---- the competing processes ---- */

struct rival {
	pid_t pid;
	int go; /* write end of the pipe it waits on */
};

static void *spin_thread(void *arg)
{
	for (volatile unsigned long i = 0;; i++)
		;
	return arg;
}

/* A child that waits for a byte on @go_read, then spins on @nr_threads threads. */
static void rival_main(int go_read, int cpu, int nr_threads)
{
	char c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (read(go_read, &c, 1) != 1)
		_exit(0);
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	for (int i = 1; i < nr_threads; i++) {
		pthread_t t;

		pthread_create(&t, NULL, spin_thread, NULL);
	}
	spin_thread(NULL);
}

static int rival_fork(struct rival *r, int cpu, int nr_threads)
{
	int fds[2];

	if (pipe(fds))
		return -errno;
	r->pid = fork();
	if (r->pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (!r->pid) {
		close(fds[1]);
		rival_main(fds[0], cpu, nr_threads);
	}
	close(fds[0]);
	r->go = fds[1];
	return 0;
}

static void rival_start(struct rival *r)
{
	if (r->pid > 0 && write(r->go, "g", 1) != 1)
		perror("interference: rival");
}

static void rival_kill(struct rival *r)
{
	if (r->pid <= 0)
		return;
	kill(r->pid, SIGKILL);
	waitpid(r->pid, NULL, 0);
	close(r->go);
	r->pid = 0;
}

/* ---- measuring ---- */

#define MAX_ROUNDS 64

static void pause_ms(int ms)
{
	struct timespec ts = { .tv_nsec = ms * 1000000L };

	nanosleep(&ts, NULL);
}

static struct timing timings[NR_CONFIGS][NR_WORKLOADS][2][NR_CONTENDERS];

static int measure_config(struct intf *x, int cf, int rounds)
{
	static double ms[NR_WORKLOADS][2][NR_CONTENDERS][MAX_ROUNDS];
	int nr_cells = NR_WORKLOADS * x->nr_threads;

	for (int r = -1; r < rounds; r++) { /* round -1: warm-up */
		for (int cell = 0; cell < nr_cells; cell++) {
			int wl = cell / x->nr_threads,
			    ti = cell % x->nr_threads;

			for (int k = 0; k < NR_CONTENDERS; k++) {
				int c = (k + (r < 0 ? 0 : r) + cell) %
					NR_CONTENDERS;
				double start;
				int64_t res;

				/* The previous runtime's threads go idle. */
				pause_ms(10);
				start = bench_now_ms();
				res = run_one(x, wl, c, ti);
				if (r >= 0)
					ms[wl][ti][c][r] =
						bench_now_ms() - start;
				if (res != x->expect[wl]) {
					fprintf(stderr,
						"interference: %s by %s on %d threads: %lld, not %lld\n",
						workload_names[wl],
						contender_names[c],
						x->threads[ti], (long long)res,
						(long long)x->expect[wl]);
					return x->err ? x->err : -EPROTO;
				}
			}
		}
	}
	for (int wl = 0; wl < NR_WORKLOADS; wl++)
		for (int ti = 0; ti < x->nr_threads; ti++)
			for (int c = 0; c < NR_CONTENDERS; c++) {
				char bench[16], variant[32];
				struct timing t =
					bench_summarize(ms[wl][ti][c], rounds);

				timings[cf][wl][ti][c] = t;
				snprintf(bench, sizeof(bench), "intf-%s",
					 workload_names[wl]);
				snprintf(variant, sizeof(variant), "%s %s",
					 config_names[cf], contender_names[c]);
				bench_row_bytes_detail(bench, variant,
						       x->threads[ti], t, 0,
						       true);
			}
	return 0;
}

static void cell_text(char *buf, size_t size, const struct timing *t)
{
	snprintf(buf, size, "%.1f (%.1f-%.1f, %.1f)", t->median_ms, t->p10_ms,
		 t->p90_ms, t->min_ms);
}

static void print_markdown(const struct intf *x, bool default_pins)
{
	int def = default_pins ? C_PIN : C_NOPIN;
	int met_tbb = 0, met_scale = 0, rows = 0, scale_rows = 0;

	printf("\nagile-bench interference: medians in ms (p10-p90, min); agile = the default, workers %s\n\n",
	       default_pins ? "pinned" : "unpinned");
	printf("| workload | config | threads | agile | agile %s | oneTBB | OpenMP | agile/oneTBB | agile %s/oneTBB | agile %dw/1w | agile %s %dw/1w |\n",
	       default_pins ? "unpinned" : "pinned",
	       default_pins ? "unpinned" : "pinned", x->max_threads,
	       default_pins ? "unpinned" : "pinned", x->max_threads);
	printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (int wl = 0; wl < NR_WORKLOADS; wl++) {
		for (int cf = 0; cf < NR_CONFIGS; cf++) {
			for (int ti = 0; ti < x->nr_threads; ti++) {
				const struct timing *t = timings[cf][wl][ti];
				int other = def == C_PIN ? C_NOPIN : C_PIN;
				char a[64], o[64], tb[64], om[64], sc[32] = "",
								   sco[32] = "";
				double r_tbb =
					t[def].median_ms / t[C_TBB].median_ms;

				cell_text(a, sizeof(a), &t[def]);
				cell_text(o, sizeof(o), &t[other]);
				cell_text(tb, sizeof(tb), &t[C_TBB]);
				cell_text(om, sizeof(om), &t[C_OMP]);
				rows++;
				met_tbb += r_tbb <= 1.0;
				if (ti == 1) {
					const struct timing *one =
						timings[cf][wl][0];
					double s = t[def].median_ms /
						   one[def].median_ms;

					snprintf(sc, sizeof(sc), "%.2f", s);
					snprintf(sco, sizeof(sco), "%.2f",
						 t[other].median_ms /
							 one[other].median_ms);
					scale_rows++;
					met_scale += s <= 1.0;
				}
				printf("| %s | %s | %d | %s | %s | %s | %s | %.2f | %.2f | %s | %s |\n",
				       workload_names[wl], config_names[cf],
				       x->threads[ti], a, o, tb, om, r_tbb,
				       t[other].median_ms / t[C_TBB].median_ms,
				       sc, sco);
			}
		}
	}
	printf("\ntargets: agile/oneTBB <= 1 in %d of %d rows; agile %dw/1w <= 1 in %d of %d\n",
	       met_tbb, rows, x->max_threads, met_scale, scale_rows);
}

int bench_interference(const struct bench_opts *o)
{
	struct intf x = {
		.fib_n = o->quick ? 28 : 30,
		.nq_n = o->quick ? 10 : 11,
	};
	struct rival rivals[NR_CONFIGS][64] = { 0 };
	struct agile_sched_stats st;
	struct nq_board b;
	struct uts_span u;
	cpu_set_t allowed;
	int cpus[64], nr_cpus = 0, rounds, err = 0;
	bool default_pins = false;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return -errno;
	for (int c = 0; c < CPU_SETSIZE && nr_cpus < 64; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[nr_cpus++] = c;
	rounds = o->reps < MAX_ROUNDS ? o->reps : MAX_ROUNDS;
	if (o->quick && rounds > 3)
		rounds = 3;

	/* Forked first: no runtime has a thread yet. */
	rival_fork(&rivals[CF_BUSY0][0], cpus[0], 1);
	for (int i = 0; i < nr_cpus; i++)
		rival_fork(&rivals[CF_BUSYALL][i], cpus[i], 1);
	rival_fork(&rivals[CF_MULTI][0], -1, nr_cpus);

	x.max_threads = o->threads;
	x.threads[0] = 1;
	x.threads[1] = o->threads;
	x.nr_threads = o->threads > 1 ? 2 : 1;
	x.expect[WL_FIB] = fib_plain(x.fib_n);
	b = nq_root(x.nq_n);
	x.expect[WL_NQUEENS] = nq_serial(&b);
	u = uts_root();
	x.expect[WL_UTS] = 1 + uts_serial(&u);

	for (int pin = 0; pin < 2 && !err; pin++) {
		for (int ti = 0; ti < x.nr_threads && !err; ti++) {
			struct agile_sched_opts opts;

			agile_sched_opts_init(&opts);
			opts.nr_workers = (uint32_t)x.threads[ti];
			opts.flags = AGILE_SCHED_QUIET |
				     (pin ? AGILE_SCHED_NO_PIN : 0);
			/* The pinned pools ask, whatever the default is. */
			if (!pin)
				setenv("AGILE_SCHED_PIN", "1", 1);
			err = agile_sched_create(&opts, &x.pools[pin][ti]);
			unsetenv("AGILE_SCHED_PIN");
		}
	}
	for (int ti = 0; ti < x.nr_threads; ti++)
		x.arenas[ti] = tbb_arena_new(x.threads[ti]);
	if (!err) {
		struct agile_sched *probe;

		/* Which of the two is the default: a pool made with no flags. */
		err = agile_sched_create(NULL, &probe);
		if (!err) {
			agile_sched_stats(probe, &st);
			default_pins = st.nr_pinned > 0;
			agile_sched_destroy(probe);
		}
	}
	if (!err) {
		/*
		 * The largest pinned pool: a pool of one has no thread of its
		 * own (its runs go on the caller, which is never pinned).
		 */
		agile_sched_stats(x.pools[0][x.nr_threads - 1], &st);
		if (st.nr_threads && !st.nr_pinned)
			bench_note(
				"interference: the pinned pools are not pinned (%s)",
				st.pin_error ? strerror(-st.pin_error) :
					       "no error given");
		bench_note("interference: a pool of one runs on the caller's "
			   "thread, pinned or not: its two columns differ by "
			   "noise only");
	}

	for (int cf = 0; cf < NR_CONFIGS && !err; cf++) {
		/* The unpinned pool of all workers: its threads' moves. */
		struct agile_sched *big = x.pools[1][x.nr_threads - 1];
		uint32_t moves;

		fprintf(stderr, "  interference: %s, %d rounds\n",
			config_names[cf], rounds);
		for (int i = 0; i < 64; i++)
			rival_start(&rivals[cf][i]);
		pause_ms(50);
		agile_sched_stats(big, &st);
		moves = st.moves;
		err = measure_config(&x, cf, rounds);
		for (int i = 0; i < 64; i++)
			rival_kill(&rivals[cf][i]);
		agile_sched_stats(big, &st);
		if (!err && st.nr_threads)
			bench_note(
				"interference: %s: the unpinned pool of %u moved a thread off its peer's CPU %u times (agile_sched_stats.moves)",
				config_names[cf], st.nr_workers,
				st.moves - moves);
	}
	for (int cf = 0; cf < NR_CONFIGS; cf++)
		for (int i = 0; i < 64; i++)
			rival_kill(&rivals[cf][i]);
	for (int pin = 0; pin < 2; pin++)
		for (int ti = 0; ti < x.nr_threads; ti++)
			if (x.pools[pin][ti])
				agile_sched_destroy(x.pools[pin][ti]);
	for (int ti = 0; ti < x.nr_threads; ti++)
		tbb_arena_free(x.arenas[ti]);
	if (err)
		return err;
	print_markdown(&x, default_pins);
	bench_note(
		"interference: fib(%d), nqueens(%d) (tasks above the last %d rows), uts: %lld nodes; %d CPUs",
		x.fib_n, x.nq_n, NQ_SERIAL_ROWS, (long long)x.expect[WL_UTS],
		nr_cpus);
	return 0;
}
