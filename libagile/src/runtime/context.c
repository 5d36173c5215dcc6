// SPDX-License-Identifier: MIT
/*
 * context.c - contexts on a logical device: their handles (a table of
 * slots with generations, so a stale handle is told apart without
 * touching freed memory), reference counts, EU pools and kernels.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/kernels.h>
#include <agile/runtime.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eu/eu_impl.h"
#include "runtime/compile.h"
#include "runtime_impl.h"
#include "sys.h"

/* Bytes per task register: the head and AGILE_RT_MAX_ARGS words, rounded. */
#define RT_TASK_REG_SIZE 256
_Static_assert(sizeof(struct agile_task_reg) + AGILE_RT_MAX_ARGS * 8 <=
		       RT_TASK_REG_SIZE,
	       "task registers must hold every argument word");

#define RT_GPU_EUS_DEFAULT 2

/*
 * The context table.  Global because a handle must stay checkable after
 * its context is freed: the slots (never freed) keep the generation.
 * @ctx_table_lock guards every slot: a handle is checked and its count
 * changed in one critical section, so a release cannot free a context a
 * concurrent retain is looking at.
 */
static pthread_mutex_t ctx_table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint32_t gen; /* odd while the slot holds a context */
	uint32_t refs;
	struct rt_ctx *ctx;
} ctx_table[AGILE_RT_MAX_CONTEXTS];

static agile_rt_ctx handle_of(uint32_t slot, uint32_t gen)
{
	return (uint64_t)gen << 32 | (slot + 1);
}

/* The slot @h names while its context lives, or -1.  Table lock held. */
static int slot_of(agile_rt_ctx h)
{
	uint64_t slot = (h & 0xffffffffu) - 1;
	uint32_t gen = (uint32_t)(h >> 32);

	if (slot >= AGILE_RT_MAX_CONTEXTS || !(gen & 1) ||
	    ctx_table[slot].gen != gen || !ctx_table[slot].ctx)
		return -1;
	return (int)slot;
}

static void ctx_free(struct rt_ctx *ctx)
{
	struct agile_rt_kernel *k = ctx->kernels, *next;
	struct rt_module *m = ctx->modules, *m_next;

	for (uint32_t i = 0; i < ctx->nr_devs; i++) {
		if (ctx->devs[i].pool)
			agile_eu_pool_destroy(ctx->devs[i].pool);
		if (ctx->devs[i].dev)
			agile_dev_close(ctx->devs[i].dev);
	}
	for (; k; k = next) {
		next = k->next;
		free(k);
	}
	if (ctx->reg)
		agile_kernels_destroy(ctx->reg);
	/* After the registry: its kernels' phases are in the modules. */
	for (; m; m = m_next) {
		m_next = m->next;
		agile__rt_module_unload(m->mod);
		free(m);
	}
	pthread_mutex_destroy(&ctx->lock);
	pthread_mutex_destroy(&ctx->build_lock);
	free(ctx);
}

struct rt_ctx *agile__rt_ctx_get(agile_rt_ctx handle)
{
	struct rt_ctx *ctx = NULL;
	int slot;

	pthread_mutex_lock(&ctx_table_lock);
	slot = slot_of(handle);
	if (slot >= 0) {
		ctx_table[slot].refs++;
		ctx = ctx_table[slot].ctx;
	}
	pthread_mutex_unlock(&ctx_table_lock);
	return ctx;
}

/* Drops a reference of @handle; frees on the last.  0 or invalid. */
static int ctx_put_handle(agile_rt_ctx handle)
{
	struct rt_ctx *dead = NULL;
	int slot;

	pthread_mutex_lock(&ctx_table_lock);
	slot = slot_of(handle);
	if (slot >= 0 && !--ctx_table[slot].refs) {
		dead = ctx_table[slot].ctx;
		ctx_table[slot].ctx = NULL;
		ctx_table[slot].gen++; /* even: free; stale handles fail */
	}
	pthread_mutex_unlock(&ctx_table_lock);
	if (slot < 0)
		return -AGILE_E_INVALID_CONTEXT;
	if (dead)
		ctx_free(dead);
	return 0;
}

void agile__rt_ctx_put(struct rt_ctx *ctx)
{
	ctx_put_handle(ctx->handle);
}

int agile_rt_ctx_retain(agile_rt_ctx ctx)
{
	return agile__rt_ctx_get(ctx) ? 0 : -AGILE_E_INVALID_CONTEXT;
}

int agile_rt_ctx_release(agile_rt_ctx ctx)
{
	return ctx_put_handle(ctx);
}

int agile_rt_ctx_refs(agile_rt_ctx ctx, uint32_t *refs)
{
	int slot;

	if (!refs)
		return -EINVAL;
	pthread_mutex_lock(&ctx_table_lock);
	slot = slot_of(ctx);
	if (slot >= 0)
		*refs = ctx_table[slot].refs;
	pthread_mutex_unlock(&ctx_table_lock);
	return slot < 0 ? -AGILE_E_INVALID_CONTEXT : 0;
}

int agile_rt_ctx_opts_init(struct agile_rt_ctx_opts *opts)
{
	static const uint32_t cpu_only = 0;

	if (!opts)
		return -EINVAL;
	memset(opts, 0, sizeof(*opts));
	opts->devices = &cpu_only;
	opts->nr_devices = 1;
	return 0;
}

static int opts_check(const struct agile_rt_ctx_opts *o)
{
	if (!o->devices || !o->nr_devices ||
	    o->nr_devices > AGILE_RT_MAX_DEVICES || o->flags ||
	    o->reserved[0] || o->reserved[1] || o->cpu_eus > AGILE_MAX_LANES ||
	    o->gpu_eus > AGILE_MAX_LANES)
		return -EINVAL;
	for (uint32_t i = 0; i < o->nr_devices; i++)
		for (uint32_t j = 0; j < i; j++)
			if (o->devices[i] == o->devices[j])
				return -EINVAL;
	return 0;
}

/* Starts @d's pool on @d->dev: the built-in code, or @code GPU only. */
static int pool_start(struct rt_ctx *ctx, struct rt_dev *d,
		      const struct agile__eu_gpu_code *code)
{
	struct agile_eu_pool_opts popts;
	struct agile_eu_pool_info info;
	int err;

	agile_eu_pool_opts_init(&popts);
	popts.nr_eus = d->nr_eus;
	popts.flags = d->type != AGILE_RT_DEVICE_GPU ? 0 :
		      code			     ? AGILE_EU_POOL_GPU_ONLY :
						       AGILE_EU_POOL_GPU;
	err = agile__eu_pool_create_code(d->dev, ctx->reg, &popts, code,
					 &d->pool);
	if (err) {
		d->pool = NULL;
		return err;
	}
	agile_eu_pool_info(d->pool, &info);
	d->eu_kind = info.kind;
	return 0;
}

/* The device buffers come from: the GPU with GPU EUs, else the first. */
static void home_pick(struct rt_ctx *ctx)
{
	ctx->home = 0;
	for (uint32_t i = 0; i < ctx->nr_devs; i++)
		if (ctx->devs[i].eu_kind == AGILE_EU_KIND_GPU) {
			ctx->home = i;
			break;
		}
}

int agile__rt_dev_restart(struct rt_ctx *ctx, struct rt_dev *d,
			  const struct agile__eu_gpu_code *code)
{
	int err;

	if (d->pool)
		agile_eu_pool_destroy(d->pool);
	d->pool = NULL;
	d->restarted = true;
	err = pool_start(ctx, d, code);
	if (err && !code) {
		/*
		 * Back to the built-in code failed ($AGILE_EU_POOL=gpu, the
		 * GPU gone): CPU EUs, so that the device keeps a pool.
		 */
		struct agile_eu_pool_opts popts;
		struct agile_eu_pool_info info;

		agile_eu_pool_opts_init(&popts);
		popts.nr_eus = d->nr_eus;
		if (!agile_eu_pool_create(d->dev, ctx->reg, &popts, &d->pool)) {
			agile_eu_pool_info(d->pool, &info);
			d->eu_kind = info.kind;
		} else {
			d->pool = NULL;
		}
	}
	home_pick(ctx);
	return err;
}

/*
 * A CPU device's EUs when the options leave it open: the CPUs this
 * process may use (affinity and cgroup quota), at most AGILE_MAX_LANES.
 */
static uint32_t default_cpu_eus(void)
{
	uint32_t n = agile_sys_cpus();

	return n > AGILE_MAX_LANES ? AGILE_MAX_LANES : n;
}

/* Opens @d's doorbell context and starts its pool. */
static int dev_start(struct rt_ctx *ctx, struct rt_dev *d,
		     const struct agile_rt_ctx_opts *o)
{
	struct agile_dev_opts dopts;
	int err;

	if (d->type == AGILE_RT_DEVICE_GPU)
		d->nr_eus = o->gpu_eus ? o->gpu_eus : RT_GPU_EUS_DEFAULT;
	else if (o->cpu_eus)
		d->nr_eus = o->cpu_eus;
	else /* a runner per EU: one per CPU the process may use */
		d->nr_eus = default_cpu_eus();
	agile_dev_opts_init(&dopts);
	dopts.nr_slots = d->nr_eus;
	dopts.task_reg_size = RT_TASK_REG_SIZE;
	err = agile_dev_open(&dopts, &d->dev);
	if (err)
		return err;
	return pool_start(ctx, d, NULL);
}

/* Adds the built-in kernels to @ctx's list: every device type runs them. */
static int builtins_list(struct rt_ctx *ctx)
{
	static const char *const names[] = { AGILE_KERNEL_AXPY,
					     AGILE_KERNEL_MATLIST_MUL };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct agile_kernel *kd;
		struct agile_rt_kernel *k;
		int err = agile_kernels_find(ctx->reg, names[i], &kd);

		if (err)
			return err;
		k = calloc(1, sizeof(*k));
		if (!k)
			return -ENOMEM;
		k->ctx = ctx;
		snprintf(k->name, sizeof(k->name), "%s", kd->name);
		for (int t = 0; t < RT_NR_TYPES; t++) {
			k->on[t].reg = ctx->reg;
			k->on[t].opcode = kd->opcode;
		}
		k->next = ctx->kernels;
		ctx->kernels = k;
	}
	return 0;
}

int agile_rt_ctx_create(const struct agile_rt_ctx_opts *opts, agile_rt_ctx *out)
{
	struct rt_ctx *ctx;
	int err, slot = -1;

	if (!opts || !out || opts_check(opts))
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->build_lock, NULL);
	ctx->nr_devs = opts->nr_devices;
	for (uint32_t i = 0, gpus = 0; i < ctx->nr_devs; i++) {
		struct agile_rt_device_info info;

		err = agile__rt_device_row(opts->devices[i], &info);
		if (err)
			goto fail;
		ctx->devs[i].id = info.id;
		ctx->devs[i].type = info.type;
		/* GPU EUs: one persistent kernel per process, on device 0. */
		gpus += info.type == AGILE_RT_DEVICE_GPU;
		if (gpus > 1) {
			err = -EINVAL;
			goto fail;
		}
	}
	err = agile_kernels_create(&ctx->reg);
	if (!err)
		err = agile_kernels_register_builtins(ctx->reg);
	if (!err)
		err = builtins_list(ctx);
	for (uint32_t i = 0; i < ctx->nr_devs && !err; i++)
		err = dev_start(ctx, &ctx->devs[i], opts);
	if (err)
		goto fail;
	home_pick(ctx);

	pthread_mutex_lock(&ctx_table_lock);
	for (int s = 0; s < AGILE_RT_MAX_CONTEXTS && slot < 0; s++)
		if (!ctx_table[s].ctx)
			slot = s;
	if (slot >= 0) {
		ctx_table[slot].gen++; /* odd: live */
		ctx_table[slot].refs = 1;
		ctx_table[slot].ctx = ctx;
		ctx->handle = handle_of((uint32_t)slot, ctx_table[slot].gen);
	}
	pthread_mutex_unlock(&ctx_table_lock);
	if (slot < 0) {
		err = -ENOSPC;
		goto fail;
	}
	*out = ctx->handle;
	return 0;
fail:
	ctx_free(ctx);
	return err;
}

int agile_rt_kernel_get(agile_rt_ctx handle, const char *name,
			struct agile_rt_kernel **out)
{
	struct agile_rt_kernel *k;
	struct rt_ctx *ctx;

	if (!name || !out)
		return -EINVAL;
	ctx = agile__rt_ctx_get(handle);
	if (!ctx)
		return -AGILE_E_INVALID_CONTEXT;
	pthread_mutex_lock(&ctx->lock);
	for (k = ctx->kernels; k; k = k->next)
		if (!strcmp(k->name, name))
			break;
	pthread_mutex_unlock(&ctx->lock);
	agile__rt_ctx_put(ctx);
	if (!k)
		return -ENOENT;
	*out = k;
	return 0;
}

int agile_rt_kernel_register(agile_rt_ctx handle,
			     const struct agile_kernel *kernel,
			     struct agile_rt_kernel **out)
{
	struct agile_rt_kernel *k;
	struct rt_ctx *ctx;
	uint32_t opcode;
	int err;

	if (!kernel || !out)
		return -EINVAL;
	ctx = agile__rt_ctx_get(handle);
	if (!ctx)
		return -AGILE_E_INVALID_CONTEXT;
	k = calloc(1, sizeof(*k));
	err = k ? agile_kernels_register(ctx->reg, kernel, &opcode) : -ENOMEM;
	if (!err) {
		k->ctx = ctx;
		snprintf(k->name, sizeof(k->name), "%s", kernel->name);
		k->on[RT_TYPE_INDEX(AGILE_RT_DEVICE_CPU)].reg = ctx->reg;
		k->on[RT_TYPE_INDEX(AGILE_RT_DEVICE_CPU)].opcode = opcode;
		pthread_mutex_lock(&ctx->lock);
		k->next = ctx->kernels;
		ctx->kernels = k;
		pthread_mutex_unlock(&ctx->lock);
		*out = k;
	} else {
		free(k);
	}
	agile__rt_ctx_put(ctx);
	return err;
}
