// SPDX-License-Identifier: MIT
/*
 * kernels - the opcode registry and the seed-004 transformation.
 *
 * The registry refuses bad descriptors, duplicate names and opcodes, and
 * says -AGILE_E_OPCODE / -ENOENT for what it does not know.  Kernels
 * written as barrier-separated phases run on the CPU lane loops: the
 * seed's small-matrix-list multiply (one task per matrix, one lane per
 * output element, the accumulator promoted to a per-lane array across the
 * barrier that guards the overwrite of the input) against a plain
 * reference, also through CPU execution units; axpy with lanes cutting an
 * uneven range; a tree reduction whose barrier sits in a uniform loop
 * (the next() hook); and failing lanes.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/kernels.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#define LONG_NS (10ULL * 1000 * 1000 * 1000)

/* ---- the seed-004 example: C[i] = A[i] x B, overwriting A[i] ---- */

#define DIM 8 /* DIM x DIM matrices: 64 lanes, one per element */
#define NR_MATRICES 40

/* args: A (NR_MATRICES matrices, row major), B, the matrix index */
struct mm_state {
	double acc; /* live across the barrier: promoted per lane */
};

static AGILE_LANE_FN int mm_multiply(uint32_t lane, uint32_t nr_lanes,
				     const __u64 *args, void *state,
				     void *shared)
{
	const double *a =
		(const double *)(uintptr_t)args[0] + args[2] * DIM * DIM;
	const double *b = (const double *)(uintptr_t)args[1];
	struct mm_state *st = state;
	uint32_t row = lane / DIM, col = lane % DIM;
	double acc = 0;

	(void)nr_lanes;
	(void)shared;
	for (uint32_t k = 0; k < DIM; k++)
		acc += a[row * DIM + k] * b[k * DIM + col];
	st->acc = acc;
	return 0;
}

/* After the barrier: every lane has read A, so A may be overwritten. */
static AGILE_LANE_FN int mm_store(uint32_t lane, uint32_t nr_lanes,
				  const __u64 *args, void *state, void *shared)
{
	double *a = (double *)(uintptr_t)args[0] + args[2] * DIM * DIM;
	const struct mm_state *st = state;

	(void)nr_lanes;
	(void)shared;
	a[lane] = st->acc;
	return 0;
}

/* The same without the barrier: lanes overwrite what later lanes read. */
static AGILE_LANE_FN int mm_unsafe(uint32_t lane, uint32_t nr_lanes,
				   const __u64 *args, void *state, void *shared)
{
	int err = mm_multiply(lane, nr_lanes, args, state, shared);

	return err ? err : mm_store(lane, nr_lanes, args, state, shared);
}

static const agile_phase_fn mm_phases[] = { mm_multiply, mm_store };
static const agile_phase_fn mm_unsafe_phases[] = { mm_unsafe };

static const struct agile_kernel mm_kernel = {
	.name = "matlist-mul",
	.nr_phases = 2,
	.phases = mm_phases,
	.state_size = sizeof(struct mm_state),
	.max_lanes = DIM * DIM,
};

/* ---- axpy: y = a x + y, lanes cut [0, n) into nr_lanes blocks ---- */

/* args: a (double bits), x, y, n */
static AGILE_LANE_FN int axpy(uint32_t lane, uint32_t nr_lanes,
			      const __u64 *args, void *state, void *shared)
{
	union {
		__u64 bits;
		double d;
	} a = { .bits = args[0] };
	const double *x = (const double *)(uintptr_t)args[1];
	double *y = (double *)(uintptr_t)args[2];
	uint64_t n = args[3];
	uint64_t lo = n * lane / nr_lanes, hi = n * (lane + 1) / nr_lanes;

	(void)state;
	(void)shared;
	for (uint64_t i = lo; i < hi; i++)
		y[i] = a.d * x[i] + y[i];
	return 0;
}

static const agile_phase_fn axpy_phases[] = { axpy };

/* ---- a tree reduction: the barrier inside a uniform loop ---- */

struct reduce_shared {
	uint32_t stride; /* uniform: written only by the convergent next() */
	uint32_t pad;
	int64_t partial[AGILE_MAX_LANES];
};

/* args: values (int64_t per lane), the result */
static AGILE_LANE_FN int reduce_load(uint32_t lane, uint32_t nr_lanes,
				     const __u64 *args, void *state,
				     void *shared)
{
	struct reduce_shared *sh = shared;

	(void)nr_lanes;
	(void)state;
	sh->partial[lane] = ((const int64_t *)(uintptr_t)args[0])[lane];
	return 0;
}

static AGILE_LANE_FN int reduce_step(uint32_t lane, uint32_t nr_lanes,
				     const __u64 *args, void *state,
				     void *shared)
{
	struct reduce_shared *sh = shared;

	(void)nr_lanes;
	(void)args;
	(void)state;
	if (lane < sh->stride && lane + sh->stride < nr_lanes)
		sh->partial[lane] += sh->partial[lane + sh->stride];
	return 0;
}

static AGILE_LANE_FN int reduce_store(uint32_t lane, uint32_t nr_lanes,
				      const __u64 *args, void *state,
				      void *shared)
{
	struct reduce_shared *sh = shared;

	(void)nr_lanes;
	(void)state;
	if (!lane)
		*(int64_t *)(uintptr_t)args[1] = sh->partial[0];
	return 0;
}

/*
 * for (stride = half; stride > 0; stride /= 2) { step; barrier; }
 * as jumps between phases: the loop control is convergent code.
 */
static AGILE_LANE_FN uint32_t reduce_next(uint32_t done, uint32_t nr_lanes,
					  const __u64 *args, void *shared)
{
	struct reduce_shared *sh = shared;
	uint32_t half = 1;

	(void)args;
	switch (done) {
	case 0:
		while (half < nr_lanes)
			half *= 2;
		sh->stride = half / 2;
		return sh->stride ? 1 : 2;
	case 1:
		sh->stride /= 2;
		return sh->stride ? 1 : 2;
	}
	return AGILE_KERNEL_DONE;
}

static const agile_phase_fn reduce_phases[] = { reduce_load, reduce_step,
						reduce_store };

/* ---- lanes that fail ---- */

/* args: counter per lane and phase [lane * 3 + phase], failing lane, phase */
static AGILE_LANE_FN int fail_phase(uint32_t lane, uint32_t phase,
				    const __u64 *args)
{
	uint32_t *ran = (uint32_t *)(uintptr_t)args[0];

	ran[lane * 3 + phase]++;
	return lane == args[1] && phase == args[2] ? -EXDEV : 0;
}

static int fail0(uint32_t lane, uint32_t n, const __u64 *args, void *st,
		 void *sh)
{
	(void)n;
	(void)st;
	(void)sh;
	return fail_phase(lane, 0, args);
}

static int fail1(uint32_t lane, uint32_t n, const __u64 *args, void *st,
		 void *sh)
{
	(void)n;
	(void)st;
	(void)sh;
	return fail_phase(lane, 1, args);
}

static int fail2(uint32_t lane, uint32_t n, const __u64 *args, void *st,
		 void *sh)
{
	(void)n;
	(void)st;
	(void)sh;
	return fail_phase(lane, 2, args);
}

static int positive(uint32_t lane, uint32_t n, const __u64 *args, void *st,
		    void *sh)
{
	(void)n;
	(void)args;
	(void)st;
	(void)sh;
	return lane == 2 ? 5 : 0;
}

static uint32_t jump_away(uint32_t done, uint32_t n, const __u64 *args,
			  void *sh)
{
	(void)done;
	(void)n;
	(void)args;
	(void)sh;
	return 17;
}

static const agile_phase_fn fail_phases[] = { fail0, fail1, fail2 };
static const agile_phase_fn positive_phases[] = { positive };

/* ---- helpers ---- */

static void *scratch_for(const struct agile_kernel *k, uint32_t lanes)
{
	size_t size = agile_kernels_scratch_size(k, lanes);

	return size ? aligned_alloc(64, (size + 63) / 64 * 64) : NULL;
}

static int run(const struct agile_kernel *k, uint32_t lanes, const __u64 *args,
	       struct agile_lane_result *res)
{
	void *scratch = scratch_for(k, lanes);
	int err = agile_kernels_run(k, lanes, args, scratch, res);

	free(scratch);
	return err;
}

static void reference_mm(double *a, const double *b)
{
	double c[DIM * DIM];

	for (int i = 0; i < DIM; i++)
		for (int j = 0; j < DIM; j++) {
			double acc = 0;

			for (int k = 0; k < DIM; k++)
				acc += a[i * DIM + k] * b[k * DIM + j];
			c[i * DIM + j] = acc;
		}
	memcpy(a, c, sizeof(c));
}

static void fill(double *m, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		m[i] = (double)((seed * 2654435761u + i * 40503u) % 17) - 8;
}

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

static void test_matrices(void)
{
	static double a[NR_MATRICES * DIM * DIM], ref[NR_MATRICES * DIM * DIM];
	static double b[DIM * DIM];
	struct agile_kernel unsafe = mm_kernel;
	struct agile_lane_result res;
	int bad = 0, err = 0, differs = 0;

	fill(a, NR_MATRICES * DIM * DIM, 1);
	fill(b, DIM * DIM, 2);
	memcpy(ref, a, sizeof(a));
	for (int m = 0; m < NR_MATRICES; m++)
		reference_mm(ref + m * DIM * DIM, b);
	for (int m = 0; m < NR_MATRICES && !err; m++) {
		__u64 args[3] = { (uintptr_t)a, (uintptr_t)b, (__u64)m };

		err = run(&mm_kernel, DIM * DIM, args, &res);
		bad += res.status != ~0ULL || res.error;
	}
	tap_ok(!err && !bad && !memcmp(a, ref, sizeof(a)),
	       "matrix-list multiply, lane loops around 2 phases: equals the reference");

	unsafe.nr_phases = 1;
	unsafe.phases = mm_unsafe_phases;
	fill(a, NR_MATRICES * DIM * DIM, 1);
	for (int m = 0; m < NR_MATRICES; m++) {
		__u64 args[3] = { (uintptr_t)a, (uintptr_t)b, (__u64)m };

		run(&unsafe, DIM * DIM, args, &res);
	}
	differs = memcmp(a, ref, sizeof(a)) != 0;
	tap_ok(differs, "without the barrier the in-place result is wrong");
}

static void test_axpy(void)
{
	enum { N = 1000 };
	static double x[N], y[N], want[N];
	struct agile_kernel k = { .name = "axpy",
				  .nr_phases = 1,
				  .phases = axpy_phases };
	union {
		double d;
		__u64 bits;
	} a = { .d = 2.5 };
	struct agile_lane_result res;
	__u64 args[4] = { a.bits, (uintptr_t)x, (uintptr_t)y, N };
	int ok = 1;

	for (int lanes = 1; lanes <= 64; lanes += 21) {
		for (int i = 0; i < N; i++) {
			x[i] = i;
			y[i] = 1000 - i;
			want[i] = 2.5 * i + 1000 - i;
		}
		ok &= !run(&k, (uint32_t)lanes, args, &res) &&
		      res.status == (lanes == 64 ? ~0ULL : (1ULL << lanes) - 1);
		ok &= !memcmp(y, want, sizeof(y));
	}
	tap_ok(ok, "axpy over 1000 elements on 1, 22, 43 and 64 lanes");
}

static void test_reduce(void)
{
	struct agile_kernel k = {
		.name = "reduce",
		.nr_phases = 3,
		.phases = reduce_phases,
		.next = reduce_next,
		.shared_size = sizeof(struct reduce_shared),
	};
	struct agile_lane_result res;
	int64_t values[64], sum = 0, got = -1;
	__u64 args[2] = { (uintptr_t)values, (uintptr_t)&got };
	int ok = 1;

	for (int i = 0; i < 64; i++)
		values[i] = (int64_t)i * i - 7;
	for (uint32_t lanes = 1; lanes <= 64; lanes++) {
		sum += values[lanes - 1];
		got = -1;
		ok &= !run(&k, lanes, args, &res) && !res.error && got == sum;
	}
	tap_ok(ok, "tree reduction, barrier in a uniform loop: 1..64 lanes");
}

static void test_failures(void)
{
	struct agile_kernel k = { .name = "fail",
				  .nr_phases = 3,
				  .phases = fail_phases };
	struct agile_lane_result res;
	uint32_t ran[16 * 3] = { 0 };
	__u64 args[3] = { (uintptr_t)ran, 5, 1 };
	int ok;

	ok = !run(&k, 16, args, &res);
	tap_ok(ok && res.error == -EXDEV && res.error_lane == 5 &&
		       res.status == (0xffffULL & ~(1ULL << 5)),
	       "lane 5 fails in phase 1: error %d, lane %u, status 0x%llx",
	       res.error, res.error_lane, (unsigned long long)res.status);
	tap_ok(ran[5 * 3 + 0] == 1 && ran[5 * 3 + 1] == 1 &&
		       ran[5 * 3 + 2] == 0 && ran[4 * 3 + 2] == 1 &&
		       ran[6 * 3 + 2] == 1,
	       "a failed lane runs no further phase; the others go on");

	k.nr_phases = 1;
	k.phases = positive_phases;
	tap_ok(!run(&k, 4, args, &res) && res.error == -EPROTO &&
		       res.error_lane == 2 && res.status == 0xb,
	       "a positive return fails the lane with -EPROTO");

	k.phases = fail_phases;
	k.next = jump_away;
	args[1] = 99;
	tap_ok(!run(&k, 4, args, &res) && res.error == -EINVAL &&
		       res.status == 0,
	       "next() jumping past the phases fails every lane: -EINVAL");
	k.next = NULL;
	k.max_lanes = 8;
	tap_ok(run(&k, 9, args, &res) == -EINVAL &&
		       run(&k, 0, args, &res) == -EINVAL &&
		       agile_kernels_run(&mm_kernel, 4, args, NULL, &res) ==
			       -EINVAL,
	       "too many lanes, no lane, no scratch: -EINVAL, nothing runs");
}

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
	test_registry(reg);
	test_matrices();
	test_axpy();
	test_reduce();
	test_failures();
	test_on_eus(reg);
	tap_ok(agile_kernels_destroy(reg) == 0 &&
		       agile_kernels_destroy(NULL) == -EINVAL,
	       "destroy the registry");
	return tap_done();
}
