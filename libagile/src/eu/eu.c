// SPDX-License-Identifier: MIT
/*
 * eu.c - execution units: the persistent loop of seed 002 (processes 600b
 * and 600c) on a CPU thread per EU, or GPU EUs (the persistent kernel of
 * libagile/gpu, launched by gpu_launch.c), and the posting side (600a),
 * the same for both.
 *
 * The only memory shared between a poster and its EU is the slot: the
 * task register, written by the poster until its release store of POSTED
 * and by the EU until its release store of IDLE; each side reads it after
 * an acquire load of the value the other stored (agile_dev_wait_spin).
 */
#define _GNU_SOURCE
#include <agile/error.h>
#include <agile/eu.h>

#include "env.h"
#include "eu/eu_impl.h"
#include "eu/gpu_impl.h"
#include "kernels/kernels_impl.h"
#include "sys.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SCRATCH_ALIGN 64
/*
 * A wait on a GPU EU sleeps at most this long at a time: a GPU's store of
 * IDLE wakes nobody (no futex wake, no SIGNAL), and the user backend has
 * no poller to notice it (the kmod one does, at its poll interval).
 */
#define GPU_WAIT_SLICE_NS 200000ULL
/*
 * How long a GPU pool's destroy waits for its work-groups to take
 * DISCONNECT and the kernel to end, in all, before it abandons them
 * (agile__gpu_eus_stop); AGILE_GPU_STOP_TIMEOUT_MS overrides it.
 */
#define GPU_STOP_TIMEOUT_NS (10ULL * 1000 * 1000 * 1000)

/* An EU's kernel memory: lane states and shared memory, grown on demand. */
struct scratch {
	void *mem;
	size_t size;
};

struct eu {
	/* Read by the poster on every submit; written rarely. */
	struct agile_eu_pool *pool;
	uint32_t index;
	pthread_t thread;
	bool started; /* a thread was created and not yet joined */
	bool disconnect_posted; /* poster side: DISCONNECT is on its way */
	/* Cleared by the EU thread when its loop ends; anyone reads it. */
	_Atomic bool connected;
	/*
	 * Written by the EU thread on every task: a line of its own, so the
	 * poster's reads above do not bounce it.
	 */
	_Alignas(128) struct scratch scratch; /* EU thread only */
	/* EU thread stores, agile_eu_stats loads. */
	_Atomic uint64_t tasks, failed, lanes;
} __attribute__((aligned(128)));

/*
 * A chunk of agile_eu_pool_alloc's arena: whole pages, mapped once for
 * the EUs (at @eu) when made and kept until the pool's destroy, so that
 * a GPU pool's registrations stop growing once the arena is big enough
 * (a GPU runtime cannot unregister while the persistent kernel runs:
 * agile_eu_pool_unmap).  Sub-allocated by pages, first fit: @run[p] is
 * the length in pages of the allocation starting at page p (0: none
 * starts there), @used[p] whether page p is taken; a free clears both,
 * so free neighbours join by themselves.
 */
struct arena_chunk {
	unsigned char *mem;
	size_t pages;
	uint64_t eu;
	size_t *run;
	bool *used;
};

/* agile_eu_pool_alloc's chunks: at least this many pages each. */
#define ARENA_CHUNK_PAGES 256

struct agile_eu_pool {
	struct agile_dev *dev;
	struct agile_kernels *kernels;
	uint32_t nr_eus;
	uint32_t nr_args;
	uint64_t idle_spin_ns, wait_spin_ns;
	struct agile_eu_pool_info info;
	struct eu *eus;
	/* Set when GPU EUs serve the slots; then no EU has a thread. */
	struct agile__gpu_eus *gpu;
	uint32_t gpu_share; /* percent, gpu_share() */
	/* agile__eu_pool_create_code's image, during the create only. */
	const struct agile__eu_gpu_code *code;
	/* agile_eu_pool_alloc's chunks; the lock guards them all. */
	pthread_mutex_t arena_lock;
	struct arena_chunk *chunks;
	size_t nr_chunks, max_chunks;
};

/*
 * The fallback is announced once per process, not once per pool: a
 * program that makes many pools should not repeat itself.  Set only when
 * the line was actually printed, so a quiet pool does not use it up.
 */
static _Atomic bool fallback_announced;

/* EU-thread-only counter bump: no read-modify-write needed. */
static void eu_count(_Atomic uint64_t *counter, uint64_t n)
{
	atomic_store_explicit(
		counter,
		atomic_load_explicit(counter, memory_order_relaxed) + n,
		memory_order_relaxed);
}

static struct agile_task_reg *eu_reg(const struct agile_eu_pool *pool,
				     uint32_t eu)
{
	struct agile_task_reg *reg = NULL;

	agile_dev_slot(pool->dev, eu, NULL, &reg);
	return reg;
}

/* A task's outcome fields, cleared before the EU sees the task. */
static void clear_result(struct agile_task_reg *reg)
{
	reg->status = 0;
	reg->error = 0;
	reg->error_lane = 0;
	reg->reserved = 0;
}

static uint64_t lane_mask(uint32_t nr_lanes)
{
	return nr_lanes >= 64 ? ~0ULL : (1ULL << nr_lanes) - 1;
}

static int scratch_reserve(struct scratch *s, size_t size)
{
	void *mem;

	if (size <= s->size)
		return 0;
	size = (size + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN;
	mem = aligned_alloc(SCRATCH_ALIGN, size);
	if (!mem)
		return -ENOMEM;
	free(s->mem);
	s->mem = mem;
	s->size = size;
	return 0;
}

/*
 * Steps 614-624 and 646 for one task: find the kernel, run its lanes, and
 * store one status bit per lane that succeeded plus the first failure.
 * Returns the number of lanes run.
 */
static uint32_t run_task(struct agile_eu_pool *pool, struct agile_task_reg *reg,
			 struct scratch *scratch)
{
	const struct agile_kernel *k = NULL;
	struct agile__group_result res = { .error_lane = AGILE_EU_NO_LANE };
	uint32_t nr_parts = reg->nr_parts;
	int err;

	err = agile_kernels_lookup(pool->kernels, reg->opcode, &k);
	if (!err && (!nr_parts || nr_parts > k->max_lanes))
		err = -EINVAL;
	if (!err)
		err = scratch_reserve(scratch,
				      agile_kernels_scratch_size(k, nr_parts));
	if (!err)
		err = agile__kernels_run_group(
			k, nr_parts, reg->args, pool->nr_args, scratch->mem,
			(char *)scratch->mem +
				agile__kernels_states_size(k, nr_parts),
			&res);
	if (err) {
		res.status = 0;
		res.error = err;
		res.error_lane = AGILE_EU_NO_LANE;
		nr_parts = 0;
	}
	reg->status = res.status;
	reg->error = res.error;
	reg->error_lane = res.error ? res.error_lane : 0;
	return nr_parts;
}

/*
 * A GPU EU keeps no counters: its poster (one thread per EU) counts the
 * task it saw finish, as eu_main does for a CPU EU.  A second wait on the
 * same finished task counts it again; a bound on the cost of a counter in
 * the GPU's shared pages.
 */
static void gpu_count(struct eu *eu, const struct agile_task_reg *reg)
{
	bool refused = reg->error && reg->error_lane == AGILE_EU_NO_LANE;

	if (reg->opcode == AGILE_OP_DISCONNECT)
		return;
	eu_count(&eu->tasks, 1);
	eu_count(&eu->lanes, refused ? 0 : reg->nr_parts);
	if (reg->error)
		eu_count(&eu->failed, 1);
}

/* Step 610: the outcome of a finished task, as a return value. */
static int task_outcome(const struct agile_task_reg *reg, uint32_t *error_lane)
{
	uint64_t want = lane_mask(reg->nr_parts);

	if (reg->error) {
		if (error_lane)
			*error_lane = reg->error_lane;
		/* An EU (a GPU, say) that stored a positive code broke the rules. */
		return reg->error < 0 ? reg->error : -EPROTO;
	}
	return (reg->status & want) == want ? 0 : -AGILE_E_STATUS;
}

/* Process 600b: the persistent loop of EU @arg. */
static void *eu_main(void *arg)
{
	struct eu *eu = arg;
	struct agile_eu_pool *pool = eu->pool;
	struct agile_task_reg *reg = eu_reg(pool, eu->index);

	for (;;) {
		uint32_t lanes;

		/*
		 * Step 612, spin then sleep.  Its acquire load of POSTED
		 * pairs with the release store in agile_dev_post: the task
		 * register is ours to read and write until we store IDLE.
		 */
		if (agile_dev_wait_spin(pool->dev, eu->index, AGILE_CMP_EQ,
					AGILE_DOORBELL_POSTED,
					pool->idle_spin_ns,
					AGILE_TIMEOUT_INFINITE, NULL))
			break; /* the device failed us: leave, disconnected */
		if (reg->opcode == AGILE_OP_DISCONNECT) {
			reg->status = 0;
			reg->error = 0;
			atomic_store_explicit(&eu->connected, false,
					      memory_order_relaxed);
			/* The store of IDLE below releases this too. */
			agile_dev_signal(pool->dev, eu->index,
					 AGILE_DOORBELL_IDLE);
			return NULL;
		}
		lanes = run_task(pool, reg, &eu->scratch);
		eu_count(&eu->tasks, 1);
		eu_count(&eu->lanes, lanes);
		if (reg->error)
			eu_count(&eu->failed, 1);
		/*
		 * Steps 626-628: release, so the status word and error are
		 * visible to the poster whose acquire load (agile_eu_wait)
		 * reads IDLE.
		 */
		agile_dev_signal(pool->dev, eu->index, AGILE_DOORBELL_IDLE);
	}
	atomic_store_explicit(&eu->connected, false, memory_order_relaxed);
	return NULL;
}

int agile_eu_pool_opts_init(struct agile_eu_pool_opts *opts)
{
	if (!opts)
		return -EINVAL;
	memset(opts, 0, sizeof(*opts));
	opts->idle_spin_ns = AGILE_EU_IDLE_SPIN_NS_DEFAULT;
	opts->wait_spin_ns = AGILE_EU_WAIT_SPIN_NS_DEFAULT;
	return 0;
}

static int check_opts(const struct agile_eu_pool_opts *o)
{
	for (size_t i = 0; i < sizeof(o->reserved) / sizeof(o->reserved[0]);
	     i++)
		if (o->reserved[i])
			return -EINVAL;
	if (o->reserved32 || o->gpu_share > 100)
		return -EINVAL;
	if (o->flags & ~AGILE_EU_POOL_KINDS)
		return -EINVAL;
	/* At most one bit. */
	if (o->flags & (o->flags - 1))
		return -EINVAL;
	return 0;
}

static bool quiet(void)
{
	const char *q = getenv("AGILE_QUIET");

	return q && *q && strcmp(q, "0") != 0;
}

/* What AGILE_EU_POOL in the environment makes of a pool's GPU flags. */
enum pool_env { ENV_DEFAULT, ENV_CPU, ENV_GPU_ONLY, ENV_BAD };

static enum pool_env pool_env(void)
{
	const char *v = getenv("AGILE_EU_POOL");

	if (!v || !*v || !strcmp(v, "auto"))
		return ENV_DEFAULT;
	if (!strcmp(v, "cpu"))
		return ENV_CPU;
	if (!strcmp(v, "gpu"))
		return ENV_GPU_ONLY;
	agile__env_invalid("AGILE_EU_POOL", v,
			   "auto, cpu or gpu; agile_eu_pool_create fails with "
			   "EINVAL");
	return ENV_BAD;
}

/* Says once per process why GPU EUs were asked for and CPU EUs serve. */
static void fallback_announce(const struct agile_eu_pool_info *info,
			      bool usable)
{
	if (quiet() || atomic_exchange(&fallback_announced, true))
		return;
	if (usable)
		fprintf(stderr,
			"agile: usable GPU found, but %s; using CPU "
			"execution units\n",
			info->reason);
	else
		fprintf(stderr,
			"agile: no usable GPU (%s); using CPU "
			"execution units\n",
			info->reason);
}

/*
 * The share of the GPU a pool's EUs may take: @opts_share, else
 * $AGILE_GPU_SHARE, else the default; 0 when the variable is not a
 * number from 1 to 100.
 */
static uint32_t gpu_share(uint32_t opts_share)
{
	const char *v = getenv("AGILE_GPU_SHARE");
	unsigned long share;
	char *end;

	if (opts_share)
		return opts_share;
	if (!v || !*v)
		return AGILE_EU_GPU_SHARE_DEFAULT;
	share = strtoul(v, &end, 10);
	if (*end || share < 1 || share > 100) {
		agile__env_invalid("AGILE_GPU_SHARE", v,
				   "a percentage from 1 to 100; a pool that "
				   "asks for GPU EUs fails with EINVAL");
		return 0;
	}
	return (uint32_t)share;
}

/* The doorbell and task-register areas, every slot, whole pages. */
static void gpu_areas(struct agile_eu_pool *pool, struct agile__gpu_areas *a)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint32_t nr_slots = (uint32_t)agile_dev_nr_slots(pool->dev);
	uint32_t reg_size = (uint32_t)agile_dev_task_reg_size(pool->dev);
	struct agile_doorbell *db;
	struct agile_task_reg *reg;

	agile_dev_slot(pool->dev, 0, &db, &reg);
	memset(a, 0, sizeof(*a));
	a->doorbells = db;
	a->doorbell_bytes =
		((size_t)nr_slots * AGILE_DOORBELL_STRIDE + page - 1) / page *
		page;
	a->task_regs = reg;
	a->task_reg_bytes =
		((size_t)nr_slots * reg_size + page - 1) / page * page;
	a->task_reg_size = reg_size;
	a->nr_eus = pool->nr_eus;
	a->share = pool->gpu_share;
	agile__kernels_builtin_opcodes(pool->kernels, a->opcodes);
}

/*
 * A code image's user kernels: the opcodes the registry gave them, after
 * the built-in ones.  -ENOENT with @why set when one is not registered.
 */
static int gpu_code_areas(const struct agile_eu_pool *pool,
			  struct agile__gpu_areas *a, char *why, size_t len)
{
	const struct agile__eu_gpu_code *code = pool->code;

	a->image = code->image;
	a->image_size = code->size;
	a->image_api = code->api;
	for (uint32_t i = 0; i < code->nr_kernels; i++) {
		const struct agile_kernel *k;

		if (agile_kernels_find(pool->kernels, code->names[i], &k)) {
			snprintf(why, len,
				 "user kernel %.40s of the code image is not "
				 "registered",
				 code->names[i]);
			return -ENOENT;
		}
		a->opcodes[AGILE_COMMON_NR + i] = k->opcode;
	}
	return 0;
}

/*
 * GPU EUs were asked for: start them when a usable GPU takes the
 * persistent kernel.  Returns 0 with pool->gpu set (GPU EUs) or unset
 * (CPU EUs: the reason recorded and said once), or, when GPU EUs are
 * required, the error that kept them from starting.
 */
static int gpu_select(struct agile_eu_pool *pool, bool required, bool env_cpu)
{
	struct agile_eu_pool_info *info = &pool->info;
	struct agile__gpu_areas areas;
	char why[AGILE_EU_REASON_LEN - 32];
	bool usable = false;
	int err = -ENODEV;

	if (env_cpu) {
		snprintf(why, sizeof(why), "AGILE_EU_POOL=cpu");
	} else {
		/*
		 * A code image was built for its own target: the probe's
		 * check of the built-in code's targets does not apply, and
		 * the start says what is missing.
		 */
		usable = pool->code || agile__gpu_status(why, sizeof(why)) > 0;
		if (usable) {
			gpu_areas(pool, &areas);
			err = pool->code ? gpu_code_areas(pool, &areas, why,
							  sizeof(why)) :
					   0;
			if (!err)
				err = agile__gpu_eus_start(&areas, &pool->gpu,
							   why, sizeof(why));
		}
	}
	if (!err) {
		info->kind = AGILE_EU_KIND_GPU;
		return 0;
	}
	pool->gpu = NULL;
	if (required) {
		if (!quiet())
			fprintf(stderr,
				"agile: GPU execution units required, "
				"but %s%s\n",
				usable ? "" : "no usable GPU: ", why);
		return err;
	}
	info->kind = AGILE_EU_KIND_CPU;
	info->fallback = 1;
	snprintf(info->reason, sizeof(info->reason), "%s", why);
	fallback_announce(info, usable);
	return 0;
}

static int eu_start(struct eu *eu, size_t stack_size)
{
	pthread_attr_t attr;
	char name[16];
	int err;

	err = pthread_attr_init(&attr);
	if (err)
		return -err;
	if (stack_size)
		err = pthread_attr_setstacksize(&attr, stack_size);
	atomic_store_explicit(&eu->connected, true, memory_order_relaxed);
	if (!err)
		err = pthread_create(&eu->thread, &attr, eu_main, eu);
	pthread_attr_destroy(&attr);
	if (err) {
		atomic_store_explicit(&eu->connected, false,
				      memory_order_relaxed);
		return err == EAGAIN ? -EAGAIN : -err;
	}
	eu->started = true;
	snprintf(name, sizeof(name), "agile-eu%u", eu->index);
	pthread_setname_np(eu->thread, name);
	return 0;
}

static void eu_join(struct eu *eu)
{
	if (eu->started) {
		pthread_join(eu->thread, NULL);
		eu->started = false;
	}
}

/* Frees @pool; what agile__gpu_eus_stop said of its GPU EUs (else 0). */
static int pool_free(struct agile_eu_pool *pool, uint64_t gpu_timeout_ns)
{
	int err = agile__gpu_eus_stop(pool->gpu, gpu_timeout_ns);

	/*
	 * The chunks were unregistered with the rest by the stop; a kernel
	 * that did not end keeps its registrations, and so its memory.
	 */
	for (size_t i = 0; i < pool->nr_chunks; i++) {
		if (err != -ETIMEDOUT)
			free(pool->chunks[i].mem);
		free(pool->chunks[i].run);
		free(pool->chunks[i].used);
	}
	free(pool->chunks);
	pthread_mutex_destroy(&pool->arena_lock);
	for (uint32_t i = 0; i < pool->nr_eus; i++)
		free(pool->eus[i].scratch.mem);
	free(pool->eus);
	free(pool);
	return err;
}

static uint64_t gpu_stop_timeout_ns(void)
{
	const char *v = getenv("AGILE_GPU_STOP_TIMEOUT_MS");
	char *end;
	unsigned long long ms;

	if (!v || !*v)
		return GPU_STOP_TIMEOUT_NS;
	ms = strtoull(v, &end, 10);
	if (*end || *v == '-' || ms > UINT64_MAX / 1000000) {
		agile__env_invalid("AGILE_GPU_STOP_TIMEOUT_MS", v,
				   "milliseconds; the default (10000) applies");
		return GPU_STOP_TIMEOUT_NS;
	}
	return ms * 1000000;
}

int agile_eu_pool_create(struct agile_dev *dev, struct agile_kernels *kernels,
			 const struct agile_eu_pool_opts *opts,
			 struct agile_eu_pool **out)
{
	return agile__eu_pool_create_code(dev, kernels, opts, NULL, out);
}

static bool code_ok(const struct agile__eu_gpu_code *code)
{
	if (code->api > AGILE__EU_GPU_CUDA || !code->image || !code->size ||
	    code->nr_kernels > AGILE_USER_NR_MAX ||
	    (code->nr_kernels && !code->names))
		return false;
	for (uint32_t i = 0; i < code->nr_kernels; i++)
		if (!code->names[i])
			return false;
	return true;
}

int agile__eu_pool_create_code(struct agile_dev *dev,
			       struct agile_kernels *kernels,
			       const struct agile_eu_pool_opts *opts,
			       const struct agile__eu_gpu_code *code,
			       struct agile_eu_pool **out)
{
	struct agile_eu_pool_opts defaults;
	struct agile_eu_pool *pool;
	int nr_slots, reg_size, err;
	enum pool_env env = pool_env();
	bool want_gpu, required;

	if (!dev || !kernels || !out || (code && !code_ok(code)))
		return -EINVAL;
	if (!opts) {
		agile_eu_pool_opts_init(&defaults);
		opts = &defaults;
	}
	err = check_opts(opts);
	if (err)
		return err;
	if (env == ENV_BAD)
		return -EINVAL;
	want_gpu = opts->flags != 0;
	if (want_gpu && !gpu_share(opts->gpu_share))
		return -EINVAL;
	required = (opts->flags & AGILE_EU_POOL_GPU_ONLY) ||
		   (want_gpu && env == ENV_GPU_ONLY);
	nr_slots = agile_dev_nr_slots(dev);
	reg_size = agile_dev_task_reg_size(dev);
	if (opts->nr_eus > (uint32_t)nr_slots)
		return -EINVAL;

	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pthread_mutex_init(&pool->arena_lock, NULL);
	pool->dev = dev;
	pool->kernels = kernels;
	pool->nr_eus = opts->nr_eus ? opts->nr_eus : (uint32_t)nr_slots;
	pool->nr_args = ((uint32_t)reg_size - sizeof(struct agile_task_reg)) /
			sizeof(uint64_t);
	pool->idle_spin_ns = opts->idle_spin_ns;
	pool->wait_spin_ns = opts->wait_spin_ns;
	pool->gpu_share = gpu_share(opts->gpu_share);
	pool->info.kind = AGILE_EU_KIND_CPU;
	pool->eus = aligned_alloc(_Alignof(struct eu),
				  pool->nr_eus * sizeof(struct eu));
	if (!pool->eus) {
		free(pool);
		return -ENOMEM;
	}
	memset(pool->eus, 0, pool->nr_eus * sizeof(struct eu));
	for (uint32_t i = 0; i < pool->nr_eus; i++) {
		struct agile_doorbell *db;

		pool->eus[i].pool = pool;
		pool->eus[i].index = i;
		agile_dev_slot(dev, i, &db, NULL);
		if (__atomic_load_n(&db->value, __ATOMIC_ACQUIRE) !=
		    AGILE_DOORBELL_IDLE) {
			pool->nr_eus = i;
			agile_eu_pool_destroy(pool);
			return -EBUSY;
		}
	}
	if (want_gpu) {
		pool->code = code;
		err = gpu_select(pool, required, env == ENV_CPU && !required);
		pool->code = NULL;
		if (err) {
			agile_eu_pool_destroy(pool);
			return err;
		}
	}
	for (uint32_t i = 0; pool->gpu && i < pool->nr_eus; i++)
		/* The work-group's loop runs: cleared when it takes DISCONNECT. */
		atomic_store_explicit(&pool->eus[i].connected, true,
				      memory_order_relaxed);
	for (uint32_t i = 0; !pool->gpu && i < pool->nr_eus; i++) {
		err = eu_start(&pool->eus[i], opts->stack_size);
		if (err) {
			agile_eu_pool_destroy(pool);
			return err;
		}
	}
	*out = pool;
	return 0;
}

/*
 * Whether EU @eu's slot is IDLE, so that its task register is the
 * poster's.  The acquire load pairs with the EU's release store of IDLE
 * (agile_dev_signal in eu_main; the persistent kernel's system-scope
 * release for a GPU EU): every read and write the EU made of the register
 * for its last task happened before anything the caller does with it
 * next.  Nothing may write a task register before this said true.
 */
static bool slot_idle(struct agile_eu_pool *pool, uint32_t eu)
{
	struct agile_doorbell *db;

	agile_dev_slot(pool->dev, eu, &db, NULL);
	return __atomic_load_n(&db->value, __ATOMIC_ACQUIRE) ==
	       AGILE_DOORBELL_IDLE;
}

/*
 * The poster's wait for EU @eu's doorbell to come back IDLE: its acquire
 * load pairs with the EU's release store of IDLE (eu_main for a CPU EU,
 * the persistent kernel's system-scope release for a GPU EU).  Waits on
 * GPU EUs sleep in slices (GPU_WAIT_SLICE_NS) and ask the runtime after
 * each whether the kernel still runs: a dead one never answers, and the
 * wait returns -AGILE_E_GPU instead of waiting for ever.
 */
static int slot_wait(struct agile_eu_pool *pool, uint32_t eu,
		     uint64_t timeout_ns)
{
	uint64_t deadline = 0, now;
	int err;

	if (!pool->gpu)
		return agile_dev_wait_spin(pool->dev, eu, AGILE_CMP_EQ,
					   AGILE_DOORBELL_IDLE,
					   pool->wait_spin_ns, timeout_ns,
					   NULL);
	if (timeout_ns != AGILE_TIMEOUT_INFINITE)
		deadline = agile_mono_ns() + timeout_ns;
	for (;;) {
		uint64_t slice = GPU_WAIT_SLICE_NS;

		if (timeout_ns != AGILE_TIMEOUT_INFINITE) {
			now = agile_mono_ns();
			if (now >= deadline)
				slice = 0;
			else if (deadline - now < slice)
				slice = deadline - now;
		}
		err = agile_dev_wait_spin(pool->dev, eu, AGILE_CMP_EQ,
					  AGILE_DOORBELL_IDLE,
					  pool->wait_spin_ns, slice, NULL);
		if (err != -ETIMEDOUT)
			return err;
		/*
		 * Ended or died.  A work-group's last store of IDLE comes
		 * before its kernel's end, which the query has seen.
		 */
		if (agile__gpu_eus_check(pool->gpu))
			return slot_idle(pool, eu) ? 0 : -AGILE_E_GPU;
		if (!slice || (timeout_ns != AGILE_TIMEOUT_INFINITE &&
			       agile_mono_ns() >= deadline))
			return err;
	}
}

static bool eu_busy(struct agile_eu_pool *pool, struct eu *eu)
{
	if (!atomic_load_explicit(&eu->connected, memory_order_relaxed) ||
	    eu->disconnect_posted)
		return false;
	return !slot_idle(pool, eu->index);
}

static int eu_disconnect(struct agile_eu_pool *pool, struct eu *eu,
			 uint64_t timeout_ns)
{
	struct agile_task_reg *reg = eu_reg(pool, eu->index);
	int err;

	if (!eu->disconnect_posted) {
		if (!atomic_load_explicit(&eu->connected,
					  memory_order_relaxed)) {
			eu_join(eu);
			return -ENOTCONN;
		}
		/* A task in flight owns the register: leave it untouched. */
		if (!slot_idle(pool, eu->index))
			return -EBUSY;
		reg->opcode = AGILE_OP_DISCONNECT;
		reg->nr_parts = 0;
		reg->flags = 0;
		err = agile_dev_post(pool->dev, eu->index);
		if (err)
			return err;
		eu->disconnect_posted = true;
	}
	err = slot_wait(pool, eu->index, timeout_ns);
	if (err)
		return err;
	if (pool->gpu)
		/* Its work-group has returned: nobody else clears this. */
		atomic_store_explicit(&eu->connected, false,
				      memory_order_relaxed);
	eu_join(eu);
	eu->disconnect_posted = false;
	return 0;
}

int agile_eu_pool_destroy(struct agile_eu_pool *pool)
{
	uint64_t budget = AGILE_TIMEOUT_INFINITE, deadline = 0, now;
	bool gone;

	if (!pool)
		return -EINVAL;
	/* A dead kernel runs nothing: its tasks in flight never end. */
	gone = pool->gpu && agile__gpu_eus_check(pool->gpu);
	for (uint32_t i = 0; !gone && i < pool->nr_eus; i++)
		if (eu_busy(pool, &pool->eus[i]))
			return -EBUSY;
	if (pool->gpu) {
		budget = gpu_stop_timeout_ns();
		deadline = agile_mono_ns() + budget;
	}
	for (uint32_t i = 0; i < pool->nr_eus; i++) {
		struct eu *eu = &pool->eus[i];

		if (pool->gpu) {
			/* Bounded: a stuck kernel does not hang destroy. */
			now = agile_mono_ns();
			budget = now < deadline ? deadline - now : 0;
			if (!gone &&
			    (eu->disconnect_posted ||
			     atomic_load_explicit(&eu->connected,
						  memory_order_relaxed)))
				eu_disconnect(pool, eu, budget);
			continue;
		}
		if (eu->started)
			eu_disconnect(pool, eu, AGILE_TIMEOUT_INFINITE);
		eu_join(eu);
	}
	if (pool->gpu) {
		now = agile_mono_ns();
		budget = now < deadline ? deadline - now : 0;
	}
	/* A dead kernel was reported by the waits and the pool's info. */
	return pool_free(pool, budget) == -ETIMEDOUT ? -ETIMEDOUT : 0;
}

int agile_eu_pool_nr_eus(const struct agile_eu_pool *pool)
{
	return pool ? (int)pool->nr_eus : -EINVAL;
}

int agile_eu_pool_info(const struct agile_eu_pool *pool,
		       struct agile_eu_pool_info *info)
{
	if (!pool || !info)
		return -EINVAL;
	*info = pool->info;
	if (pool->gpu && agile__gpu_eus_gone(pool->gpu))
		snprintf(info->reason, sizeof(info->reason), "%s",
			 agile__gpu_eus_error(pool->gpu));
	return 0;
}

int agile_eu_pool_kernels(const struct agile_eu_pool *pool,
			  struct agile_kernels **out)
{
	if (!pool || !out)
		return -EINVAL;
	*out = pool->kernels;
	return 0;
}

int agile_eu_task_reg(struct agile_eu_pool *pool, uint32_t eu,
		      struct agile_task_reg **reg, uint32_t *nr_args)
{
	if (!pool || eu >= pool->nr_eus || !reg)
		return -EINVAL;
	if (nr_args)
		*nr_args = pool->nr_args;
	if (!slot_idle(pool, eu))
		return -EBUSY;
	*reg = eu_reg(pool, eu);
	return 0;
}

int agile_eu_submit(struct agile_eu_pool *pool, uint32_t eu)
{
	if (!pool || eu >= pool->nr_eus)
		return -EINVAL;
	if (!atomic_load_explicit(&pool->eus[eu].connected,
				  memory_order_relaxed) ||
	    pool->eus[eu].disconnect_posted)
		return -ENOTCONN;
	/* Found dead by a wait: nothing would answer (no query here). */
	if (pool->gpu && agile__gpu_eus_gone(pool->gpu))
		return -AGILE_E_GPU;
	/* The previous task still runs: its register is not ours. */
	if (!slot_idle(pool, eu))
		return -EBUSY;
	/* Step 602: the result fields start clear; released by the post. */
	clear_result(eu_reg(pool, eu));
	return agile_dev_post(pool->dev, eu);
}

int agile_eu_wait(struct agile_eu_pool *pool, uint32_t eu, uint64_t timeout_ns,
		  uint32_t *error_lane)
{
	struct agile_task_reg *reg;
	int err;

	if (!pool || eu >= pool->nr_eus)
		return -EINVAL;
	/*
	 * Step 608.  The acquire load of IDLE pairs with the EU's release
	 * store (steps 626-628): its status word and error are visible.
	 */
	err = slot_wait(pool, eu, timeout_ns);
	if (err)
		return err;
	reg = eu_reg(pool, eu);
	if (pool->gpu)
		gpu_count(&pool->eus[eu], reg);
	return task_outcome(reg, error_lane);
}

int agile_eu_call(struct agile_eu_pool *pool, uint32_t eu, uint64_t timeout_ns,
		  uint32_t *error_lane)
{
	int err = agile_eu_submit(pool, eu);

	return err ? err : agile_eu_wait(pool, eu, timeout_ns, error_lane);
}

int agile_eu_run_inline(struct agile_eu_pool *pool, struct agile_task_reg *reg,
			uint32_t *error_lane)
{
	struct scratch scratch = { 0 };
	int err;

	if (!pool || !reg)
		return -EINVAL;
	reg->status = 0;
	reg->error = 0;
	reg->error_lane = 0;
	run_task(pool, reg, &scratch);
	free(scratch.mem);
	err = task_outcome(reg, error_lane);
	return err;
}

int agile_eu_disconnect(struct agile_eu_pool *pool, uint32_t eu,
			uint64_t timeout_ns)
{
	if (!pool || eu >= pool->nr_eus)
		return -EINVAL;
	return eu_disconnect(pool, &pool->eus[eu], timeout_ns);
}

int agile_eu_stats(struct agile_eu_pool *pool, uint32_t eu,
		   struct agile_eu_stats *st)
{
	struct eu *e;

	if (!pool || eu >= pool->nr_eus || !st)
		return -EINVAL;
	e = &pool->eus[eu];
	memset(st, 0, sizeof(*st));
	st->tasks = atomic_load_explicit(&e->tasks, memory_order_relaxed);
	st->failed = atomic_load_explicit(&e->failed, memory_order_relaxed);
	st->lanes = atomic_load_explicit(&e->lanes, memory_order_relaxed);
	st->connected =
		atomic_load_explicit(&e->connected, memory_order_relaxed);
	return 0;
}

int agile_eu_pool_map(struct agile_eu_pool *pool, void *addr, size_t bytes,
		      uint64_t *eu_addr)
{
	if (!pool || !addr || !bytes || !eu_addr)
		return -EINVAL;
	if (!pool->gpu) {
		*eu_addr = (uint64_t)(uintptr_t)addr;
		return 0;
	}
	return agile__gpu_map(pool->gpu, addr, bytes, eu_addr);
}

int agile_eu_pool_unmap(struct agile_eu_pool *pool, void *addr)
{
	if (!pool || !addr)
		return -EINVAL;
	return pool->gpu ? agile__gpu_unmap(pool->gpu, addr) : 0;
}

/* The first page of a run of @n free pages in @c, or @c->pages. */
static size_t chunk_fit(const struct arena_chunk *c, size_t n)
{
	size_t start = 0, len = 0;

	for (size_t p = 0; p < c->pages; p++) {
		if (c->used[p]) {
			len = 0;
			start = p + 1;
		} else if (++len == n) {
			return start;
		}
	}
	return c->pages;
}

/* A new chunk of @pages pages at pool->chunks[pool->nr_chunks], mapped. */
static int chunk_add(struct agile_eu_pool *pool, size_t pages, size_t page)
{
	struct arena_chunk c = { 0 };
	int err;

	if (pool->nr_chunks == pool->max_chunks) {
		size_t max = pool->max_chunks ? 2 * pool->max_chunks : 4;
		struct arena_chunk *more =
			realloc(pool->chunks, max * sizeof(*more));

		if (!more)
			return -ENOMEM;
		pool->chunks = more;
		pool->max_chunks = max;
	}
	c.pages = pages;
	c.mem = aligned_alloc(page, pages * page);
	c.run = calloc(pages, sizeof(*c.run));
	c.used = calloc(pages, sizeof(*c.used));
	err = c.mem && c.run && c.used ? 0 : -ENOMEM;
	if (!err)
		err = agile_eu_pool_map(pool, c.mem, pages * page, &c.eu);
	if (err) {
		free(c.mem);
		free(c.run);
		free(c.used);
		return err;
	}
	pool->chunks[pool->nr_chunks++] = c;
	return 0;
}

int agile_eu_pool_alloc(struct agile_eu_pool *pool, size_t bytes, void **host,
			uint64_t *eu_addr)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n, i, p = 0;
	struct arena_chunk *c;
	int err = 0;

	if (!pool || !bytes || !host || !eu_addr)
		return -EINVAL;
	if (bytes > SIZE_MAX - page || bytes / page >= SIZE_MAX / page)
		return -ENOMEM;
	n = (bytes + page - 1) / page;
	pthread_mutex_lock(&pool->arena_lock);
	for (i = 0; i < pool->nr_chunks; i++) {
		p = chunk_fit(&pool->chunks[i], n);
		if (p < pool->chunks[i].pages)
			break;
	}
	if (i == pool->nr_chunks) {
		err = chunk_add(pool,
				n > ARENA_CHUNK_PAGES ? n : ARENA_CHUNK_PAGES,
				page);
		p = 0;
	}
	if (!err) {
		c = &pool->chunks[i];
		c->run[p] = n;
		for (size_t q = p; q < p + n; q++)
			c->used[q] = true;
		memset(c->mem + p * page, 0, n * page);
		*host = c->mem + p * page;
		*eu_addr = c->eu + p * page;
	}
	pthread_mutex_unlock(&pool->arena_lock);
	return err;
}

int agile_eu_pool_free(struct agile_eu_pool *pool, void *host)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *h = host;
	int err = -EINVAL;

	if (!pool)
		return -EINVAL;
	if (!host)
		return 0;
	pthread_mutex_lock(&pool->arena_lock);
	for (size_t i = 0; i < pool->nr_chunks; i++) {
		struct arena_chunk *c = &pool->chunks[i];
		size_t p, n;

		if (h < c->mem || h >= c->mem + c->pages * page)
			continue;
		p = (size_t)(h - c->mem) / page;
		n = c->run[p];
		if ((size_t)(h - c->mem) % page || !n)
			break;
		c->run[p] = 0;
		for (size_t q = p; q < p + n; q++)
			c->used[q] = false;
		err = 0;
		break;
	}
	pthread_mutex_unlock(&pool->arena_lock);
	return err;
}

int agile_eu_run_launch(struct agile_eu_pool *pool, uint32_t eu,
			uint32_t *error_lane)
{
	struct agile_task_reg *reg;
	int err;

	if (!pool || eu >= pool->nr_eus)
		return -EINVAL;
	if (!pool->gpu)
		return -EOPNOTSUPP;
	/* The persistent kernel leaves an IDLE slot's register alone. */
	if (!slot_idle(pool, eu))
		return -EBUSY;
	reg = eu_reg(pool, eu);
	clear_result(reg);
	/* The stream synchronise orders the kernel's stores before ours. */
	err = agile__gpu_run_once(pool->gpu, eu);
	return err ? err : task_outcome(reg, error_lane);
}
