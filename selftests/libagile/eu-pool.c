// SPDX-License-Identifier: MIT
/*
 * eu-pool - CPU execution units on the backend $AGILE_BACKEND picks (user
 * natively, both in the guests): many tasks on every EU, from one poster
 * and from one poster per EU at once; a failed lane's error code and
 * lane; tasks the EU refuses (no kernel for the opcode, bad part counts);
 * a task that outlasts its wait; EUs that sleep between tasks; DISCONNECT
 * of one EU while the others go on; shutdown with no thread left.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/kernels.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "testutil.h"

#define NR_EUS 3
#define LONG_NS (10ULL * 1000 * 1000 * 1000)

/* args: counters (int64_t per lane), the lane that fails, its error */
static int count_lanes(uint32_t lane, uint32_t nr_lanes, const __u64 *args,
		       void *state, void *shared)
{
	int64_t *counters = (int64_t *)(uintptr_t)args[0];

	(void)nr_lanes;
	(void)state;
	(void)shared;
	if (lane == args[1])
		return (int)(int64_t)args[2];
	counters[lane] += lane + 1;
	return 0;
}

/* args: a flag to spin on until it is set (a task that takes a while). */
static int wait_flag(uint32_t lane, uint32_t nr_lanes, const __u64 *args,
		     void *state, void *shared)
{
	_Atomic int *flag = (_Atomic int *)(uintptr_t)args[0];

	(void)lane;
	(void)nr_lanes;
	(void)state;
	(void)shared;
	while (!atomic_load_explicit(flag, memory_order_acquire))
		usleep(100);
	return 0;
}

static const agile_phase_fn count_phases[] = { count_lanes };
static const agile_phase_fn wait_phases[] = { wait_flag };
static uint32_t op_count, op_wait;

static int set_count_task(struct agile_eu_pool *pool, uint32_t eu,
			  int64_t *counters, uint32_t nr_parts, uint32_t fail,
			  int code)
{
	struct agile_task_reg *reg;
	uint32_t nr_args;
	int err = agile_eu_task_reg(pool, eu, &reg, &nr_args);

	if (err)
		return err;
	reg->opcode = op_count;
	reg->nr_parts = nr_parts;
	reg->flags = 0;
	reg->args[0] = (uintptr_t)counters;
	reg->args[1] = fail;
	reg->args[2] = (__u64)(int64_t)code;
	return nr_args >= 3 ? 0 : -EINVAL;
}

static int64_t counters[NR_EUS][64];

/* One poster drives all EUs: post to each, then wait for each. */
static void test_many(struct agile_eu_pool *pool, unsigned int gap_us)
{
	int64_t expect[64] = { 0 };
	int err = 0, bad = 0;

	memset(counters, 0, sizeof(counters));
	for (int round = 0; round < 1000 && !err; round++) {
		if (gap_us)
			usleep(gap_us); /* let the EUs fall asleep */
		for (uint32_t eu = 0; eu < NR_EUS && !err; eu++) {
			err = set_count_task(pool, eu, counters[eu], 16, 99, 0);
			if (!err)
				err = agile_eu_submit(pool, eu);
		}
		for (uint32_t eu = 0; eu < NR_EUS && !err; eu++)
			err = agile_eu_wait(pool, eu, LONG_NS, NULL);
		for (int lane = 0; lane < 16; lane++)
			expect[lane] += lane + 1;
	}
	for (int eu = 0; eu < NR_EUS; eu++)
		bad += memcmp(counters[eu], expect, sizeof(expect)) != 0;
	tap_ok(!err && !bad,
	       "1000 rounds of a 16-lane task on each of %d EUs: %s", NR_EUS,
	       agile_strerror(err));
}

struct poster {
	struct agile_eu_pool *pool;
	uint32_t eu;
	int err;
};

static void *poster_main(void *arg)
{
	struct poster *p = arg;

	for (int i = 0; i < 2000 && !p->err; i++) {
		p->err = set_count_task(p->pool, p->eu, counters[p->eu],
					(uint32_t)(i % 64) + 1, 99, 0);
		if (!p->err)
			p->err = agile_eu_call(p->pool, p->eu, LONG_NS, NULL);
	}
	return NULL;
}

static void test_posters(struct agile_eu_pool *pool)
{
	struct poster p[NR_EUS];
	pthread_t t[NR_EUS];
	int64_t expect[64] = { 0 };
	int err = 0, bad = 0;

	memset(counters, 0, sizeof(counters));
	for (uint32_t eu = 0; eu < NR_EUS; eu++) {
		p[eu] = (struct poster){ .pool = pool, .eu = eu };
		pthread_create(&t[eu], NULL, poster_main, &p[eu]);
	}
	for (int eu = 0; eu < NR_EUS; eu++) {
		pthread_join(t[eu], NULL);
		err = err ? err : p[eu].err;
	}
	for (int i = 0; i < 2000; i++)
		for (int lane = 0; lane < i % 64 + 1; lane++)
			expect[lane] += lane + 1;
	for (int eu = 0; eu < NR_EUS; eu++)
		bad += memcmp(counters[eu], expect, sizeof(expect)) != 0;
	tap_ok(!err && !bad,
	       "%d posters, one per EU, 2000 calls each of 1..64 lanes: %s",
	       NR_EUS, agile_strerror(err));
}

static void test_errors(struct agile_eu_pool *pool)
{
	struct agile_eu_stats st0, st1;
	struct agile_task_reg *reg;
	uint32_t lane = 0;
	int err;

	agile_eu_stats(pool, 1, &st0);
	set_count_task(pool, 1, counters[1], 40, 37, -ENOLINK);
	lane = 0;
	err = agile_eu_call(pool, 1, LONG_NS, &lane);
	agile_eu_task_reg(pool, 1, &reg, NULL);
	tap_ok(err == -ENOLINK && lane == 37 &&
		       reg->status == (((1ULL << 40) - 1) & ~(1ULL << 37)),
	       "lane 37 of 40 fails: %s, lane %u, status 0x%llx",
	       agile_strerror(err), lane, (unsigned long long)reg->status);
	agile_eu_stats(pool, 1, &st1);
	tap_ok(st1.tasks == st0.tasks + 1 && st1.failed == st0.failed + 1 &&
		       st1.lanes == st0.lanes + 40,
	       "EU 1 counted the task, its failure and its 40 lanes");

	set_count_task(pool, 0, counters[0], 4, 99, 0);
	agile_eu_task_reg(pool, 0, &reg, NULL);
	reg->opcode = AGILE_OP_USER_BASE + 200;
	err = agile_eu_call(pool, 0, LONG_NS, &lane);
	tap_ok(err == -AGILE_E_OPCODE && lane == AGILE_EU_NO_LANE,
	       "an opcode with no kernel: %s, no lane", agile_strerror(err));
	set_count_task(pool, 0, counters[0], 0, 99, 0);
	err = agile_eu_call(pool, 0, LONG_NS, &lane);
	tap_ok(err == -EINVAL && lane == AGILE_EU_NO_LANE,
	       "0 parts: -EINVAL from the EU");
	set_count_task(pool, 0, counters[0], 65, 99, 0);
	err = agile_eu_call(pool, 0, LONG_NS, &lane);
	tap_ok(err == -EINVAL, "65 parts: -EINVAL from the EU");
	set_count_task(pool, 0, counters[0], 3, 1, 7);
	err = agile_eu_call(pool, 0, LONG_NS, &lane);
	tap_ok(err == -EPROTO && lane == 1,
	       "a lane returning a positive code: -EPROTO");
	tap_ok(agile_eu_submit(pool, NR_EUS) == -EINVAL &&
		       agile_eu_wait(pool, NR_EUS, 0, NULL) == -EINVAL &&
		       agile_eu_task_reg(pool, NR_EUS, &reg, NULL) == -EINVAL,
	       "EU out of range: -EINVAL");
}

static void test_timeout(struct agile_eu_pool *pool)
{
	_Atomic int flag = 0;
	struct agile_task_reg *reg;
	int err;

	agile_eu_task_reg(pool, 2, &reg, NULL);
	reg->opcode = op_wait;
	reg->nr_parts = 1;
	reg->args[0] = (uintptr_t)&flag;
	err = agile_eu_submit(pool, 2);
	tap_ok(!err && agile_eu_wait(pool, 2, 5000000, NULL) == -ETIMEDOUT,
	       "a task still running when the wait's 5 ms are up: -ETIMEDOUT");
	tap_ok(agile_eu_submit(pool, 2) == -EBUSY,
	       "a submit while it runs: -EBUSY");
	tap_ok(agile_eu_pool_destroy(pool) == -EBUSY,
	       "pool destroy while it runs: -EBUSY, nothing freed");
	atomic_store_explicit(&flag, 1, memory_order_release);
	tap_ok(agile_eu_wait(pool, 2, LONG_NS, NULL) == 0,
	       "it finishes; a second wait collects it");
}

static void test_run_inline(struct agile_eu_pool *pool)
{
	_Alignas(64) unsigned char buf[256] = { 0 };
	struct agile_task_reg *reg = (struct agile_task_reg *)buf;
	int64_t local[64] = { 0 };
	uint32_t lane = 0;
	int err;

	reg->opcode = op_count;
	reg->nr_parts = 8;
	reg->args[0] = (uintptr_t)local;
	reg->args[1] = 6;
	reg->args[2] = (__u64)(int64_t)-EL2HLT;
	err = agile_eu_run_inline(pool, reg, &lane);
	tap_ok(err == -EL2HLT && lane == 6 && local[7] == 8 && !local[6] &&
		       reg->status == 0xbf,
	       "run inline on the caller's thread: lane 6 fails, others ran");
}

static void test_disconnect(struct agile_eu_pool *pool)
{
	struct agile_eu_stats st;
	int err;

	err = agile_eu_disconnect(pool, 1, LONG_NS);
	agile_eu_stats(pool, 1, &st);
	tap_ok(!err && !st.connected, "DISCONNECT EU 1: its loop ended (%s)",
	       agile_strerror(err));
	tap_ok(agile_eu_submit(pool, 1) == -ENOTCONN &&
		       agile_eu_disconnect(pool, 1, LONG_NS) == -ENOTCONN,
	       "EU 1 takes no more tasks: -ENOTCONN");
	set_count_task(pool, 0, counters[0], 8, 99, 0);
	err = agile_eu_call(pool, 0, LONG_NS, NULL);
	set_count_task(pool, 2, counters[2], 8, 99, 0);
	if (!err)
		err = agile_eu_call(pool, 2, LONG_NS, NULL);
	tap_ok(!err, "EUs 0 and 2 still serve");
}

static int make_pool(struct agile_dev *dev, struct agile_kernels *reg,
		     uint64_t idle_spin, struct agile_eu_pool **pool)
{
	struct agile_eu_pool_opts o;

	agile_eu_pool_opts_init(&o);
	o.idle_spin_ns = idle_spin;
	return agile_eu_pool_create(dev, reg, &o, pool);
}

int main(void)
{
	const struct agile_kernel kcount = { .name = "count",
					     .nr_phases = 1,
					     .phases = count_phases };
	const struct agile_kernel kwait = { .name = "wait",
					    .nr_phases = 1,
					    .phases = wait_phases,
					    .max_lanes = 1 };
	struct agile_dev_stats ds0, ds1;
	struct agile_eu_pool_opts po;
	struct agile_kernels *reg;
	struct agile_eu_pool *pool;
	struct agile_dev_opts o;
	struct agile_dev *dev;
	int threads0, err;

	threads0 = settled_threads();
	agile_kernels_create(&reg);
	agile_kernels_register(reg, &kcount, &op_count);
	agile_kernels_register(reg, &kwait, &op_wait);
	agile_dev_opts_init(&o);
	o.nr_slots = NR_EUS + 1;
	o.task_reg_size = 128;
	err = agile_dev_open(&o, &dev);
	if (!tap_ok(!err, "open a context: %s", agile_strerror(err)))
		return tap_done();
	tap_diag("backend: %s", agile_dev_backend_name(agile_dev_backend(dev)));

	agile_eu_pool_opts_init(&po);
	po.nr_eus = NR_EUS + 2;
	tap_ok(agile_eu_pool_create(dev, reg, &po, &pool) == -EINVAL,
	       "more EUs than slots: -EINVAL");
	po.nr_eus = NR_EUS;
	po.reserved[0] = 1;
	tap_ok(agile_eu_pool_create(dev, reg, &po, &pool) == -EINVAL,
	       "reserved field: -EINVAL");
	tap_ok(agile_eu_pool_create(dev, NULL, NULL, &pool) == -EINVAL,
	       "no registry: -EINVAL");

	/* Spinning EUs. */
	po.reserved[0] = 0;
	err = agile_eu_pool_create(dev, reg, &po, &pool);
	if (!tap_ok(!err, "start %d EUs", NR_EUS))
		return tap_done();
	tap_ok(threads_settle(threads0 + NR_EUS) == threads0 + NR_EUS,
	       "one thread per EU");
	test_many(pool, 0);
	test_posters(pool);
	test_errors(pool);
	test_timeout(pool);
	test_run_inline(pool);
	test_disconnect(pool);
	tap_ok(agile_eu_pool_destroy(pool) == 0 &&
		       threads_settle(threads0) == threads0,
	       "destroy: every EU disconnected and joined");

	/* EUs that sleep at once when idle: posts must wake them. */
	agile_dev_stats(dev, &ds0);
	err = make_pool(dev, reg, 0, &pool);
	if (!tap_ok(!err, "start %d EUs that sleep when idle", NR_EUS))
		return tap_done();
	test_many(pool, 50);
	agile_dev_stats(dev, &ds1);
	tap_ok(ds1.wake_calls > ds0.wake_calls,
	       "posts woke sleeping EUs (%llu wake calls)",
	       (unsigned long long)(ds1.wake_calls - ds0.wake_calls));
	tap_ok(agile_eu_pool_destroy(pool) == 0 &&
		       threads_settle(threads0) == threads0,
	       "destroy the sleeping pool");

	tap_ok(agile_dev_close(dev) == 0 && agile_kernels_destroy(reg) == 0,
	       "close the context, free the registry");
	return tap_done();
}
