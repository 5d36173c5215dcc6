// SPDX-License-Identifier: MIT
/*
 * kernels-on-eus - the matrix list again, one task per matrix spread over
 * CPU execution units.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/kernels.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kerneltest.h"
#include "tap.h"

#define LONG_NS (10ULL * 1000 * 1000 * 1000)

/* The matrix list again, one task per matrix spread over CPU EUs. */
static void test_on_eus(struct agile_kernels *reg)
{
	static double a[NR_MATRICES * DIM * DIM], ref[NR_MATRICES * DIM * DIM];
	static double b[DIM * DIM];
	const struct agile_kernel *k;
	struct agile_eu_pool_opts po;
	struct agile_dev_opts o;
	struct agile_eu_pool *pool;
	struct agile_dev *dev;
	uint32_t op;
	int err;

	agile_dev_opts_init(&o);
	o.nr_slots = 3;
	o.task_reg_size = 128;
	err = agile_dev_open(&o, &dev);
	if (!tap_ok(!err, "open a %s context: %s",
		    agile_dev_backend_name(err ? 0 : agile_dev_backend(dev)),
		    agile_strerror(err)))
		return;
	agile_eu_pool_opts_init(&po);
	err = agile_eu_pool_create(dev, reg, &po, &pool);
	if (!tap_ok(!err, "3 EUs: %s", agile_strerror(err))) {
		agile_dev_close(dev);
		return;
	}
	agile_kernels_find(reg, "matlist-mul", &k);
	op = k->opcode;
	fill(a, NR_MATRICES * DIM * DIM, 3);
	fill(b, DIM * DIM, 4);
	memcpy(ref, a, sizeof(a));
	for (int m = 0; m < NR_MATRICES; m++)
		reference_mm(ref + m * DIM * DIM, b);
	for (int m = 0; m < NR_MATRICES && !err; m += 3) {
		int posted = 0;

		for (int e = 0; e < 3 && m + e < NR_MATRICES && !err; e++) {
			struct agile_task_reg *r;

			agile_eu_task_reg(pool, (uint32_t)e, &r, NULL);
			r->opcode = op;
			r->nr_parts = DIM * DIM;
			r->args[0] = (uintptr_t)a;
			r->args[1] = (uintptr_t)b;
			r->args[2] = (__u64)(m + e);
			err = agile_eu_submit(pool, (uint32_t)e);
			posted += !err;
		}
		for (int e = 0; e < posted; e++) {
			int e2 =
				agile_eu_wait(pool, (uint32_t)e, LONG_NS, NULL);

			err = err ? err : e2;
		}
	}
	tap_ok(!err && !memcmp(a, ref, sizeof(a)),
	       "matrix-list multiply on 3 CPU EUs, one task per matrix: %s",
	       agile_strerror(err));
	tap_ok(!agile_eu_pool_destroy(pool) && !agile_dev_close(dev),
	       "pool and context gone");
}

int main(void)
{
	struct agile_kernels *reg;
	uint32_t op;

	if (!tap_ok(agile_kernels_create(&reg) == 0, "create a registry"))
		return tap_done();
	tap_ok(agile_kernels_register(reg, &mm_kernel, &op) == 0,
	       "register the matrix-list multiply");
	test_on_eus(reg);
	tap_ok(agile_kernels_destroy(reg) == 0 &&
		       agile_kernels_destroy(NULL) == -EINVAL,
	       "destroy the registry");
	return tap_done();
}
