// SPDX-License-Identifier: MIT
/*
 * segmap-forall - agile_forall on the threads scope: one kernel call
 * per segment on its node, on the calling thread and on a pool, with
 * the right results; balance mode (one call per memory block from
 * per-node queues) with the right results, and stealing seen when one
 * node's blocks are slow; kernel and accessor errors (-EIO, -EACCES)
 * returned; copies of a written field dropped at the end; reduce (sum,
 * min, max, of a field and of a sub-field) through the scope.
 */
#include <agile/sched.h>
#include <agile/segmap.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"
#include "segmaptest.h"

#define NX 60
#define NY 40

struct job {
	_Atomic uint32_t calls_on[6]; /* per segment */
	_Atomic uint32_t wrong_node;
	uint32_t slow_node; /* balance: its blocks sleep; UINT32_MAX none */
	uint32_t fail_segment; /* returns -EIO there; UINT32_MAX none */
	bool balance; /* thieves run other nodes' blocks */
	struct agile_rmap *rm;
};

static double xval(int64_t x, int64_t y)
{
	return (double)(x + NX * y);
}

/* Y = 2 X over ctx->grid (acc[0] Y write, acc[1] X read). */
static int twice(struct agile_forall_ctx *ctx, void *arg)
{
	struct job *job = arg;
	const struct agile_grid *g = &ctx->grid;
	uint32_t owner;

	agile_rmap_segment(job->rm, ctx->segment, NULL, &owner);
	if (ctx->segment < 6)
		atomic_fetch_add(&job->calls_on[ctx->segment], 1);
	if (owner != ctx->node && !job->balance)
		atomic_fetch_add(&job->wrong_node, 1);
	if (ctx->segment == job->fail_segment)
		return -EIO;
	if (owner == job->slow_node)
		usleep(3000);
	for (int64_t y = g->offset.i[1];
	     y < g->offset.i[1] + (int64_t)g->extent.n[1]; y++)
		for (int64_t x = g->offset.i[0];
		     x < g->offset.i[0] + (int64_t)g->extent.n[0]; x++) {
			int64_t i[2] = { x, y };
			double v;
			int err = agile_acc_read(&ctx->acc[1], i, &v);

			v *= 2;
			if (!err)
				err = agile_acc_write(&ctx->acc[0], i, &v);
			if (err)
				return err;
		}
	return 0;
}

/* Writes the element just past its segment: another node's. */
static int trespass(struct agile_forall_ctx *ctx, void *arg)
{
	const struct agile_grid *g = &ctx->grid;
	int64_t i[2] = { g->offset.i[0], g->offset.i[1] };
	double v = 1;

	(void)arg;
	i[0] = (i[0] + (int64_t)g->extent.n[0]) % NX;
	agile_acc_write(&ctx->acc[0], i, &v);
	return 0; /* the accessor recorded it: forall returns it */
}

/* Reads the element just past its segment (a copy of a foreign block). */
static int peek(struct agile_forall_ctx *ctx, void *arg)
{
	const struct agile_grid *g = &ctx->grid;
	int64_t i[2] = { (g->offset.i[0] + (int64_t)g->extent.n[0]) % NX,
			 g->offset.i[1] };
	double v;

	(void)arg;
	return agile_acc_read(&ctx->acc[0], i, &v);
}

static void job_init(struct job *job, struct agile_rmap *rm)
{
	for (int s = 0; s < 6; s++)
		atomic_init(&job->calls_on[s], 0);
	atomic_init(&job->wrong_node, 0);
	job->slow_node = UINT32_MAX;
	job->fail_segment = UINT32_MAX;
	job->balance = false;
	job->rm = rm;
}

static uint32_t wrong_values(struct agile_field *y)
{
	double *g = malloc(NX * NY * sizeof(double));
	uint32_t bad = 0;

	if (!g || agile_field_gather(y, g, NX * NY * sizeof(double))) {
		free(g);
		return UINT32_MAX;
	}
	for (int64_t j = 0; j < NY; j++)
		for (int64_t i = 0; i < NX; i++)
			bad += g[j * NX + i] != 2 * xval(i, j);
	free(g);
	return bad;
}

static void zero(struct agile_field *y)
{
	double z = 0;

	for (int64_t j = 0; j < NY; j++)
		for (int64_t i = 0; i < NX; i++)
			agile_field_put(y,
					&(struct agile_index){ .rank = 2,
							       .i = { i, j } },
					&z);
}

static void per_segment(struct agile_segmap *sm, struct agile_rmap *rm,
			struct agile_field *x, struct agile_field *y,
			const char *what)
{
	struct agile_forall_field ff[2] = { { y, AGILE_ACC_WRITE },
					    { x, AGILE_ACC_READ } };
	struct agile_forall_stats st = { 0 };
	struct job job;
	uint32_t once = 0;
	int err;

	job_init(&job, rm);
	zero(y);
	err = agile_forall(sm, y, twice, &job, ff, 2, 0, &st);
	for (int s = 0; s < 6; s++)
		once += atomic_load(&job.calls_on[s]) == 1;
	tap_ok(!err && st.calls == 6 && once == 6 &&
		       !atomic_load(&job.wrong_node),
	       "%s: one call per segment on its node (%d, %llu calls)", what,
	       err, (unsigned long long)st.calls);
	tap_ok(wrong_values(y) == 0, "%s: Y = 2X", what);
}

static void balance(struct agile_segmap *sm, struct agile_rmap *rm,
		    struct agile_field *x, struct agile_field *y, bool pool)
{
	struct agile_forall_field ff[2] = { { y, AGILE_ACC_WRITE },
					    { x, AGILE_ACC_READ } };
	struct agile_forall_stats st = { 0 };
	struct job job;
	int err;

	job_init(&job, rm);
	job.balance = true;
	zero(y);
	err = agile_forall(sm, y, twice, &job, ff, 2, AGILE_FORALL_BALANCE,
			   &st);
	tap_ok(!err && st.calls == 24 && !atomic_load(&job.wrong_node) &&
		       (pool || st.steals == 0),
	       "balance%s: 24 memory-block calls (%llu), %llu steals",
	       pool ? " on a pool" : "", (unsigned long long)st.calls,
	       (unsigned long long)st.steals);
	tap_ok(wrong_values(y) == 0, "balance: Y = 2X");
	if (!pool)
		return;
	/* node 0's eight blocks take 3 ms each: the others steal them */
	job_init(&job, rm);
	job.balance = true;
	job.slow_node = 0;
	zero(y);
	err = agile_forall(sm, y, twice, &job, ff, 2, AGILE_FORALL_BALANCE,
			   &st);
	tap_ok(!err && st.calls == 24 && st.steals > 0,
	       "balance, node 0 slow: %llu of its blocks stolen",
	       (unsigned long long)st.steals);
	tap_ok(wrong_values(y) == 0, "balance with thieves: Y = 2X");
}

static void errors(struct agile_segmap *sm, struct agile_rmap *rm,
		   struct agile_field *x, struct agile_field *y)
{
	struct agile_forall_field ff[2] = { { y, AGILE_ACC_WRITE },
					    { x, AGILE_ACC_READ } };
	/* a field read anywhere and written: once in each mode */
	struct agile_forall_field rd[2] = { { x, AGILE_ACC_READ },
					    { x, AGILE_ACC_WRITE } };
	uint32_t home, copies = 0, total = 0;
	struct job job;
	int err;

	job_init(&job, rm);
	job.fail_segment = 2;
	err = agile_forall(sm, y, twice, &job, ff, 2, 0, NULL);
	tap_ok(err == -EIO, "a kernel's -EIO is forall's (%d)", err);
	err = agile_forall(sm, y, trespass, NULL, ff, 1, 0, NULL);
	tap_ok(err == -EACCES, "a write to another node's block: -EACCES (%d)",
	       err);
	tap_ok(agile_forall(sm, y, twice, &job, ff, 2, 1u << 7, NULL) ==
		       -EINVAL,
	       "unknown flags: -EINVAL");

	err = agile_forall(sm, x, peek, NULL, rd, 1, 0, NULL);
	for (uint64_t b = 0; b < 24; b++) {
		agile_field_block_where(x, b, &home, &copies);
		total += copies;
	}
	tap_ok(!err && total > 0, "reading foreign blocks left %u copies",
	       total);
	err = agile_forall(sm, x, peek, NULL, rd, 2, 0, NULL);
	total = 0;
	for (uint64_t b = 0; b < 24; b++) {
		agile_field_block_where(x, b, &home, &copies);
		total += copies;
	}
	tap_ok(!err && total == 0,
	       "a forall that writes the field drops them (%u left)", total);
}

static void reduce(struct agile_field *x)
{
	struct agile_grid part = grid2(10, 5, 20, 10);
	struct agile_field *sub = NULL;
	double sum = 0, mn = 0, mx = 0, want = 0, ssum = 0, swant = 0;
	int err;

	for (int64_t j = 0; j < NY; j++)
		for (int64_t i = 0; i < NX; i++)
			want += xval(i, j);
	for (int64_t j = 5; j < 15; j++)
		for (int64_t i = 10; i < 30; i++)
			swant += xval(i, j);
	err = agile_field_reduce(x, AGILE_COLL_DOUBLE, AGILE_COLL_SUM, &sum);
	tap_ok(!err && sum == want, "reduce sum %g (want %g)", sum, want);
	agile_field_reduce(x, AGILE_COLL_DOUBLE, AGILE_COLL_MIN, &mn);
	agile_field_reduce(x, AGILE_COLL_DOUBLE, AGILE_COLL_MAX, &mx);
	tap_ok(mn == 0 && mx == xval(NX - 1, NY - 1), "reduce min %g max %g",
	       mn, mx);
	agile_field_sub(x, &part, &sub);
	err = agile_field_reduce(sub, AGILE_COLL_DOUBLE, AGILE_COLL_SUM, &ssum);
	tap_ok(!err && ssum == swant, "reduce of a sub-field: %g (want %g)",
	       ssum, swant);
	tap_ok(agile_field_reduce(x, AGILE_COLL_INT32, AGILE_COLL_SUM, &sum) ==
		       -EINVAL,
	       "reduce with a type of another size: -EINVAL");
	agile_field_destroy(sub);
}

static void on(struct agile_sched *pool)
{
	struct agile_grid g = grid2(0, 0, NX, NY);
	struct agile_extent seg = ext2(20, 20);
	struct agile_proto p = proto(AGILE_PROTO_CYCLIC, 3);
	struct agile_levels lv = { .block = ext2(10, 10) };
	struct agile_segmap *sm = NULL;
	struct agile_rmap *rm = NULL;
	struct agile_field *x = NULL, *y = NULL;
	int err;

	err = agile_segmap_threads(3, pool, &sm);
	if (!err)
		err = agile_rmap_tiles(&g, &seg, &p, &rm);
	if (!err)
		err = agile_field_create(sm, rm, &lv, sizeof(double), &x);
	if (!err)
		err = agile_field_create(sm, rm, &lv, sizeof(double), &y);
	if (!tap_ok_call(err, pool ? "fields, on a pool" : "fields, no pool"))
		return;
	for (int64_t j = 0; j < NY; j++)
		for (int64_t i = 0; i < NX; i++) {
			double v = xval(i, j);

			agile_field_put(x,
					&(struct agile_index){ .rank = 2,
							       .i = { i, j } },
					&v);
		}
	per_segment(sm, rm, x, y, pool ? "pool" : "caller");
	balance(sm, rm, x, y, pool != NULL);
	errors(sm, rm, x, y);
	reduce(x);
	tap_ok(agile_segmap_destroy(sm) == -EBUSY,
	       "a map with fields is not destroyed");
	agile_field_destroy(x);
	agile_field_destroy(y);
	agile_rmap_destroy(rm);
	tap_ok(agile_segmap_destroy(sm) == 0, "map destroyed");
}

int main(void)
{
	struct agile_sched_opts o;
	struct agile_sched *pool = NULL;

	on(NULL);
	agile_sched_opts_init(&o);
	o.nr_workers = 3;
	o.flags = AGILE_SCHED_QUIET;
	if (!tap_ok_call(agile_sched_create(&o, &pool), "a pool of 3"))
		return tap_done();
	on(pool);
	agile_sched_destroy(pool);
	return tap_done();
}
