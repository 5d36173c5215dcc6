// SPDX-License-Identifier: MIT
/*
 * rt-corpus - the corpus (retarget/corpus/<f>.cu, docs/retarget.md
 * "Corpus") as CUDA text straight into the runtime: each file one
 * program, agile_rt_program_create with its text and
 * agile_rt_program_build(prog, "-x cuda") (translated in-process by
 * libagile-retarget.so, then built by cc), every kernel enqueued one
 * group a thread block on 64 lanes, the cases and references of
 * retarget-corpus (corpuscases.h, corpusref.h), bit for bit:
 *
 *	cpu   on a context of 2 CPU EUs
 *	gpu   where a usable NVIDIA GPU is here, the same GPU-only on its
 *	      EUs (NVRTC), checking that no group ran on the CPU; else a
 *	      SKIP.  Under make check-gpu (AGILE_EU_POOL=gpu) this part only.
 *
 * conv.cu's filter is a __constant__ variable: the program's globals
 * (struct user_kernels_globals, here its one member float c_Kernel[9])
 * are a buffer in the word after the kernel's parameters, which the test
 * fills as cudaMemcpyToSymbol would (docs/retarget.md, "__constant__ and
 * __device__ variables").  Skipped in the static build (no cc, no
 * dlopen) and where the translator was not built (no libclang).
 */
#define _GNU_SOURCE
#include <agile/error.h>
#include <agile/gpu.h>
#include <agile/launch.h>
#include <agile/runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "compiletest.h"
#include "rttest.h"
#include "eu/gpu_impl.h"

#ifndef AGILE_NO_DLOPEN

#ifndef RETARGET_SRC
#error "RETARGET_SRC: the folder of the retarget test kernels"
#endif

/* A corpus file as a NUL-terminated array named @sym. */
#define CORPUS_EMBED(sym, file)                                  \
	__asm__(".pushsection .rodata\n"                         \
		".global " #sym "\n"                             \
		".hidden " #sym "\n"                             \
		".type " #sym ", @object\n" #sym ":\n"           \
		".incbin \"" RETARGET_SRC "/corpus/" file "\"\n" \
		".byte 0\n"                                      \
		".size " #sym ", . - " #sym "\n"                 \
		".popsection\n");                                \
	extern const char sym[]

CORPUS_EMBED(corpus_reduce, "reduce.cu");
CORPUS_EMBED(corpus_sort, "sort.cu");
CORPUS_EMBED(corpus_grid, "grid.cu");
CORPUS_EMBED(corpus_conv, "conv.cu");

#define CR_MAX_ALLOCS 16

struct crun {
	const char *where;
	agile_rt_ctx ctx;
	struct agile_rt_program *prog;
	struct agile_rt_queue *q;
	uint32_t place;
	struct agile_rt_buffer *buf[CR_MAX_ALLOCS];
	void *host[CR_MAX_ALLOCS];
	int nr_mem;
};

/* The runs' runner: CR_P finds a pointer's buffer there. */
static struct crun *cr_cur;

static void *cr_alloc(struct crun *r, size_t bytes)
{
	struct agile_rt_buffer *b = NULL;
	void *host = NULL;

	if (r->nr_mem == CR_MAX_ALLOCS)
		return NULL;
	if (agile_rt_buffer_create(r->ctx, bytes ? bytes : 1, &b))
		return NULL;
	if (agile_rt_buffer_host(b, &host, NULL) || !host) {
		agile_rt_buffer_release(b);
		return NULL;
	}
	memset(host, 0, bytes);
	r->buf[r->nr_mem] = b;
	r->host[r->nr_mem++] = host;
	return host;
}

static void cr_free_all(struct crun *r)
{
	while (r->nr_mem)
		agile_rt_buffer_release(r->buf[--r->nr_mem]);
}

/* @p's buffer, read and written; a buffer-less argument (fails) if none. */
static struct agile_rt_arg cr_buf_arg(const void *p)
{
	for (int i = 0; i < cr_cur->nr_mem; i++)
		if (cr_cur->host[i] == p)
			return rt_buf(cr_cur->buf[i],
				      AGILE_RT_READ | AGILE_RT_WRITE);
	return rt_buf(NULL, AGILE_RT_READ | AGILE_RT_WRITE);
}

/*
 * kernel<<<grid, block>>>(params...): one group a block on 64 lanes,
 * argument words 0 (the group), 1 and 2 (the dims), then @nr params.
 * Waits; the entry's status.
 */
static int cr_rt_launch(struct crun *r, const char *kernel, struct agile_dim3 g,
			struct agile_dim3 b, const struct agile_rt_arg *params,
			uint32_t nr)
{
	struct agile_rt_arg args[AGILE_RT_MAX_ARGS];
	struct agile_rt_entry e = { 0 };
	struct agile_rt_kernel *k;
	struct agile_rt_event *ev;
	int err;

	if (nr + 3 > AGILE_RT_MAX_ARGS)
		return -E2BIG;
	err = agile_rt_program_kernel(r->prog, kernel, &k);
	if (err)
		return err;
	args[0] = (struct agile_rt_arg){ .kind = AGILE_RT_ARG_GROUP };
	args[1] = rt_val(AGILE_RT_DIM3_WORD(g.x, g.y, g.z));
	args[2] = rt_val(AGILE_RT_DIM3_WORD(b.x, b.y, b.z));
	memcpy(args + 3, params, nr * sizeof(*params));
	e.kernel = k;
	e.threads = AGILE_MAX_LANES;
	e.groups = g.x * g.y * g.z;
	e.place = r->place;
	e.nr_args = nr + 3;
	e.args = args;
	err = agile_rt_enqueue(r->q, &e, &ev);
	if (err)
		return err;
	err = agile_rt_event_wait(ev, RT_WAIT_NS);
	agile_rt_event_release(ev);
	return err;
}

#define CR_ARGS(...) ((const struct agile_rt_arg[]){ __VA_ARGS__ })
#define CR_LAUNCH(r, k, grid, block, ...)                         \
	(cr_cur = (r),                                            \
	 cr_rt_launch((r), #k, grid, block, CR_ARGS(__VA_ARGS__), \
		      sizeof(CR_ARGS(__VA_ARGS__)) /              \
			      sizeof(struct agile_rt_arg)))
#define CR_P(p) cr_buf_arg(p)
#define CR_I(v) rt_val((uint64_t)(int64_t)(v))
#define CR_F(f) rt_val(agile_rt_float_word(f))

#include "corpuscases.h"

/* conv.cu's KERNEL_LENGTH: its globals are float c_Kernel[CR_CONV_TAPS]. */
#define CR_CONV_TAPS 9

/*
 * convolution_rows<<<(w / block, h), block>>>(dst, src, w, h) with the
 * filter in the globals' buffer (the word after the 4 parameters).
 */
static void cr_conv(struct crun *r, int w, int h, int block)
{
	float *src = CR_NEW(r, float, w *h), *dst = CR_NEW(r, float, w *h);
	float *taps = CR_NEW(r, float, CR_CONV_TAPS);
	float *want = calloc(w * h, sizeof(float));
	uint32_t x = 43u * w;
	int err = -ENOMEM, bad = -1;

	if (src && dst && taps && want) {
		for (int i = 0; i < w * h; i++)
			src[i] = cref_float(&x);
		/* cudaMemcpyToSymbol(c_Kernel, ...): the globals' buffer */
		for (int k = 0; k < CR_CONV_TAPS; k++)
			taps[k] = cref_float(&x);
		err = CR_LAUNCH(r, convolution_rows,
				CR_DIM(CR_BLOCKS(w, block), h, 1),
				CR_DIM(block, 1, 1), CR_P(dst), CR_P(src),
				CR_I(w), CR_I(h), CR_P(taps));
		cref_conv_rows(src, want, w, h, taps, CR_CONV_TAPS / 2);
		bad = cref_diff(dst, want, w * h, sizeof(float));
	}
	CR_OK(r, !bad, err,
	      "convolution_rows: %d x %d, a %d-tap __constant__ filter in the globals' buffer, blocks of %d: %d differ",
	      w, h, CR_CONV_TAPS, block, bad);
	free(want);
	cr_free_all(r);
}

static void cr_run_conv(struct crun *r)
{
	cr_conv(r, 300, 5, 128);
	cr_conv(r, 50, 2, 37);
}

static const struct {
	const char *name;
	const char *source;
	void (*run)(struct crun *r);
} files[] = {
	{ "reduce.cu", corpus_reduce, cr_run_reduce },
	{ "sort.cu", corpus_sort, cr_run_sort },
	{ "grid.cu", corpus_grid, cr_run_grid },
	{ "conv.cu", corpus_conv, cr_run_conv },
};

/* Each file built with "-x cuda" on @ctx, its cases run at @place. */
static void run_files(agile_rt_ctx ctx, uint32_t place, uint32_t dev,
		      const char *where)
{
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct crun r = { .where = where, .ctx = ctx, .place = place };
		struct agile_rt_build_info info = { 0 };
		const char *log = NULL;
		struct agile_rt_stats st;
		int err = agile_rt_program_create(ctx, files[i].source, NULL, 0,
						  &r.prog);

		err = err ? err : agile_rt_program_build(r.prog, "-x cuda");
		if (r.prog) {
			agile_rt_program_build_info(r.prog, dev, &info);
			agile_rt_program_build_log(r.prog, dev, &log);
		}
		err = err ? err : agile_rt_queue_create(ctx, NULL, &r.q);
		if (!tap_ok(!err,
			    "%s: %s built with -x cuda (branch %u, %s: %s): %s",
			    where, files[i].name, info.branch, info.step,
			    info.message, agile_strerror(err)))
			tap_diag("%s", log ? log : "");
		else
			files[i].run(&r);
		if (r.q && dev) {
			agile_rt_stats(r.q, &st);
			tap_ok(st.devices[1].eu_kind == AGILE_EU_KIND_GPU &&
				       st.devices[1].groups > 0 &&
				       !st.devices[0].groups,
			       "%s: %s: every block on GPU EUs (%llu groups there, %llu on the CPU)",
			       where, files[i].name,
			       (unsigned long long)st.devices[1].groups,
			       (unsigned long long)st.devices[0].groups);
		}
		if (r.q)
			agile_rt_queue_destroy(r.q);
		if (r.prog)
			agile_rt_program_release(r.prog);
	}
}

static void test_cpu(void)
{
	agile_rt_ctx ctx = 0;
	int err = rt_cpu_ctx(2, &ctx);

	if (tap_ok_call(err, "a context of 2 CPU EUs"))
		run_files(ctx, AGILE_RT_PLACE_CPU, 0, "CPU EUs");
	if (ctx)
		agile_rt_ctx_release(ctx);
}

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
	struct agile_rt_ctx_opts o;
	agile_rt_ctx ctx = 0;
	uint32_t gpu = 0, nr = 0, devs[2];
	char why[512];
	int err;

	if (!agile__gpu_status(why, sizeof(why))) {
		tap_skip("the corpus on GPU EUs", "no usable GPU: %s", why);
		return;
	}
	err = agile_rt_device_match(reqs, 2, AGILE_RT_MATCH_SCORE, &gpu, 1,
				    &nr);
	if (!tap_ok(!err && nr >= 1, "a usable GPU in the table"))
		return;
	agile_rt_device_info(gpu, &info);
	if (strcmp(info.vendor, "nvidia")) {
		tap_skip("the corpus on GPU EUs", "an %s GPU: NVIDIA only yet",
			 info.vendor);
		return;
	}
	devs[0] = 0;
	devs[1] = gpu;
	agile_rt_ctx_opts_init(&o);
	o.devices = devs;
	o.nr_devices = 2;
	o.cpu_eus = 1;
	o.gpu_eus = 2;
	err = agile_rt_ctx_create(&o, &ctx);
	if (tap_ok_call(err, "a context of the CPU and the GPU"))
		run_files(ctx, AGILE_RT_PLACE_GPU_ONLY, gpu, "GPU EUs");
	if (ctx)
		agile_rt_ctx_release(ctx);
}
#endif

int main(void)
{
#ifdef AGILE_NO_DLOPEN
	tap_skip("the corpus through the runtime",
		 "a static build loads no compiled code");
#else
	const char *pool = getenv("AGILE_EU_POOL");
	char lib[4096];

	snprintf(lib, sizeof(lib), "%s/libagile-retarget.so",
		 AGILE_RETARGET_BUILD_DIR);
	if (access(lib, R_OK)) {
		tap_skip("the corpus through the runtime",
			 "%s not built (no libclang?)", lib);
		return tap_done();
	}
	unsetenv("AGILE_CC");
	unsetenv("AGILE_RETARGET_DIR");
	setenv("AGILE_QUIET", "1", 1);
	if (!tap_ok_call(cache_fresh(), "a fresh cache folder"))
		return tap_done();
	if (!pool || strcmp(pool, "gpu"))
		test_cpu();
	test_gpu();
	cache_remove();
#endif
	return tap_done();
}
