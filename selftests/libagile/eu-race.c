// SPDX-License-Identifier: MIT
/*
 * eu-race - a task register belongs to its EU while a task runs: calls
 * that find the slot busy return -EBUSY and change nothing.
 *
 *  - A disconnect, a submit and agile_eu_task_reg while a task is held
 *    running: each -EBUSY, the register's opcode, part count, flags and
 *    arguments untouched, the task's outcome and results right, the EU
 *    still connected.
 *  - More submits racing the EU's completion, many times over: each
 *    finds the slot busy (-EBUSY) or the task finished (and posts it
 *    again); either way the outcome the wait reports is the task's own.
 *    Before the fix a busy submit cleared the status word the EU had just
 *    written (a few per cent of the outcomes were wrong), and TSan saw the
 *    race (check-tsan runs this test).
 *
 * Backend: $AGILE_BACKEND, else user (and kmod where /dev/agile exists).
 * $AGILE_TEST_QUICK (the emulated guests): fewer rounds.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/kernels.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "testutil.h"

#define LONG_NS (10ULL * 1000 * 1000 * 1000) /* a bug fails, never hangs */
#define HOLD_PARTS 4
#define MAX_PARTS 16
#define NO_LANE 99

static const char *be;
static uint32_t op_hold, op_mark;

/*
 * hold: args[0] -> _Atomic int started, args[1] -> _Atomic int release,
 * args[2] -> uint64_t out[HOLD_PARTS].  Lane 0 says it started and waits
 * for the release (bounded: a lost release fails the test, not hangs it);
 * every lane writes out[lane] = lane + 1.
 */
static int hold_lane(uint32_t lane, uint32_t nr_lanes, const __u64 *args,
		     void *state, void *shared)
{
	_Atomic int *started = (_Atomic int *)(uintptr_t)args[0];
	_Atomic int *release = (_Atomic int *)(uintptr_t)args[1];
	uint64_t *out = (uint64_t *)(uintptr_t)args[2];

	(void)nr_lanes;
	(void)state;
	(void)shared;
	if (!lane) {
		atomic_store_explicit(started, 1, memory_order_release);
		for (int i = 0;
		     i < 100000 &&
		     !atomic_load_explicit(release, memory_order_acquire);
		     i++)
			usleep(100);
	}
	out[lane] = lane + 1;
	return 0;
}

/*
 * mark: args[0] -> uint64_t out[MAX_PARTS], args[1] a seed, args[2] the
 * lane that fails with args[3].  Lane i writes out[i] = seed * (i + 1):
 * running the task twice gives the same results.
 */
static int mark_lane(uint32_t lane, uint32_t nr_lanes, const __u64 *args,
		     void *state, void *shared)
{
	uint64_t *out = (uint64_t *)(uintptr_t)args[0];

	(void)nr_lanes;
	(void)state;
	(void)shared;
	if (lane == args[2])
		return (int)(int64_t)args[3];
	out[lane] = args[1] * (lane + 1);
	return 0;
}

static const agile_phase_fn hold_phases[] = { hold_lane };
static const agile_phase_fn mark_phases[] = { mark_lane };

static void test_held(struct agile_eu_pool *pool, int rounds)
{
	int bad_busy = 0, bad_reg = 0, bad_outcome = 0, lost = 0;
	struct agile_eu_stats st;

	for (int r = 0; r < rounds; r++) {
		_Atomic int started = 0, release = 0;
		uint64_t out[HOLD_PARTS] = { 0 };
		struct agile_task_reg *reg, *again = NULL, snap;
		__u64 args[3];
		int e1, e2, e3, err;

		err = agile_eu_task_reg(pool, 0, &reg, NULL);
		if (err) {
			bad_busy++;
			break;
		}
		reg->opcode = op_hold;
		reg->nr_parts = HOLD_PARTS;
		reg->flags = 0;
		reg->args[0] = (uintptr_t)&started;
		reg->args[1] = (uintptr_t)&release;
		reg->args[2] = (uintptr_t)out;
		/* Only the poster writes these: a copy to compare with later. */
		snap = *reg;
		memcpy(args, reg->args, sizeof(args));
		err = agile_eu_submit(pool, 0);
		if (err || !await_flag(&started, 10000)) {
			lost++;
			break;
		}
		/* The EU runs the task now, and owns the register. */
		e1 = agile_eu_disconnect(pool, 0, 0);
		e2 = agile_eu_submit(pool, 0);
		e3 = agile_eu_task_reg(pool, 0, &again, NULL);
		bad_busy += e1 != -EBUSY || e2 != -EBUSY || e3 != -EBUSY ||
			    again;
		bad_reg += reg->opcode != snap.opcode ||
			   reg->nr_parts != snap.nr_parts ||
			   reg->flags != snap.flags ||
			   memcmp(reg->args, args, sizeof(args));
		atomic_store_explicit(&release, 1, memory_order_release);
		err = agile_eu_wait(pool, 0, LONG_NS, NULL);
		for (int lane = 0; lane < HOLD_PARTS; lane++)
			err = err ? err : (out[lane] != (uint64_t)lane + 1);
		bad_outcome += err || reg->status != (1u << HOLD_PARTS) - 1;
	}
	tap_ok(!lost && !bad_busy,
	       "%s: %d rounds: disconnect, submit and task_reg while a task "
	       "runs: -EBUSY each (%d wrong)",
	       be, rounds, bad_busy + lost);
	tap_ok(!lost && !bad_reg,
	       "%s: the running task's register untouched by them (%d "
	       "changed)",
	       be, bad_reg);
	tap_ok(!lost && !bad_outcome,
	       "%s: every held task's outcome and results right (%d wrong)", be,
	       bad_outcome);
	agile_eu_stats(pool, 0, &st);
	tap_ok(st.connected && st.tasks == (uint64_t)rounds,
	       "%s: the EU stayed connected and ran each task once (%llu)", be,
	       (unsigned long long)st.tasks);
}

static void test_resubmit(struct agile_eu_pool *pool, int rounds)
{
	int wrong = 0, busy = 0, reposted = 0, err = 0;

	for (int i = 0; i < rounds && !err; i++) {
		uint32_t nr_parts = 1 + (uint32_t)i % MAX_PARTS;
		uint32_t fail = i % 3 ? NO_LANE : (uint32_t)i % nr_parts;
		uint64_t out[MAX_PARTS] = { 0 }, want_status = 0;
		struct agile_task_reg *reg;
		uint32_t lane = NO_LANE;
		int e = 0, outcome;

		err = agile_eu_task_reg(pool, 1, &reg, NULL);
		if (err)
			break;
		reg->opcode = op_mark;
		reg->nr_parts = nr_parts;
		reg->flags = 0;
		reg->args[0] = (uintptr_t)out;
		reg->args[1] = (uint64_t)i + 1;
		reg->args[2] = fail;
		reg->args[3] = (__u64)(int64_t)-ENOLINK;
		err = agile_eu_submit(pool, 1);
		if (err)
			break;
		/*
		 * Racing the EU: up to i % 97 more submits, so that some
		 * land as it finishes; each finds it busy, or finds it done
		 * and posts the task again (and then the race is over).
		 */
		for (int k = 0; k <= i % 97; k++) {
			e = agile_eu_submit(pool, 1);
			busy += e == -EBUSY;
			reposted += !e;
			if (e != -EBUSY)
				break;
		}
		if (e && e != -EBUSY) {
			err = e;
			break;
		}
		outcome = agile_eu_wait(pool, 1, LONG_NS, &lane);
		if (outcome == -ETIMEDOUT) {
			err = outcome;
			break;
		}
		for (uint32_t l = 0; l < nr_parts; l++)
			if (l != fail)
				want_status |= 1ULL << l;
		if (fail == NO_LANE ? outcome != 0 :
				      outcome != -ENOLINK || lane != fail)
			wrong++;
		else if (reg->status != want_status)
			wrong++;
		else
			for (uint32_t l = 0; l < nr_parts; l++)
				wrong += l != fail &&
					 out[l] != ((uint64_t)i + 1) * (l + 1);
	}
	tap_ok(!err && !wrong,
	       "%s: %d submits each raced by more: every outcome the "
	       "task's own (%d wrong; %s)",
	       be, rounds, wrong, agile_strerror(err));
	tap_diag("%s: the racing submits found the slot busy %d times, the "
		 "task done %d times",
		 be, busy, reposted);
}

static void test_backend(int backend)
{
	const struct agile_kernel khold = { .name = "hold",
					    .nr_phases = 1,
					    .phases = hold_phases };
	const struct agile_kernel kmark = { .name = "mark",
					    .nr_phases = 1,
					    .phases = mark_phases };
	bool quick = getenv("AGILE_TEST_QUICK") != NULL;
	struct agile_kernels *reg;
	struct agile_eu_pool *pool;
	struct agile_dev_opts o;
	struct agile_dev *dev;
	int err;

	be = agile_dev_backend_name(backend);
	agile_kernels_create(&reg);
	agile_kernels_register(reg, &khold, &op_hold);
	agile_kernels_register(reg, &kmark, &op_mark);
	agile_dev_opts_init(&o);
	o.backend = (uint32_t)backend;
	o.nr_slots = 2;
	o.task_reg_size = 128;
	err = agile_dev_open(&o, &dev);
	if (!tap_ok(!err, "%s: open a context: %s", be, agile_strerror(err)))
		goto out_reg;
	err = agile_eu_pool_create(dev, reg, NULL, &pool);
	if (!tap_ok(!err, "%s: start 2 EUs: %s", be, agile_strerror(err)))
		goto out_dev;
	test_held(pool, quick ? 20 : 200);
	test_resubmit(pool, quick ? 2000 : 50000);
	tap_ok(agile_eu_disconnect(pool, 0, LONG_NS) == 0,
	       "%s: once idle, the disconnect goes through", be);
	tap_ok(agile_eu_pool_destroy(pool) == 0, "%s: destroy the pool", be);
out_dev:
	agile_dev_close(dev);
out_reg:
	agile_kernels_destroy(reg);
}

int main(void)
{
	run_backends(test_backend);
	return tap_done();
}
