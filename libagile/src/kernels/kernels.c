// SPDX-License-Identifier: MIT
/*
 * kernels.c - the opcode registry and the CPU side of the seed-004
 * transformation (SPEC §3, layer 3).
 *
 * The registry is a table indexed by opcode - AGILE_OP_USER_BASE.  Writers
 * (registrations) take a mutex among themselves and publish an entry with
 * a release store; readers (execution units, once per task) load it with
 * acquire and take no lock.  Entries are freed only with the registry.
 */
#define _GNU_SOURCE
#include <agile/error.h>
#include <agile/kernels.h>

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/*
 * The phase functions CPU and GPU execution units share (axpy, the
 * matrix-list multiply): compiled here too, so the C build checks them.
 */
#include "kernels/kernels_impl.h"

/* Alignment of each lane's state (max_align_t) and of the shared memory. */
#define STATE_ALIGN 16
#define SHARED_ALIGN 64

struct kernel_entry {
	struct agile_kernel kernel; /* name and phases point into this entry */
	char name[AGILE_KERNEL_NAME_MAX];
	uint32_t max_group; /* agile__kernels_max_group */
	/* Per phase, the phase compiled over a range of lanes, or NULL. */
	agile__lanes_fn lanes[AGILE_KERNEL_MAX_PHASES];
	agile_phase_fn phases[];
};

struct agile_kernels {
	pthread_mutex_t lock; /* serialises registrations */
	_Atomic(struct kernel_entry *) table[AGILE_KERNELS_MAX];
};

int agile_kernels_create(struct agile_kernels **out)
{
	struct agile_kernels *reg;

	if (!out)
		return -EINVAL;
	reg = calloc(1, sizeof(*reg));
	if (!reg)
		return -ENOMEM;
	pthread_mutex_init(&reg->lock, NULL);
	for (int i = 0; i < AGILE_KERNELS_MAX; i++)
		atomic_init(&reg->table[i], NULL);
	*out = reg;
	return 0;
}

int agile_kernels_destroy(struct agile_kernels *reg)
{
	if (!reg)
		return -EINVAL;
	for (int i = 0; i < AGILE_KERNELS_MAX; i++)
		free(atomic_load_explicit(&reg->table[i],
					  memory_order_relaxed));
	pthread_mutex_destroy(&reg->lock);
	free(reg);
	return 0;
}

static int check_kernel(const struct agile_kernel *k)
{
	size_t len;

	if (!k->name || !k->phases || k->reserved || !k->nr_phases ||
	    k->nr_phases > AGILE_KERNEL_MAX_PHASES ||
	    k->state_size > AGILE_KERNEL_MAX_STATE ||
	    k->shared_size > AGILE_KERNEL_MAX_SHARED ||
	    k->max_lanes > AGILE_MAX_LANES)
		return -EINVAL;
	if (k->opcode && (k->opcode < AGILE_OP_USER_BASE ||
			  k->opcode - AGILE_OP_USER_BASE >= AGILE_KERNELS_MAX))
		return -EINVAL;
	len = strnlen(k->name, AGILE_KERNEL_NAME_MAX);
	if (!len || len == AGILE_KERNEL_NAME_MAX)
		return -EINVAL;
	for (uint32_t i = 0; i < k->nr_phases; i++)
		if (!k->phases[i])
			return -EINVAL;
	return 0;
}

static struct kernel_entry *entry_at(const struct agile_kernels *reg, int i)
{
	/* Acquire: pairs with the release store in agile_kernels_register. */
	return atomic_load_explicit(&((struct agile_kernels *)reg)->table[i],
				    memory_order_acquire);
}

static int find_index(const struct agile_kernels *reg, const char *name)
{
	for (int i = 0; i < AGILE_KERNELS_MAX; i++) {
		struct kernel_entry *e = entry_at(reg, i);

		if (e && !strncmp(e->name, name, AGILE_KERNEL_NAME_MAX))
			return i;
	}
	return -ENOENT;
}

static struct kernel_entry *entry_new(const struct agile_kernel *k,
				      uint32_t opcode)
{
	struct kernel_entry *e;

	e = calloc(1, sizeof(*e) + k->nr_phases * sizeof(e->phases[0]));
	if (!e)
		return NULL;
	e->kernel = *k;
	strncpy(e->name, k->name, sizeof(e->name) - 1);
	memcpy(e->phases, k->phases, k->nr_phases * sizeof(e->phases[0]));
	e->kernel.name = e->name;
	e->kernel.phases = e->phases;
	e->kernel.opcode = opcode;
	e->max_group = k->max_lanes ? k->max_lanes : AGILE__GROUP_MAX_LANES;
	if (!e->kernel.max_lanes)
		e->kernel.max_lanes = AGILE_MAX_LANES;
	return e;
}

int agile_kernels_register(struct agile_kernels *reg,
			   const struct agile_kernel *kernel, uint32_t *opcode)
{
	return agile__kernels_register_lanes(reg, kernel, NULL, opcode);
}

int agile__kernels_register_lanes(struct agile_kernels *reg,
				  const struct agile_kernel *kernel,
				  const agile__lanes_fn *lanes,
				  uint32_t *opcode)
{
	struct kernel_entry *e;
	int i, err;

	if (!reg || !kernel)
		return -EINVAL;
	err = check_kernel(kernel);
	if (err)
		return err;

	pthread_mutex_lock(&reg->lock);
	err = -EEXIST;
	if (find_index(reg, kernel->name) >= 0)
		goto out;
	if (kernel->opcode) {
		i = (int)(kernel->opcode - AGILE_OP_USER_BASE);
		if (atomic_load_explicit(&reg->table[i], memory_order_relaxed))
			goto out;
	} else {
		err = -ENOSPC;
		for (i = 0; i < AGILE_KERNELS_MAX; i++)
			if (!atomic_load_explicit(&reg->table[i],
						  memory_order_relaxed))
				break;
		if (i == AGILE_KERNELS_MAX)
			goto out;
	}
	err = -ENOMEM;
	e = entry_new(kernel, AGILE_OP_USER_BASE + (uint32_t)i);
	if (!e)
		goto out;
	for (uint32_t p = 0; lanes && p < kernel->nr_phases; p++)
		e->lanes[p] = lanes[p];
	/* Release: the entry is complete before a lookup can see it. */
	atomic_store_explicit(&reg->table[i], e, memory_order_release);
	if (opcode)
		*opcode = e->kernel.opcode;
	err = 0;
out:
	pthread_mutex_unlock(&reg->lock);
	return err;
}

int agile_kernels_lookup(const struct agile_kernels *reg, uint32_t opcode,
			 const struct agile_kernel **out)
{
	struct kernel_entry *e;

	if (!reg || !out)
		return -EINVAL;
	if (opcode < AGILE_OP_USER_BASE ||
	    opcode - AGILE_OP_USER_BASE >= AGILE_KERNELS_MAX)
		return -AGILE_E_OPCODE;
	e = entry_at(reg, (int)(opcode - AGILE_OP_USER_BASE));
	if (!e)
		return -AGILE_E_OPCODE;
	*out = &e->kernel;
	return 0;
}

int agile_kernels_find(const struct agile_kernels *reg, const char *name,
		       const struct agile_kernel **out)
{
	int i;

	if (!reg || !name || !out)
		return -EINVAL;
	i = find_index(reg, name);
	if (i < 0)
		return i;
	*out = &entry_at(reg, i)->kernel;
	return 0;
}

/*
 * The built-in kernels, indexed by AGILE_COMMON_*: the phase functions of
 * kernels_body.h, so the GPU code has them too.  A registry entry is
 * one of these when its name and first phase function match: the address
 * of this file's copy of the phase is what a user's kernel cannot have.
 */
static const agile_phase_fn axpy_phases[] = { agile_axpy_phase };
static const agile_phase_fn matlist_phases[] = { agile_matlist_multiply,
						 agile_matlist_store };
static const struct agile_kernel builtins[AGILE_COMMON_NR] = {
	[AGILE_COMMON_AXPY] = { .name = AGILE_KERNEL_AXPY,
				.nr_phases = AGILE_AXPY_NR_PHASES,
				.phases = axpy_phases },
	[AGILE_COMMON_MATLIST_MUL] = { .name = AGILE_KERNEL_MATLIST_MUL,
				       .nr_phases = AGILE_MATLIST_NR_PHASES,
				       .phases = matlist_phases,
				       .state_size = sizeof(
					       struct agile_matlist_state) },
};

/* Whether @k is built-in @id as the library registered it. */
static bool is_builtin(const struct agile_kernel *k, int id)
{
	return !strcmp(k->name, builtins[id].name) &&
	       k->nr_phases == builtins[id].nr_phases &&
	       k->phases[0] == builtins[id].phases[0];
}

int agile_kernels_register_builtins(struct agile_kernels *reg)
{
	if (!reg)
		return -EINVAL;
	for (int id = 0; id < AGILE_COMMON_NR; id++) {
		const struct agile_kernel *k;
		int err;

		if (!agile_kernels_find(reg, builtins[id].name, &k)) {
			if (is_builtin(k, id))
				continue; /* registered before: fine */
			return -EEXIST;
		}
		err = agile_kernels_register(reg, &builtins[id], NULL);
		if (err)
			return err;
	}
	return 0;
}

void agile__kernels_builtin_opcodes(const struct agile_kernels *reg,
				    uint32_t opcodes[AGILE_COMMON_NR])
{
	for (int id = 0; id < AGILE_COMMON_NR; id++) {
		const struct agile_kernel *k;

		opcodes[id] = 0;
		if (!agile_kernels_find(reg, builtins[id].name, &k) &&
		    is_builtin(k, id))
			opcodes[id] = k->opcode;
	}
}

static size_t round_up(size_t n, size_t align)
{
	return (n + align - 1) / align * align;
}

/* Bytes of the lanes' state array, before the shared memory. */
static size_t states_bytes(const struct agile_kernel *k, uint32_t nr_lanes)
{
	return round_up(round_up(k->state_size, STATE_ALIGN) * nr_lanes,
			SHARED_ALIGN);
}

size_t agile_kernels_scratch_size(const struct agile_kernel *kernel,
				  uint32_t nr_lanes)
{
	if (!kernel)
		return 0;
	return states_bytes(kernel, nr_lanes) +
	       round_up(kernel->shared_size, SHARED_ALIGN);
}

static const struct kernel_entry *entry_of(const struct agile_kernel *k)
{
	return (const struct kernel_entry *)((const char *)k -
					     offsetof(struct kernel_entry,
						      kernel));
}

uint32_t agile__kernels_max_group(const struct agile_kernel *k)
{
	return entry_of(k)->max_group;
}

const agile__lanes_fn *agile__kernels_lanes(const struct agile_kernel *k)
{
	return entry_of(k)->lanes;
}

size_t agile__kernels_states_size(const struct agile_kernel *k,
				  uint32_t nr_lanes)
{
	return states_bytes(k, nr_lanes);
}

/* The lanes still running a group, one bit each, and how many. */
struct live_lanes {
	uint64_t w[AGILE__GROUP_MAX_LANES / 64];
	uint32_t nr;
};

static bool is_live(const struct live_lanes *l, uint32_t lane)
{
	return l->w[lane / 64] >> (lane % 64) & 1;
}

static void lane_failed(struct agile__group_result *res, struct live_lanes *l,
			uint32_t lane, int err)
{
	l->w[lane / 64] &= ~(1ULL << (lane % 64));
	l->nr--;
	if (res->error)
		return;
	/* A positive return breaks the phase contract: still a failure. */
	res->error = err < 0 ? err : -EPROTO;
	res->error_lane = lane;
}

/*
 * Lanes a lanes function runs at once: its return codes' array, on the
 * stack of every phase.  256: a 256-lane group in one call; 1,024 cost a
 * one-lane group 1.5 ns more (11.8 against 10.2 ns a group, the stack).
 */
#define LANES_CHUNK 256

/*
 * Phase @fn (or @lanes, its loop over lanes compiled with it) on every
 * live lane, lane by lane.  The compiled loop runs only while no lane has
 * failed: it does not skip lanes.
 */
static void run_phase(agile_phase_fn fn, agile__lanes_fn lanes,
		      uint32_t nr_lanes, const __u64 *args,
		      unsigned char *states, size_t stride, void *shared,
		      struct live_lanes *live, struct agile__group_result *res)
{
	/* Lanes that fail now stay live for the rest of this phase. */
	bool all = live->nr == nr_lanes;

	if (lanes && all) {
		int32_t rc[LANES_CHUNK];

		for (uint32_t lo = 0; lo < nr_lanes; lo += LANES_CHUNK) {
			uint32_t hi = nr_lanes - lo > LANES_CHUNK ?
					      lo + LANES_CHUNK :
					      nr_lanes;

			if (!lanes(lo, hi, nr_lanes, args, states, stride,
				   shared, rc))
				continue;
			for (uint32_t lane = lo; lane < hi; lane++)
				if (rc[lane - lo])
					lane_failed(res, live, lane,
						    rc[lane - lo]);
		}
		return;
	}
	for (uint32_t lane = 0; lane < nr_lanes; lane++) {
		int err;

		if (!all && !is_live(live, lane))
			continue;
		err = fn(lane, nr_lanes, args,
			 states ? states + lane * stride : NULL, shared);
		if (err)
			lane_failed(res, live, lane, err);
	}
}

/*
 * The seed-004 transformation for one group of @nr_lanes lanes (at most
 * AGILE__GROUP_MAX_LANES): phase after phase, each on every live lane
 * before the next starts, which is all a barrier between them promises.
 * Returns the live lanes' first word (the status of up to 64 lanes).
 */
static uint64_t run_lanes(const struct agile_kernel *k,
			  const agile__lanes_fn *lanes, uint32_t nr_lanes,
			  const __u64 *args, unsigned char *states,
			  void *shared, struct agile__group_result *res)
{
	size_t stride = round_up(k->state_size, STATE_ALIGN);
	struct live_lanes live;
	uint32_t phase = 0;

	memset(live.w, 0, (nr_lanes + 63) / 64 * sizeof(live.w[0]));
	for (uint32_t i = 0; i < nr_lanes / 64; i++)
		live.w[i] = ~0ULL;
	if (nr_lanes % 64)
		live.w[nr_lanes / 64] = (1ULL << (nr_lanes % 64)) - 1;
	live.nr = nr_lanes;
	res->error = 0;
	res->error_lane = 0;

	while (live.nr) {
		run_phase(k->phases[phase], lanes ? lanes[phase] : NULL,
			  nr_lanes, args, states, stride, shared, &live, res);
		if (!live.nr)
			break;
		if (k->next)
			phase = k->next(phase, nr_lanes, args, shared);
		else
			phase = phase + 1 < k->nr_phases ? phase + 1 :
							   AGILE_KERNEL_DONE;
		if (phase == AGILE_KERNEL_DONE)
			break;
		if (phase >= k->nr_phases) {
			/* A bad jump fails every lane still running. */
			for (uint32_t lane = 0; lane < nr_lanes; lane++)
				if (is_live(&live, lane))
					lane_failed(res, &live, lane, -EINVAL);
		}
	}
	res->status = live.w[0];
	return live.w[0];
}

int agile__kernels_run_group(const struct agile_kernel *k, uint32_t nr_lanes,
			     const __u64 *args, uint32_t nr_args, void *states,
			     void *shared, struct agile__group_result *res)
{
	const agile__lanes_fn *lanes = agile__kernels_lanes(k);
	__u64 padded[AGILE__LANES_ARGS];

	if (!nr_lanes || nr_lanes > agile__kernels_max_group(k))
		return -EINVAL;
	/* The lanes functions read AGILE__LANES_ARGS words. */
	if (lanes[0] && nr_args < AGILE__LANES_ARGS) {
		memset(padded, 0, sizeof(padded));
		memcpy(padded, args, nr_args * sizeof(args[0]));
		args = padded;
	}
	run_lanes(k, lanes, nr_lanes, args, states, shared, res);
	return 0;
}

int agile_kernels_run(const struct agile_kernel *k, uint32_t nr_lanes,
		      const __u64 *args, void *scratch,
		      struct agile_lane_result *res)
{
	struct agile__group_result gr;
	unsigned char *states, *shared;

	if (!k || !res || !nr_lanes ||
	    nr_lanes > (k->max_lanes ? k->max_lanes : AGILE_MAX_LANES) ||
	    nr_lanes > AGILE_MAX_LANES || !k->nr_phases ||
	    (!scratch && agile_kernels_scratch_size(k, nr_lanes)))
		return -EINVAL;
	states = scratch;
	shared = states ? states + states_bytes(k, nr_lanes) : NULL;
	memset(res, 0, sizeof(*res));
	/* @k need not be registered: no compiled lane loops then. */
	res->status = run_lanes(k, NULL, nr_lanes, args, states, shared, &gr);
	res->error = gr.error;
	res->error_lane = gr.error_lane;
	return 0;
}
