// SPDX-License-Identifier: MIT
/*
 * pfor - an uneven parallel-for: iteration i costs about 1 + 400 i / n
 * steps of a dependent chain, and every 97th one 20000 more, so static
 * chunks would leave workers idle.  agile_sched_parallel_for beside oneTBB's
 * parallel_for (auto partitioner, same grainsize) and OpenMP's dynamic
 * schedule (same chunk), same thread count.  SPEC §5: no slower than
 * oneTBB.
 */
#include <agile/sched.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

struct pfor_job {
	int64_t n, grain;
	int threads;
	struct agile_sched *sched;
	struct tbb_arena *arena;
	_Atomic uint64_t checksum;
	int err;
};

static uint64_t iteration(int64_t i, int64_t n)
{
	uint64_t x = (uint64_t)i + 1;
	int64_t steps = 1 + 400 * i / n + (i % 97 == 0 ? 20000 : 0);

	for (int64_t k = 0; k < steps; k++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

static void body(int64_t lo, int64_t hi, void *arg)
{
	struct pfor_job *j = arg;
	uint64_t sum = 0;

	for (int64_t i = lo; i < hi; i++)
		sum += iteration(i, j->n);
	atomic_fetch_add_explicit(&j->checksum, sum, memory_order_relaxed);
}

static int agile_body(int64_t lo, int64_t hi, void *arg)
{
	body(lo, hi, arg);
	return 0;
}

static void run_serial(void *arg)
{
	struct pfor_job *j = arg;

	atomic_store(&j->checksum, 0);
	body(0, j->n, j);
}

static void run_agile(void *arg)
{
	struct pfor_job *j = arg;
	int err;

	atomic_store(&j->checksum, 0);
	err = agile_sched_parallel_for(j->sched, 0, j->n, j->grain, agile_body,
				       j);
	if (err && !j->err)
		j->err = err;
}

static void run_tbb(void *arg)
{
	struct pfor_job *j = arg;

	atomic_store(&j->checksum, 0);
	tbb_pfor(j->arena, j->n, j->grain, body, j);
}

static void run_omp(void *arg)
{
	struct pfor_job *j = arg;

	atomic_store(&j->checksum, 0);
	omp_pfor(j->n, j->grain, j->threads, body, j);
}

int bench_pfor(const struct bench_opts *o)
{
	struct pfor_job serial = { .n = o->pfor_n,
				   .grain = o->grain,
				   .threads = o->threads };
	struct pfor_job agile = serial, tbb = serial, omp = serial;
	struct agile_sched_opts opts;
	char agile_name[32];
	uint64_t expect;
	int err;

	run_serial(&serial);
	expect = atomic_load(&serial.checksum);

	agile_sched_opts_init(&opts);
	opts.flags = o->no_pin ? AGILE_SCHED_NO_PIN : 0;
	opts.nr_workers = (uint32_t)o->threads;
	err = agile_sched_create(&opts, &agile.sched);
	if (err)
		return err;
	tbb.arena = tbb_arena_new(o->threads);
	snprintf(agile_name, sizeof(agile_name), "agile-%dw", o->threads);

	const struct contender c[] = {
		{ "serial", 1, run_serial, &serial, o->reps },
		{ agile_name, o->threads, run_agile, &agile, o->reps },
		{ "tbb-parallel_for", o->threads, run_tbb, &tbb, o->reps },
		{ "omp-dynamic", o->threads, run_omp, &omp, o->reps },
	};
	bench_run("pfor", c, sizeof(c) / sizeof(c[0]));

	agile_sched_destroy(agile.sched);
	tbb_arena_free(tbb.arena);
	if (agile.err)
		return agile.err;
	if (atomic_load(&agile.checksum) != expect ||
	    atomic_load(&tbb.checksum) != expect ||
	    atomic_load(&omp.checksum) != expect)
		return -EPROTO;

	bench_compare("pfor", agile_name, "tbb-parallel_for", true, ">= 1");
	bench_compare("pfor", agile_name, "omp-dynamic", true, NULL);
	bench_compare("pfor", agile_name, "serial", true, NULL);
	bench_compare("pfor", "tbb-parallel_for", "serial", true, NULL);
	bench_compare("pfor", "omp-dynamic", "serial", true, NULL);
	bench_note("pfor: %lld iterations, grain/chunk %lld",
		   (long long)o->pfor_n, (long long)o->grain);
	return 0;
}
