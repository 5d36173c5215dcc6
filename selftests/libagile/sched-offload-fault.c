// SPDX-License-Identifier: MIT
/*
 * sched-offload-fault - the scheduler's leaves on EUs when an EU fails them.
 *
 *  - A leaf that outlives the offload's timeout: the run returns
 *    -ETIMEDOUT while the EU goes on; the leaf ran on a copy of its task
 *    (in the task register, or with 64-byte registers in the offload's
 *    buffer for the EU), so when it ends it still reads its own task, not
 *    the worker's reused stack (ASan with detect_stack_use_after_return
 *    saw the use after return before); the EU is quarantined: the next
 *    leaf runs on the worker's CPU, not -EBUSY; destroying the offload
 *    object meanwhile is -EBUSY; once the late leaf is done the EU
 *    rejoins and takes the next leaf.
 *  - The same with an encoder and two EUs: the part that timed out
 *    quarantines its EU, later leaves are split across the other one only.
 *  - Disconnected EUs: a run no longer fails with -ENOTCONN; the leaf
 *    that finds an EU gone runs that part on the CPU, later leaves go to
 *    the EUs left, and to the CPU once none is; every result right.
 * agile_offload_stats counts each case.
 *
 * Backend: $AGILE_BACKEND, else the user backend.
 */
#define _GNU_SOURCE
#include <agile/agile.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "offloadtest.h"
#include "tap.h"
#include "testutil.h"

/*
 * The offload's timeout where a leaf is held past it on purpose; long
 * enough that no leaf that is not held outlives it, even in an emulated
 * guest.  Where nothing is held, a timeout that never fires.
 */
#define TIMEOUT_NS (1000ULL * 1000 * 1000)
#define NO_TIMEOUT_NS (60ULL * 1000 * 1000 * 1000)
#define NR_IDS 8

#ifdef __SANITIZE_ADDRESS__
/* Catch a leaf reading its worker's dead stack frame. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_stack_use_after_return=1";
}
#endif

enum where { NOWHERE, ON_WORKER, ON_EU };

struct leaf_task {
	uint64_t id;
	uint64_t magic;
	uint32_t slow;
	uint32_t pad;
};

struct run_arg {
	_Atomic int started, release, done;
	_Atomic uint64_t seen[NR_IDS];
	_Atomic int where[NR_IDS];
};

static bool always_leaf(const void *task, void *arg)
{
	(void)task;
	(void)arg;
	return true;
}

static int no_split(const void *task, void *children, void *arg)
{
	(void)task;
	(void)children;
	(void)arg;
	return -EINVAL;
}

/* Records the task it sees, after waiting for the release if slow. */
static int record_leaf(void *task, void *arg)
{
	const struct leaf_task *t = task;
	struct run_arg *a = arg;
	bool slow = t->slow;

	if (slow) {
		atomic_store_explicit(&a->started, 1, memory_order_release);
		await_flag(&a->release, 10000);
	}
	/* Read the task only now: a leaf that outlived its timeout. */
	atomic_store(&a->seen[t->id % NR_IDS], t->magic);
	atomic_store(&a->where[t->id % NR_IDS],
		     agile_sched_worker_self() ? ON_WORKER : ON_EU);
	if (slow)
		atomic_store_explicit(&a->done, 1, memory_order_release);
	return 0;
}

static const struct agile_task_ops record_ops = {
	.task_size = sizeof(struct leaf_task),
	.cutoff = always_leaf,
	.split = no_split,
	.leaf = record_leaf,
};

static int run_leaf(struct offload_stack *s, struct run_arg *a, uint64_t id,
		    uint64_t magic, bool slow)
{
	struct leaf_task t = { .id = id, .magic = magic, .slow = slow };

	return agile_sched_run_task(s->sched, &record_ops, &t, a);
}

static struct agile_offload_stats ostats(struct offload_stack *s)
{
	struct agile_offload_stats st;

	agile_offload_stats(s->off, &st);
	return st;
}

/* One worker, one EU, whole leaves; @reg_size picks where the copy goes. */
static void test_timeout(uint32_t reg_size)
{
	const uint64_t magic[3] = { 0xa11ce0000000000aULL,
				    0xb0b0000000000b0bULL,
				    0xc0ffee000000000cULL };
	const char *copy = reg_size >= 128 ? "register" : "EU buffer";
	struct agile_offload_stats st;
	struct run_arg a = { 0 };
	struct offload_stack s;
	int err;

	err = offload_stack_setup(&s, 1, 1, reg_size, NULL, TIMEOUT_NS);
	if (!tap_ok(!err, "%u-byte registers: set up (%s)", reg_size,
		    agile_strerror(err))) {
		offload_stack_teardown(&s);
		return;
	}
	err = run_leaf(&s, &a, 0, magic[0], true);
	st = ostats(&s);
	tap_ok(err == -ETIMEDOUT && atomic_load(&a.started) &&
		       st.timeouts == 1 && st.quarantined == 1,
	       "copy in the %s: a leaf that outlives the timeout: the run "
	       "returns -ETIMEDOUT (%s), its EU quarantined",
	       copy, agile_strerror(err));
	tap_ok(agile_offload_destroy(s.off) == -EBUSY,
	       "copy in the %s: destroying the offload meanwhile: -EBUSY",
	       copy);
	/* The same worker, the same stack: the next run's frames land there. */
	err = run_leaf(&s, &a, 1, magic[1], false);
	st = ostats(&s);
	tap_ok(!err && atomic_load(&a.seen[1]) == magic[1] &&
		       atomic_load(&a.where[1]) == ON_WORKER &&
		       st.fallback_leaves == 1,
	       "copy in the %s: the next leaf runs on the worker's CPU (%s)",
	       copy, agile_strerror(err));
	atomic_store_explicit(&a.release, 1, memory_order_release);
	err = await_flag(&a.done, 10000) ? 0 : -ETIMEDOUT;
	tap_ok(!err && atomic_load(&a.seen[0]) == magic[0] &&
		       atomic_load(&a.where[0]) == ON_EU,
	       "copy in the %s: the late leaf read its own task (0x%llx)", copy,
	       (unsigned long long)atomic_load(&a.seen[0]));
	/*
	 * The leaf has returned; the EU's doorbell goes IDLE just after.  The
	 * next offload looks once, without waiting (offload.c: eu_back), so
	 * wait for IDLE here: on a pool of one the next run starts on this
	 * thread at once, with no worker to wake first.
	 */
	for (int i = 0;
	     i < 10000 && agile_eu_wait(s.pool, 0, 0, NULL) == -ETIMEDOUT; i++)
		usleep(1000);
	err = run_leaf(&s, &a, 2, magic[2], false);
	st = ostats(&s);
	tap_ok(!err && atomic_load(&a.seen[2]) == magic[2] &&
		       atomic_load(&a.where[2]) == ON_EU && st.rejoins == 1 &&
		       st.quarantined == 0 && st.eu_leaves == 2,
	       "copy in the %s: the EU rejoined and ran the next leaf (%s)",
	       copy, agile_strerror(err));
	tap_ok(offload_stack_teardown(&s) == 0, "copy in the %s: shut down",
	       copy);
}

/* ---- an encoder over two EUs: fill out[lo, hi) with 3 i ---- */

#define FILL_N 4096

struct fill_arg {
	uint32_t opcode;
	uint64_t *out;
	_Atomic int slow_part0; /* part 0 holds until release */
	_Atomic int started, release;
};

struct fill_task {
	int64_t lo, hi;
};

/* args: out, lo, hi, slow (then &started, &release) */
static int fill_lane(uint32_t lane, uint32_t nr_lanes, const __u64 *args,
		     void *state, void *shared)
{
	uint64_t *out = (uint64_t *)(uintptr_t)args[0];
	int64_t lo = (int64_t)args[1], hi = (int64_t)args[2];
	int64_t first = lo + (hi - lo) * lane / nr_lanes;
	int64_t last = lo + (hi - lo) * (lane + 1) / nr_lanes;

	(void)state;
	(void)shared;
	if (args[3] && !lane) {
		atomic_store((_Atomic int *)(uintptr_t)args[4], 1);
		await_flag((_Atomic int *)(uintptr_t)args[5], 10000);
	}
	for (int64_t i = first; i < last; i++)
		out[i] = 3 * (uint64_t)i;
	return 0;
}

static const agile_phase_fn fill_phases[] = { fill_lane };

static int fill_encode(const void *task, void *arg, uint32_t part,
		       uint32_t nr_parts, struct agile_task_reg *reg,
		       uint32_t nr_args, void *encode_arg)
{
	const struct fill_task *t = task;
	struct fill_arg *a = arg;
	int64_t n = t->hi - t->lo;

	(void)encode_arg;
	if (nr_args < 6)
		return -EINVAL;
	reg->opcode = a->opcode;
	reg->nr_parts = 8;
	reg->flags = 0;
	reg->args[0] = (uintptr_t)a->out;
	reg->args[1] = (__u64)(t->lo + n * part / nr_parts);
	reg->args[2] = (__u64)(t->lo + n * (part + 1) / nr_parts);
	reg->args[3] = !part && atomic_exchange(&a->slow_part0, 0);
	reg->args[4] = (uintptr_t)&a->started;
	reg->args[5] = (uintptr_t)&a->release;
	return 0;
}

static bool fill_cutoff(const void *task, void *arg)
{
	(void)task;
	(void)arg;
	return true;
}

/* With an encoder the leaf call is never made. */
static int fill_unused_leaf(void *task, void *arg)
{
	(void)task;
	(void)arg;
	return -EPROTO;
}

static const struct agile_task_ops fill_ops = {
	.task_size = sizeof(struct fill_task),
	.cutoff = fill_cutoff,
	.split = no_split,
	.leaf = fill_unused_leaf,
};

static int fill_run(struct offload_stack *s, struct fill_arg *a, bool slow)
{
	struct fill_task t = { 0, FILL_N };

	if (!slow)
		memset(a->out, 0, FILL_N * sizeof(*a->out));
	atomic_store(&a->slow_part0, slow);
	return agile_sched_run_task(s->sched, &fill_ops, &t, a);
}

static int fill_wrong(const struct fill_arg *a)
{
	int wrong = 0;

	for (int64_t i = 0; i < FILL_N; i++)
		wrong += a->out[i] != 3 * (uint64_t)i;
	return wrong;
}

static void test_timeout_split(void)
{
	const struct agile_kernel kfill = { .name = "fill",
					    .nr_phases = 1,
					    .phases = fill_phases };
	uint64_t *late_out = calloc(FILL_N, sizeof(*late_out));
	struct fill_arg a = { 0 };
	struct agile_offload_stats st;
	struct agile_eu_stats e0, e1;
	struct offload_stack s;
	int err;

	/* The late part writes into a buffer of its own. */
	a.out = late_out;
	err = a.out ? offload_stack_setup(&s, 1, 2, 128, fill_encode,
					  TIMEOUT_NS) :
		      -ENOMEM;
	if (!err)
		err = agile_kernels_register(s.reg, &kfill, &a.opcode);
	if (!tap_ok(!err, "split over 2 EUs: set up (%s)",
		    agile_strerror(err))) {
		offload_stack_teardown(&s);
		free(late_out);
		return;
	}
	err = fill_run(&s, &a, true);
	st = ostats(&s);
	tap_ok(err == -ETIMEDOUT && st.quarantined == 1 && st.timeouts == 1,
	       "split over 2 EUs: part 0 outlives the timeout: -ETIMEDOUT, "
	       "EU 0 quarantined");
	agile_eu_stats(s.pool, 0, &e0);
	a.out = calloc(FILL_N, sizeof(*a.out));
	if (!a.out) {
		tap_ok(0, "split over 2 EUs: memory");
		atomic_store(&a.release, 1);
		offload_stack_teardown(&s);
		return;
	}
	err = fill_run(&s, &a, false);
	st = ostats(&s);
	tap_ok(!err && !fill_wrong(&a) && st.rerouted_leaves == 1,
	       "split over 2 EUs: the next leaf runs on EU 1 alone, every "
	       "result right (%s)",
	       agile_strerror(err));
	atomic_store(&a.release, 1);
	agile_eu_stats(s.pool, 0, &e1);
	err = 0;
	for (int i = 0; i < 100000 && !err; i++) {
		agile_eu_stats(s.pool, 0, &e1);
		if (e1.tasks > e0.tasks)
			break;
		usleep(100);
	}
	err = fill_run(&s, &a, false);
	agile_eu_stats(s.pool, 0, &e1);
	st = ostats(&s);
	tap_ok(!err && !fill_wrong(&a) && st.rejoins == 1 &&
		       e1.tasks == e0.tasks + 2,
	       "split over 2 EUs: EU 0 back, both take parts again (%s)",
	       agile_strerror(err));
	tap_ok(offload_stack_teardown(&s) == 0, "split over 2 EUs: shut down");
	free(a.out);
	free(late_out);
}

/* Whole leaves, 2 EUs, disconnected one after the other between runs. */
static void test_disconnected(void)
{
	struct agile_offload_stats st;
	struct run_arg a = { 0 };
	struct offload_stack s;
	int err, bad = 0;

	err = offload_stack_setup(&s, 1, 2, 128, NULL, NO_TIMEOUT_NS);
	if (!tap_ok(!err, "disconnects: set up (%s)", agile_strerror(err))) {
		offload_stack_teardown(&s);
		return;
	}
	err = agile_eu_disconnect(s.pool, 0, AGILE_TIMEOUT_INFINITE);
	if (!err)
		err = run_leaf(&s, &a, 0, 100, false);
	st = ostats(&s);
	tap_ok(!err && atomic_load(&a.seen[0]) == 100 &&
		       atomic_load(&a.where[0]) == ON_WORKER &&
		       st.eus_gone == 1 && st.fallback_leaves == 1,
	       "EU 0 disconnected: the leaf that finds it gone runs on the "
	       "CPU (%s)",
	       agile_strerror(err));
	for (uint64_t i = 1; i < 4 && !err; i++) {
		err = run_leaf(&s, &a, i, 100 + i, false);
		bad += atomic_load(&a.seen[i]) != 100 + i ||
		       atomic_load(&a.where[i]) != ON_EU;
	}
	st = ostats(&s);
	tap_ok(!err && !bad && st.eu_leaves == 3 && st.rerouted_leaves == 4,
	       "later leaves go to EU 1 (%s)", agile_strerror(err));
	err = agile_eu_disconnect(s.pool, 1, AGILE_TIMEOUT_INFINITE);
	for (uint64_t i = 4; i < 8 && !err; i++) {
		err = run_leaf(&s, &a, i, 100 + i, false);
		bad += atomic_load(&a.seen[i]) != 100 + i ||
		       atomic_load(&a.where[i]) != ON_WORKER;
	}
	st = ostats(&s);
	tap_ok(!err && !bad && st.eus_gone == 2 && st.fallback_leaves == 5,
	       "both disconnected: leaves run on the worker's CPU, no "
	       "-ENOTCONN (%s; %llu on the CPU)",
	       agile_strerror(err), (unsigned long long)st.fallback_leaves);
	tap_ok(offload_stack_teardown(&s) == 0, "disconnects: shut down");
}

/* An encoder over 3 EUs, EU 1 disconnected: parts over EUs 0 and 2. */
static void test_disconnected_split(void)
{
	const struct agile_kernel kfill = { .name = "fill",
					    .nr_phases = 1,
					    .phases = fill_phases };
	struct agile_eu_stats e[3], f[3];
	struct agile_offload_stats st;
	struct fill_arg a = { 0 };
	struct offload_stack s;
	int err;

	a.out = calloc(FILL_N, sizeof(*a.out));
	err = a.out ? offload_stack_setup(&s, 1, 3, 128, fill_encode,
					  NO_TIMEOUT_NS) :
		      -ENOMEM;
	if (!err)
		err = agile_kernels_register(s.reg, &kfill, &a.opcode);
	if (!err)
		err = agile_eu_disconnect(s.pool, 1, AGILE_TIMEOUT_INFINITE);
	if (!tap_ok(!err, "split, EU 1 of 3 disconnected: set up (%s)",
		    agile_strerror(err))) {
		offload_stack_teardown(&s);
		free(a.out);
		return;
	}
	err = fill_run(&s, &a, false);
	tap_ok(!err && !fill_wrong(&a),
	       "split, EU 1 of 3 gone: the first leaf right, its part on the "
	       "CPU (%s)",
	       agile_strerror(err));
	for (int i = 0; i < 3; i++)
		agile_eu_stats(s.pool, (uint32_t)i, &e[i]);
	err = fill_run(&s, &a, false);
	for (int i = 0; i < 3; i++)
		agile_eu_stats(s.pool, (uint32_t)i, &f[i]);
	st = ostats(&s);
	tap_ok(!err && !fill_wrong(&a) && f[0].tasks == e[0].tasks + 1 &&
		       f[2].tasks == e[2].tasks + 1 && !f[1].connected &&
		       st.eus_gone == 1 && st.rerouted_leaves == 2,
	       "split, EU 1 gone: the next leaf in two parts, on EUs 0 and 2 "
	       "(%s)",
	       agile_strerror(err));
	tap_ok(offload_stack_teardown(&s) == 0, "split, EU 1 gone: shut down");
	free(a.out);
}

int main(void)
{
	int threads0 = settled_threads();

	test_timeout(128);
	test_timeout(64);
	test_timeout_split();
	test_disconnected();
	test_disconnected_split();
	tap_ok(threads_settle(threads0) == threads0,
	       "no thread left (%d, %d before)", nr_threads(), threads0);
	return tap_done();
}
