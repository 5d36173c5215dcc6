/* SPDX-License-Identifier: MIT */
/*
 * rttest.h - what the rt-* selftests share: a CPU context with a queue,
 * and small CPU kernels (registered with agile_rt_kernel_register) whose
 * effects prove what ran, in which order:
 *
 *	rt.fill   out[i] = v for i < n            args: out, v (double bits), n
 *	rt.lin    out[i] = a x[i] + y[i]          args: out, a, x, y, n
 *	rt.log    log[1 + log[0]++] = id          args: log, id
 *	rt.block  started = 1, spin until go != 0  args: flags (started, go)
 *	rt.fail   fails every lane with -EDOM     args: none
 *	rt.group  out[g * lanes + lane] = 100 g + lane  args: out, g (GROUP)
 *
 * Include tap.h first.
 */
#ifndef AGILE_RTTEST_H
#define AGILE_RTTEST_H

#include <agile/error.h>
#include <agile/kernels.h>
#include <agile/runtime.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#define RT_WAIT_NS (20ULL * 1000 * 1000 * 1000)

static inline uint64_t rt_bits(double d)
{
	uint64_t b;

	memcpy(&b, &d, sizeof(b));
	return b;
}

static inline double rt_double(uint64_t b)
{
	double d;

	memcpy(&d, &b, sizeof(d));
	return d;
}

/* This lane's block of [0, n). */
static inline void rt_block_of(uint32_t lane, uint32_t lanes, uint64_t n,
			       uint64_t *lo, uint64_t *hi)
{
	*lo = n * lane / lanes;
	*hi = n * (lane + 1) / lanes;
}

static int rt_fill_phase(uint32_t lane, uint32_t lanes, const __u64 *args,
			 void *state, void *shared)
{
	double *out = (double *)(uintptr_t)args[0], v = rt_double(args[1]);
	uint64_t lo, hi;

	(void)state;
	(void)shared;
	rt_block_of(lane, lanes, args[2], &lo, &hi);
	for (uint64_t i = lo; i < hi; i++)
		out[i] = v;
	return 0;
}

static int rt_lin_phase(uint32_t lane, uint32_t lanes, const __u64 *args,
			void *state, void *shared)
{
	double *out = (double *)(uintptr_t)args[0], a = rt_double(args[1]);
	const double *x = (const double *)(uintptr_t)args[2];
	const double *y = (const double *)(uintptr_t)args[3];
	uint64_t lo, hi;

	(void)state;
	(void)shared;
	rt_block_of(lane, lanes, args[4], &lo, &hi);
	for (uint64_t i = lo; i < hi; i++)
		out[i] = a * x[i] + y[i];
	return 0;
}

static int rt_log_phase(uint32_t lane, uint32_t lanes, const __u64 *args,
			void *state, void *shared)
{
	uint64_t *log = (uint64_t *)(uintptr_t)args[0];

	(void)lanes;
	(void)state;
	(void)shared;
	if (lane == 0)
		log[1 + __atomic_fetch_add(&log[0], 1, __ATOMIC_RELAXED)] =
			args[1];
	return 0;
}

static int rt_block_phase(uint32_t lane, uint32_t lanes, const __u64 *args,
			  void *state, void *shared)
{
	uint64_t *flags = (uint64_t *)(uintptr_t)args[0];

	(void)lanes;
	(void)state;
	(void)shared;
	if (lane)
		return 0;
	__atomic_store_n(&flags[0], 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&flags[1], __ATOMIC_ACQUIRE))
		sched_yield();
	return 0;
}

static int rt_fail_phase(uint32_t lane, uint32_t lanes, const __u64 *args,
			 void *state, void *shared)
{
	(void)lane;
	(void)lanes;
	(void)args;
	(void)state;
	(void)shared;
	return -EDOM;
}

static int rt_group_phase(uint32_t lane, uint32_t lanes, const __u64 *args,
			  void *state, void *shared)
{
	double *out = (double *)(uintptr_t)args[0];

	(void)state;
	(void)shared;
	out[args[1] * lanes + lane] = 100.0 * (double)args[1] + lane;
	return 0;
}

struct rt_kernels {
	struct agile_rt_kernel *fill, *lin, *log, *block, *fail, *group;
};

static inline int rt_register(agile_rt_ctx ctx, const char *name,
			      agile_phase_fn fn, struct agile_rt_kernel **out)
{
	struct agile_kernel k = { .name = name, .nr_phases = 1 };

	k.phases = &fn;
	return agile_rt_kernel_register(ctx, &k, out);
}

static inline int rt_register_all(agile_rt_ctx ctx, struct rt_kernels *k)
{
	int err = rt_register(ctx, "rt.fill", rt_fill_phase, &k->fill);

	if (!err)
		err = rt_register(ctx, "rt.lin", rt_lin_phase, &k->lin);
	if (!err)
		err = rt_register(ctx, "rt.log", rt_log_phase, &k->log);
	if (!err)
		err = rt_register(ctx, "rt.block", rt_block_phase, &k->block);
	if (!err)
		err = rt_register(ctx, "rt.fail", rt_fail_phase, &k->fail);
	if (!err)
		err = rt_register(ctx, "rt.group", rt_group_phase, &k->group);
	return err;
}

/* A context on the CPU alone with @eus EUs. */
static inline int rt_cpu_ctx(uint32_t eus, agile_rt_ctx *ctx)
{
	struct agile_rt_ctx_opts o;

	agile_rt_ctx_opts_init(&o);
	o.cpu_eus = eus;
	return agile_rt_ctx_create(&o, ctx);
}

/*
 * The usual rig: a CPU context of one EU with the kernels above, a queue,
 * and a 64-byte flags buffer for rt.block.  0 or the first error.
 */
static inline int rt_rig_open(agile_rt_ctx *ctx, struct rt_kernels *k,
			      struct agile_rt_queue **q,
			      struct agile_rt_buffer **flags)
{
	int err = rt_cpu_ctx(1, ctx);

	if (!err)
		err = rt_register_all(*ctx, k);
	if (!err)
		err = agile_rt_queue_create(*ctx, NULL, q);
	if (!err)
		err = agile_rt_buffer_create(*ctx, 64, flags);
	return err;
}

static inline struct agile_rt_arg rt_buf(struct agile_rt_buffer *b,
					 uint32_t access)
{
	return (struct agile_rt_arg){ .kind = AGILE_RT_ARG_BUFFER,
				      .access = access,
				      .buf = b };
}

static inline struct agile_rt_arg rt_val(uint64_t v)
{
	return (struct agile_rt_arg){ .kind = AGILE_RT_ARG_VALUE, .value = v };
}

/* Enqueues @k with @nr args, one group of @threads, at @prio. */
static inline int rt_run(struct agile_rt_queue *q, struct agile_rt_kernel *k,
			 uint32_t threads, int32_t prio,
			 const struct agile_rt_arg *args, uint32_t nr,
			 struct agile_rt_event **ev)
{
	struct agile_rt_entry e = {
		.kernel = k,
		.threads = threads,
		.groups = 1,
		.priority = prio,
		.nr_args = nr,
		.args = args,
	};

	return agile_rt_enqueue(q, &e, ev);
}

/* The blocker: enqueued at @prio, waited for until it runs. */
static inline int rt_block(struct agile_rt_queue *q, struct rt_kernels *k,
			   struct agile_rt_buffer *flags_buf, int32_t prio,
			   struct agile_rt_event **ev)
{
	struct agile_rt_arg a = rt_buf(flags_buf, AGILE_RT_READ);
	uint64_t *flags;
	int err;

	agile_rt_buffer_host(flags_buf, (void **)&flags, NULL);
	err = rt_run(q, k->block, 1, prio, &a, 1, ev);
	while (!err && !__atomic_load_n(&flags[0], __ATOMIC_ACQUIRE))
		sched_yield();
	return err;
}

static inline void rt_unblock(struct agile_rt_buffer *flags_buf)
{
	uint64_t *flags;

	agile_rt_buffer_host(flags_buf, (void **)&flags, NULL);
	__atomic_store_n(&flags[1], 1, __ATOMIC_RELEASE);
}

#endif /* AGILE_RTTEST_H */
