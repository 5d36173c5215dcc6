// SPDX-License-Identifier: MIT
/*
 * eu-gpu-builtins - the built-in kernels (the ones GPU EUs have): registered
 * (twice is fine; NULL and a user kernel of the same name are refused),
 * found by name, and run through CPU EUs.
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

#include "tap.h"
#include "gputest.h"

static inline int phase_nop(uint32_t lane, uint32_t nr_lanes, const __u64 *args,
			    void *state, void *shared)
{
	(void)lane;
	(void)nr_lanes;
	(void)args;
	(void)state;
	(void)shared;
	return 0;
}

static void test_builtins_register(void)
{
	struct agile_kernels *reg, *other;
	const struct agile_kernel *k;
	const agile_phase_fn nop[] = { phase_nop };
	struct agile_kernel fake = { .name = AGILE_KERNEL_AXPY,
				     .nr_phases = 1,
				     .phases = nop };

	agile_kernels_create(&reg);
	tap_ok(agile_kernels_register_builtins(NULL) == -EINVAL,
	       "register_builtins(NULL): -EINVAL");
	tap_ok(agile_kernels_register_builtins(reg) == 0 &&
		       agile_kernels_register_builtins(reg) == 0,
	       "register the built-in kernels, twice");
	tap_ok(!agile_kernels_find(reg, AGILE_KERNEL_AXPY, &k) &&
		       k->opcode >= AGILE_OP_USER_BASE &&
		       !agile_kernels_find(reg, AGILE_KERNEL_MATLIST_MUL, &k) &&
		       k->nr_phases == 2,
	       "both found by name");
	agile_kernels_create(&other);
	agile_kernels_register(other, &fake, NULL);
	tap_ok(agile_kernels_register_builtins(other) == -EEXIST,
	       "a user kernel named %s: -EEXIST", AGILE_KERNEL_AXPY);
	agile_kernels_destroy(other);
	agile_kernels_destroy(reg);
}

int main(void)
{
	struct agile_kernels *reg;
	struct agile_eu_pool *pool;
	struct agile_dev *dev;
	int err;

	unsetenv("AGILE_EU_POOL");
	test_builtins_register();
	agile_kernels_create(&reg);
	agile_kernels_register_builtins(reg);
	err = open_dev(&dev);
	if (!tap_ok(!err, "open a context: %s", agile_strerror(err)))
		return tap_done();
	err = make_pool(dev, reg, 0, &pool);
	if (tap_ok_call(err, "a CPU pool")) {
		run_builtins(pool, reg, false);
		agile_eu_pool_destroy(pool);
	}
	tap_ok(agile_dev_close(dev) == 0 && agile_kernels_destroy(reg) == 0,
	       "close the context, free the registry");
	return tap_done();
}
