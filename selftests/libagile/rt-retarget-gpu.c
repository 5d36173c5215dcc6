// SPDX-License-Identifier: MIT
/*
 * rt-retarget-gpu - the retarget test kernels in the runtime's dialect
 * (agile-retarget --emit=runtime, as rt-retarget) and rt-retarget's
 * dialect 2 source by hand (shared-rotate) for GPU EUs:
 *
 *	compiled   each file by NVRTC for real, PTX for compute_80 and a
 *	           cubin for sm_90, and by hiprtc for gfx90a (each skipped
 *	           only where its compiler is absent; under ASan and TSan
 *	           each file for one of the three: SANITIZED below): the persistent kernel
 *	           with the file's kernels, their block-shared memory in its
 *	           __shared__ buffer and their control functions
 *	run        each file one program on a context of the CPU and the
 *	           GPU, built (the GPU's build compiled), every case of
 *	           rt-retarget enqueued GPU-only, against the same
 *	           references, and counted on the GPU's EUs only
 *
 * The run happens on the stand-in CUDA runtime where there is no GPU
 * (gpu-mock.c, which runs the user kernels from their CPU build: the
 * runtime's side of GPU EUs, the arguments, the block-shared memory and
 * the control function through the mock's lanes, not the GPU code), and
 * on the GPU where an NVIDIA one is usable (in GPU_TESTS, make
 * check-gpu).  Skipped in the static build.
 */
#define _GNU_SOURCE
#include <agile/error.h>
#include <agile/gpu.h>
#include <agile/runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "compiletest.h"
#include "rtretarget.h"

#ifndef AGILE_NO_DLOPEN
#include "gpumock.h"

/* In the child: per file, a build line, the cases, the GPU's count. */
#define MIN_CHILD_PASSED (2 * ((int)RR_NR_FILES - RR_NR_CPU_ONLY) + RR_NR_CASES)

static uint32_t gpu_id;

/*
 * Under ASan or TSan, NVRTC and hiprtc (large, uninstrumented, but
 * intercepted) compile 2-3x slower, the longest of the sanitized suites:
 * there each file is compiled for one target of the three in turn (file
 * i for target i % 3), so that every file and every target's path
 * through the library still runs; the native run compiles them all.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static void compile_for(enum agile__rt_target t, const char *arch,
			uint32_t flags, unsigned which)
{
	struct agile__rt_build b = { .target = t,
				     .arch = arch,
				     .flags = flags };
	struct agile__rt_diag diag = { 0 };
	char id[256];

	if (agile__rt_compiler_id(t, id, sizeof(id), &diag)) {
		tap_skip(arch, "%s", diag.message);
		agile__rt_diag_clear(&diag);
		return;
	}
	for (size_t i = 0; i < RR_NR_FILES; i++) {
		struct agile__rt_image *img = NULL;
		int err;

		if (SANITIZED && i % 3 != which)
			continue;
		err = agile__rt_compile(rr_files[i].source, &b, &img, &diag);

		if (!tap_ok(!err && img && img->size > 64,
			    "%s: %s compiles it for %s (%s, %zu bytes): %s",
			    rr_files[i].name, id, arch,
			    t == AGILE_RT_HIP	   ? "a code object" :
			    flags & AGILE_RT_CUBIN ? "a cubin" :
						     "PTX",
			    img ? img->size : 0, diag.message))
			tap_diag("%s", diag.log ? diag.log : "");
		agile__rt_image_free(img);
		agile__rt_diag_clear(&diag);
	}
}

static int ctx_new(agile_rt_ctx *ctx)
{
	uint32_t devs[2] = { 0, gpu_id };
	struct agile_rt_ctx_opts o;

	agile_rt_ctx_opts_init(&o);
	o.devices = devs;
	o.nr_devices = 2;
	o.cpu_eus = 1;
	o.gpu_eus = 2;
	return agile_rt_ctx_create(&o, ctx);
}

static void run_file(const struct rr_file *f)
{
	struct agile_rt_build_info gi = { 0 };
	struct rr r = { .lanes = AGILE_MAX_LANES,
			.place = AGILE_RT_PLACE_GPU_ONLY };
	struct agile__rt_build b = { .target = AGILE_RT_CPU };
	struct agile__rt_diag diag = { 0 };
	struct agile__rt_image *cpu = NULL;
	struct agile_rt_stats st;
	int err;

	/* The stand-in runs the user kernels from this CPU build. */
	err = agile__rt_compile(f->source, &b, &cpu, &diag);
	if (!err)
		setenv("MOCK_GPU_USER_SO", cpu->path, 1);
	err = err ? err : ctx_new(&r.ctx);
	err = err ? err :
		    agile_rt_program_create(r.ctx, f->source, NULL, 0, &r.prog);
	err = err ? err : agile_rt_program_build(r.prog, NULL);
	agile_rt_program_build_info(r.prog, gpu_id, &gi);
	err = err ? err : agile_rt_queue_create(r.ctx, NULL, &r.q);
	if (tap_ok(!err && (gi.branch == AGILE_RT_BUILD_COMPILED ||
			    gi.branch == AGILE_RT_BUILD_CACHE_HIT),
		   "%s: built for the GPU's %s (branch %u, %s: %s): %s",
		   f->name, gi.version, gi.branch, gi.step, gi.message,
		   agile_strerror(err))) {
		rr_run_file(&r, f->name);
		agile_rt_stats(r.q, &st);
		tap_ok(st.devices[1].eu_kind == AGILE_EU_KIND_GPU &&
			       st.devices[1].groups > 0 &&
			       !st.devices[0].groups,
		       "%s: every block ran on GPU EUs (%llu groups there, %llu on the CPU)",
		       f->name, (unsigned long long)st.devices[1].groups,
		       (unsigned long long)st.devices[0].groups);
	}
	if (r.q)
		agile_rt_queue_destroy(r.q);
	if (r.prog)
		agile_rt_program_release(r.prog);
	if (r.ctx)
		agile_rt_ctx_release(r.ctx);
	agile__rt_image_free(cpu);
	agile__rt_diag_clear(&diag);
}

/* Every file on the GPU runtime this process has. */
static void test_gpu(void)
{
	struct agile_rt_req reqs[] = {
		{ .key = AGILE_RT_KEY_TYPE,
		  .cmp = AGILE_RT_CMP_EQ,
		  .value = AGILE_RT_DEVICE_GPU },
		{ .key = AGILE_RT_KEY_USABLE,
		  .cmp = AGILE_RT_CMP_EQ,
		  .value = 1,
		  .flags = AGILE_RT_REQ_MUST },
	};
	struct agile_rt_device_info info;
	uint32_t nr = 0;
	int err;

	setenv("AGILE_QUIET", "1", 1);
	err = agile_rt_device_match(reqs, 2, AGILE_RT_MATCH_SCORE, &gpu_id, 1,
				    &nr);
	if (!tap_ok(!err && nr >= 1, "a usable GPU in the table"))
		return;
	agile_rt_device_info(gpu_id, &info);
	if (strcmp(info.vendor, "nvidia")) {
		tap_skip("retargeted kernels on the GPU",
			 "an %s GPU: NVIDIA only yet", info.vendor);
		return;
	}
	for (size_t i = 0; i < RR_NR_FILES; i++)
		if (!rr_files[i].cpu_only)
			run_file(&rr_files[i]);
}

static int child(void)
{
	test_gpu();
	return tap_done();
}
#endif

int main(int argc, char **argv)
{
#ifdef AGILE_NO_DLOPEN
	(void)argc;
	(void)argv;
	tap_skip("retargeted kernels on GPU EUs",
		 "a static build loads no runtime");
	return tap_done();
#else
	char why[512];

	if (argc > 2 && !strcmp(argv[1], "--mock"))
		return child();
	unsetenv("AGILE_CC");
	if (!tap_ok_call(cache_fresh(), "a fresh cache folder"))
		return tap_done();
	compile_for(AGILE_RT_CUDA, "sm_80", 0, 0); /* PTX for compute_80 */
	compile_for(AGILE_RT_CUDA, "sm_90", AGILE_RT_CUBIN, 1);
	compile_for(AGILE_RT_HIP, "gfx90a", 0, 2);
	if (agile__gpu_status(why, sizeof(why))) {
		tap_diag("a usable GPU is here: %s", why);
		test_gpu();
	} else {
		for (int m = 0; m < (int)(sizeof(mocks) / sizeof(mocks[0]));
		     m++)
			if (!strcmp(mocks[m].api, "cuda"))
				mock_run_one(m, MIN_CHILD_PASSED);
	}
	cache_remove();
	return tap_done();
#endif
}
