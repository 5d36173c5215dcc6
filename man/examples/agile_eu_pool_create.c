// SPDX-License-Identifier: MIT
/* One axpy task on execution unit 0 (libagile's built-in kernel). */
#include <agile/agile.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	double x[1000], y[1000], a = 2.0;
	const struct agile_kernel *axpy;
	struct agile_kernels *kernels;
	struct agile_eu_pool *pool;
	struct agile_task_reg *reg;
	struct agile_dev_opts opts;
	struct agile_dev *dev;
	uint32_t nr_args, lane;
	int ret;

	for (int i = 0; i < 1000; i++)
		x[i] = i, y[i] = 1;
	agile_dev_opts_init(&opts);
	opts.nr_slots = 2;
	opts.task_reg_size = 256;
	if (agile_dev_open(&opts, &dev) || agile_kernels_create(&kernels) ||
	    agile_kernels_register_builtins(kernels) ||
	    agile_kernels_find(kernels, AGILE_KERNEL_AXPY, &axpy))
		return 1;
	/* NULL options: one CPU EU per slot. */
	ret = agile_eu_pool_create(dev, kernels, NULL, &pool);
	if (ret) {
		fprintf(stderr, "agile_eu_pool_create: %s\n",
			agile_strerror(ret));
		return 1;
	}
	agile_eu_task_reg(pool, 0, &reg, &nr_args);
	reg->opcode = axpy->opcode;
	reg->nr_parts = 8; /* lanes */
	memcpy(&reg->args[0], &a, sizeof(a));
	reg->args[1] = (uintptr_t)x;
	reg->args[2] = (uintptr_t)y;
	reg->args[3] = 1000;
	ret = agile_eu_call(pool, 0, AGILE_TIMEOUT_INFINITE, &lane);
	printf("y[999] = %g (%s)\n", y[999], agile_strerror(ret));
	agile_eu_pool_destroy(pool);
	agile_kernels_destroy(kernels);
	agile_dev_close(dev);
	return ret ? 1 : 0;
}
