// SPDX-License-Identifier: MIT
/*
 * kernels-registry - the opcode registry refuses bad descriptors, duplicate
 * names and opcodes, and says -AGILE_E_OPCODE / -ENOENT for what it does
 * not know.
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

static void test_registry(struct agile_kernels *reg)
{
	struct agile_kernel k = { .name = "axpy",
				  .nr_phases = 1,
				  .phases = axpy_phases };
	const struct agile_kernel *found;
	agile_phase_fn holes[2] = { axpy, NULL };
	uint32_t op = 0, op2 = 0;
	int err, n;

	err = agile_kernels_register(reg, &k, &op);
	tap_ok(!err && op == AGILE_OP_USER_BASE + 1,
	       "register axpy: opcode %u, the first free", op);
	tap_ok(agile_kernels_register(reg, &k, NULL) == -EEXIST,
	       "the same name again: -EEXIST");
	k.name = "axpy2";
	k.opcode = op;
	tap_ok(agile_kernels_register(reg, &k, NULL) == -EEXIST,
	       "a taken opcode: -EEXIST");
	k.opcode = AGILE_OP_USER_BASE + 100;
	err = agile_kernels_register(reg, &k, &op2);
	tap_ok(!err && op2 == AGILE_OP_USER_BASE + 100,
	       "register at a chosen opcode: %u", op2);
	tap_ok(agile_kernels_lookup(reg, op2, &found) == 0 &&
		       !strcmp(found->name, "axpy2") &&
		       found->phases[0] == axpy &&
		       found->max_lanes == AGILE_MAX_LANES,
	       "lookup by opcode: a copy, max_lanes defaulted");
	tap_ok(agile_kernels_find(reg, "axpy", &found) == 0 &&
		       found->opcode == op,
	       "find by name");

	k.name = "bad";
	k.opcode = AGILE_OP_USER_BASE - 1;
	tap_ok(agile_kernels_register(reg, &k, NULL) == -EINVAL,
	       "opcode below AGILE_OP_USER_BASE: -EINVAL");
	k.opcode = AGILE_OP_USER_BASE + AGILE_KERNELS_MAX;
	tap_ok(agile_kernels_register(reg, &k, NULL) == -EINVAL,
	       "opcode past the table: -EINVAL");
	k.opcode = 0;
	k.nr_phases = 0;
	tap_ok(agile_kernels_register(reg, &k, NULL) == -EINVAL,
	       "no phase: -EINVAL");
	k.nr_phases = 2;
	k.phases = holes;
	tap_ok(agile_kernels_register(reg, &k, NULL) == -EINVAL,
	       "a NULL phase: -EINVAL");
	k.phases = axpy_phases;
	k.nr_phases = 1;
	k.name = "";
	tap_ok(agile_kernels_register(reg, &k, NULL) == -EINVAL,
	       "empty name: -EINVAL");
	k.name = "a-name-that-is-far-too-long-for-the-table";
	tap_ok(agile_kernels_register(reg, &k, NULL) == -EINVAL,
	       "name too long: -EINVAL");
	k.name = "big";
	k.shared_size = AGILE_KERNEL_MAX_SHARED + 1;
	tap_ok(agile_kernels_register(reg, &k, NULL) == -EINVAL,
	       "shared memory too big: -EINVAL");
	k.shared_size = 0;
	k.max_lanes = AGILE_MAX_LANES + 1;
	tap_ok(agile_kernels_register(reg, &k, NULL) == -EINVAL,
	       "more lanes than status bits: -EINVAL");
	k.max_lanes = 0;
	tap_ok(agile_kernels_register(NULL, &k, NULL) == -EINVAL &&
		       agile_kernels_register(reg, NULL, NULL) == -EINVAL &&
		       agile_kernels_create(NULL) == -EINVAL,
	       "NULL arguments: -EINVAL");

	tap_ok(agile_kernels_lookup(reg, op + 1, &found) == -AGILE_E_OPCODE &&
		       agile_kernels_lookup(reg, AGILE_OP_DISCONNECT, &found) ==
			       -AGILE_E_OPCODE &&
		       agile_kernels_lookup(reg, 1u << 30, &found) ==
			       -AGILE_E_OPCODE,
	       "lookup of unknown opcodes: -AGILE_E_OPCODE (%s)",
	       agile_strerror(-AGILE_E_OPCODE));
	tap_ok(agile_kernels_find(reg, "nope", &found) == -ENOENT,
	       "find an unknown name: -ENOENT");

	/* Fill the table (3 are in): then no opcode is left. */
	err = 0;
	for (n = 3; n < AGILE_KERNELS_MAX && !err; n++) {
		char name[AGILE_KERNEL_NAME_MAX];

		snprintf(name, sizeof(name), "filler-%d", n);
		k.name = name;
		err = agile_kernels_register(reg, &k, NULL);
	}
	k.name = "one-too-many";
	tap_ok(!err && agile_kernels_register(reg, &k, NULL) == -ENOSPC,
	       "%d kernels fill the opcodes; one more: -ENOSPC",
	       AGILE_KERNELS_MAX);
}

int main(void)
{
	struct agile_kernels *reg;
	uint32_t op;

	if (!tap_ok(agile_kernels_create(&reg) == 0, "create a registry"))
		return tap_done();
	tap_ok(agile_kernels_register(reg, &mm_kernel, &op) == 0,
	       "register the matrix-list multiply");
	test_registry(reg);
	tap_ok(agile_kernels_destroy(reg) == 0 &&
		       agile_kernels_destroy(NULL) == -EINVAL,
	       "destroy the registry");
	return tap_done();
}
