// SPDX-License-Identifier: MIT
/*
 * placement.c - which device's EUs may take a group now: each device's
 * load read from its doorbell pages against tunable thresholds, and the
 * CPU fallback of seed 003 (a task meant for a busy GPU runs on CPU EUs).
 * Also the statistics table, printed.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/eu.h>
#include <agile/runtime.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "runtime_impl.h"

#define RT_BUSY_PCT_DEFAULT 100

/* $@name as a percentage 1-100 into *@pct; unset leaves it.  0/-EINVAL. */
static int env_pct(const char *name, uint32_t *pct)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v)
		return 0;
	n = strtoul(v, &end, 10);
	if (!*v || *end || n < 1 || n > 100) {
		agile__env_invalid(
			name, v,
			"a percentage from 1 to 100; "
			"agile_rt_place_opts_init fails with EINVAL");
		return -EINVAL;
	}
	*pct = (uint32_t)n;
	return 0;
}

int agile_rt_place_opts_init(struct agile_rt_place_opts *opts)
{
	if (!opts)
		return -EINVAL;
	memset(opts, 0, sizeof(*opts));
	opts->gpu_busy_pct = RT_BUSY_PCT_DEFAULT;
	opts->cpu_busy_pct = RT_BUSY_PCT_DEFAULT;
	if (env_pct("AGILE_RT_GPU_BUSY_PCT", &opts->gpu_busy_pct) ||
	    env_pct("AGILE_RT_CPU_BUSY_PCT", &opts->cpu_busy_pct))
		return -EINVAL;
	return 0;
}

uint32_t agile__rt_dev_busy(const struct rt_dev *d)
{
	/* Groups a CPU device's runners run themselves (queue.c). */
	uint32_t busy = (uint32_t)atomic_load_explicit(&d->inline_busy,
						       memory_order_relaxed);

	for (uint32_t eu = 0; eu < d->nr_eus; eu++) {
		struct agile_doorbell *db;

		if (agile_dev_slot(d->dev, eu, &db, NULL))
			continue;
		/* Pairs with the EU's release store of IDLE (or the post's). */
		busy += __atomic_load_n(&db->value, __ATOMIC_ACQUIRE) !=
			AGILE_DOORBELL_IDLE;
	}
	return busy;
}

bool agile__rt_dev_over(const struct rt_dev *d, uint32_t pct)
{
	return (uint64_t)agile__rt_dev_busy(d) * 100 >=
	       (uint64_t)pct * d->nr_eus;
}

static bool runs_on(const struct agile_rt_kernel *k, const struct rt_dev *d)
{
	return k->on[RT_TYPE_INDEX(d->type)].opcode != 0;
}

/*
 * Whether every device of type @type that can run @k is over @pct (true
 * when there is none: nothing to wait for).
 */
static bool all_over(const struct rt_ctx *ctx, const struct agile_rt_kernel *k,
		     uint32_t type, uint32_t pct)
{
	for (uint32_t i = 0; i < ctx->nr_devs; i++) {
		const struct rt_dev *d = &ctx->devs[i];

		if (d->type == type && runs_on(k, d) &&
		    !agile__rt_dev_over(d, pct))
			return false;
	}
	return true;
}

bool agile__rt_place_allows(const struct rt_ctx *ctx, uint32_t dev,
			    const struct agile_rt_kernel *kernel,
			    uint32_t place,
			    const struct agile_rt_place_opts *opts,
			    bool *fallback)
{
	const struct rt_dev *d = &ctx->devs[dev];
	bool gpu = d->type == AGILE_RT_DEVICE_GPU;

	*fallback = false;
	if (!runs_on(kernel, d))
		return false;
	switch (place) {
	case AGILE_RT_PLACE_CPU:
		return !gpu;
	case AGILE_RT_PLACE_GPU_ONLY:
		return gpu;
	case AGILE_RT_PLACE_GPU:
		if (gpu)
			return true;
		*fallback = all_over(ctx, kernel, AGILE_RT_DEVICE_GPU,
				     opts->gpu_busy_pct);
		return *fallback;
	default: /* AGILE_RT_PLACE_ANY: the CPU yields to an idler GPU */
		return gpu || !agile__rt_dev_over(d, opts->cpu_busy_pct) ||
		       all_over(ctx, kernel, AGILE_RT_DEVICE_GPU,
				opts->gpu_busy_pct);
	}
}

bool agile__rt_place_possible(const struct rt_ctx *ctx,
			      const struct agile_rt_kernel *kernel,
			      uint32_t place)
{
	for (uint32_t i = 0; i < ctx->nr_devs; i++) {
		const struct rt_dev *d = &ctx->devs[i];
		bool gpu = d->type == AGILE_RT_DEVICE_GPU;

		if (!runs_on(kernel, d) ||
		    (place == AGILE_RT_PLACE_CPU && gpu) ||
		    (place == AGILE_RT_PLACE_GPU_ONLY && !gpu))
			continue;
		return true;
	}
	return false;
}

int agile_rt_stats_print(struct agile_rt_queue *q, FILE *f)
{
	struct agile_rt_stats *s;
	int err, n;

	if (!q || !f)
		return -EINVAL;
	s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	err = agile_rt_stats(q, s);
	if (err) {
		free(s);
		return err;
	}
	n = fprintf(f,
		    "entries: %llu enqueued, %llu completed, %llu failed, "
		    "%llu dependency-failed, %llu pending; cpu fallback: %llu "
		    "groups; busy at gpu %u%%, cpu %u%%\n",
		    (unsigned long long)s->enqueued,
		    (unsigned long long)s->completed,
		    (unsigned long long)s->failed,
		    (unsigned long long)s->dep_failed,
		    (unsigned long long)s->pending,
		    (unsigned long long)s->cpu_fallback, s->gpu_busy_pct,
		    s->cpu_busy_pct);
	if (n >= 0)
		n = fprintf(f, "%3s %-4s %-4s %4s %4s %10s %8s %10s %9s\n",
			    "dev", "type", "eus", "nr", "busy", "tasks",
			    "failed", "groups", "fallback");
	for (uint32_t i = 0; i < s->nr_devices && n >= 0; i++) {
		const struct agile_rt_device_stats *d = &s->devices[i];

		n = fprintf(f,
			    "%3u %-4s %-4s %4u %4u %10llu %8llu %10llu %9llu\n",
			    d->device,
			    d->type == AGILE_RT_DEVICE_GPU ? "gpu" : "cpu",
			    d->eu_kind == AGILE_EU_KIND_GPU ? "gpu" : "cpu",
			    d->nr_eus, d->busy, (unsigned long long)d->tasks,
			    (unsigned long long)d->failed,
			    (unsigned long long)d->groups,
			    (unsigned long long)d->fallback_in);
	}
	free(s);
	return n < 0 || ferror(f) ? -EIO : 0;
}
