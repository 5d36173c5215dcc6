// SPDX-License-Identifier: MIT
/*
 * allreduce - SPEC §5: allreduce (float, sum) among N processes on one
 * node, 4 KiB to 64 MiB in powers of 4, for each N of --procs (default
 * -t and twice -t: with -t the CPUs, the second is oversubscribed), every
 * contender measured in this one run:
 *
 *   agile        N forked processes in one agile_coll_procs_join
 *                communicator (the kmod backend where /dev/agile exists,
 *                else the user backend; the note names it) with ordinary
 *                private buffers: aligned_alloc'd and first touched by the
 *                process that uses them.  The SPEC §5 verdicts are judged
 *                on this row.
 *   agile-alloc  the same communicator with buffers from agile_coll_alloc
 *                (what a program that wants the zero-copy path does)
 *   agile-cma    a second communicator of the same processes, joined with
 *                AGILE_COLL_CMA=on: every call by Cross Memory Attach
 *                (coll/cma.c) where the kernel allows it, private
 *                buffers, beside the pull schedule agile uses by default,
 *                size by size in the same processes
 *   ompi         Open MPI's MPI_Allreduce, N ranks of agile-bench-mpi
 *                (mpi.c) under mpirun with Open MPI's defaults: the
 *                shared-memory btl (vader), single-copy (CMA) where the
 *                kernel allows it
 *   ompi-algK    the same with coll_tuned_use_dynamic_rules 1 and
 *                coll_tuned_allreduce_algorithm K, for K in --mpi-algs
 *                (default 1..6: Open MPI 4.1's basic_linear,
 *                nonoverlapping, recursive_doubling, ring, segmented_ring,
 *                rabenseifner)
 *   ompi-best    per size, the lowest median among ompi and the ompi-algK:
 *                the bound the verdicts use (the markdown table shows the
 *                default and the best forced algorithm, with its K, apart)
 *   memcpy       one memcpy of SIZE bytes on one core, private buffers,
 *                the source rewritten like the send buffers
 *   memcpy-all   N threads, one per process of the allreduce, each copying
 *                SIZE bytes of its own private buffers, all at once, timed
 *                between barriers: the traffic of an allreduce that reads
 *                each input and writes each result once (2 x N x SIZE
 *                bytes; 4L for 2 members), on this machine's memory at
 *                this moment.  A reference, not a proven floor (the
 *                copies are glibc's memcpy, with its own store choices),
 *                reported beside the verdicts: where it is over 1.5x
 *                memcpy's time, a schedule that moves that much cannot
 *                meet the second target here
 *
 * Every call is timed between barriers, as the slowest rank's time, after
 * AR_WARMUP untimed calls; at least 15 repetitions per size (-r, if more;
 * four times that below 1 MiB).  Two passes (agile, Open MPI's settings,
 * memcpy, then the reverse) split the repetitions, so a drift in the
 * machine's load weighs on all of them.  Reported: the median, the spread
 * as p10-p90 (nearest rank), and the minimum.  Verdicts, on medians:
 * agile's time at most Open MPI's best from 1 MiB up; agile within 1.5x of
 * memcpy's time from 16 MiB up.
 *
 * Cold data (--cold-from BYTES, default 1 MiB; "off" never): from that
 * size up, each rank rewrites its whole send buffer before every call
 * (untimed, before the barrier) with a value that changes from call to
 * call, so no peer holds a cached copy of the data it reads and a stale
 * result cannot pass the check.  Each contender's result is checked once
 * per size against the exact sum (small integers); a wrong result marks
 * the contender's size "wrong sum" instead of posting a time.
 *
 * The machine at that moment: before the first pass, between the passes
 * and after the second, two threads pinned to the first two CPUs pass a
 * cache line back and forth (AR_RTT_TRIPS round trips; the median of 5
 * such runs).  On a VM this shows where the host put the vCPUs: on the
 * 2-vCPU development VM about 100 ns when they share a core complex, 450
 * ns when they do not, and every flow between the processes (not memcpy)
 * is up to twice as slow then.  The table's header gives the three.
 *
 * Output: a markdown table per process count on stdout (times, then the
 * verdicts, then Open MPI's medians by algorithm), the rows in agile-bench's
 * table and CSV (the ompi-algK rows in the CSV only).
 *
 * agile-bench-mpi is looked for beside agile-bench ($AGILE_BENCH_MPI
 * overrides); without it or without mpirun the ompi rows print "n/a".
 */
#define _GNU_SOURCE
#include <agile/coll.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define AR_MAX_SIZES 16
#define AR_MAX_PROCS 64
#define AR_MIN_REPS 15
#define AR_MAX_REPS 128
#define AR_WARMUP 2
#define AR_JOIN_TIMEOUT_NS (30ULL * 1000000000ULL)
#define AR_NR_ALGS 6 /* Open MPI 4.1's coll_tuned_allreduce_algorithm 1..6 */
#define AR_RTT_TRIPS 20000

/* The contenders, in the order of the first pass. */
enum {
	AR_AGILE, /* private buffers */
	AR_AGILE_ALLOC, /* agile_coll_alloc buffers */
	AR_AGILE_CMA, /* private buffers, by CMA (AGILE_COLL_CMA=on) */
	AR_NR_AGILE, /* the agile kinds above, measured by agile_pass */
	AR_OMPI = AR_NR_AGILE, /* Open MPI's default */
	AR_OMPI_ALG1, /* ... AR_OMPI_ALG1 + AR_NR_ALGS - 1: forced */
	AR_MEMCPY = AR_OMPI_ALG1 + AR_NR_ALGS,
	AR_MEMCPY_ALL, /* N memcpys at once: an allreduce's least traffic */
	AR_NR
};

static const char *const alg_names[AR_NR_ALGS + 1] = {
	"default", "basic_linear",   "nonoverlapping", "recursive_doubling",
	"ring",	   "segmented_ring", "rabenseifner",
};

static const char *const ar_names[AR_NR] = {
	"agile",     "agile-alloc", "agile-cma", "ompi",
	"ompi-alg1", "ompi-alg2",   "ompi-alg3", "ompi-alg4",
	"ompi-alg5", "ompi-alg6",   "memcpy",	 "memcpy-all",
};

struct ar_plan {
	int nr_procs, nr_sizes;
	size_t bytes[AR_MAX_SIZES];
	int reps[AR_MAX_SIZES]; /* per size, both passes together */
	size_t cold_from; /* rewrite send buffers from this size up */
	unsigned int algs; /* bit K: run coll_tuned_allreduce_algorithm K */
	bool no_pin;
};

/* Repetitions of one pass: the first pass takes the larger half. */
static int pass_reps(const struct ar_plan *p, int s, int pass)
{
	return pass ? p->reps[s] / 2 : p->reps[s] - p->reps[s] / 2;
}

static bool is_cold(const struct ar_plan *p, int s)
{
	return p->bytes[s] >= p->cold_from;
}

/* Every timed call of every contender and size, over both passes. */
struct ar_times {
	double ms[AR_NR][AR_MAX_SIZES][AR_MAX_REPS];
	int done[AR_NR][AR_MAX_SIZES];
	char err[AR_NR][AR_MAX_SIZES][32]; /* why a size has no time */
	double rtt_ns[3]; /* cross_cpu_rtt: before, between, after the passes */
};

static void size_name(char *buf, size_t len, size_t bytes)
{
	if (bytes >= (1u << 20))
		snprintf(buf, len, "%zuM", bytes >> 20);
	else
		snprintf(buf, len, "%zuK", bytes >> 10);
}

/*
 * Rank @rank's input of call @call: small integers, so every summation
 * order gives the exact sum, and a value that changes from call to call.
 */
static float ar_value(int rank, int call)
{
	return (float)(rank + 1 + (call & 7));
}

static float ar_expect(int nr_procs, int call)
{
	return (float)(nr_procs * (nr_procs + 1) / 2 + nr_procs * (call & 7));
}

static void ar_fill(float *buf, size_t count, int rank, int call)
{
	float v = ar_value(rank, call);

	for (size_t i = 0; i < count; i++)
		buf[i] = v;
	__asm__ __volatile__("" : : "r"(buf) : "memory");
}

static bool ar_check(const float *recv, size_t count, int nr_procs, int call)
{
	float expect = ar_expect(nr_procs, call);

	for (size_t i = 0; i < count; i++)
		if (recv[i] != expect)
			return false;
	return true;
}

/* ---- agile: N forked processes in one process-scope communicator ---- */

/* Shared (MAP_SHARED) between agile-bench and its children. */
struct ar_shared {
	double ms[AR_NR_AGILE][AR_MAX_PROCS][AR_MAX_SIZES][AR_MAX_REPS];
	int err[AR_MAX_PROCS]; /* a child's negative errno, -EPROTO: wrong sum */
	int bad_kind[AR_MAX_PROCS], bad_size[AR_MAX_PROCS];
	int copy_buffers[AR_MAX_PROCS]; /* agile_coll_alloc had no room */
	int cma[AR_MAX_PROCS]; /* agile__coll_procs_cma of agile-cma's handle */
};

/*
 * libagile's white-box hook (coll/shm.h; agile-bench links libagile.a):
 * 0 if the communicator's allreduce goes by CMA from 8 MiB up, else why
 * not (-ENOTSUP: more than 2 processes, by default).
 */
int agile__coll_procs_cma(const struct agile_coll *coll);

/* Join the CMA schedule's communicator: AGILE_COLL_CMA=on for its join. */
static int join_cma(const struct ar_plan *p, uint64_t key,
		    const struct agile_coll_opts *opts, struct agile_coll **out)
{
	const char *was = getenv("AGILE_COLL_CMA");
	char *saved = was ? strdup(was) : NULL;
	int err;

	setenv("AGILE_COLL_CMA", "on", 1);
	err = agile_coll_procs_join(key, (uint32_t)p->nr_procs, opts,
				    AR_JOIN_TIMEOUT_NS, out);
	if (saved)
		setenv("AGILE_COLL_CMA", saved, 1);
	else
		unsetenv("AGILE_COLL_CMA");
	free(saved);
	return err;
}

static void pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* ---- the cross-CPU round trip: where the host put the vCPUs ---- */

struct rtt_line {
	_Alignas(64) atomic_uint ball;
	int cpu;
};

static int rtt_cpu(int nth)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set) && !nth--)
			return cpu;
	return -1;
}

static void pin_thread(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* The other side: answers odd values with the next even one. */
static void *rtt_echo(void *arg)
{
	struct rtt_line *l = arg;

	pin_thread(l->cpu);
	for (unsigned int v = 1; v < 2 * AR_RTT_TRIPS; v += 2) {
		while (atomic_load_explicit(&l->ball, memory_order_acquire) !=
		       v)
			;
		atomic_store_explicit(&l->ball, v + 1, memory_order_release);
	}
	return NULL;
}

/*
 * One cache line passed between the first two CPUs this process may use,
 * nanoseconds per round trip: the median of 5 runs of AR_RTT_TRIPS; -1
 * with fewer than two CPUs.  Restores the caller's affinity.
 */
static double cross_cpu_rtt(void)
{
	int a = rtt_cpu(0), b = rtt_cpu(1);
	double ns[5];
	cpu_set_t saved;

	if (a < 0 || b < 0 || sched_getaffinity(0, sizeof(saved), &saved))
		return -1;
	for (int run = 0; run < 5; run++) {
		struct rtt_line l = { .cpu = b };
		pthread_t t;
		double t0;

		atomic_init(&l.ball, 0);
		pin_thread(a);
		if (pthread_create(&t, NULL, rtt_echo, &l)) {
			sched_setaffinity(0, sizeof(saved), &saved);
			return -1;
		}
		t0 = bench_now_ms();
		for (unsigned int v = 0; v < 2 * AR_RTT_TRIPS; v += 2) {
			atomic_store_explicit(&l.ball, v + 1,
					      memory_order_release);
			while (atomic_load_explicit(
				       &l.ball, memory_order_acquire) != v + 2)
				;
		}
		ns[run] = (bench_now_ms() - t0) * 1e6 / AR_RTT_TRIPS;
		pthread_join(t, NULL);
	}
	sched_setaffinity(0, sizeof(saved), &saved);
	for (int i = 1; i < 5; i++)
		for (int j = i; j > 0 && ns[j] < ns[j - 1]; j--) {
			double x = ns[j];

			ns[j] = ns[j - 1];
			ns[j - 1] = x;
		}
	return ns[2];
}

/* One size with one kind of buffers: warm-up, timed calls, the check. */
static int agile_size(const struct ar_plan *p, struct agile_coll *coll,
		      int rank, float *send, float *recv, int s, int pass,
		      double *ms)
{
	size_t count = p->bytes[s] / sizeof(float);
	int reps = pass_reps(p, s, pass), call = 0, err = 0;

	ar_fill(send, count, rank, 0);
	memset(recv, 0, p->bytes[s]);
	for (int r = 0; r < AR_WARMUP + reps && !err; r++) {
		double t0;

		if (is_cold(p, s)) {
			call = r;
			ar_fill(send, count, rank, call);
		}
		err = agile_coll_barrier(coll);
		if (err)
			break;
		t0 = bench_now_ms();
		err = agile_coll_allreduce(coll, send, recv, count,
					   AGILE_COLL_FLOAT, AGILE_COLL_SUM);
		if (r >= AR_WARMUP)
			ms[r - AR_WARMUP] = bench_now_ms() - t0;
	}
	if (!err && !ar_check(recv, count, p->nr_procs, call))
		err = -EPROTO;
	return err;
}

static int agile_child(const struct ar_plan *p, int pass, uint64_t key,
		       struct ar_shared *sh, int slot)
{
	size_t max = p->bytes[p->nr_sizes - 1];
	float *send[AR_NR_AGILE] = { NULL }, *recv[AR_NR_AGILE] = { NULL };
	struct agile_coll *colls[AR_NR_AGILE];
	struct agile_coll_opts opts;
	struct agile_coll *coll, *cma;
	bool own_alloc = false;
	int rank, err;

	agile_coll_opts_init(&opts);
	opts.max_bytes = max;
	err = agile_coll_procs_join(key, (uint32_t)p->nr_procs, &opts,
				    AR_JOIN_TIMEOUT_NS, &coll);
	if (err)
		return err;
	err = join_cma(p, key ^ 1, &opts, &cma);
	if (err) {
		agile_coll_destroy(coll);
		return err;
	}
	sh->cma[slot] = agile__coll_procs_cma(cma);
	colls[AR_AGILE] = colls[AR_AGILE_ALLOC] = coll;
	colls[AR_AGILE_CMA] = cma;
	rank = agile_coll_rank(coll);
	/* Private: this process's own memory, first touched here. */
	send[AR_AGILE] = aligned_alloc(4096, max);
	recv[AR_AGILE] = aligned_alloc(4096, max);
	send[AR_AGILE_ALLOC] = agile_coll_alloc(coll, max);
	recv[AR_AGILE_ALLOC] = agile_coll_alloc(coll, max);
	if (!send[AR_AGILE_ALLOC] || !recv[AR_AGILE_ALLOC]) {
		/* No room in the exchange segments: plain memory, one copy more. */
		agile_coll_free(coll, send[AR_AGILE_ALLOC]);
		agile_coll_free(coll, recv[AR_AGILE_ALLOC]);
		send[AR_AGILE_ALLOC] = aligned_alloc(4096, max);
		recv[AR_AGILE_ALLOC] = aligned_alloc(4096, max);
		own_alloc = true;
		sh->copy_buffers[slot] = 1;
	}
	for (int k = 0; k < AR_AGILE_CMA; k++) {
		if (!send[k] || !recv[k]) {
			err = -ENOMEM;
			goto out;
		}
		memset(send[k], 0, max);
		memset(recv[k], 0, max);
	}
	/* the same private buffers, first touched above */
	send[AR_AGILE_CMA] = send[AR_AGILE];
	recv[AR_AGILE_CMA] = recv[AR_AGILE];
	for (int s = 0; s < p->nr_sizes && !err; s++) {
		for (int i = 0; i < AR_NR_AGILE && !err; i++) {
			int k = pass ? AR_NR_AGILE - 1 - i : i;

			err = agile_size(p, colls[k], rank, send[k], recv[k], s,
					 pass, sh->ms[k][rank][s]);
			if (err == -EPROTO) {
				sh->bad_kind[slot] = k;
				sh->bad_size[slot] = s;
			}
		}
	}
	if (!err)
		err = agile_coll_barrier(coll);
	if (!err)
		err = agile_coll_barrier(cma);
out:
	free(send[AR_AGILE]);
	free(recv[AR_AGILE]);
	if (own_alloc) {
		free(send[AR_AGILE_ALLOC]);
		free(recv[AR_AGILE_ALLOC]);
	} else {
		agile_coll_free(coll, send[AR_AGILE_ALLOC]);
		agile_coll_free(coll, recv[AR_AGILE_ALLOC]);
	}
	agile_coll_destroy(cma);
	agile_coll_destroy(coll);
	return err;
}

/* One pass of agile: fork, join, time every size, reap. */
static int agile_pass(const struct ar_plan *p, int pass, struct ar_times *out)
{
	long nr_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct ar_shared *sh;
	pid_t pids[AR_MAX_PROCS];
	uint64_t key;
	int err = 0;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return -errno;
	if (getrandom(&key, sizeof(key), 0) != sizeof(key))
		key = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
	fflush(NULL);
	for (int i = 0; i < p->nr_procs; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			/* Open MPI's default binding: one rank per core. */
			if (!p->no_pin && p->nr_procs <= nr_cpus)
				pin_to(i);
			sh->err[i] = agile_child(p, pass, key, sh, i);
			_exit(0);
		}
		if (pids[i] < 0) {
			err = -errno;
			for (int k = 0; k < i; k++)
				kill(pids[k], SIGKILL);
			for (int k = 0; k < i; k++)
				waitpid(pids[k], NULL, 0);
			goto out;
		}
	}
	for (int i = 0; i < p->nr_procs; i++) {
		int status;

		if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			err = err ? err : -ECHILD;
		/* A wrong sum first: the others then see that member leave. */
		if (sh->err[i] && (!err || sh->err[i] == -EPROTO))
			err = sh->err[i];
		if (sh->err[i] == -EPROTO)
			fprintf(stderr,
				"  allreduce: %s: wrong sum at %zu bytes\n",
				ar_names[sh->bad_kind[i]],
				p->bytes[sh->bad_size[i]]);
	}
	if (err)
		goto out;
	for (int i = 0; i < p->nr_procs; i++)
		if (sh->copy_buffers[i]) {
			bench_note(
				"allreduce: agile_coll_alloc had no room: agile-alloc rows copy in and out");
			break;
		}
	if (sh->cma[0])
		bench_note(
			"allreduce: %d processes: CMA is not usable here (%s): the agile and agile-cma rows are both the pull schedule",
			p->nr_procs, strerror(-sh->cma[0]));
	for (int k = 0; k < AR_NR_AGILE; k++) {
		for (int s = 0; s < p->nr_sizes; s++) {
			for (int r = 0; r < pass_reps(p, s, pass); r++) {
				double slowest = 0;

				for (int rank = 0; rank < p->nr_procs; rank++)
					if (sh->ms[k][rank][s][r] > slowest)
						slowest = sh->ms[k][rank][s][r];
				out->ms[k][s][out->done[k][s]++] = slowest;
			}
		}
	}
out:
	munmap(sh, sizeof(*sh));
	return err;
}

/* ---- Open MPI: agile-bench-mpi under mpirun ---- */

/* One pass of one Open MPI setting: @alg 0 is the default, else forced. */
static int ompi_pass(const struct ar_plan *p, const char *prog, int pass,
		     int alg, bool no_single_copy, struct ar_times *out)
{
	char cmd[4096], line[16384], forced[128] = "";
	int c = AR_OMPI + alg, len, s = 0, status;
	bool wrong = false;
	FILE *f;

	if (alg)
		snprintf(
			forced, sizeof(forced),
			" --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm %d",
			alg);
	/* Running as root needs Open MPI's consent. */
	len = snprintf(cmd, sizeof(cmd),
		       "mpirun --oversubscribe%s%s%s%s -np %d '%s' %d %zu",
		       geteuid() == 0 ? " --allow-run-as-root" : "",
		       p->no_pin ? " --bind-to none" : "",
		       no_single_copy ?
			       " --mca btl_vader_single_copy_mechanism none" :
			       "",
		       forced, p->nr_procs, prog, AR_WARMUP, p->cold_from);
	for (int i = 0; i < p->nr_sizes; i++)
		len += snprintf(cmd + len, sizeof(cmd) - (size_t)len, " %zu:%d",
				p->bytes[i], pass_reps(p, i, pass));
	fflush(NULL);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f) && s < p->nr_sizes) {
		char *pos = line, *end;
		unsigned long long bytes = strtoull(pos, &end, 10);

		if (end == pos || bytes != p->bytes[s])
			continue; /* not one of ours: a launcher message */
		pos = end;
		if (strstr(pos, "error")) {
			wrong = true;
			snprintf(out->err[c][s], sizeof(out->err[c][s]), "%s",
				 strstr(pos, "error") + 6);
			out->err[c][s][strcspn(out->err[c][s], "\n")] = '\0';
		}
		for (int r = 0; r < pass_reps(p, s, pass); r++) {
			double ms = strtod(pos, &end);

			if (end == pos)
				break;
			out->ms[c][s][out->done[c][s]++] = ms;
			pos = end;
		}
		s++;
	}
	status = pclose(f);
	if (status == -1)
		return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status) || s < p->nr_sizes) {
		for (int i = s; i < p->nr_sizes; i++)
			snprintf(out->err[c][i], sizeof(out->err[c][i]),
				 "mpirun failed");
		/* A wrong sum: rank 0 reported it; the others did not run. */
		return wrong ? -EPROTO : -ECHILD;
	}
	return 0;
}

/* ---- memcpy: the bound, on one core ---- */

static int memcpy_pass(const struct ar_plan *p, int pass, struct ar_times *out)
{
	size_t max = p->bytes[p->nr_sizes - 1];
	float *src = aligned_alloc(4096, max), *dst = aligned_alloc(4096, max);

	if (!src || !dst) {
		free(src);
		free(dst);
		return -ENOMEM;
	}
	memset(src, 0, max);
	memset(dst, 0, max);
	for (int s = 0; s < p->nr_sizes; s++) {
		size_t count = p->bytes[s] / sizeof(float);
		int call = 0;

		ar_fill(src, count, 0, 0);
		for (int r = 0; r < AR_WARMUP + pass_reps(p, s, pass); r++) {
			double t0;

			if (is_cold(p, s)) {
				call = r;
				ar_fill(src, count, 0, call);
			}
			t0 = bench_now_ms();
			memcpy(dst, src, p->bytes[s]);
			__asm__ __volatile__("" : : "r"(dst) : "memory");
			if (r >= AR_WARMUP)
				out->ms[AR_MEMCPY][s][out->done[AR_MEMCPY][s]++] =
					bench_now_ms() - t0;
		}
		if (!ar_check(dst, count, 1, call))
			snprintf(out->err[AR_MEMCPY][s],
				 sizeof(out->err[AR_MEMCPY][s]), "wrong copy");
	}
	free(src);
	free(dst);
	return 0;
}

/* ---- memcpy-all: N copies at once, an allreduce's least traffic ---- */

struct copy_all {
	const struct ar_plan *p;
	struct ar_times *out;
	int pass;
	pthread_barrier_t bar;
	pthread_mutex_t lock;
	pthread_cond_t go;
	int state; /* under lock: 0 wait, 1 copy, -1 leave (no thread) */
	int err; /* -ENOMEM: a thread had no buffers */
	bool wrong[AR_MAX_SIZES];
};

/* Thread @arg's copies, in step with the others through c->bar. */
static void copy_all_thread(struct copy_all *c, bool timer)
{
	const struct ar_plan *p = c->p;
	size_t max = p->bytes[p->nr_sizes - 1];
	float *src = aligned_alloc(4096, max), *dst = aligned_alloc(4096, max);
	bool ok = src && dst;

	if (!ok)
		__atomic_store_n(&c->err, -ENOMEM, __ATOMIC_RELAXED);
	else {
		/* First touched by the thread that copies them. */
		memset(src, 0, max);
		memset(dst, 0, max);
	}
	for (int s = 0; s < p->nr_sizes; s++) {
		size_t count = p->bytes[s] / sizeof(float);
		int call = 0;

		if (ok)
			ar_fill(src, count, 0, 0);
		for (int r = 0; r < AR_WARMUP + pass_reps(p, s, c->pass); r++) {
			double t0 = 0;

			if (ok && is_cold(p, s)) {
				call = r;
				ar_fill(src, count, 0, call);
			}
			pthread_barrier_wait(&c->bar);
			if (timer)
				t0 = bench_now_ms();
			if (ok) {
				memcpy(dst, src, p->bytes[s]);
				__asm__ __volatile__(""
						     :
						     : "r"(dst)
						     : "memory");
			}
			pthread_barrier_wait(&c->bar);
			if (timer && r >= AR_WARMUP)
				c->out->ms[AR_MEMCPY_ALL][s]
					  [c->out->done[AR_MEMCPY_ALL][s]++] =
					bench_now_ms() - t0;
		}
		if (ok && !ar_check(dst, count, 1, call))
			__atomic_store_n(&c->wrong[s], true, __ATOMIC_RELAXED);
	}
	free(src);
	free(dst);
}

static void *copy_all_main(void *arg)
{
	struct copy_all *c = arg;
	int state;

	pthread_mutex_lock(&c->lock);
	while (!c->state)
		pthread_cond_wait(&c->go, &c->lock);
	state = c->state;
	pthread_mutex_unlock(&c->lock);
	if (state > 0)
		copy_all_thread(c, false);
	return NULL;
}

static int memcpy_all_pass(const struct ar_plan *p, int pass,
			   struct ar_times *out)
{
	struct copy_all c = { .p = p, .out = out, .pass = pass };
	pthread_t th[AR_MAX_PROCS];
	int n = 1, err;

	err = -pthread_barrier_init(&c.bar, NULL, (unsigned int)p->nr_procs);
	if (err)
		return err;
	pthread_mutex_init(&c.lock, NULL);
	pthread_cond_init(&c.go, NULL);
	for (; n < p->nr_procs; n++) {
		err = -pthread_create(&th[n], NULL, copy_all_main, &c);
		if (err)
			break;
	}
	/* All of them copy, or (a thread missing) none. */
	pthread_mutex_lock(&c.lock);
	c.state = err ? -1 : 1;
	pthread_cond_broadcast(&c.go);
	pthread_mutex_unlock(&c.lock);
	if (!err)
		copy_all_thread(&c, true);
	for (int i = 1; i < n; i++)
		pthread_join(th[i], NULL);
	pthread_cond_destroy(&c.go);
	pthread_mutex_destroy(&c.lock);
	pthread_barrier_destroy(&c.bar);
	if (err)
		return err;
	for (int s = 0; s < p->nr_sizes; s++)
		if (c.wrong[s])
			snprintf(out->err[AR_MEMCPY_ALL][s],
				 sizeof(out->err[AR_MEMCPY_ALL][s]),
				 "wrong copy");
	return c.err;
}

/* ---- the results ---- */

static const char *backend_here(void)
{
	const char *env = getenv("AGILE_BACKEND");

	if (env && *env)
		return env;
	return access("/dev/agile", F_OK) ? "user" : "kmod";
}

/* Whether contender @c has a complete, checked set of times for size @s. */
static bool measured(const struct ar_plan *p, const struct ar_times *t, int c,
		     int s)
{
	return !t->err[c][s][0] && t->done[c][s] == p->reps[s];
}

/* The timing of contender @c at size @s (sorts its times). */
static struct timing ar_timing(const struct ar_plan *p, struct ar_times *t,
			       int c, int s)
{
	return bench_summarize(t->ms[c][s], p->reps[s]);
}

/*
 * Open MPI's best setting at size @s, the lowest median: among the forced
 * algorithms, and with @with_default the default too (the verdicts' bound).
 * 0 is the default, K coll_tuned_allreduce_algorithm K; -1: none measured.
 */
static int ompi_best(const struct ar_plan *p, struct ar_times *t, int s,
		     bool with_default)
{
	double best_ms = 0;
	int best = -1;

	for (int alg = with_default ? 0 : 1; alg <= AR_NR_ALGS; alg++) {
		int c = AR_OMPI + alg;
		double med;

		if (!measured(p, t, c, s))
			continue;
		med = ar_timing(p, t, c, s).median_ms;
		if (best < 0 || med < best_ms) {
			best = alg;
			best_ms = med;
		}
	}
	return best;
}

static void variant_name(char *buf, size_t len, const char *who, size_t bytes,
			 int nr_procs)
{
	char sz[24];

	size_name(sz, sizeof(sz), bytes);
	snprintf(buf, len, "%s-%s-np%d", who, sz, nr_procs);
}

/* agile-bench's rows (its table and CSV) of one process count. */
static void add_rows(const struct ar_plan *p, struct ar_times *t,
		     const char *na[AR_NR])
{
	char v[48];

	for (int c = 0; c < AR_NR; c++) {
		bool forced = c >= AR_OMPI_ALG1 && c < AR_MEMCPY;

		if (forced && (na[c] || !(p->algs & (1u << (c - AR_OMPI)))))
			continue;
		for (int s = 0; s < p->nr_sizes; s++) {
			variant_name(v, sizeof(v), ar_names[c], p->bytes[s],
				     p->nr_procs);
			if (na[c] || !measured(p, t, c, s))
				bench_row_na("allreduce", v,
					     c == AR_MEMCPY ? 1 : p->nr_procs,
					     na[c]	     ? na[c] :
					     t->err[c][s][0] ? t->err[c][s] :
							       "not measured");
			else
				bench_row_bytes_detail(
					"allreduce", v,
					c == AR_MEMCPY ? 1 : p->nr_procs,
					ar_timing(p, t, c, s), p->bytes[s],
					forced);
		}
	}
	for (int s = 0; s < p->nr_sizes; s++) {
		int best = ompi_best(p, t, s, true);
		char b[48];

		variant_name(v, sizeof(v), "ompi-best", p->bytes[s],
			     p->nr_procs);
		if (best < 0)
			bench_row_na("allreduce", v, p->nr_procs,
				     na[AR_OMPI] ? na[AR_OMPI] :
						   "not measured");
		else
			bench_row_bytes("allreduce", v, p->nr_procs,
					ar_timing(p, t, AR_OMPI + best, s),
					p->bytes[s]);
		for (int k = 0; k < AR_NR_AGILE; k++) {
			variant_name(v, sizeof(v), ar_names[k], p->bytes[s],
				     p->nr_procs);
			variant_name(b, sizeof(b), "ompi-best", p->bytes[s],
				     p->nr_procs);
			/* agile-alloc and -cma are reported beside, not judged */
			bench_compare("allreduce", v, b, true,
				      !k && p->bytes[s] >= (1u << 20) ? ">= 1" :
									NULL);
			variant_name(b, sizeof(b), "memcpy", p->bytes[s],
				     p->nr_procs);
			bench_compare("allreduce", v, b, false,
				      !k && p->bytes[s] >= (16u << 20) ?
					      "<= 1.5" :
					      NULL);
			/* How far above the floor (not judged). */
			variant_name(b, sizeof(b), "memcpy-all", p->bytes[s],
				     p->nr_procs);
			bench_compare("allreduce", v, b, false, NULL);
		}
	}
}

/* A time in microseconds, @ms in milliseconds. */
static void us(char *buf, size_t len, double ms)
{
	snprintf(buf, len, ms < 0.01 ? "%.2f" : "%.1f", ms * 1e3);
}

/* "median [p10-p90] min" in microseconds, or why there is none. */
static void cell(char *buf, size_t len, const struct ar_plan *p,
		 struct ar_times *t, const char *na, int c, int s)
{
	char m[16], lo[16], hi[16], mn[16];
	struct timing x;

	if (na || !measured(p, t, c, s)) {
		snprintf(buf, len, "n/a (%s)",
			 na		 ? na :
			 t->err[c][s][0] ? t->err[c][s] :
					   "not measured");
		return;
	}
	x = ar_timing(p, t, c, s);
	us(m, sizeof(m), x.median_ms);
	us(lo, sizeof(lo), x.p10_ms);
	us(hi, sizeof(hi), x.p90_ms);
	us(mn, sizeof(mn), x.min_ms);
	snprintf(buf, len, "%s [%s-%s] %s", m, lo, hi, mn);
}

static double median_of(const struct ar_plan *p, struct ar_times *t, int c,
			int s)
{
	return measured(p, t, c, s) ? ar_timing(p, t, c, s).median_ms : 0;
}

/* A ratio with its verdict against @target (NULL: not judged). */
static void verdict(char *buf, size_t len, double ratio, bool at_least,
		    double target, bool judged)
{
	if (ratio <= 0)
		snprintf(buf, len, "n/a");
	else if (!judged)
		snprintf(buf, len, "%.2fx", ratio);
	else
		snprintf(buf, len, "%.2fx %s", ratio,
			 (at_least ? ratio >= target : ratio <= target) ?
				 "met" :
				 "NOT met");
}

static void print_markdown(const struct ar_plan *p, struct ar_times *t,
			   const char *na[AR_NR], bool no_single_copy,
			   long nr_cpus)
{
	char a[128], b[128], c[128], d[128], e[128], f[128], g[128], sz[24];
	char cold[64];
	char bs[32];

	printf("\n### allreduce, float sum, %d processes on %ld CPUs%s\n\n",
	       p->nr_procs, nr_cpus,
	       p->nr_procs > nr_cpus ?
		       " (oversubscribed: processes share CPUs)" :
		       "");
	if (p->cold_from == SIZE_MAX) {
		snprintf(cold, sizeof(cold), "never");
	} else {
		size_name(sz, sizeof(sz), p->cold_from);
		snprintf(cold, sizeof(cold), "%siB up (sizes marked cold)", sz);
	}
	printf("Times in microseconds: median [p10-p90] min over the repetitions, each "
	       "the slowest rank's time between barriers. Send buffers "
	       "rewritten before every call: %s. agile backend %s; Open MPI: "
	       "vader %s; best forced = the lowest median among the "
	       "forced coll_tuned_allreduce_algorithm settings.\n\n",
	       cold, backend_here(),
	       no_single_copy ? "without single copy" : "with single copy");
	if (t->rtt_ns[0] > 0)
		printf("Cross-CPU round trip of a cache line (the first two CPUs) "
		       "before, between and after the passes: %.0f, %.0f, "
		       "%.0f ns (on a VM: where the host put the vCPUs).\n\n",
		       t->rtt_ns[0], t->rtt_ns[1], t->rtt_ns[2]);
	printf("| size | reps | agile (private) | agile CMA schedule (private) | agile (agile_coll_alloc) | "
	       "Open MPI default | Open MPI best forced | forced algorithm | memcpy (1 core) | "
	       "memcpy x %d at once |\n",
	       p->nr_procs);
	printf("|---|---|---|---|---|---|---|---|---|---|\n");
	for (int s = 0; s < p->nr_sizes; s++) {
		int best = ompi_best(p, t, s, false);

		size_name(sz, sizeof(sz), p->bytes[s]);
		cell(a, sizeof(a), p, t, na[AR_AGILE], AR_AGILE, s);
		cell(f, sizeof(f), p, t, na[AR_AGILE_CMA], AR_AGILE_CMA, s);
		cell(b, sizeof(b), p, t, na[AR_AGILE_ALLOC], AR_AGILE_ALLOC, s);
		cell(c, sizeof(c), p, t, na[AR_OMPI], AR_OMPI, s);
		if (best >= 0)
			cell(d, sizeof(d), p, t, NULL, AR_OMPI + best, s);
		else
			snprintf(d, sizeof(d), "n/a");
		cell(e, sizeof(e), p, t, na[AR_MEMCPY], AR_MEMCPY, s);
		cell(g, sizeof(g), p, t, na[AR_MEMCPY_ALL], AR_MEMCPY_ALL, s);
		if (best > 0)
			snprintf(bs, sizeof(bs), "%d %s", best,
				 alg_names[best]);
		else
			snprintf(bs, sizeof(bs), "-");
		printf("| %siB%s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n",
		       sz, is_cold(p, s) ? " cold" : "", p->reps[s], a, f, b, c,
		       d, bs, e, g);
	}

	printf("\nVerdicts on medians (SPEC §5, private buffers): agile at "
	       "least as fast as Open MPI's best from 1 MiB up (best: the "
	       "lower median of the default and the best forced algorithm); "
	       "agile's time within 1.5x of memcpy's from 16 MiB up. "
	       "agile_coll_alloc beside, not judged. N copies: the %d "
	       "memcpys at once move what an allreduce that reads each "
	       "input and writes each result once must; where their time "
	       "is over 1.5x memcpy's, such a schedule cannot meet the "
	       "second target on this machine.\n\n",
	       p->nr_procs);
	printf("| size | agile GB/s | Open MPI best GB/s | agile faster than "
	       "Open MPI best | agile / memcpy time | cma / memcpy time | "
	       "cma / agile time | alloc faster than Open MPI "
	       "best | alloc / memcpy time | N copies / memcpy time | "
	       "agile / N copies time |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (int s = 0; s < p->nr_sizes; s++) {
		int best = ompi_best(p, t, s, true);
		double ag = median_of(p, t, AR_AGILE, s);
		double al = median_of(p, t, AR_AGILE_ALLOC, s);
		double pl = median_of(p, t, AR_AGILE_CMA, s);
		char g[128], h[128], fm[32], af[32];
		double om = best >= 0 ? median_of(p, t, AR_OMPI + best, s) : 0;
		double mc = median_of(p, t, AR_MEMCPY, s);
		double fl = median_of(p, t, AR_MEMCPY_ALL, s);
		double gb = (double)p->bytes[s] / 1e6;

		size_name(sz, sizeof(sz), p->bytes[s]);
		verdict(a, sizeof(a), ag > 0 && om > 0 ? om / ag : 0, true, 1,
			p->bytes[s] >= (1u << 20));
		verdict(b, sizeof(b), ag > 0 && mc > 0 ? ag / mc : 0, false,
			1.5, p->bytes[s] >= (16u << 20));
		verdict(g, sizeof(g), pl > 0 && mc > 0 ? pl / mc : 0, false,
			1.5, false);
		verdict(h, sizeof(h), pl > 0 && ag > 0 ? pl / ag : 0, false, 1,
			false);
		verdict(c, sizeof(c), al > 0 && om > 0 ? om / al : 0, true, 1,
			false);
		verdict(d, sizeof(d), al > 0 && mc > 0 ? al / mc : 0, false,
			1.5, false);
		verdict(fm, sizeof(fm), fl > 0 && mc > 0 ? fl / mc : 0, false,
			1.5, false);
		verdict(af, sizeof(af), ag > 0 && fl > 0 ? ag / fl : 0, false,
			1, false);
		if (ag > 0)
			snprintf(e, sizeof(e), "%.2f", gb / ag);
		else
			snprintf(e, sizeof(e), "n/a");
		if (om > 0)
			snprintf(bs, sizeof(bs), "%.2f", gb / om);
		else
			snprintf(bs, sizeof(bs), "n/a");
		printf("| %siB | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
		       sz, e, bs, a, b, g, h, c, d, fm, af);
	}

	printf("\nOpen MPI medians (us) by setting (%s):\n\n",
	       "coll_tuned_use_dynamic_rules 1, coll_tuned_allreduce_algorithm N");
	printf("| size | default |");
	for (int alg = 1; alg <= AR_NR_ALGS; alg++)
		if (p->algs & (1u << alg))
			printf(" %d %s |", alg, alg_names[alg]);
	printf("\n|---|---|");
	for (int alg = 1; alg <= AR_NR_ALGS; alg++)
		if (p->algs & (1u << alg))
			printf("---|");
	printf("\n");
	for (int s = 0; s < p->nr_sizes; s++) {
		size_name(sz, sizeof(sz), p->bytes[s]);
		printf("| %siB |", sz);
		for (int alg = 0; alg <= AR_NR_ALGS; alg++) {
			int k = AR_OMPI + alg;

			if (alg && !(p->algs & (1u << alg)))
				continue;
			if (na[k] || !measured(p, t, k, s)) {
				printf(" n/a |");
			} else {
				us(bs, sizeof(bs), median_of(p, t, k, s));
				printf(" %s |", bs);
			}
		}
		printf("\n");
	}
	fflush(stdout);
}

/* Measure and report one process count. */
static int allreduce_procs(struct ar_plan *p, const char *prog,
			   const char *ompi_na, bool *no_single_copy)
{
	long nr_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct ar_times *t = calloc(1, sizeof(*t));
	const char *na[AR_NR] = { NULL };
	int err[AR_NR] = { 0 };

	if (!t)
		return -ENOMEM;
	for (int c = AR_OMPI; c < AR_MEMCPY; c++)
		na[c] = ompi_na;
	for (int pass = 0; pass < 2; pass++) {
		t->rtt_ns[pass] = cross_cpu_rtt();
		for (int i = 0; i < AR_NR; i++) {
			int c = pass ? AR_NR - 1 - i : i;
			int alg = c - AR_OMPI;

			if (err[c] || na[c])
				continue;
			if (c == AR_AGILE) {
				err[c] = agile_pass(p, pass, t);
			} else if (c == AR_MEMCPY) {
				err[c] = memcpy_pass(p, pass, t);
			} else if (c == AR_MEMCPY_ALL) {
				err[c] = memcpy_all_pass(p, pass, t);
			} else if (c >= AR_OMPI &&
				   (!alg || (p->algs & (1u << alg)))) {
				struct ar_times *before = malloc(sizeof(*t));

				if (!before) {
					err[c] = -ENOMEM;
					continue;
				}
				*before = *t;
				err[c] = ompi_pass(p, prog, pass, alg,
						   *no_single_copy, t);
				/*
				 * Containers often refuse vader's single copy
				 * (CMA: process_vm_readv): again without it.
				 */
				if (err[c] == -ECHILD && !*no_single_copy) {
					*t = *before;
					*no_single_copy = true;
					err[c] = ompi_pass(p, prog, pass, alg,
							   true, t);
				}
				free(before);
			}
		}
	}
	t->rtt_ns[2] = cross_cpu_rtt();
	/* agile's pass measures every agile kind. */
	err[AR_AGILE_ALLOC] = err[AR_AGILE_CMA] = err[AR_AGILE];
	for (int c = 0; c < AR_NR; c++) {
		if (err[c] && !na[c]) {
			fprintf(stderr, "  allreduce: %s, %d processes: %s\n",
				ar_names[c], p->nr_procs, strerror(-err[c]));
			for (int s = 0; s < p->nr_sizes; s++)
				if (!measured(p, t, c, s) && !t->err[c][s][0])
					snprintf(t->err[c][s],
						 sizeof(t->err[c][s]), "%s",
						 err[c] == -EPROTO ?
							 "wrong sum" :
						 err[c] == -ECHILD ?
							 "mpirun failed" :
							 strerror(-err[c]));
		}
	}
	add_rows(p, t, na);
	print_markdown(p, t, na, *no_single_copy, nr_cpus);
	free(t);
	return err[AR_AGILE] ? err[AR_AGILE] : err[AR_MEMCPY];
}

/* "4K", "64M", "1048576" -> bytes; 0 on a bad number. */
static size_t parse_bytes(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (end == s)
		return 0;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		v <<= 30, end++;
	return *end ? 0 : (size_t)v;
}

int bench_allreduce(const struct bench_opts *o)
{
	struct ar_plan p = { .no_pin = o->no_pin };
	size_t min_bytes = 4u << 10, max_bytes = 64u << 20;
	int procs[8], nr_procs_list = 0, err = 0;
	const char *ompi_na = NULL;
	bool no_single_copy = false;
	char prog[PATH_MAX], cold[48];

	/* --sizes MIN:MAX, powers of 4 from MIN. */
	if (o->ar_sizes) {
		const char *colon = strchr(o->ar_sizes, ':');
		char lo[32];

		snprintf(lo, sizeof(lo), "%.*s",
			 colon ? (int)(colon - o->ar_sizes) : 31, o->ar_sizes);
		min_bytes = parse_bytes(lo);
		max_bytes = colon ? parse_bytes(colon + 1) : min_bytes;
	}
	if (min_bytes < sizeof(float) || max_bytes < min_bytes) {
		fprintf(stderr, "allreduce: bad --sizes %s\n", o->ar_sizes);
		return -EINVAL;
	}
	p.cold_from = 1u << 20;
	if (o->ar_cold_from) {
		p.cold_from = !strcmp(o->ar_cold_from, "off") ?
				      SIZE_MAX :
				      parse_bytes(o->ar_cold_from);
		if (!p.cold_from && strcmp(o->ar_cold_from, "0")) {
			fprintf(stderr, "allreduce: bad --cold-from %s\n",
				o->ar_cold_from);
			return -EINVAL;
		}
	}
	p.algs = 0;
	if (!o->ar_mpi_algs) {
		for (int alg = 1; alg <= AR_NR_ALGS; alg++)
			p.algs |= 1u << alg;
	} else if (strcmp(o->ar_mpi_algs, "none")) {
		for (const char *s = o->ar_mpi_algs; *s;) {
			char *end;
			long alg = strtol(s, &end, 10);

			if (end == s || alg < 1 || alg > AR_NR_ALGS) {
				fprintf(stderr,
					"allreduce: bad --mpi-algs %s\n",
					o->ar_mpi_algs);
				return -EINVAL;
			}
			p.algs |= 1u << alg;
			s = *end == ',' ? end + 1 : end;
		}
	}
	if (o->ar_procs) {
		for (const char *s = o->ar_procs; *s && nr_procs_list < 8;) {
			char *end;
			long n = strtol(s, &end, 10);

			if (end == s || n < 1 || n > AR_MAX_PROCS) {
				fprintf(stderr, "allreduce: bad --procs %s\n",
					o->ar_procs);
				return -EINVAL;
			}
			procs[nr_procs_list++] = (int)n;
			s = *end == ',' ? end + 1 : end;
		}
	} else {
		/* -t, and twice -t (oversubscribed when -t is the CPUs). */
		procs[nr_procs_list++] = o->threads;
		if (2 * o->threads <= AR_MAX_PROCS)
			procs[nr_procs_list++] = 2 * o->threads;
	}
	/* Small sizes are quick and noisy: more repetitions there. */
	for (size_t bytes = min_bytes;
	     bytes <= max_bytes && p.nr_sizes < AR_MAX_SIZES; bytes *= 4) {
		int reps = o->reps > AR_MIN_REPS ? o->reps : AR_MIN_REPS;

		if (bytes < (1u << 20))
			reps *= 4;
		p.reps[p.nr_sizes] = reps > AR_MAX_REPS ? AR_MAX_REPS : reps;
		p.bytes[p.nr_sizes++] = bytes / sizeof(float) * sizeof(float);
	}
	if (bench_find_program("agile-bench-mpi", "AGILE_BENCH_MPI", prog,
			       sizeof(prog)))
		ompi_na = "no agile-bench-mpi";
	else if (system("command -v mpirun >/dev/null 2>&1"))
		ompi_na = "no mpirun";

	for (int i = 0; i < nr_procs_list; i++) {
		int e;

		p.nr_procs = procs[i];
		if (p.nr_procs < 1 || p.nr_procs > AR_MAX_PROCS)
			return -EINVAL;
		e = allreduce_procs(&p, prog, ompi_na, &no_single_copy);
		err = err ? err : e;
	}
	if (p.cold_from == SIZE_MAX)
		snprintf(cold, sizeof(cold), "never");
	else
		snprintf(cold, sizeof(cold), "from %zu bytes up", p.cold_from);
	bench_note(
		"allreduce: float sum; agile backend %s; %s; Open MPI: vader%s%s; verdicts on medians; send buffers rewritten before every call: %s",
		backend_here(),
		!p.no_pin ? "agile one process per core where they fit" :
			    "unpinned",
		no_single_copy ? " without single copy" : "",
		ompi_na ? " not run" : "", cold);
	return err;
}
