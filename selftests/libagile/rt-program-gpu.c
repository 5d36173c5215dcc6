// SPDX-License-Identifier: MIT
/*
 * rt-program-gpu - seed 003's load rule on a GPU device: a context on the
 * CPU and the GPU, the GPU's version from the device table, NVRTC for
 * real (a cubin for that version), the program's kernels enqueued GPU
 * only through the queue and run by GPU EUs started on the image:
 *
 *	compiled   no binary: NVRTC builds for the device's sm_XY, recorded
 *	           as a new binary {GPU, nvidia, sm_XY}; user_rotate runs
 *	           on the GPU EUs (right values, counted on the GPU), its
 *	           lane error comes back, the built-in axpy runs beside it;
 *	           a second program on that context: -EBUSY
 *	cache hit  the same on a new context: refused (-EBUSY) while the
 *	           context has a buffer, built once it is released: from
 *	           the cache, no NVRTC run
 *	exact      the saved binary given back: used, no NVRTC run
 *	fallback   a source NVRTC refuses (#error under AGILE_RT_GPU; the
 *	           CPU build is fine) with binaries labelled for other
 *	           versions: the one compatible label is chosen (sm_X(Y+1):
 *	           a newer minor, sm_(X-1)Y: another major, compute_(X+1)Y:
 *	           PTX for a newer GPU, all refused; compute_XY taken)
 *	error      the same source and no binary: -ENOEXEC with NVRTC's log;
 *	           the GPU pool is back on the built-in code (axpy runs on
 *	           GPU EUs)
 *
 * Without a GPU: on the stand-in runtime (gpu-mock.c as libcuda.so.1, a
 * child per gpumock.h), which runs the user kernels from their CPU build
 * ($MOCK_GPU_USER_SO).  Where an NVIDIA GPU is usable: the same on it,
 * for its own sm_XY, where the persistent kernel runs the user kernels.
 * Skipped where libnvrtc is absent, and in the static build.
 */
#define _GNU_SOURCE
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/gpu.h>
#include <agile/runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "rttest.h"
#include "compiletest.h"

#ifndef AGILE_NO_DLOPEN
#include "gpumock.h"

#define MIN_CHILD_PASSED 15
#define N 256

/* Builds for the CPU, refused by NVRTC (AGILE_RT_GPU: a GPU target). */
static char gpu_broken_source[sizeof(user_source) + 128];

static uint32_t gpu_id;
static char gpu_version[32];
static void *saved;
static size_t saved_size;

static uint64_t nvrtc_runs(void)
{
	return agile__rt_compiler_count(AGILE_RT_CUDA);
}

static int ctx_new(agile_rt_ctx *ctx)
{
	uint32_t devs[2] = { 0, gpu_id };
	struct agile_rt_ctx_opts o;

	agile_rt_ctx_opts_init(&o);
	o.devices = devs;
	o.nr_devices = 2;
	o.cpu_eus = 2;
	o.gpu_eus = 2;
	return agile_rt_ctx_create(&o, ctx);
}

/* A program on a new context, built; the GPU's build info. */
static int build_new(const char *source, const struct agile_rt_binary *bins,
		     uint32_t nr, agile_rt_ctx *ctx,
		     struct agile_rt_program **prog,
		     struct agile_rt_build_info *gi)
{
	int err;

	*ctx = 0;
	*prog = NULL;
	memset(gi, 0, sizeof(*gi));
	err = ctx_new(ctx);
	if (err)
		return err;
	err = agile_rt_program_create(*ctx, source, bins, nr, prog);
	if (err)
		return err;
	err = agile_rt_program_build(*prog, NULL);
	agile_rt_program_build_info(*prog, gpu_id, gi);
	return err;
}

/* Either may be 0 / NULL (not made). */
static void done(agile_rt_ctx ctx, struct agile_rt_program *prog)
{
	if (prog)
		agile_rt_program_release(prog);
	if (ctx)
		agile_rt_ctx_release(ctx);
}

static int wait_one(struct agile_rt_event *ev)
{
	int st = agile_rt_event_wait(ev, RT_WAIT_NS);

	agile_rt_event_release(ev);
	return st;
}

/*
 * On @ctx's GPU only: the built-in axpy, and with @prog its user_rotate
 * and user_fail_odd.  0 when all did what they should, on GPU EUs.
 */
static int run_on_gpu(agile_rt_ctx ctx, struct agile_rt_program *prog)
{
	struct agile_rt_kernel *rot = NULL, *odd = NULL, *axpy;
	struct agile_rt_buffer *xb, *yb;
	struct agile_rt_event *ev;
	struct agile_rt_queue *q;
	struct agile_rt_stats st;
	double *x, *y, want[ROTATE_LANES];
	uint64_t groups = 0;
	int err;

	err = agile_rt_kernel_get(ctx, AGILE_KERNEL_AXPY, &axpy);
	if (!err && prog)
		err = agile_rt_program_kernel(prog, "user_rotate", &rot);
	if (!err && prog)
		err = agile_rt_program_kernel(prog, "user_fail_odd", &odd);
	if (!err)
		err = agile_rt_queue_create(ctx, NULL, &q);
	if (err)
		return err;
	agile_rt_buffer_create(ctx, N * sizeof(double), &xb);
	agile_rt_buffer_create(ctx, N * sizeof(double), &yb);
	agile_rt_buffer_host(xb, (void **)&x, NULL);
	agile_rt_buffer_host(yb, (void **)&y, NULL);
	for (int i = 0; i < N; i++) {
		x[i] = 2 * i + 1;
		y[i] = 1;
	}
	rotate_expect(x, want);
	if (rot) {
		struct agile_rt_arg a[] = { rt_buf(xb, AGILE_RT_READ |
							       AGILE_RT_WRITE),
					    rt_val(ROTATE_FACTOR) };
		struct agile_rt_entry e = { .kernel = rot,
					    .threads = ROTATE_LANES,
					    .groups = 1,
					    .place = AGILE_RT_PLACE_GPU_ONLY,
					    .nr_args = 2,
					    .args = a };

		err = agile_rt_enqueue(q, &e, &ev);
		err = err ? err : wait_one(ev);
		if (!err && memcmp(x, want, sizeof(want)))
			err = -EDOM;
		groups++;
		if (!err) {
			e.kernel = odd;
			e.threads = FAIL_ODD_LANES;
			e.nr_args = 0;
			err = agile_rt_enqueue(q, &e, &ev);
			err = err ? err : wait_one(ev);
			err = err == -ERANGE ? 0 : err ? err : -EPROTO;
			groups++;
		}
	} else {
		memcpy(want, x, sizeof(want));
	}
	if (!err) {
		/* y = 2 x + y, after the rotation by data flow */
		struct agile_rt_arg a[] = {
			rt_val(rt_bits(2)),
			rt_buf(xb, AGILE_RT_READ),
			rt_buf(yb, AGILE_RT_READ | AGILE_RT_WRITE),
			rt_val(N),
		};
		struct agile_rt_entry e = { .kernel = axpy,
					    .threads = 32,
					    .groups = 1,
					    .place = AGILE_RT_PLACE_GPU_ONLY,
					    .nr_args = 4,
					    .args = a };

		err = agile_rt_enqueue(q, &e, &ev);
		err = err ? err : wait_one(ev);
		if (!err && y[5] != 2 * want[5] + 1)
			err = -EDOM;
		groups++;
	}
	agile_rt_stats(q, &st);
	if (!err && (st.devices[1].eu_kind != AGILE_EU_KIND_GPU ||
		     st.devices[1].groups != groups || st.devices[0].groups))
		err = -EXDEV;
	agile_rt_buffer_release(xb);
	agile_rt_buffer_release(yb);
	agile_rt_queue_destroy(q);
	return err;
}

static void test_compiled(void)
{
	struct agile_rt_build_info gi, ci;
	struct agile_rt_program *prog, *other;
	struct agile_rt_binary b = { 0 };
	uint64_t n0 = nvrtc_runs();
	agile_rt_ctx ctx;
	uint32_t nr = 0;
	int err;

	err = build_new(user_source, NULL, 0, &ctx, &prog, &gi);
	if (!tap_ok(!err && gi.branch == AGILE_RT_BUILD_COMPILED &&
			    nvrtc_runs() == n0 + 1 &&
			    !strcmp(gi.version, gpu_version),
		    "no binary: NVRTC for the device's %s (branch %u, %s: "
		    "%s): %s",
		    gi.version, gi.branch, gi.step, gi.message,
		    agile_strerror(err))) {
		done(ctx, prog);
		return;
	}
	agile_rt_program_build_info(prog, 0, &ci);
	agile_rt_program_binary_count(prog, &nr);
	agile_rt_program_binary(prog, gi.binary, &b);
	tap_ok(ci.branch != AGILE_RT_BUILD_FAILED && nr == 2 &&
		       b.origin == AGILE_RT_BINARY_COMPILED &&
		       b.type == AGILE_RT_DEVICE_GPU &&
		       !strcmp(b.vendor, "nvidia") &&
		       !strcmp(b.version, gpu_version) && b.size > 64 &&
		       !memcmp(b.image, "\177ELF", 4),
	       "recorded: GPU/%s/%s, a cubin of %zu bytes; the CPU's "
	       "build beside it (branch %u)",
	       b.vendor, b.version, b.size, ci.branch);
	saved = malloc(b.size);
	if (saved) {
		memcpy(saved, b.image, b.size);
		saved_size = b.size;
	}
	err = run_on_gpu(ctx, prog);
	tap_ok(!err,
	       "on GPU EUs through the queue: user_rotate, user_fail_odd's "
	       "-ERANGE, the built-in axpy: %s",
	       agile_strerror(err));

	err = agile_rt_program_create(ctx, user_source, NULL, 0, &other);
	err = err ? err : agile_rt_program_build(other, NULL);
	agile_rt_program_build_info(other, gpu_id, &gi);
	tap_ok(err == -EBUSY && gi.status == -EBUSY,
	       "a second program's GPU image on that context: %s (%s)",
	       agile_strerror(err), gi.message);
	agile_rt_program_release(other);
	done(ctx, prog);
}

static void test_cache_hit(void)
{
	struct agile_rt_build_info gi;
	struct agile_rt_program *prog = NULL;
	struct agile_rt_buffer *buf = NULL;
	uint64_t n0 = nvrtc_runs();
	agile_rt_ctx ctx = 0;
	int err;

	/* A buffer in the GPU pool's arena first: the pool must stay. */
	err = ctx_new(&ctx);
	err = err ? err : agile_rt_buffer_create(ctx, 64, &buf);
	err = err ? err :
		    agile_rt_program_create(ctx, user_source, NULL, 0, &prog);
	err = err ? err : agile_rt_program_build(prog, NULL);
	agile_rt_program_build_info(prog, gpu_id, &gi);
	tap_ok(err == -EBUSY && gi.status == -EBUSY,
	       "a GPU image while the context has a buffer: %s (%s)",
	       agile_strerror(err), gi.message);
	if (buf)
		agile_rt_buffer_release(buf);
	if (err == -EBUSY)
		err = agile_rt_program_build(prog, NULL);
	agile_rt_program_build_info(prog, gpu_id, &gi);
	tap_ok(!err && gi.branch == AGILE_RT_BUILD_CACHE_HIT &&
		       nvrtc_runs() == n0,
	       "again on a new context: a cache hit, no NVRTC run (branch "
	       "%u): %s",
	       gi.branch, agile_strerror(err));
	err = err ? err : run_on_gpu(ctx, prog);
	tap_ok(!err, "runs on GPU EUs: %s", agile_strerror(err));
	done(ctx, prog);
}

static struct agile_rt_binary gpu_binary(const char *version)
{
	struct agile_rt_binary b = { .type = AGILE_RT_DEVICE_GPU,
				     .image = saved,
				     .size = saved_size };

	snprintf(b.vendor, sizeof(b.vendor), "nvidia");
	snprintf(b.version, sizeof(b.version), "%s", version);
	return b;
}

static void test_exact(void)
{
	struct agile_rt_binary b = gpu_binary(gpu_version);
	struct agile_rt_build_info gi;
	struct agile_rt_program *prog;
	uint64_t n0 = nvrtc_runs();
	agile_rt_ctx ctx;
	int err;

	err = build_new(user_source, &b, 1, &ctx, &prog, &gi);
	tap_ok(!err && gi.branch == AGILE_RT_BUILD_EXACT && gi.binary == 0 &&
		       nvrtc_runs() == n0,
	       "the saved binary for %s: used exactly, no NVRTC run (branch "
	       "%u): %s",
	       gpu_version, gi.branch, agile_strerror(err));
	err = err ? err : run_on_gpu(ctx, prog);
	tap_ok(!err, "runs on GPU EUs: %s", agile_strerror(err));
	done(ctx, prog);
}

static void test_fallback(void)
{
	int cc = atoi(gpu_version + 3), major = cc / 10, minor = cc % 10;
	char v[4][32];
	struct agile_rt_binary bins[4];
	struct agile_rt_build_info gi;
	struct agile_rt_program *prog;
	const char *log = NULL;
	agile_rt_ctx ctx;
	int err;

	snprintf(v[0], sizeof(v[0]), "sm_%d%d", major, minor + 1);
	snprintf(v[1], sizeof(v[1]), "sm_%d%d", major - 1, minor);
	snprintf(v[2], sizeof(v[2]), "compute_%d%d", major + 1, minor);
	snprintf(v[3], sizeof(v[3]), "compute_%d%d", major, minor);
	for (int i = 0; i < 4; i++)
		bins[i] = gpu_binary(v[i]);
	err = build_new(gpu_broken_source, bins, 4, &ctx, &prog, &gi);
	agile_rt_program_build_log(prog, gpu_id, &log);
	tap_ok(!err && gi.branch == AGILE_RT_BUILD_FALLBACK && gi.binary == 3 &&
		       !strcmp(gi.step, "nvrtcCompileProgram") && log &&
		       strstr(log, "no GPU build"),
	       "NVRTC refuses the source; of %s %s %s %s on %s the "
	       "compatible %s is used (binary %u, branch %u): %s",
	       v[0], v[1], v[2], v[3], gpu_version, v[3], gi.binary, gi.branch,
	       agile_strerror(err));
	err = err ? err : run_on_gpu(ctx, prog);
	tap_ok(!err, "the fallback runs on GPU EUs: %s", agile_strerror(err));
	done(ctx, prog);
}

static void test_error(void)
{
	struct agile_rt_build_info gi, ci;
	struct agile_rt_program *prog;
	const char *log = NULL;
	agile_rt_ctx ctx;
	int err;

	err = build_new(gpu_broken_source, NULL, 0, &ctx, &prog, &gi);
	agile_rt_program_build_info(prog, 0, &ci);
	agile_rt_program_build_log(prog, gpu_id, &log);
	tap_ok(err == -ENOEXEC && gi.branch == AGILE_RT_BUILD_FAILED &&
		       gi.status == -ENOEXEC &&
		       ci.branch != AGILE_RT_BUILD_FAILED && log &&
		       strstr(log, "no GPU build"),
	       "NVRTC refuses it and no binary: %s, step %s, the log says "
	       "why; the CPU built (branch %u)",
	       agile_strerror(err), gi.step, ci.branch);
	err = err == -ENOEXEC ? run_on_gpu(ctx, NULL) : err;
	tap_ok(!err,
	       "the GPU pool is back on the built-in code: axpy on "
	       "GPU EUs: %s",
	       agile_strerror(err));
	done(ctx, prog);
}

/* The whole test against the GPU runtime this process has. */
static void test_gpu(void)
{
	struct agile_rt_req gpu_req = { .key = AGILE_RT_KEY_TYPE,
					.cmp = AGILE_RT_CMP_EQ,
					.value = AGILE_RT_DEVICE_GPU };
	struct agile_rt_req usable = { .key = AGILE_RT_KEY_USABLE,
				       .cmp = AGILE_RT_CMP_EQ,
				       .value = 1,
				       .flags = AGILE_RT_REQ_MUST };
	struct agile_rt_req reqs[] = { gpu_req, usable };
	struct agile_rt_device_info info;
	struct agile__rt_diag diag = { 0 };
	uint32_t nr = 0;
	char id[256];
	int err;

	setenv("AGILE_QUIET", "1", 1);
	err = agile_rt_device_match(reqs, 2, AGILE_RT_MATCH_SCORE, &gpu_id, 1,
				    &nr);
	if (!tap_ok(!err && nr >= 1, "a usable GPU in the table"))
		return;
	agile_rt_device_info(gpu_id, &info);
	snprintf(gpu_version, sizeof(gpu_version), "%s", info.version);
	if (strcmp(info.vendor, "nvidia")) {
		tap_skip("executables on the GPU", "an %s GPU: NVIDIA only yet",
			 info.vendor);
		return;
	}
	tap_ok(!strncmp(gpu_version, "sm_", 3) && atoi(gpu_version + 3) >= 10,
	       "its version from the device table: \"%s\" (%s)", gpu_version,
	       info.name);
	if (agile__rt_compiler_id(AGILE_RT_CUDA, id, sizeof(id), &diag)) {
		tap_skip("executables on the GPU", "%s", diag.message);
		agile__rt_diag_clear(&diag);
		return;
	}
	tap_diag("compiler: %s", id);
	snprintf(gpu_broken_source, sizeof(gpu_broken_source),
		 "%s#ifdef AGILE_RT_GPU\n#error no GPU build of this source\n"
		 "#endif\n",
		 user_source);
	test_compiled();
	if (saved) {
		test_cache_hit();
		test_exact();
		test_fallback();
	}
	test_error();
	free(saved);
}

static int child(const char *lib)
{
	(void)lib;
	test_gpu();
	return tap_done();
}
#endif

int main(int argc, char **argv)
{
#ifdef AGILE_NO_DLOPEN
	(void)argc;
	(void)argv;
	tap_skip("executables on a GPU", "a static build loads no runtime");
	return tap_done();
#else
	struct agile__rt_build b = { .target = AGILE_RT_CPU };
	struct agile__rt_diag diag = { 0 };
	struct agile__rt_image *cpu = NULL;
	char why[512], id[256];

	if (argc > 2 && !strcmp(argv[1], "--mock"))
		return child(argv[2]);
	unsetenv("AGILE_CC");
	if (agile__rt_compiler_id(AGILE_RT_CUDA, id, sizeof(id), &diag)) {
		tap_skip("executables on a GPU", "%s", diag.message);
		agile__rt_diag_clear(&diag);
		return tap_done();
	}
	if (!tap_ok_call(cache_fresh(), "a fresh cache folder"))
		return tap_done();
	if (agile__gpu_status(why, sizeof(why))) {
		tap_diag("a usable GPU is here: %s", why);
		test_gpu();
	} else if (agile__rt_compile(user_source, &b, &cpu, &diag)) {
		tap_skip("executables on the stand-in GPU", "no CPU build: %s",
			 diag.message);
	} else {
		/* The stand-in runs the user kernels from their CPU build. */
		setenv("MOCK_GPU_USER_SO", cpu->path, 1);
		for (int m = 0; m < (int)(sizeof(mocks) / sizeof(mocks[0]));
		     m++)
			if (!strcmp(mocks[m].api, "cuda"))
				mock_run_one(m, MIN_CHILD_PASSED);
	}
	agile__rt_image_free(cpu);
	agile__rt_diag_clear(&diag);
	cache_remove();
	return tap_done();
#endif
}
