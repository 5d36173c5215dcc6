// SPDX-License-Identifier: MIT
/*
 * runtime-compile-contract - one source, one result: no target fuses
 * a * b + c into one multiply-add unless the build's options ask for it
 * (docs/runtime.md, "One source, one result").
 *
 *	cpu      y = a * x + y on floats built by cc with no options gives,
 *	         bit for bit, the product rounded then the sum rounded (the
 *	         inputs are chosen so that a fused result differs in most
 *	         elements); built with -ffp-contract=fast on a CPU with FMA,
 *	         it gives fmaf's bits
 *	nvrtc    the same source through NVRTC for sm_90: its PTX has the
 *	         multiply and the add rounded apart (mul.rn.f32, no
 *	         fma.rn.f32); with -ffp-contract=fast (the portable spelling,
 *	         given to NVRTC as --fmad=true) it has fma.rn.f32
 *
 * Each part is skipped only where its compiler is absent (or in the
 * static build, which loads no compiled code).
 */
#define _GNU_SOURCE
#include <agile/error.h>
#include <agile/runtime.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "rttest.h"
#include "compiletest.h"
#include "runtime/compile_impl.h"

#define N 4096
#define LANES 64

static const char source[] =
	"AGILE_PHASE(axpy_f)\n"
	"{\n"
	"	const float *x = (const float *)(uintptr_t)args[1];\n"
	"	float *y = (float *)(uintptr_t)args[2];\n"
	"	agile_u64 i = args[3] * nr_lanes + lane;\n"
	"\n"
	"	y[i] = agile_arg_float(args[0]) * x[i] + y[i];\n"
	"	return 0;\n"
	"}\n"
	"#define AGILE_USER_KERNELS(K) K(axpy_f, struct agile_no_state, 0, "
	"axpy_f)\n";

static const float a_value = 1.000244140625f; /* 1 + 2^-12 */

static float x_of(int i)
{
	return 1.0f + (float)i * 0x1p-20f;
}

static float y_of(int i)
{
	return -1.0f - (float)(i % 7) * 0x1p-21f;
}

/* The product rounded, then the sum rounded: nothing fused. */
static float unfused(float a, float x, float y)
{
	volatile float p = a * x;

	return p + y;
}

static bool has_fma(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_cpu_supports("fma");
#else
	return false;
#endif
}

/* Runs axpy_f built with @options on a CPU context; @y gets the result. */
static int run_cpu(const char *options, float *y)
{
	struct agile_rt_program *prog = NULL;
	struct agile_rt_buffer *bx = NULL, *by = NULL;
	struct agile_rt_queue *q = NULL;
	struct agile_rt_event *ev = NULL;
	struct agile_rt_kernel *k;
	agile_rt_ctx ctx;
	float *hx, *hy;
	int err = rt_cpu_ctx(2, &ctx);

	if (err)
		return err;
	err = agile_rt_program_create(ctx, source, NULL, 0, &prog);
	if (!err)
		err = agile_rt_program_build(prog, options);
	if (!err)
		err = agile_rt_program_kernel(prog, "axpy_f", &k);
	if (!err)
		err = agile_rt_queue_create(ctx, NULL, &q);
	if (!err)
		err = agile_rt_buffer_create(ctx, N * sizeof(float), &bx);
	if (!err)
		err = agile_rt_buffer_create(ctx, N * sizeof(float), &by);
	if (!err) {
		agile_rt_buffer_host(bx, (void **)&hx, NULL);
		agile_rt_buffer_host(by, (void **)&hy, NULL);
		for (int i = 0; i < N; i++) {
			hx[i] = x_of(i);
			hy[i] = y_of(i);
		}
	}
	if (!err) {
		struct agile_rt_arg args[] = {
			rt_val(agile_rt_float_word(a_value)),
			rt_buf(bx, AGILE_RT_READ),
			rt_buf(by, AGILE_RT_READ | AGILE_RT_WRITE),
			{ .kind = AGILE_RT_ARG_GROUP },
		};
		struct agile_rt_entry e = { .kernel = k,
					    .threads = LANES,
					    .groups = N / LANES,
					    .place = AGILE_RT_PLACE_CPU,
					    .nr_args = 4,
					    .args = args };

		err = agile_rt_enqueue(q, &e, &ev);
	}
	if (!err)
		err = agile_rt_event_wait(ev, RT_WAIT_NS);
	if (!err)
		memcpy(y, hy, N * sizeof(float));
	if (ev)
		agile_rt_event_release(ev);
	if (q)
		agile_rt_queue_destroy(q);
	if (bx)
		agile_rt_buffer_release(bx);
	if (by)
		agile_rt_buffer_release(by);
	if (prog)
		agile_rt_program_release(prog);
	agile_rt_ctx_release(ctx);
	return err;
}

/* How many of @y differ in their bits from @f(a, x, y0). */
static int mismatches(const float *y, float (*f)(float, float, float))
{
	int bad = 0;

	for (int i = 0; i < N; i++) {
		float want = f(a_value, x_of(i), y_of(i));

		bad += memcmp(&want, &y[i], sizeof(want)) != 0;
	}
	return bad;
}

static void test_cpu(void)
{
	static float y[N];
	int differ = 0, err;

	/* The inputs must tell the two apart, or the test proves nothing. */
	for (int i = 0; i < N; i++)
		differ += unfused(a_value, x_of(i), y_of(i)) !=
			  fmaf(a_value, x_of(i), y_of(i));
	if (!tap_ok(differ > N / 4,
		    "the inputs: fused and unfused differ in %d of %d", differ,
		    N))
		return;

	err = run_cpu(NULL, y);
	tap_ok(!err && !mismatches(y, unfused),
	       "cpu, no options: a * x + y rounded twice, every element "
	       "(%d differ): %s",
	       err ? -1 : mismatches(y, unfused), agile_strerror(err));
	if (!has_fma()) {
		tap_skip("cpu, -ffp-contract=fast", "this CPU has no FMA");
		return;
	}
	err = run_cpu("-ffp-contract=fast", y);
	tap_ok(!err && !mismatches(y, fmaf),
	       "cpu, -ffp-contract=fast: fmaf's bits, every element (%d "
	       "differ): %s",
	       err ? -1 : mismatches(y, fmaf), agile_strerror(err));
}

/* @src's PTX for sm_90 built with @options; NULL when not built. */
static struct agile__rt_image *ptx(const char *options)
{
	struct agile__rt_build b = { .target = AGILE_RT_CUDA,
				     .arch = "sm_90",
				     .options = options };
	struct agile__rt_diag diag = { 0 };
	struct agile__rt_image *img = NULL;
	int err = agile__rt_compile(source, &b, &img, &diag);

	if (err)
		tap_diag("NVRTC, options \"%s\": %s: %s", options,
			 agile_strerror(err), diag.message);
	agile__rt_diag_clear(&diag);
	return err ? NULL : img;
}

static void test_nvrtc(void)
{
	struct agile__rt_diag diag = { 0 };
	struct agile__rt_image *off, *fast;
	char id[256];
	int err = agile__rt_compiler_id(AGILE_RT_CUDA, id, sizeof(id), &diag);

	if (err == -ENOENT || err == -ENOTSUP) {
		tap_skip("NVRTC", "%s", diag.message);
		agile__rt_diag_clear(&diag);
		return;
	}
	agile__rt_diag_clear(&diag);
	off = ptx("");
	tap_ok(off && strstr(off->data, "mul.rn.f32") &&
		       !strstr(off->data, "fma.rn.f32"),
	       "NVRTC, no options: the multiply and the add rounded apart "
	       "(mul.rn.f32, no fma.rn.f32)");
	fast = ptx("-ffp-contract=fast");
	tap_ok(fast && strstr(fast->data, "fma.rn.f32") &&
		       strcmp(fast->key, off ? off->key : ""),
	       "NVRTC, -ffp-contract=fast: fma.rn.f32, under another key");
	agile__rt_image_free(off);
	agile__rt_image_free(fast);
}

int main(void)
{
	struct agile__rt_diag diag = { 0 };
	char id[256];

#ifdef AGILE_NO_DLOPEN
	tap_skip("contraction", "a static build loads no compiled code");
	return tap_done();
#endif
	unsetenv("AGILE_CC");
	unsetenv("AGILE_RT_CPU_FLAGS");
	if (!tap_ok_call(cache_fresh(), "a fresh cache folder"))
		return tap_done();
	if (agile__rt_compiler_id(AGILE_RT_CPU, id, sizeof(id), &diag))
		tap_skip("cpu", "%s", diag.message);
	else
		test_cpu();
	agile__rt_diag_clear(&diag);
	test_nvrtc();
	cache_remove();
	return tap_done();
}
