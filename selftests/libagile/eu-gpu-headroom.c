// SPDX-License-Identifier: MIT
/*
 * eu-gpu-headroom - GPU EUs never take the whole device by default: at
 * most AGILE_EU_GPU_SHARE_DEFAULT percent of the work-groups it holds at
 * once, tunable by agile_eu_pool_opts.gpu_share and AGILE_GPU_SHARE; and
 * one persistent kernel per device and process: a second GPU pool while
 * one runs fails cleanly (-EBUSY, or CPU EUs naming the reason), and
 * starts once the first is destroyed.
 *
 * Runs against the stand-in runtime (gpu-mock.c: 4 CUs x 2 work-groups),
 * as HIP and as CUDA; skipped where a GPU is usable, and in the static
 * build.
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
#include <unistd.h>

#include "eu/gpu_impl.h"
#include "tap.h"
#include "gputest.h"

#ifndef AGILE_NO_DLOPEN
#include "gpumock.h"

/* The stand-in's device: 4 CUs, 2 work-groups of 64 lanes per CU. */
#define MOCK_CAPACITY 8

/* A pool of @nr_eus EUs; what kind it got in *@kind, or -1. */
static int pool_of(struct agile_dev *dev, struct agile_kernels *reg,
		   uint32_t nr_eus, uint32_t flags, uint32_t share,
		   struct agile_eu_pool **pool, struct agile_eu_pool_info *info)
{
	struct agile_eu_pool_opts o;
	int err;

	agile_eu_pool_opts_init(&o);
	o.nr_eus = nr_eus;
	o.flags = flags;
	o.gpu_share = share;
	*pool = NULL;
	memset(info, 0, sizeof(*info));
	err = agile_eu_pool_create(dev, reg, &o, pool);
	if (!err)
		agile_eu_pool_info(*pool, info);
	return err;
}

static void drop(struct agile_eu_pool **pool)
{
	if (*pool)
		agile_eu_pool_destroy(*pool);
	*pool = NULL;
}

static int child(const char *lib)
{
	struct agile_dev_opts dopts;
	struct agile_eu_pool_info info;
	struct agile_kernels *reg;
	struct agile_eu_pool *pool, *other;
	struct agile_dev *dev, *dev2;
	int err;

	(void)lib;
	setenv("AGILE_QUIET", "1", 1);
	agile_kernels_create(&reg);
	agile_kernels_register_builtins(reg);
	agile_dev_opts_init(&dopts);
	dopts.nr_slots = MOCK_CAPACITY;
	dopts.task_reg_size = 128;
	err = agile_dev_open(&dopts, &dev);
	if (!err)
		err = open_dev(&dev2);
	if (!tap_ok(!err, "open two contexts: %s", agile_strerror(err)))
		return tap_done();

	/* The default share: half of the 8 work-groups. */
	err = pool_of(dev, reg, MOCK_CAPACITY / 2, AGILE_EU_POOL_GPU_ONLY, 0,
		      &pool, &info);
	tap_ok(!err && info.kind == AGILE_EU_KIND_GPU,
	       "%d EUs, half the device: GPU EUs: %s", MOCK_CAPACITY / 2,
	       agile_strerror(err));
	drop(&pool);
	err = pool_of(dev, reg, MOCK_CAPACITY / 2 + 1, AGILE_EU_POOL_GPU_ONLY,
		      0, &pool, &info);
	tap_ok(err == -ENOSPC, "%d EUs by default: -ENOSPC: %s",
	       MOCK_CAPACITY / 2 + 1, agile_strerror(err));
	drop(&pool);
	err = pool_of(dev, reg, MOCK_CAPACITY / 2 + 1, AGILE_EU_POOL_AUTO, 0,
		      &pool, &info);
	tap_ok(!err && info.kind == AGILE_EU_KIND_CPU &&
		       strstr(info.reason, "AGILE_GPU_SHARE"),
	       "AUTO: CPU EUs, the reason names the share");
	tap_diag("reason: %s", info.reason);
	drop(&pool);

	/* Tuned: the whole device through the options, 75% by env. */
	err = pool_of(dev, reg, MOCK_CAPACITY, AGILE_EU_POOL_GPU_ONLY, 100,
		      &pool, &info);
	tap_ok(!err && info.kind == AGILE_EU_KIND_GPU,
	       "gpu_share = 100: all %d work-groups: %s", MOCK_CAPACITY,
	       agile_strerror(err));
	drop(&pool);
	setenv("AGILE_GPU_SHARE", "75", 1);
	err = pool_of(dev, reg, 6, AGILE_EU_POOL_GPU_ONLY, 0, &pool, &info);
	tap_ok(!err && info.kind == AGILE_EU_KIND_GPU,
	       "AGILE_GPU_SHARE=75: 6 EUs: %s", agile_strerror(err));
	drop(&pool);
	err = pool_of(dev, reg, 7, AGILE_EU_POOL_GPU_ONLY, 0, &pool, &info);
	tap_ok(err == -ENOSPC, "AGILE_GPU_SHARE=75: 7 EUs: -ENOSPC: %s",
	       agile_strerror(err));
	drop(&pool);
	err = pool_of(dev, reg, 7, AGILE_EU_POOL_GPU_ONLY, 100, &pool, &info);
	tap_ok(!err, "the options win over the environment: %s",
	       agile_strerror(err));
	drop(&pool);
	setenv("AGILE_GPU_SHARE", "0", 1);
	err = pool_of(dev, reg, 2, AGILE_EU_POOL_AUTO, 0, &pool, &info);
	tap_ok(err == -EINVAL, "AGILE_GPU_SHARE=0: -EINVAL");
	drop(&pool);
	unsetenv("AGILE_GPU_SHARE");
	err = pool_of(dev, reg, 2, AGILE_EU_POOL_AUTO, 101, &pool, &info);
	tap_ok(err == -EINVAL, "gpu_share = 101: -EINVAL");
	drop(&pool);

	/* One persistent kernel per device: the second pool fails cleanly. */
	err = pool_of(dev, reg, 2, AGILE_EU_POOL_GPU_ONLY, 0, &pool, &info);
	tap_ok(!err && info.kind == AGILE_EU_KIND_GPU, "a GPU pool: %s",
	       agile_strerror(err));
	err = pool_of(dev2, reg, 2, AGILE_EU_POOL_GPU_ONLY, 0, &other, &info);
	tap_ok(err == -EBUSY,
	       "a second GPU pool while it runs, GPU EUs required: -EBUSY: %s",
	       agile_strerror(err));
	drop(&other);
	err = pool_of(dev2, reg, 2, AGILE_EU_POOL_AUTO, 0, &other, &info);
	tap_ok(!err && info.kind == AGILE_EU_KIND_CPU &&
		       strstr(info.reason, "another pool"),
	       "AUTO: CPU EUs, the reason says the device is taken");
	tap_diag("reason: %s", info.reason);
	drop(&other);
	drop(&pool);
	err = pool_of(dev2, reg, 2, AGILE_EU_POOL_GPU_ONLY, 0, &other, &info);
	tap_ok(!err && info.kind == AGILE_EU_KIND_GPU,
	       "after the first's destroy, the second starts: %s",
	       agile_strerror(err));
	drop(&other);
	tap_ok(mock_call(lib, "mock_registered", 0) == 0,
	       "nothing left registered");

	agile_dev_close(dev2);
	agile_dev_close(dev);
	agile_kernels_destroy(reg);
	return tap_done();
}
#endif

int main(int argc, char **argv)
{
#ifdef AGILE_NO_DLOPEN
	(void)argc;
	(void)argv;
	tap_skip("GPU EU headroom on a stand-in runtime",
		 "a static build loads no runtime");
	return tap_done();
#else
	char why[512];

	if (argc <= 2 && agile__gpu_status(why, sizeof(why))) {
		tap_skip("GPU EU headroom on a stand-in runtime",
			 "a usable GPU is here: %s", why);
		return tap_done();
	}
	return mock_main(argc, argv, child, 14);
#endif
}
