// SPDX-License-Identifier: MIT
/*
 * runtime-compile-cc - a user kernel source compiled on demand for the
 * CPU (the system C compiler, a shared object), loaded with dlopen,
 * registered, and run by CPU EUs; and what a failed build says: the step,
 * the message, the compiler's log.
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
#include "compiletest.h"

/* Build, load, register, run on two CPU EUs. */
static void test_cpu_eus(void)
{
	struct agile__rt_build b = { .target = AGILE_RT_CPU };
	struct agile__rt_diag diag = { 0 };
	struct agile__rt_image *img = NULL;
	struct agile__rt_module *mod = NULL;
	struct agile_eu_pool_opts po;
	struct agile_kernels *reg;
	struct agile_eu_pool *pool;
	struct agile_dev_opts o;
	struct agile_dev *dev;
	const struct agile_kernel *k;
	double x[ROTATE_LANES], want[ROTATE_LANES];
	uint64_t before = agile__rt_compiler_count(AGILE_RT_CPU);
	uint32_t lane = 0, op_rot, op_odd;
	int err;

	err = agile__rt_compile(user_source, &b, &img, &diag);
	if (!tap_ok(!err && img && img->size > 0 && !img->from_cache &&
			    img->path[0] &&
			    agile__rt_compiler_count(AGILE_RT_CPU) ==
				    before + 1,
		    "cc: compiled once (%s%s%s)", agile_strerror(err),
		    err ? ": " : "", diag.message)) {
		tap_diag("log: %s", diag.log ? diag.log : "(none)");
		agile__rt_diag_clear(&diag);
		return;
	}
	tap_ok(!memcmp(img->data, "\177ELF", 4),
	       "the image is the shared object (ELF), %zu bytes", img->size);
	agile__rt_diag_clear(&diag);

	agile_kernels_create(&reg);
	agile_kernels_register_builtins(reg);
	err = agile__rt_cpu_load(img, reg, &mod, &diag);
	if (err == -ENOTSUP) {
		tap_skip("dlopen and run", "%s", diag.message);
		agile_kernels_destroy(reg);
		agile__rt_image_free(img);
		agile__rt_diag_clear(&diag);
		return;
	}
	tap_ok(!err && agile__rt_module_nr_kernels(mod) == 2 &&
		       !strcmp(agile__rt_module_name(mod, 0), "user_rotate") &&
		       !strcmp(agile__rt_module_name(mod, 1), "user_fail_odd"),
	       "dlopen and register: %s%s%s", agile_strerror(err),
	       err ? ": " : "", diag.message);
	if (err) {
		agile_kernels_destroy(reg);
		agile__rt_image_free(img);
		return;
	}
	op_rot = agile__rt_module_opcode(mod, 0);
	op_odd = agile__rt_module_opcode(mod, 1);
	tap_ok(!agile_kernels_find(reg, "user_rotate", &k) &&
		       k->opcode == op_rot && k->nr_phases == 2 &&
		       k->state_size == sizeof(double) &&
		       k->max_lanes == AGILE_MAX_LANES &&
		       !agile_kernels_find(reg, "user_fail_odd", &k) &&
		       k->opcode == op_odd && k->nr_phases == 1 &&
		       k->max_lanes == FAIL_ODD_LANES,
	       "registered as written: opcodes %u and %u, phases, state, lanes",
	       op_rot, op_odd);

	agile_dev_opts_init(&o);
	o.nr_slots = 2;
	err = agile_dev_open(&o, &dev);
	if (!tap_ok_call(err, "open a context"))
		goto out;
	agile_eu_pool_opts_init(&po);
	err = agile_eu_pool_create(dev, reg, &po, &pool);
	if (!tap_ok_call(err, "two CPU EUs")) {
		agile_dev_close(dev);
		goto out;
	}
	for (int i = 0; i < ROTATE_LANES; i++)
		x[i] = i + 1;
	rotate_expect(x, want);
	err = eu_task(pool, 1, op_rot, ROTATE_LANES,
		      (__u64[]){ (uintptr_t)x, ROTATE_FACTOR }, 2, &lane);
	tap_ok(!err && !memcmp(x, want, sizeof(x)),
	       "user_rotate on a CPU EU, 64 lanes, two phases: %s",
	       agile_strerror(err));
	err = eu_task(pool, 0, op_odd, FAIL_ODD_LANES, NULL, 0, &lane);
	tap_ok(err == -ERANGE && lane == 1,
	       "user_fail_odd: lane %u fails with %s", lane,
	       agile_strerror(err));
	err = eu_task(pool, 0, op_odd, FAIL_ODD_LANES + 1, NULL, 0, &lane);
	tap_ok(err == -EINVAL, "user_fail_odd over its 8 lanes: %s",
	       agile_strerror(err));
	tap_ok(!agile_eu_pool_destroy(pool) && !agile_dev_close(dev),
	       "pool and context gone");
out:
	agile_kernels_destroy(reg);
	/* After the registry: its kernels point into the object. */
	agile__rt_module_unload(mod);
	agile__rt_image_free(img);
}

/* A build that fails: -EIO, the step, and the log with the line. */
static void test_failures(void)
{
	static const char broken[] =
		"AGILE_PHASE(p)\n{\n\treturn undeclared_thing;\n}\n"
		"#define AGILE_USER_KERNELS(K) K(broken, struct "
		"agile_no_state, 0, p)\n";
	static const char no_list[] = "AGILE_PHASE(p)\n{\n\treturn 0;\n}\n";
	struct agile__rt_build b = { .target = AGILE_RT_CPU };
	struct agile__rt_diag diag = { 0 };
	struct agile__rt_image *img = NULL;
	int err;

	err = agile__rt_compile(broken, &b, &img, &diag);
	tap_ok(err == -EIO && !img && !strcmp(diag.step, "cc") &&
		       strstr(diag.message, "see the log") && diag.log &&
		       strstr(diag.log, "undeclared_thing") &&
		       strstr(diag.log, "user-kernels:3"),
	       "a source that does not compile: %s, step \"%s\", the log "
	       "names the line",
	       agile_strerror(err), diag.step);
	tap_diag("message: %s", diag.message);
	agile__rt_diag_clear(&diag);

	err = agile__rt_compile(no_list, &b, &img, &diag);
	tap_ok(err == -EIO && diag.log &&
		       strstr(diag.log, "define AGILE_USER_KERNELS"),
	       "a source without AGILE_USER_KERNELS: %s, and the log says so",
	       agile_strerror(err));
	agile__rt_diag_clear(&diag);

	setenv("AGILE_CC", "/nonexistent/agile-cc", 1);
	err = agile__rt_compile(user_source, &b, &img, &diag);
	tap_ok(err == -ENOENT && !strcmp(diag.step, "cc") &&
		       strstr(diag.message, "/nonexistent/agile-cc"),
	       "no C compiler: %s, \"%s\"", agile_strerror(err), diag.message);
	unsetenv("AGILE_CC");
	agile__rt_diag_clear(&diag);

	b.arch = "sm_90";
	err = agile__rt_compile(user_source, &b, &img, &diag);
	tap_ok(err == -EINVAL && !strcmp(diag.step, "arguments"),
	       "an architecture for the CPU: %s", agile_strerror(err));
	agile__rt_diag_clear(&diag);
}

int main(void)
{
	struct agile__rt_diag diag = { 0 };
	char id[256];

	unsetenv("AGILE_CC");
	if (agile__rt_compiler_id(AGILE_RT_CPU, id, sizeof(id), &diag)) {
		tap_skip("kernels compiled for the CPU", "%s", diag.message);
		return tap_done();
	}
	tap_diag("compiler: %s", id);
	if (!tap_ok_call(cache_fresh(), "a fresh cache folder"))
		return tap_done();
	test_cpu_eus();
	test_failures();
	cache_remove();
	return tap_done();
}
