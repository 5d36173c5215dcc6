/* SPDX-License-Identifier: MIT */
/*
 * offloadtest.h - the whole offload stack for a test: a kernel registry,
 * a context of @eus slots, CPU EUs on it, an offload of @workers workers
 * and a quiet scheduler that sends its leaves there.  Shared by
 * sched-eu.c and sched-offload-fault.c.
 */
#ifndef AGILE_OFFLOADTEST_H
#define AGILE_OFFLOADTEST_H

#include <agile/agile.h>
#include <string.h>

struct offload_stack {
	struct agile_kernels *reg;
	struct agile_dev *dev;
	struct agile_eu_pool *pool;
	struct agile_offload *off;
	struct agile_sched *sched;
};

/*
 * Build @s bottom up; on an error what was built stays in @s for
 * offload_stack_teardown.  The caller registers its kernels in s->reg
 * before it runs anything (the registry is empty here).
 */
static inline int offload_stack_setup(struct offload_stack *s, uint32_t workers,
				      uint32_t eus, uint32_t reg_size,
				      agile_offload_encode_fn encode,
				      uint64_t timeout_ns)
{
	struct agile_offload_opts oo;
	struct agile_sched_opts so;
	struct agile_dev_opts o;
	int err;

	memset(s, 0, sizeof(*s));
	err = agile_kernels_create(&s->reg);
	if (err)
		return err;
	agile_dev_opts_init(&o);
	o.nr_slots = eus;
	o.task_reg_size = reg_size;
	err = agile_dev_open(&o, &s->dev);
	if (!err)
		err = agile_eu_pool_create(s->dev, s->reg, NULL, &s->pool);
	agile_offload_opts_init(&oo);
	oo.nr_workers = workers;
	oo.encode = encode;
	oo.timeout_ns = timeout_ns;
	if (!err)
		err = agile_offload_create(s->pool, &oo, &s->off);
	agile_sched_opts_init(&so);
	so.flags = AGILE_SCHED_QUIET;
	if (!err)
		err = agile_offload_bind(&so, s->off);
	if (!err)
		err = agile_sched_create(&so, &s->sched);
	return err;
}

/* Top down: scheduler, offload, EUs (DISCONNECT), context, registry. */
static inline int offload_stack_teardown(struct offload_stack *s)
{
	int err = 0, e;

	if (s->sched && (e = agile_sched_destroy(s->sched)))
		err = err ? err : e;
	if (s->off && (e = agile_offload_destroy(s->off)))
		err = err ? err : e;
	if (s->pool && (e = agile_eu_pool_destroy(s->pool)))
		err = err ? err : e;
	if (s->dev && (e = agile_dev_close(s->dev)))
		err = err ? err : e;
	if (s->reg && (e = agile_kernels_destroy(s->reg)))
		err = err ? err : e;
	return err;
}

#endif /* AGILE_OFFLOADTEST_H */
