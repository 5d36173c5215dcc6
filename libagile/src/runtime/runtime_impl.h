/* SPDX-License-Identifier: MIT */
/*
 * runtime_impl.h - what the runtime's files share (not exported): the
 * context, its devices and kernels, buffers, events and the queue.
 */
#ifndef AGILE_RUNTIME_IMPL_H
#define AGILE_RUNTIME_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <agile/dev.h>
#include <agile/eu.h>
#include <agile/kernels.h>
#include <agile/runtime.h>

/* Index of a per-device-type array: AGILE_RT_DEVICE_CPU -> 0, GPU -> 1. */
#define RT_NR_TYPES 2
#define RT_TYPE_INDEX(type) ((type) == AGILE_RT_DEVICE_GPU ? 1 : 0)

/*
 * struct agile_rt_kernel - a kernel as the queue runs it
 *
 * @on[t] says how devices of type t run it: the registry their EUs look
 * the opcode up in and the opcode (0: not on this type).  The built-in
 * kernels and agile_rt_kernel_register fill it from the context's
 * registry; an executable (seed 003's load rule, later) fills it per
 * device type from what it loaded: a dlopen'ed phase function registered
 * for CPU EUs, a code object's opcode for GPU EUs.  The queue reads
 * nothing else.  Immutable once published in the context's list.
 */
struct agile_rt_kernel {
	struct agile_rt_kernel *next;
	struct rt_ctx *ctx;
	char name[AGILE_KERNEL_NAME_MAX];
	struct {
		struct agile_kernels *reg;
		uint32_t opcode;
	} on[RT_NR_TYPES];
};

/* One physical device of a context and the EUs serving it. */
struct rt_dev {
	uint32_t id;
	uint32_t type;
	uint32_t nr_eus;
	uint32_t eu_kind;
	struct agile_dev *dev;
	struct agile_eu_pool *pool;
	/* Its pool was restarted by a program's build (program.c). */
	bool restarted;
	/* Counted by the runners; read by agile_rt_stats (relaxed). */
	atomic_uint_fast64_t groups;
	atomic_uint_fast64_t fallback_in;
	/*
	 * CPU devices: the runners run groups themselves (queue.c), so
	 * these stand for the doorbells and the EU counters: groups
	 * running now, and groups run and failed.
	 */
	atomic_uint_fast32_t inline_busy;
	atomic_uint_fast64_t inline_tasks;
	atomic_uint_fast64_t inline_failed;
};

/*
 * struct rt_ctx - a context; reached from a handle through the context
 * table (context.c), which holds the reference count.
 */
struct rt_ctx {
	agile_rt_ctx handle;
	struct agile_kernels *reg;
	uint32_t nr_devs;
	struct rt_dev devs[AGILE_RT_MAX_DEVICES];
	/* The device whose pool's arena buffers come from. */
	uint32_t home;
	/*
	 * @lock guards @kernels (appended to), @queue, and every buffer's
	 * data-flow state (struct agile_rt_buffer's last_writer, readers).
	 * Taken inside a queue's lock, never the other way round.
	 */
	pthread_mutex_t lock;
	/*
	 * Serialises programs' builds on the context (program.c), held
	 * outside @lock: the CPU build compiles without @lock, the GPU's
	 * (which needs no queue) with it.
	 */
	pthread_mutex_t build_lock;
	struct agile_rt_kernel *kernels;
	struct agile_rt_queue *queue;
	/* Live buffers (their arena is the home pool's); under @lock. */
	uint32_t nr_buffers;
	/* A program's image runs on the GPU pool (program.c); under @lock. */
	bool gpu_program;
	/*
	 * CPU builds of programs whose kernels @reg holds: unloaded after
	 * the registry is destroyed (context.c).  Appended under @lock.
	 */
	struct rt_module *modules;
};

/* A loaded CPU build (runtime/compile.h's module) a context keeps. */
struct rt_module {
	struct rt_module *next;
	struct agile__rt_module *mod;
};

/*
 * struct agile_rt_buffer - arena memory of a context, refcounted (the
 * application's reference and one per queued entry naming it); holds a
 * context reference, so the arena outlives it.
 */
struct agile_rt_buffer {
	atomic_uint refs;
	struct rt_ctx *ctx;
	void *host;
	size_t bytes;
	/* The address for each device's EUs, by index in ctx->devs. */
	uint64_t eu_addr[AGILE_RT_MAX_DEVICES];
	/* Data flow, under ctx->lock: the last writer, readers since. */
	struct agile_rt_event *last_writer;
	struct agile_rt_event **readers;
	uint32_t nr_readers;
	uint32_t readers_cap;
};

/* ---- context.c ---- */

/* A handle's context with a reference taken, or NULL if it is not live. */
struct rt_ctx *agile__rt_ctx_get(agile_rt_ctx handle);
/* Drops a reference agile__rt_ctx_get (or create) took; the last frees. */
void agile__rt_ctx_put(struct rt_ctx *ctx);

/* ---- context.c, for program.c ---- */

/*
 * agile__rt_dev_restart - stop @d's pool, start one on @code (GPU only:
 * AGILE_EU_POOL_GPU_ONLY), or with @code NULL the pool dev_start makes
 * (the built-in code, a CPU fallback allowed; where even that fails,
 * CPU EUs).  After a failed start on @code, @d->pool is NULL until the
 * next restart.  @ctx->lock held, no queue, no buffers.
 */
struct agile__eu_gpu_code;
int agile__rt_dev_restart(struct rt_ctx *ctx, struct rt_dev *d,
			  const struct agile__eu_gpu_code *code);

/* ---- buffer.c ---- */

void agile__rt_buffer_get(struct agile_rt_buffer *buf);
/* The last reference frees the memory and drops the context's. */
void agile__rt_buffer_put(struct agile_rt_buffer *buf);

/* ---- device.c ---- */

/* Row @id of the table into @info; -ENODEV when there is none. */
int agile__rt_device_row(uint32_t id, struct agile_rt_device_info *info);

/*
 * agile__rt_devices_set - replace the capability table by @rows (ids are
 * renumbered 0 .. @nr - 1); @nr 0 re-probes on the next call.  A test
 * hook (the selftests' matching tables), in the static library only.
 * Thread safe; contexts already made keep their devices.
 */
int agile__rt_devices_set(const struct agile_rt_device_info *rows, uint32_t nr);

/* ---- event.c ---- */

/* A new pending event with one reference; NULL without memory. */
struct agile_rt_event *agile__rt_event_new(void);
/*
 * Completes @ev with @status: stores it (release), wakes the waiters and
 * runs the callbacks added so far, outside @ev's lock.  Once per event.
 */
void agile__rt_event_complete(struct agile_rt_event *ev, int status);

/*
 * An event's pending entry, for the queue's ready list (queue.c): bind
 * gives a new event its queue and entry before the event is published;
 * entry reads the entry back, NULL when @ev is not @q's or its entry no
 * longer takes dependents; unbind clears it.  Entry and unbind: the
 * caller holds @q's lock.
 */
struct rt_entry;
void agile__rt_event_bind(struct agile_rt_event *ev,
			  const struct agile_rt_queue *q,
			  struct rt_entry *entry);
struct rt_entry *agile__rt_event_entry(const struct agile_rt_event *ev,
				       const struct agile_rt_queue *q);
void agile__rt_event_unbind(struct agile_rt_event *ev);

/* ---- placement.c ---- */

/* EUs of @d whose doorbell is not IDLE now (acquire loads). */
uint32_t agile__rt_dev_busy(const struct rt_dev *d);
/* Whether @d counts as busy against @pct (percent of its EUs). */
bool agile__rt_dev_over(const struct rt_dev *d, uint32_t pct);

/*
 * agile__rt_place_allows - may a runner of @ctx->devs[@dev] take a group of
 * @kernel placed @place now?  Reads the GPUs' doorbells for
 * AGILE_RT_PLACE_GPU; sets *@fallback when it is the CPU fallback.
 */
bool agile__rt_place_allows(const struct rt_ctx *ctx, uint32_t dev,
			    const struct agile_rt_kernel *kernel,
			    uint32_t place,
			    const struct agile_rt_place_opts *opts,
			    bool *fallback);

/* Whether some device of @ctx could ever run @kernel placed @place. */
bool agile__rt_place_possible(const struct rt_ctx *ctx,
			      const struct agile_rt_kernel *kernel,
			      uint32_t place);

#endif /* AGILE_RUNTIME_IMPL_H */
