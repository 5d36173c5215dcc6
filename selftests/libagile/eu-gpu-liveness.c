// SPDX-License-Identifier: MIT
/*
 * eu-gpu-liveness - a dead or stuck GPU kernel is reported, not waited on
 * for ever: every wait on a GPU EU asks the stream too (hipStreamQuery /
 * cuStreamQuery) and returns -AGILE_E_GPU with the device's error in the
 * pool's info when the kernel died (a task's bad pointer, or a kill);
 * destroy is bounded (a dead kernel's tasks in flight do not keep it
 * -EBUSY, a stuck kernel is abandoned after AGILE_GPU_STOP_TIMEOUT_MS);
 * a device with a kernel run-time limit (KERNEL_EXEC_TIMEOUT) is refused
 * unless AGILE_GPU_WATCHDOG=ignore.
 *
 * Runs against the stand-in runtime (gpu-mock.c) only, as HIP and as
 * CUDA: killing a real GPU's kernel on purpose is check-gpu's business.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/gpu.h>
#include <agile/kernels.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eu/gpu_impl.h"
#include "tap.h"
#include "gputest.h"

#ifndef AGILE_NO_DLOPEN
#include "gpumock.h"

static const char *lib;

/* A fresh context and GPU pool: a dead kernel's slots stay POSTED. */
static struct agile_eu_pool *gpu_pool(struct agile_kernels *reg,
				      struct agile_dev **dev)
{
	struct agile_eu_pool_info info;
	struct agile_eu_pool *pool = NULL;
	int err = open_dev(dev);

	if (!err)
		err = make_pool(*dev, reg, AGILE_EU_POOL_GPU_ONLY, &pool);
	if (!err &&
	    (agile_eu_pool_info(pool, &info) || info.kind != AGILE_EU_KIND_GPU))
		err = -ENODEV;
	if (!tap_ok(!err, "GPU EUs on the stand-in %s: %s", lib,
		    agile_strerror(err)))
		return NULL;
	return pool;
}

/* Fills EU @eu's register with an axpy over @x and @y (device addresses). */
static void axpy_task(struct agile_eu_pool *pool, struct agile_kernels *reg,
		      uint32_t eu, uint64_t x, uint64_t y)
{
	const struct agile_kernel *k;
	struct agile_task_reg *tr;

	agile_kernels_find(reg, AGILE_KERNEL_AXPY, &k);
	agile_eu_task_reg(pool, eu, &tr, NULL);
	tr->opcode = k->opcode;
	tr->nr_parts = AGILE_MAX_LANES;
	tr->flags = 0;
	tr->args[0] = double_bits(1.0);
	tr->args[1] = x;
	tr->args[2] = y;
	tr->args[3] = 64;
}

static bool reason_has(struct agile_eu_pool *pool, const char *a, const char *b)
{
	struct agile_eu_pool_info info;

	agile_eu_pool_info(pool, &info);
	tap_diag("reason: %s", info.reason);
	return strstr(info.reason, a) && strstr(info.reason, b);
}

static void test_fault(struct agile_kernels *reg)
{
	struct agile_eu_pool *pool;
	struct agile_dev *dev;
	uint32_t lane;
	int err;

	pool = gpu_pool(reg, &dev);
	if (!pool)
		return;
	/* Host addresses never mapped: the device faults. */
	axpy_task(pool, reg, 0, 0x1000, 0x2000);
	err = agile_eu_call(pool, 0, WAIT_NS, &lane);
	tap_ok(err == -AGILE_E_GPU,
	       "a task with a bad pointer: the wait says the kernel died: %s",
	       agile_strerror(err));
	tap_ok(reason_has(pool, "died", "700"),
	       "the pool's info has the device's error (700)");
	tap_ok(agile_eu_submit(pool, 1) == -AGILE_E_GPU,
	       "the next submit: -AGILE_E_GPU at once");
	tap_ok(agile_eu_run_launch(pool, 1, &lane) == -AGILE_E_GPU,
	       "a plain launch: -AGILE_E_GPU");
	err = agile_eu_pool_destroy(pool);
	tap_ok(!err && mock_call(lib, "mock_registered", 0) == 0 &&
		       mock_call(lib, "mock_running", 0) == 0,
	       "destroy with a task in flight on the dead kernel: %s, all "
	       "unregistered",
	       agile_strerror(err));
	agile_dev_close(dev);
	mock_call(lib, "mock_revive", 0);
}

static void test_kill(struct agile_kernels *reg)
{
	struct agile_eu_pool *pool;
	struct agile_dev *dev;
	struct agile_task_reg *tr;
	uint32_t lane;
	int err;

	pool = gpu_pool(reg, &dev);
	if (!pool)
		return;
	/* Posted while the kernel looks away, then the device dies. */
	mock_call(lib, "mock_stall", 1);
	agile_eu_task_reg(pool, 0, &tr, NULL);
	tr->opcode = AGILE_OP_USER_BASE + AGILE_KERNELS_MAX - 1;
	tr->nr_parts = 1;
	err = agile_eu_submit(pool, 0);
	mock_call(lib, "mock_kill", 999);
	mock_call(lib, "mock_stall", 0);
	if (!err)
		err = agile_eu_wait(pool, 0, WAIT_NS, &lane);
	tap_ok(err == -AGILE_E_GPU,
	       "killed under a posted task: the wait says so: %s",
	       agile_strerror(err));
	tap_ok(reason_has(pool, "died", "999"),
	       "the pool's info has the error (999)");
	err = agile_eu_pool_destroy(pool);
	tap_ok(!err && mock_call(lib, "mock_registered", 0) == 0,
	       "destroy: %s, all unregistered", agile_strerror(err));
	agile_dev_close(dev);
	mock_call(lib, "mock_revive", 0);
}

static void test_watchdog(struct agile_kernels *reg)
{
	struct agile_eu_pool_info info;
	struct agile_eu_pool *pool;
	struct agile_dev *dev;
	int err;

	if (!tap_ok_call(open_dev(&dev), "open a context"))
		return;
	setenv("MOCK_GPU_WATCHDOG", "1", 1);
	setenv("AGILE_QUIET", "1", 1);
	err = make_pool(dev, reg, AGILE_EU_POOL_GPU_ONLY, &pool);
	tap_ok(err == -ENODEV,
	       "a device with a kernel run-time limit, GPU EUs required: %s",
	       agile_strerror(err));
	err = make_pool(dev, reg, AGILE_EU_POOL_AUTO, &pool);
	tap_ok(!err && !agile_eu_pool_info(pool, &info) &&
		       info.kind == AGILE_EU_KIND_CPU &&
		       strstr(info.reason, "KERNEL_EXEC_TIMEOUT"),
	       "AUTO: CPU EUs, the reason names KERNEL_EXEC_TIMEOUT");
	tap_diag("reason: %s", err ? "" : info.reason);
	if (!err)
		agile_eu_pool_destroy(pool);
	setenv("AGILE_GPU_WATCHDOG", "ignore", 1);
	err = make_pool(dev, reg, AGILE_EU_POOL_GPU_ONLY, &pool);
	tap_ok(!err && !agile_eu_pool_info(pool, &info) &&
		       info.kind == AGILE_EU_KIND_GPU,
	       "AGILE_GPU_WATCHDOG=ignore: GPU EUs start: %s",
	       agile_strerror(err));
	if (!err)
		agile_eu_pool_destroy(pool);
	unsetenv("AGILE_GPU_WATCHDOG");
	unsetenv("MOCK_GPU_WATCHDOG");
	unsetenv("AGILE_QUIET");
	agile_dev_close(dev);
}

/* Last: the stuck kernel's device stays taken until the process ends. */
static void test_stuck(struct agile_kernels *reg)
{
	struct agile_eu_pool *pool;
	struct agile_dev *dev;
	struct agile_task_reg *tr;
	uint32_t lane;
	int err;

	pool = gpu_pool(reg, &dev);
	if (!pool)
		return;
	mock_call(lib, "mock_stall", 1);
	agile_eu_task_reg(pool, 0, &tr, NULL);
	tr->opcode = AGILE_OP_USER_BASE + AGILE_KERNELS_MAX - 1;
	tr->nr_parts = 1;
	err = agile_eu_call(pool, 0, 50 * 1000 * 1000, &lane);
	tap_ok(err == -ETIMEDOUT,
	       "a stuck kernel (alive): a bounded wait times out: %s",
	       agile_strerror(err));
	tap_ok(agile_eu_pool_destroy(pool) == -EBUSY,
	       "destroy with its task in flight: -EBUSY, not a hang");
	/* Let the task finish, then stick again with every slot IDLE. */
	mock_call(lib, "mock_stall", 0);
	err = agile_eu_wait(pool, 0, WAIT_NS, &lane);
	tap_ok(err == -AGILE_E_OPCODE, "the task ends once unstuck: %s",
	       agile_strerror(err));
	mock_call(lib, "mock_stall", 1);
	setenv("AGILE_GPU_STOP_TIMEOUT_MS", "300", 1);
	setenv("AGILE_QUIET", "1", 1);
	err = agile_eu_pool_destroy(pool);
	tap_ok(err == -ETIMEDOUT && mock_call(lib, "mock_hangs", 0) == 0,
	       "destroy of a stuck kernel: %s after the stop timeout, "
	       "nothing unregistered under it",
	       agile_strerror(err));
	unsetenv("AGILE_GPU_STOP_TIMEOUT_MS");
	unsetenv("AGILE_QUIET");
	/* Its work-groups take DISCONNECT once unstuck: the context may go. */
	mock_call(lib, "mock_stall", 0);
	for (int i = 0; i < 5000 && mock_call(lib, "mock_running", 0); i++)
		usleep(1000);
	tap_ok(mock_call(lib, "mock_running", 0) == 0,
	       "the abandoned kernel ended once unstuck");
	mock_call(lib, "mock_reap", 0);
	agile_dev_close(dev);
}

static int child(const char *name)
{
	struct agile_kernels *reg;

	lib = name;
	agile_kernels_create(&reg);
	agile_kernels_register_builtins(reg);
	setenv("AGILE_QUIET", "1", 1);
	test_fault(reg);
	unsetenv("AGILE_QUIET");
	test_kill(reg);
	test_watchdog(reg);
	test_stuck(reg);
	agile_kernels_destroy(reg);
	return tap_done();
}
#endif

int main(int argc, char **argv)
{
#ifdef AGILE_NO_DLOPEN
	(void)argc;
	(void)argv;
	tap_skip("GPU EU liveness on a stand-in runtime",
		 "a static build loads no runtime");
	return tap_done();
#else
	char why[512];

	if (argc <= 2 && agile__gpu_status(why, sizeof(why))) {
		tap_skip("GPU EU liveness on a stand-in runtime",
			 "a usable GPU is here: %s", why);
		return tap_done();
	}
	return mock_main(argc, argv, child, 20);
#endif
}
