// SPDX-License-Identifier: MIT
/*
 * rt-retarget - unmodified CUDA/HIP kernels through the runtime on CPU
 * EUs: the retarget test kernels (retarget/: the .cu files and hipnames.hip), which
 * agile-retarget --emit=runtime turned into the runtime's dialect when
 * the tests were built, each file one program on a CPU context, built by
 * agile_rt_program_build (cc, compiled; no warning in the log) and run
 * through agile_rt_enqueue, one group per thread block, against the plain
 * C references of the retarget-* tests (retargetref.h):
 *
 *	matlist     the seed's example, blocks of 16, 256 and 1024 threads
 *	            on 64 lanes (16 threads a lane), 16 threads on 7 lanes;
 *	            1024 threads on 63 lanes: -ENOSPC, nothing written
 *	reduce      a tree in block-shared memory, barriers in a loop, an
 *	            atomic total, early returns (a block ends when all its
 *	            threads returned)
 *	transpose   a shared tile, smoothing rounds in a loop of barriers
 *	grid3d      3-D blocks, extern __shared__, __device__ helpers, a
 *	            uniform if/else and a do/while holding barriers, an
 *	            atomicMax on shared memory; a local carried per thread
 *	hipnames    HIP's hipThreadIdx_x names, a float parameter
 *	histogram   atomics on __shared__ (plain on the CPU) and on global
 *	            memory (contended by the blocks), each atomic's old value
 *	scan        Hillis and Steele in block-shared memory: a barrier
 *	            loop of two barriers a round
 *	pointers    writes through parameters and pointer locals in every
 *	            form (atomicAdd(&bins[b], 1u), *(p + i) = , ...)
 *	vector      float4 saxpy; float4, double2 block-shared, a float2 in
 *	            the lane state; the types' sizes and alignments
 *	intrinsics  __popc, __clz, __ffs, __brev, __umulhi, __mul24, ...,
 *	            __ldg; fmaf, __saturatef, __fdividef, __expf, ... bit
 *	            for bit (retargetbuiltins.h)
 *	warpreduce  __shfl_down_sync in two levels, block-shared staging;
 *	            blocks of 32 to 1024 threads and partial warps (80, 200)
 *	            on 64 lanes, 80 on 5 lanes
 *	warpvote    every vote and shuffle, __shfl_xor_sync of every mask
 *	            and width, bit for bit against retargetref.h's warps
 *	shared-rotate  dialect 2 by hand: block-shared memory, the phases
 *	            in order (AGILE_IN_ORDER), 64 and 5 lanes
 *
 * The same sources on GPU EUs: rt-retarget-gpu.  Skipped in the static
 * build (no cc, no dlopen).
 */
#define _GNU_SOURCE
#include <agile/error.h>
#include <agile/runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "compiletest.h"
#include "rtretarget.h"

#ifndef AGILE_NO_DLOPEN
static void test_file(const struct rr_file *f)
{
	struct agile_rt_build_info info = { 0 };
	struct rr r = { .lanes = AGILE_MAX_LANES, .place = AGILE_RT_PLACE_CPU };
	const char *log = NULL;
	int err;

	err = rt_cpu_ctx(2, &r.ctx);
	err = err ? err :
		    agile_rt_program_create(r.ctx, f->source, NULL, 0, &r.prog);
	err = err ? err : agile_rt_program_build(r.prog, NULL);
	agile_rt_program_build_info(r.prog, 0, &info);
	agile_rt_program_build_log(r.prog, 0, &log);
	if (!tap_ok(!err && info.branch == AGILE_RT_BUILD_COMPILED &&
			    (!log || !strstr(log, "warning")),
		    "%s: its source built by cc, no warning "
		    "(branch %u, %s: %s): %s",
		    f->name, info.branch, info.step, info.message,
		    agile_strerror(err))) {
		if (log)
			tap_diag("%s", log);
		goto out;
	}
	err = agile_rt_queue_create(r.ctx, NULL, &r.q);
	if (!tap_ok(!err, "%s: a queue", f->name))
		goto out;
	rr_run_file(&r, f->name);
	if (!strcmp(f->name, "matlist")) {
		r.lanes = 7; /* 16 threads: 3, 3, 2, 2, 2, 2, 2 a lane */
		rr_matlist(&r, 4);
	}
	agile_rt_queue_destroy(r.q);
out:
	if (r.prog)
		agile_rt_program_release(r.prog);
	if (r.ctx)
		agile_rt_ctx_release(r.ctx);
}
#endif

int main(void)
{
#ifdef AGILE_NO_DLOPEN
	tap_skip("retargeted kernels through the runtime",
		 "a static build loads no compiled code");
#else
	unsetenv("AGILE_CC");
	if (!tap_ok_call(cache_fresh(), "a fresh cache folder"))
		return tap_done();
	for (size_t i = 0; i < RR_NR_FILES; i++)
		test_file(&rr_files[i]);
	cache_remove();
#endif
	return tap_done();
}
