// SPDX-License-Identifier: MIT
/*
 * rt-cuda - CUDA and HIP source straight into agile_rt_program_create,
 * built with "-x cuda" ("-x hip"): the runtime translates it in-process
 * with libagile-retarget.so (docs/runtime.md, "CUDA and HIP source"), then
 * builds the dialect for its devices as any other source.  On CPU EUs:
 *
 *	missing     AGILE_RETARGET_DIR at an empty folder: -ENOEXEC, step
 *	            "retarget", the message naming libagile-retarget.so and
 *	            the folder (first: once loaded, it stays loaded)
 *	files       every retarget test kernel (retarget/: the .cu files,
 *	            hipnames.hip with -x hip) as its CUDA text, the __global__
 *	            names the kernels' names, against the references of
 *	            rt-retarget (retargetref.h); dynshared.cu's extern
 *	            __shared__ sized at launch, constant.cu's globals in a
 *	            buffer laid out as the tool's struct constant_globals
 *	            (the word after the parameters)
 *	bits        matlist from CUDA and from agile-retarget --emit=runtime's
 *	            output (the tool's path, rt-retarget's) give the same bits
 *	cache       the same CUDA and options on another context: a cache hit
 *	            (no cc run); --lane-threads=8 another translation, another
 *	            key (compiled)
 *	refused     a barrier under thread-dependent control flow: -ENOEXEC,
 *	            step "retarget", the translator's "user-kernels.cu:LINE:COL:
 *	            error:" in the message and the build log; with a CPU
 *	            binary given beside it, that binary runs (fallback)
 *	options     -x fortran, --lane-threads without -x: -EINVAL, the outcome
 *	            naming the option
 *
 * Skipped in the static build (no cc, no dlopen) and where the translator
 * was not built (no libclang).
 */
#define _GNU_SOURCE
#include <agile/error.h>
#include <agile/runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "compiletest.h"
#include "rtretarget.h"

#ifndef AGILE_NO_DLOPEN

#ifndef RETARGET_SRC
#error "RETARGET_SRC: the folder of the retarget test kernels"
#endif

/* A kernel file of retarget/ as a NUL-terminated array named @sym. */
#define CU_EMBED(sym, file)                               \
	__asm__(".pushsection .rodata\n"                  \
		".global " #sym "\n"                      \
		".hidden " #sym "\n"                      \
		".type " #sym ", @object\n" #sym ":\n"    \
		".incbin \"" RETARGET_SRC "/" file "\"\n" \
		".byte 0\n"                               \
		".size " #sym ", . - " #sym "\n"          \
		".popsection\n");                         \
	extern const char sym[]

CU_EMBED(cu_matlist, "matlist.cu");
CU_EMBED(cu_reduce, "reduce.cu");
CU_EMBED(cu_transpose, "transpose.cu");
CU_EMBED(cu_grid3d, "grid3d.cu");
CU_EMBED(cu_hipnames, "hipnames.hip");
CU_EMBED(cu_histogram, "histogram.cu");
CU_EMBED(cu_scan, "scan.cu");
CU_EMBED(cu_pointers, "pointers.cu");
CU_EMBED(cu_dynshared, "dynshared.cu");
CU_EMBED(cu_constant, "constant.cu");

/* rr_files' names, each with its CUDA text and build options. */
static const struct {
	const char *name, *source, *options;
} cu_files[] = {
	{ "matlist", cu_matlist, "-x cuda" },
	{ "reduce", cu_reduce, "-x cuda" },
	{ "transpose", cu_transpose, "-x cuda" },
	/* extern __shared__: the size the Makefile gives the tool */
	{ "grid3d", cu_grid3d, "-x cuda --dynamic-shared=4096" },
	{ "hipnames", cu_hipnames, "-x hip" },
	{ "histogram", cu_histogram, "-x cuda" },
	{ "scan", cu_scan, "-x cuda" },
	{ "pointers", cu_pointers, "-x cuda" },
	/* extern __shared__ sized at launch; the globals' buffer */
	{ "dynshared", cu_dynshared, "-x cuda" },
	{ "constant", cu_constant, "-x cuda" },
};

/* A refused kernel: the barrier at line 4, column 3; the if at 3:2. */
static const char cu_refused[] = "__global__ void half_barrier(float *x)\n"
				 "{\n"
				 "\tif (threadIdx.x < 16)\n"
				 "\t\t__syncthreads();\n"
				 "\tx[threadIdx.x] = 1.0f;\n"
				 "}\n";

/* A program of @source built with @options on a new CPU context. */
static int build(struct rr *r, const char *source, const char *options,
		 const struct agile_rt_binary *bins, uint32_t nr_bins,
		 struct agile_rt_build_info *info, const char **log)
{
	int err;

	memset(info, 0, sizeof(*info));
	*log = NULL;
	r->lanes = AGILE_MAX_LANES;
	r->place = AGILE_RT_PLACE_CPU;
	err = rt_cpu_ctx(2, &r->ctx);
	err = err ? err :
		    agile_rt_program_create(r->ctx, source, bins, nr_bins,
					    &r->prog);
	err = err ? err : agile_rt_program_build(r->prog, options);
	if (r->prog) {
		agile_rt_program_build_info(r->prog, 0, info);
		agile_rt_program_build_log(r->prog, 0, log);
	}
	return err;
}

static void done(struct rr *r)
{
	if (r->q)
		agile_rt_queue_destroy(r->q);
	if (r->prog)
		agile_rt_program_release(r->prog);
	if (r->ctx)
		agile_rt_ctx_release(r->ctx);
	memset(r, 0, sizeof(*r));
}

static void test_missing(void)
{
	struct agile_rt_build_info info;
	struct rr r = { 0 };
	char empty[] = "/tmp/agile-no-retarget-XXXXXX";
	const char *log;
	int err;

	if (!mkdtemp(empty)) {
		tap_skip("the translator missing", "no temporary folder");
		return;
	}
	setenv("AGILE_RETARGET_DIR", empty, 1);
	err = build(&r, cu_matlist, "-x cuda", NULL, 0, &info, &log);
	tap_ok(err == -ENOEXEC && info.branch == AGILE_RT_BUILD_FAILED &&
		       !strcmp(info.step, "retarget") &&
		       strstr(info.message, "libagile-retarget.so") &&
		       strstr(info.message, empty) && strstr(log, empty),
	       "the translator missing (AGILE_RETARGET_DIR empty): -ENOEXEC, "
	       "step retarget, naming the file and the folder (%s; %s: %s)",
	       agile_strerror(err), info.step, info.message);
	done(&r);
	unsetenv("AGILE_RETARGET_DIR");
	rmdir(empty);
}

static void test_files(void)
{
	for (size_t i = 0; i < sizeof(cu_files) / sizeof(cu_files[0]); i++) {
		struct agile_rt_build_info info;
		struct rr r = { 0 };
		const char *log;
		int err = build(&r, cu_files[i].source, cu_files[i].options,
				NULL, 0, &info, &log);

		if (!tap_ok(!err && info.branch == AGILE_RT_BUILD_COMPILED &&
				    !strstr(log, "warning"),
			    "%s: its CUDA text translated and built by cc, "
			    "no warning (%s; branch %u, %s: %s)",
			    cu_files[i].name, agile_strerror(err), info.branch,
			    info.step, info.message)) {
			tap_diag("%s", log ? log : "");
			done(&r);
			continue;
		}
		err = agile_rt_queue_create(r.ctx, NULL, &r.q);
		if (tap_ok(!err, "%s: a queue", cu_files[i].name))
			rr_run_file(&r, cu_files[i].name);
		done(&r);
	}
}

/* matlist's result with @source built with @options, into @out. */
static int matlist_bits(const char *source, const char *options, float *out,
			size_t n, int dim)
{
	struct agile_rt_build_info info;
	struct agile_rt_buffer *ab = NULL, *bb = NULL;
	struct rr r = { 0 };
	const char *log;
	float *a, *b;
	int err = build(&r, source, options, NULL, 0, &info, &log);

	err = err ? err : agile_rt_queue_create(r.ctx, NULL, &r.q);
	if (!err) {
		ab = rr_buffer(&r, n * sizeof(float), &a);
		bb = rr_buffer(&r, n * sizeof(float), &b);
		err = ab && bb ? 0 : -ENOMEM;
	}
	if (!err) {
		struct agile_rt_arg p[] = { rr_rw(ab), rr_rw(bb),
					    rr_val((uint64_t)dim) };

		uint32_t x = 12345;

		/* Full mantissas: a fused multiply-add would show. */
		for (size_t i = 0; i < n; i++) {
			x = x * 1664525u + 1013904223u;
			a[i] = (float)(x >> 8) / (float)(1u << 23) - 1.0f;
			x = x * 1664525u + 1013904223u;
			b[i] = (float)(x >> 8) / (float)(1u << 23) - 1.0f;
		}
		err = rr_launch(&r, "small_mm_list", RR_MATRICES, 1, 1,
				(uint32_t)dim, (uint32_t)dim, 1, p, 3);
		memcpy(out, a, n * sizeof(float));
	}
	agile_rt_buffer_release(ab);
	agile_rt_buffer_release(bb);
	done(&r);
	return err;
}

static void test_bits(void)
{
	const int dim = 16;
	size_t n = (size_t)RR_MATRICES * dim * dim;
	float *cuda = calloc(n, sizeof(float)),
	      *tool = calloc(n, sizeof(float));
	int e1 = -ENOMEM, e2 = -ENOMEM;

	if (cuda && tool) {
		e1 = matlist_bits(cu_matlist, "-x cuda", cuda, n, dim);
		e2 = matlist_bits(rr_matlist_src, NULL, tool, n, dim);
	}
	tap_ok(!e1 && !e2 && !memcmp(cuda, tool, n * sizeof(float)),
	       "matlist from its CUDA text and from agile-retarget's output: "
	       "the same bits (%s, %s)",
	       agile_strerror(e1), agile_strerror(e2));
	free(cuda);
	free(tool);
}

static void test_cache(void)
{
	struct agile_rt_build_info info;
	struct rr r = { 0 };
	const char *log;
	uint64_t before = agile__rt_compiler_count(AGILE_RT_CPU);
	int err = build(&r, cu_matlist, "-x cuda", NULL, 0, &info, &log);

	tap_ok(!err && info.branch == AGILE_RT_BUILD_CACHE_HIT &&
		       agile__rt_compiler_count(AGILE_RT_CPU) == before,
	       "the same CUDA text and options again: a cache hit, no cc run "
	       "(%s, branch %u)",
	       agile_strerror(err), info.branch);
	done(&r);
	err = build(&r, cu_matlist, "-x cuda --lane-threads=8", NULL, 0, &info,
		    &log);
	tap_ok(!err && info.branch == AGILE_RT_BUILD_COMPILED &&
		       agile__rt_compiler_count(AGILE_RT_CPU) == before + 1,
	       "--lane-threads=8: another translation, another key: compiled "
	       "(%s, branch %u)",
	       agile_strerror(err), info.branch);
	if (!err && !agile_rt_queue_create(r.ctx, NULL, &r.q))
		rr_matlist(&r, 8); /* 64 threads: 1 a lane */
	done(&r);
}

static void test_refused(void)
{
	static const char where[] = "user-kernels.cu:4:3: error: "
				    "__syncthreads() under thread-dependent "
				    "control flow";
	struct agile_rt_build_info info;
	struct agile_rt_binary bin;
	struct rr r = { 0 }, ok = { 0 };
	const char *log;
	int err = build(&r, cu_refused, "-x cuda", NULL, 0, &info, &log);

	tap_ok(err == -ENOEXEC && info.branch == AGILE_RT_BUILD_FAILED &&
		       !strcmp(info.step, "retarget") &&
		       strstr(info.message, where) && strstr(log, where) &&
		       strstr(log, "user-kernels.cu:3:2"),
	       "a refused kernel: -ENOEXEC, step retarget, the translator's "
	       "line:col in the message and the log (%s; %s: %s)",
	       agile_strerror(err), info.step, info.message);
	tap_diag("log: %s", log ? log : "");
	done(&r);

	/* A CPU binary of another source beside it: the fallback. */
	err = build(&ok, cu_matlist, "-x cuda", NULL, 0, &info, &log);
	err = err ? err : agile_rt_program_binary(ok.prog, 0, &bin);
	if (!tap_ok(!err, "a CPU binary of matlist to fall back on")) {
		done(&ok);
		return;
	}
	snprintf(bin.options, sizeof(bin.options), "-O1");
	err = build(&r, cu_refused, "-x cuda", &bin, 1, &info, &log);
	tap_ok(!err && info.branch == AGILE_RT_BUILD_FALLBACK &&
		       !strcmp(info.step, "retarget"),
	       "the same with a compatible binary: it runs (fallback), the "
	       "step says the translation failed (%s, branch %u, %s)",
	       agile_strerror(err), info.branch, info.step);
	if (!err && !agile_rt_queue_create(r.ctx, NULL, &r.q))
		rr_matlist(&r, 4);
	done(&r);
	done(&ok);
}

static void test_options(void)
{
	static const char *const bad[][2] = {
		{ "-x fortran", "-x fortran" },
		{ "--lane-threads=8", "--lane-threads" },
	};

	for (size_t i = 0; i < 2; i++) {
		struct agile_rt_build_info info;
		struct rr r = { 0 };
		const char *log;
		int err =
			build(&r, cu_matlist, bad[i][0], NULL, 0, &info, &log);

		tap_ok(err == -EINVAL && !strcmp(info.step, "options") &&
			       strstr(info.message, bad[i][1]),
		       "options \"%s\": -EINVAL, the outcome says why (%s: %s)",
		       bad[i][0], info.step, info.message);
		done(&r);
	}
}
#endif

int main(void)
{
#ifdef AGILE_NO_DLOPEN
	tap_skip("CUDA source through the runtime",
		 "a static build loads no compiled code");
#else
	char lib[4096];

	snprintf(lib, sizeof(lib), "%s/libagile-retarget.so",
		 AGILE_RETARGET_BUILD_DIR);
	if (access(lib, R_OK)) {
		tap_skip("CUDA source through the runtime",
			 "%s not built (no libclang?)", lib);
		return tap_done();
	}
	unsetenv("AGILE_CC");
	unsetenv("AGILE_RETARGET_DIR");
	if (!tap_ok_call(cache_fresh(), "a fresh cache folder"))
		return tap_done();
	test_missing();
	test_files();
	test_bits();
	test_cache();
	test_refused();
	test_options();
	cache_remove();
#endif
	return tap_done();
}
