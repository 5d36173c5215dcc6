/* SPDX-License-Identifier: MIT */
/*
 * rtretarget.h - the retarget test kernels (retarget/) as
 * agile-retarget --emit=runtime made them when the tests were built
 * (<k>-dialect.c, embedded here), built through the runtime's compile on
 * demand and run by agile_rt_enqueue: one group per thread block, the
 * argument words of <k>-dialect.h, each result against retargetref.h.
 * Beside them shared-rotate, dialect 2 by hand (block-shared memory, the
 * phases in order).  What rt-retarget (CPU EUs) and rt-retarget-gpu (GPU
 * EUs) share.
 * Include tap.h first.
 */
#ifndef AGILE_RTRETARGET_H
#define AGILE_RTRETARGET_H

#include <agile/error.h>
#include <agile/runtime.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "constant-dialect.h"
#include "coop-dialect.h"
#include "cxx-dialect.h"
#include "devbar-dialect.h"
#include "devbarref.h"
#include "dynshared-dialect.h"
#include "grid3d-dialect.h"
#include "histogram-dialect.h"
#include "hipnames-dialect.h"
#include "intrinsics-dialect.h"
#include "matlist-dialect.h"
#include "pointers-dialect.h"
#include "reduce-dialect.h"
#include "retargetbuiltins.h"
#include "retargetcxx.h"
#include "retargetref.h"
#include "rttest.h"
#include "scan-dialect.h"
#include "transpose-dialect.h"
#include "vector-dialect.h"
#include "warpreduce-dialect.h"
#include "warpvote-dialect.h"

#ifndef RETARGET_OUT
#error "RETARGET_OUT: where the Makefile put the translated kernels"
#endif

/* One generated file as a NUL-terminated array named @sym. */
#define RR_EMBED(sym, file)                               \
	__asm__(".pushsection .rodata\n"                  \
		".global " #sym "\n"                      \
		".hidden " #sym "\n"                      \
		".type " #sym ", @object\n" #sym ":\n"    \
		".incbin \"" RETARGET_OUT "/" file "\"\n" \
		".byte 0\n"                               \
		".size " #sym ", . - " #sym "\n"          \
		".popsection\n");                         \
	extern const char sym[]

RR_EMBED(rr_matlist_src, "matlist-dialect.c");
RR_EMBED(rr_reduce_src, "reduce-dialect.c");
RR_EMBED(rr_transpose_src, "transpose-dialect.c");
RR_EMBED(rr_grid3d_src, "grid3d-dialect.c");
RR_EMBED(rr_hipnames_src, "hipnames-dialect.c");
RR_EMBED(rr_histogram_src, "histogram-dialect.c");
RR_EMBED(rr_scan_src, "scan-dialect.c");
RR_EMBED(rr_pointers_src, "pointers-dialect.c");
RR_EMBED(rr_vector_src, "vector-dialect.c");
RR_EMBED(rr_intrinsics_src, "intrinsics-dialect.c");
RR_EMBED(rr_warpreduce_src, "warpreduce-dialect.c");
RR_EMBED(rr_warpvote_src, "warpvote-dialect.c");
RR_EMBED(rr_devbar_src, "devbar-dialect.c");
RR_EMBED(rr_coop_src, "coop-dialect.c");
RR_EMBED(rr_dynshared_src, "dynshared-dialect.c");
RR_EMBED(rr_constant_src, "constant-dialect.c");
RR_EMBED(rr_cxx_src, "cxx-dialect.c");

/*
 * Beside them, dialect 2 written by hand: block-shared memory with the
 * phases in order (AGILE_IN_ORDER, no control function).  Lane l stores
 * 2 x[l] in shared memory, then takes its neighbour's: x[l] = 2 x[(l + 1)
 * % n], right only if the memory is one per task, shared by its lanes.
 */
static const char rr_shared_rotate_src[] =
	"struct rot_shared { double v[AGILE_MAX_LANES]; };\n"
	"\n"
	"AGILE_PHASE(shrot_store)\n"
	"{\n"
	"	const double *x = (const double *)(uintptr_t)args[0];\n"
	"	struct rot_shared *s = (struct rot_shared *)shared;\n"
	"\n"
	"	s->v[lane] = 2.0 * x[lane];\n"
	"	return 0;\n"
	"}\n"
	"\n"
	"AGILE_PHASE(shrot_load)\n"
	"{\n"
	"	double *x = (double *)(uintptr_t)args[0];\n"
	"	const struct rot_shared *s = (const struct rot_shared *)shared;\n"
	"\n"
	"	x[lane] = s->v[(lane + 1) % nr_lanes];\n"
	"	return 0;\n"
	"}\n"
	"\n"
	"#define AGILE_USER_KERNELS(K) \\\n"
	"	K(shared_rotate, struct agile_no_state, 0, shrot_store, \\\n"
	"	  shrot_load)\n"
	"#define AGILE_USER_EXTRAS(X) \\\n"
	"	X(shared_rotate, struct rot_shared, AGILE_IN_ORDER)\n";

struct rr_file {
	const char *name;
	const char *source;
	int cpu_only; /* its cases need CPU EUs (local memory) */
};

static const struct rr_file rr_files[] = {
	{ "matlist", rr_matlist_src, 0 },
	{ "reduce", rr_reduce_src, 0 },
	{ "transpose", rr_transpose_src, 0 },
	{ "grid3d", rr_grid3d_src, 0 },
	{ "hipnames", rr_hipnames_src, 0 },
	{ "histogram", rr_histogram_src, 0 },
	{ "scan", rr_scan_src, 0 },
	{ "pointers", rr_pointers_src, 0 },
	{ "vector", rr_vector_src, 0 },
	{ "intrinsics", rr_intrinsics_src, 0 },
	{ "warpreduce", rr_warpreduce_src, 0 },
	{ "warpvote", rr_warpvote_src, 0 },
	{ "devbar", rr_devbar_src, 0 },
	{ "coop", rr_coop_src, 0 },
	{ "cxx", rr_cxx_src, 0 },
	{ "shared-rotate", rr_shared_rotate_src, 0 },
	{ "dynshared", rr_dynshared_src, 1 },
	{ "constant", rr_constant_src, 0 },
};
#define RR_NR_FILES (sizeof(rr_files) / sizeof(rr_files[0]))

/*
 * Where the runs go: a context's queue, its lanes a task, the place, the
 * local memory of each group (CUDA's dynamic shared bytes).
 */
struct rr {
	agile_rt_ctx ctx;
	struct agile_rt_program *prog;
	struct agile_rt_queue *q;
	uint32_t lanes;
	uint32_t place;
	uint32_t local;
};

static inline struct agile_rt_arg rr_val(uint64_t v)
{
	return rt_val(v);
}

/* A buffer of @bytes, zeroed; its host address in *@host. */
static inline struct agile_rt_buffer *rr_buffer(struct rr *r, size_t bytes,
						void *host)
{
	struct agile_rt_buffer *b = NULL;

	if (agile_rt_buffer_create(r->ctx, bytes, &b) ||
	    agile_rt_buffer_host(b, (void **)host, NULL)) {
		*(void **)host = NULL;
		return NULL;
	}
	memset(*(void **)host, 0, bytes);
	return b;
}

static inline struct agile_rt_arg rr_rw(struct agile_rt_buffer *b)
{
	return rt_buf(b, AGILE_RT_READ | AGILE_RT_WRITE);
}

/*
 * kernel<<<grid, block>>>(params...): one group per block, argument words
 * 0 (the group), 1 and 2 (the dims), then @nr params.  Waits; returns the
 * entry's status.
 */
static inline int rr_launch(struct rr *r, const char *kernel, uint32_t gx,
			    uint32_t gy, uint32_t gz, uint32_t bx, uint32_t by,
			    uint32_t bz, const struct agile_rt_arg *params,
			    uint32_t nr)
{
	struct agile_rt_arg args[AGILE_RT_MAX_ARGS];
	struct agile_rt_kernel *k;
	struct agile_rt_event *ev;
	struct agile_rt_entry e = { 0 };
	int err;

	if (nr + 3 > AGILE_RT_MAX_ARGS)
		return -E2BIG;
	err = agile_rt_program_kernel(r->prog, kernel, &k);
	if (err)
		return err;
	args[0] = (struct agile_rt_arg){ .kind = AGILE_RT_ARG_GROUP };
	args[1] = rt_val(AGILE_RT_DIM3_WORD(gx, gy, gz));
	args[2] = rt_val(AGILE_RT_DIM3_WORD(bx, by, bz));
	memcpy(args + 3, params, nr * sizeof(*params));
	e.kernel = k;
	e.threads = r->lanes;
	e.groups = gx * gy * gz;
	e.place = r->place;
	e.local_bytes = r->local;
	e.nr_args = nr + 3;
	e.args = args;
	err = agile_rt_enqueue(r->q, &e, &ev);
	if (err)
		return err;
	err = agile_rt_event_wait(ev, RT_WAIT_NS);
	agile_rt_event_release(ev);
	return err;
}

/* ---- the kernels, each against its reference ---- */

#define RR_MATRICES 9

static inline void rr_matlist(struct rr *r, int dim)
{
	size_t n = (size_t)RR_MATRICES * dim * dim;
	float *a, *b, *ref = calloc(n, sizeof(float));
	struct agile_rt_buffer *ab = rr_buffer(r, n * sizeof(float), &a);
	struct agile_rt_buffer *bb = rr_buffer(r, n * sizeof(float), &b);
	int err = -ENOMEM;

	if (ab && bb && ref) {
		struct agile_rt_arg p[] = { rr_rw(ab), rr_rw(bb),
					    rr_val((uint64_t)dim) };

		for (size_t i = 0; i < n; i++) {
			a[i] = (float)((i * 7) % 11) - 5.0f;
			b[i] = (float)((i * 5) % 13) * 0.25f - 1.0f;
		}
		memcpy(ref, a, n * sizeof(float));
		ref_matlist(ref, b, RR_MATRICES, dim);
		err = rr_launch(r, "small_mm_list", RR_MATRICES, 1, 1,
				(uint32_t)dim, (uint32_t)dim, 1, p, 3);
	}
	tap_ok(!err && ref_close(a, ref, n),
	       "matlist: %d matrices %dx%d (%d threads a block, %u lanes) equal the reference: %s",
	       RR_MATRICES, dim, dim, dim * dim, r->lanes, agile_strerror(err));
	free(ref);
	agile_rt_buffer_release(ab);
	agile_rt_buffer_release(bb);
}

/* A block the lanes cannot hold: refused by the entry, nothing written. */
static inline void rr_too_big(struct rr *r)
{
	const int dim = 32;
	size_t n = (size_t)dim * dim;
	float *a, *b;
	struct agile_rt_buffer *ab = rr_buffer(r, n * sizeof(float), &a);
	struct agile_rt_buffer *bb = rr_buffer(r, n * sizeof(float), &b);
	int err = -ENOMEM, bad = 0;
	struct rr small = *r;

	/* 1024 threads need 1024 / AGILE_RT_LANE_THREADS lanes */
	small.lanes = 1024 / AGILE_RT_LANE_THREADS_MATLIST_DIALECT_H - 1;
	if (ab && bb) {
		struct agile_rt_arg p[] = { rr_rw(ab), rr_rw(bb),
					    rr_val((uint64_t)dim) };

		for (size_t i = 0; i < n; i++)
			a[i] = 1.0f;
		err = rr_launch(&small, "small_mm_list", 1, 1, 1, dim, dim, 1,
				p, 3);
		for (size_t i = 0; i < n; i++)
			bad += a[i] != 1.0f;
	}
	tap_ok(err == -ENOSPC && !bad,
	       "a block of 1024 threads on %u lanes (%d a lane): refused with -ENOSPC, nothing written (%s)",
	       small.lanes, AGILE_RT_LANE_THREADS_MATLIST_DIALECT_H,
	       agile_strerror(err));
	agile_rt_buffer_release(ab);
	agile_rt_buffer_release(bb);
}

static inline void rr_reduce(struct rr *r, unsigned block, unsigned n)
{
	unsigned nr_blocks = (n + block - 1) / block;
	float *in, *out;
	unsigned long long *total, want_total = 0;
	struct agile_rt_buffer *ib = rr_buffer(r, n * sizeof(float), &in);
	struct agile_rt_buffer *ob =
		rr_buffer(r, nr_blocks * sizeof(float), &out);
	struct agile_rt_buffer *tb = rr_buffer(r, 64, &total);
	int err = -ENOMEM, bad = 0;

	if (ib && ob && tb) {
		struct agile_rt_arg p[] = { rt_buf(ib, AGILE_RT_READ),
					    rr_rw(ob), rr_val(n), rr_rw(tb) };

		for (unsigned i = 0; i < n; i++)
			in[i] = (float)(i * 2654435761u % 8);
		err = rr_launch(r, "block_sum", nr_blocks, 1, 1, block, 1, 1, p,
				4);
		for (unsigned b = 0; b < nr_blocks; b++) {
			float want = 0.0f;

			for (unsigned i = b * block;
			     i < n && i < (b + 1) * block; i++)
				want += in[i];
			want_total += (unsigned long long)want;
			bad += out[b] != want;
		}
	}
	tap_ok(!err && !bad && total && *total == want_total,
	       "reduce: blocks of %u threads, %u elements: every block's sum in shared memory and the atomic total (%llu): %s",
	       block, n, total ? *total : 0, agile_strerror(err));
	agile_rt_buffer_release(ib);
	agile_rt_buffer_release(ob);
	agile_rt_buffer_release(tb);
}

static inline void rr_reduce_first(struct rr *r, unsigned block,
				   unsigned nr_used, unsigned nr_blocks)
{
	unsigned n = nr_used * block;
	float *in, *out;
	struct agile_rt_buffer *ib = rr_buffer(r, n * sizeof(float), &in);
	struct agile_rt_buffer *ob =
		rr_buffer(r, nr_blocks * sizeof(float), &out);
	int err = -ENOMEM, bad = 0;

	if (ib && ob) {
		struct agile_rt_arg p[] = { rt_buf(ib, AGILE_RT_READ),
					    rr_rw(ob), rr_val(nr_used) };

		for (unsigned i = 0; i < n; i++)
			in[i] = (float)(i % 5);
		for (unsigned b = 0; b < nr_blocks; b++)
			out[b] = -1.0f;
		err = rr_launch(r, "block_sum_first", nr_blocks, 1, 1, block, 1,
				1, p, 3);
		for (unsigned b = 0; b < nr_blocks; b++) {
			float want = b < nr_used ? 0.0f : -1.0f;

			for (unsigned i = 0; b < nr_used && i < block; i++)
				want += in[b * block + i];
			bad += out[b] != want;
		}
	}
	tap_ok(!err && !bad,
	       "reduce: %u of %u blocks of %u threads sum, the others return first and write nothing: %s",
	       nr_used, nr_blocks, block, agile_strerror(err));
	agile_rt_buffer_release(ib);
	agile_rt_buffer_release(ob);
}

static inline void rr_transpose(struct rr *r, int n, int passes)
{
	size_t cells = (size_t)n * n;
	float *in, *out, *smooth, *want = calloc(cells, sizeof(float));
	struct agile_rt_buffer *ib = rr_buffer(r, cells * sizeof(float), &in);
	struct agile_rt_buffer *ob = rr_buffer(r, cells * sizeof(float), &out);
	struct agile_rt_buffer *sb =
		rr_buffer(r, cells * sizeof(float), &smooth);
	uint32_t tiles = (uint32_t)((n + REF_TILE - 1) / REF_TILE);
	int err = -ENOMEM, bad_t = 0, bad_s = 0;

	if (ib && ob && sb && want) {
		struct agile_rt_arg p[] = { rt_buf(ib, AGILE_RT_READ),
					    rr_rw(ob), rr_rw(sb),
					    rr_val((uint64_t)n),
					    rr_val((uint64_t)passes) };

		for (size_t i = 0; i < cells; i++)
			in[i] = (float)((i * 37) % 101) * 0.5f;
		ref_smooth(in, want, n, passes);
		err = rr_launch(r, "transpose_smooth", tiles, tiles, 1,
				REF_TILE, 8, 1, p, 5);
		for (int y = 0; y < n; y++)
			for (int x = 0; x < n; x++)
				bad_t += out[y * n + x] != in[x * n + y];
		bad_s = !ref_close(smooth, want, cells);
	}
	tap_ok(!err && !bad_t && !bad_s,
	       "transpose: %dx%d through a shared tile, %d smoothing rounds with barriers in a loop (%d transposed and %s smoothed wrong): %s",
	       n, n, passes, bad_t, bad_s ? "some" : "none",
	       agile_strerror(err));
	free(want);
	agile_rt_buffer_release(ib);
	agile_rt_buffer_release(ob);
	agile_rt_buffer_release(sb);
}

static inline void rr_grid3d(struct rr *r, uint32_t bx, uint32_t by,
			     uint32_t bz, int mode)
{
	const int nr_blocks = 5;
	int nt = (int)(bx * by * bz), *out;
	struct agile_rt_buffer *ob =
		rr_buffer(r, 4 * nr_blocks * sizeof(int), &out);
	int err = -ENOMEM, bad = 1;

	if (ob) {
		struct agile_rt_arg p[] = { rr_rw(ob), rr_val((uint64_t)mode) };

		err = rr_launch(r, "grid3d", nr_blocks, 1, 1, bx, by, bz, p, 2);
		bad = ref_grid3d(out, nr_blocks, nt, mode);
	}
	tap_ok(!err && !bad,
	       "grid3d: blocks of %ux%ux%u, %s, extern __shared__: every block's result, rounds, mode and size: %s",
	       bx, by, bz, mode ? "atomicMax" : "sum", agile_strerror(err));
	agile_rt_buffer_release(ob);
}

static inline void rr_carry(struct rr *r)
{
	int *out, err = -ENOMEM, bad = 0;
	struct agile_rt_buffer *ob = rr_buffer(r, 3 * 32 * sizeof(int), &out);

	if (ob) {
		struct agile_rt_arg p[] = { rr_rw(ob) };

		err = rr_launch(r, "carry", 3, 1, 1, 8, 4, 1, p, 1);
		for (int i = 0; i < 3 * 32; i++)
			bad += out[i] != 4 * (i % 32) + 1;
	}
	tap_ok(!err && !bad,
	       "grid3d: v = v * 3 + 1 and v = v + t across barriers, one v per thread (%d wrong): %s",
	       bad, agile_strerror(err));
	agile_rt_buffer_release(ob);
}

static inline void rr_hipnames(struct rr *r, int n, uint32_t blocks,
			       uint32_t threads)
{
	float *x, *y;
	struct agile_rt_buffer *xb = rr_buffer(r, n * sizeof(float), &x);
	struct agile_rt_buffer *yb = rr_buffer(r, n * sizeof(float), &y);
	int err = -ENOMEM, bad = 1;

	if (xb && yb) {
		struct agile_rt_arg p[] = { rr_val(agile_rt_float_word(3.0f)),
					    rr_rw(xb), rr_rw(yb),
					    rr_val((uint64_t)n) };

		for (int i = 0; i < n; i++) {
			x[i] = (float)(i % 17);
			y[i] = (float)(i % 5) - 2.0f;
		}
		err = rr_launch(r, "axpy_then_diff", blocks, 1, 1, threads, 1,
				1, p, 4);
		bad = ref_axpy_then_diff(x, y, n);
	}
	tap_ok(!err && !bad,
	       "hipnames: n %d, %u blocks of %u threads, a float parameter: y = a x + y, x = y - x: %s",
	       n, blocks, threads, agile_strerror(err));
	agile_rt_buffer_release(xb);
	agile_rt_buffer_release(yb);
}

/*
 * histogram.cu: @kernel (shared_histogram or global_histogram) over
 * @n elements in blocks of @block threads; @per_block elements a block
 * (shared_histogram).
 */
static inline void rr_histogram(struct rr *r, const char *kernel,
				uint32_t block, uint32_t per_block, uint32_t n)
{
	const int shared = !strcmp(kernel, "shared_histogram");
	const uint32_t nr_bins = shared ? 64 : 8;
	uint32_t nr_blocks = shared ? (n + per_block - 1) / per_block : 64;
	unsigned int *in, *hist;
	struct agile_rt_buffer *ib = rr_buffer(r, n * sizeof(unsigned), &in);
	struct agile_rt_buffer *hb = rr_buffer(r, 64 * sizeof(unsigned), &hist);
	unsigned int *count, *list;
	struct agile_rt_buffer *cb = rr_buffer(r, 64, &count);
	struct agile_rt_buffer *lb = rr_buffer(r, n * sizeof(unsigned), &list);
	int err = -ENOMEM, bad = 1;

	if (ib && hb && cb && lb) {
		struct agile_rt_arg p[] = { rt_buf(ib, AGILE_RT_READ),
					    rr_val(n), rr_val(per_block),
					    rr_rw(hb), rr_rw(lb) };

		ref_histogram_input(in, n);
		if (!shared) {
			p[2] = rr_rw(hb);
			p[3] = rr_rw(cb);
		}
		err = rr_launch(r, kernel, nr_blocks, 1, 1, block, 1, 1, p,
				shared ? 4 : 5);
		bad = ref_histogram(in, n, hist, nr_bins, shared ? 0 : 32) +
		      (!shared && !ref_histogram_list(in, n, list, *count, 32));
	}
	tap_ok(!err && !bad,
	       "histogram: %s, %u elements in %u blocks of %u threads: %d of %u bins wrong: %s",
	       kernel, n, nr_blocks, block, bad, nr_bins, agile_strerror(err));
	agile_rt_buffer_release(ib);
	agile_rt_buffer_release(hb);
	agile_rt_buffer_release(cb);
	agile_rt_buffer_release(lb);
}

/* histogram.cu's shared_ops: each atomic on __shared__, its old values. */
static inline void rr_shared_ops(struct rr *r, uint32_t block)
{
	const uint32_t nr_blocks = 3;
	int *out;
	float *fout;
	struct agile_rt_buffer *ob = rr_buffer(
		r,
		nr_blocks * (block * REF_OPS_PER_THREAD + REF_OPS_FINAL) *
			sizeof(int),
		&out);
	struct agile_rt_buffer *fb =
		rr_buffer(r, nr_blocks * sizeof(float), &fout);
	int err = -ENOMEM, bad = 1;

	if (ob && fb) {
		struct agile_rt_arg p[] = { rr_rw(ob), rr_rw(fb) };

		err = rr_launch(r, "shared_ops", nr_blocks, 1, 1, block, 1, 1,
				p, 2);
		bad = ref_shared_ops(out, fout, (int)nr_blocks, (int)block);
	}
	tap_ok(!err && !bad,
	       "histogram: shared_ops, blocks of %u threads: every atomic on __shared__, its result and old values (%d blocks wrong): %s",
	       block, bad, agile_strerror(err));
	agile_rt_buffer_release(ob);
	agile_rt_buffer_release(fb);
}

/* scan.cu: each block's running sums, blocks of @block threads. */
static inline void rr_scan(struct rr *r, uint32_t block, uint32_t n)
{
	float *in, *out;
	struct agile_rt_buffer *ib = rr_buffer(r, n * sizeof(float), &in);
	struct agile_rt_buffer *ob = rr_buffer(r, n * sizeof(float), &out);
	int err = -ENOMEM, bad = 1;

	if (ib && ob) {
		struct agile_rt_arg p[] = { rt_buf(ib, AGILE_RT_READ),
					    rr_rw(ob), rr_val(n) };

		for (uint32_t i = 0; i < n; i++)
			in[i] = (float)(i * 2654435761u % 8);
		err = rr_launch(r, "block_scan", (n + block - 1) / block, 1, 1,
				block, 1, 1, p, 3);
		bad = ref_block_scan(in, out, n, block);
	}
	tap_ok(!err && !bad,
	       "scan: blocks of %u threads, %u elements: each block's running sums (%d wrong): %s",
	       block, n, bad, agile_strerror(err));
	agile_rt_buffer_release(ib);
	agile_rt_buffer_release(ob);
}

/*
 * dynshared.cu: a block sum in extern __shared__ memory of blockDim.x
 * floats, sized at launch: the entry's local_bytes through the header's
 * dyn_block_sum_ARG_DYNAMIC_SHARED word.  With @local 0: block * 4 bytes;
 * else @local, which the runtime refuses (@want).
 */
static inline void rr_dyn_shared(struct rr *r, uint32_t block, uint32_t n,
				 uint32_t local, int want)
{
	uint32_t nr_blocks = (n + block - 1) / block;
	float *in, *out;
	unsigned int *rounds;
	struct agile_rt_buffer *ib = rr_buffer(r, n * sizeof(float), &in);
	struct agile_rt_buffer *ob =
		rr_buffer(r, nr_blocks * sizeof(float), &out);
	struct agile_rt_buffer *cb =
		rr_buffer(r, nr_blocks * sizeof(unsigned int), &rounds);
	struct rr sized = *r;
	int err = -ENOMEM, bad = 1;

	if (ib && ob && cb) {
		struct agile_rt_arg p[dyn_block_sum_NR_ARGS - 3];

		p[dyn_block_sum_ARG_in - 3] = rt_buf(ib, AGILE_RT_READ);
		p[dyn_block_sum_ARG_out - 3] = rr_rw(ob);
		p[dyn_block_sum_ARG_rounds - 3] = rr_rw(cb);
		p[dyn_block_sum_ARG_n - 3] = rr_val(n);
		p[dyn_block_sum_ARG_DYNAMIC_SHARED - 3] =
			(struct agile_rt_arg){ .kind = AGILE_RT_ARG_LOCAL };
		/* full mantissas: any other order of the sums shows */
		for (uint32_t i = 0; i < n; i++)
			in[i] = (float)(i * 2654435761u % 1000003u) / 997.0f;
		sized.local = local ? local : block * (uint32_t)sizeof(float);
		err = rr_launch(&sized, "dyn_block_sum", nr_blocks, 1, 1, block,
				1, 1, p, dyn_block_sum_NR_ARGS - 3);
		bad = want ? 0 : ref_block_sum(in, out, rounds, n, block);
	}
	if (want)
		tap_ok(err == want,
		       "dynshared: local_bytes %u (%s): refused with %s: %s",
		       sized.local,
		       r->place == AGILE_RT_PLACE_GPU_ONLY ?
			       "GPU-only: GPU EUs have no local memory" :
			       "over AGILE_RT_MAX_LOCAL",
		       agile_strerror(want), agile_strerror(err));
	else
		tap_ok(!err && !bad,
		       "dynshared: blocks of %u threads, %u elements, extern __shared__ of %u bytes sized at launch: each block's tree sum bit for bit and its rounds (%d wrong): %s",
		       block, n, sized.local, bad, agile_strerror(err));
	agile_rt_buffer_release(ib);
	agile_rt_buffer_release(ob);
	agile_rt_buffer_release(cb);
}

/* constant.cu's conv1d in plain C, the same order of operations. */
static inline int rr_conv_wrong(const float *in, const float *out, int n,
				const float *filter, int nr, float b)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		float sum = b;

		for (int k = 0; k < nr; k++) {
			int j = i + k - nr / 2;

			if (j >= 0 && j < n)
				sum += filter[k] * in[j];
		}
		bad += memcmp(&sum, &out[i], sizeof(sum)) != 0;
	}
	return bad;
}

/*
 * constant.cu's conv1d: @nr taps and @b set in the globals' buffer @g
 * (cudaMemcpyToSymbol's part), @n values in blocks of @block; the
 * __device__ counter then reads @calls more.
 */
static inline void rr_conv(struct rr *r, struct agile_rt_buffer *gb,
			   struct constant_globals *g, int n, uint32_t block,
			   int nr, float b)
{
	uint32_t blocks = ((uint32_t)n + block - 1) / block;
	unsigned int calls = g->calls;
	float *in, *out;
	struct agile_rt_buffer *ib = rr_buffer(r, n * sizeof(float), &in);
	struct agile_rt_buffer *ob = rr_buffer(r, n * sizeof(float), &out);
	int err = -ENOMEM, bad = 1;

	if (ib && ob) {
		struct agile_rt_arg p[conv1d_NR_ARGS - 3];

		p[conv1d_ARG_in - 3] = rt_buf(ib, AGILE_RT_READ);
		p[conv1d_ARG_out - 3] = rr_rw(ob);
		p[conv1d_ARG_n - 3] = rr_val((uint64_t)n);
		p[conv1d_ARG_GLOBALS - 3] = rr_rw(gb);
		for (int k = 0; k < nr; k++)
			g->taps[k] = (float)(k + 1) / (float)(nr * 3) -
				     0.125f * (float)(k & 1);
		g->nr_taps = nr;
		g->bias = b;
		for (int i = 0; i < n; i++)
			in[i] = (float)((i * 37) % 101) / 7.0f - 5.0f;
		err = rr_launch(r, "conv1d", blocks, 1, 1, block, 1, 1, p,
				conv1d_NR_ARGS - 3);
		bad = rr_conv_wrong(in, out, n, g->taps, nr, b);
	}
	tap_ok(!err && !bad,
	       "constant: conv1d, %d taps and the bias set by the host in the globals' buffer, %d values in blocks of %u (%d wrong): %s",
	       nr, n, block, bad, agile_strerror(err));
	tap_ok(!err && g->calls == calls + blocks * block,
	       "constant: the __device__ counter every thread bumped reads %u more on the host (%u)",
	       g->calls - calls, blocks * block);
	agile_rt_buffer_release(ib);
	agile_rt_buffer_release(ob);
}

/*
 * constant.cu through the runtime: the globals' buffer filled by the
 * header's constant_globals_init, conv1d with two filters set between
 * entries, the counter read back, and weigh, whose helper reads an
 * initialised __device__ array and __constant__ double.
 */
static inline void rr_constant(struct rr *r)
{
	struct constant_globals *g;
	struct agile_rt_buffer *gb = rr_buffer(r, sizeof(*g), &g);
	float *out;
	struct agile_rt_buffer *ob = rr_buffer(r, 1000 * sizeof(float), &out);
	int err = -ENOMEM, bad = 1;

	if (!gb || !ob) {
		tap_ok(0, "constant: buffers");
		agile_rt_buffer_release(gb);
		agile_rt_buffer_release(ob);
		return;
	}
	/* the source's order, C's layout: what a caller's own struct gets */
	tap_ok(offsetof(struct constant_globals, taps) == 0 &&
		       offsetof(struct constant_globals, nr_taps) == 60 &&
		       offsetof(struct constant_globals, bias) == 64 &&
		       offsetof(struct constant_globals, calls) == 68 &&
		       offsetof(struct constant_globals, weights) == 72 &&
		       offsetof(struct constant_globals, third) == 88 &&
		       sizeof(struct constant_globals) == 96,
	       "constant: struct constant_globals holds the variables in the source's order, C's layout");
	constant_globals_init(g);
	tap_ok(g->bias == 0.25f && !g->calls && !g->nr_taps && !g->taps[0] &&
		       g->weights[0] == 1 && g->weights[1] == -2 &&
		       g->weights[2] == 3 && g->weights[3] == 16 &&
		       g->third == 1.0 / 3.0,
	       "constant: constant_globals_init sets the source's initialisers, 0 elsewhere");
	rr_conv(r, gb, g, 10000, 256, 5, g->bias);
	rr_conv(r, gb, g, 777, 64, 15, -1.5f);
	{
		struct agile_rt_arg p[weigh_NR_ARGS - 3];

		p[weigh_ARG_out - 3] = rr_rw(ob);
		p[weigh_ARG_n - 3] = rr_val(1000);
		p[weigh_ARG_GLOBALS - 3] = rt_buf(gb, AGILE_RT_READ);
		g->bias = 0.75f;
		err = rr_launch(r, "weigh", 8, 1, 1, 128, 1, 1, p,
				weigh_NR_ARGS - 3);
		bad = 0;
		for (int i = 0; i < 1000; i++) {
			float want = (float)g->weights[i & 3] * 0.75f +
				     (float)(1.0 / 3.0);

			bad += memcmp(&want, &out[i], sizeof(want)) != 0;
		}
	}
	tap_ok(!err && !bad,
	       "constant: weigh's __device__ helper reads the initialised __device__ array and __constant__ double (%d wrong): %s",
	       bad, agile_strerror(err));
	agile_rt_buffer_release(gb);
	agile_rt_buffer_release(ob);
}

/* pointers.cu's hist256: atomicAdd(&bins[b], 1u) over @n bytes. */
static inline void rr_hist256(struct rr *r, uint32_t block, uint32_t n)
{
	unsigned char *in;
	unsigned int *bins, want[256] = { 0 };
	struct agile_rt_buffer *ib = rr_buffer(r, n, &in);
	struct agile_rt_buffer *bb =
		rr_buffer(r, 256 * sizeof(unsigned), &bins);
	int err = -ENOMEM, bad = 1;

	if (ib && bb) {
		struct agile_rt_arg p[] = { rt_buf(ib, AGILE_RT_READ),
					    rr_val(n), rr_rw(bb) };

		for (uint32_t i = 0; i < n; i++) {
			in[i] = (unsigned char)(i * 2654435761u >> 13);
			want[in[i]]++;
		}
		err = rr_launch(r, "hist256", (n + block - 1) / block, 1, 1,
				block, 1, 1, p, 3);
		bad = 0;
		for (int b = 0; b < 256; b++)
			bad += bins[b] != want[b];
	}
	tap_ok(!err && !bad,
	       "pointers: hist256, atomicAdd(&bins[b], 1u) over %u bytes in blocks of %u threads (%d of 256 bins wrong): %s",
	       n, block, bad, agile_strerror(err));
	agile_rt_buffer_release(ib);
	agile_rt_buffer_release(bb);
}

/* pointers.cu's forms: every write through a pointer, word for word. */
static inline void rr_pointer_forms(struct rr *r, uint32_t nr_blocks,
				    uint32_t block)
{
	uint32_t n = nr_blocks * block;
	unsigned int *in, *out, *count;
	struct agile_rt_buffer *ib = rr_buffer(r, n * sizeof(unsigned), &in);
	struct agile_rt_buffer *ob =
		rr_buffer(r, n * REF_NR_FORMS * sizeof(unsigned), &out);
	struct agile_rt_buffer *cb = rr_buffer(r, 5 * sizeof(unsigned), &count);
	int err = -ENOMEM, bad = 1;

	if (ib && ob && cb) {
		struct agile_rt_arg p[] = { rt_buf(ib, AGILE_RT_READ),
					    rr_rw(ob), rr_rw(cb) };

		for (uint32_t i = 0; i < n; i++)
			in[i] = i * 2654435761u;
		err = rr_launch(r, "forms", nr_blocks, 1, 1, block, 1, 1, p, 3);
		bad = ref_pointer_forms(in, out, count, nr_blocks, block);
	}
	tap_ok(!err && !bad,
	       "pointers: forms, %u blocks of %u threads, every form of write through a pointer (%d words wrong): %s",
	       nr_blocks, block, bad, agile_strerror(err));
	agile_rt_buffer_release(ib);
	agile_rt_buffer_release(ob);
	agile_rt_buffer_release(cb);
}

/* vector.cu: saxpy4 over @n4 float4, blocks of @block threads. */
static inline void rr_saxpy4(struct rr *r, uint32_t n4, uint32_t block)
{
	float *x, *y, *y0 = malloc((size_t)n4 * 16);
	struct agile_rt_buffer *xb = rr_buffer(r, (size_t)n4 * 16, &x);
	struct agile_rt_buffer *yb = rr_buffer(r, (size_t)n4 * 16, &y);
	int err = -ENOMEM, bad = 1;

	if (xb && yb && y0) {
		struct agile_rt_arg p[] = {
			rr_val(n4), rr_val(agile_rt_float_word(REF_SAXPY_A)),
			rt_buf(xb, AGILE_RT_READ), rr_rw(yb)
		};

		ref_saxpy_input(x, y0, (int)(4 * n4));
		memcpy(y, y0, (size_t)n4 * 16);
		err = rr_launch(r, "saxpy4", (n4 + block - 1) / block, 1, 1,
				block, 1, 1, p, 4);
		bad = ref_saxpy(x, y0, y, (int)(4 * n4));
	}
	tap_ok(!err && !bad,
	       "vector: saxpy4, %u float4 in blocks of %u threads (%d floats wrong): %s",
	       n4, block, bad, agile_strerror(err));
	free(y0);
	agile_rt_buffer_release(xb);
	agile_rt_buffer_release(yb);
}

/*
 * vector.cu: vec_reverse, @nr_blocks of @block threads (float4 and
 * double2 in block-shared memory, a float2 in the lane state), then
 * vec_sizes.
 */
static inline void rr_vector(struct rr *r, uint32_t nr_blocks, uint32_t block)
{
	uint32_t n = nr_blocks * block;
	float *in, *out;
	int *a, *sizes;
	unsigned int *b;
	unsigned char *c;
	double *sums;
	struct agile_rt_buffer *bufs[] = {
		rr_buffer(r, (size_t)n * 16, &in),
		rr_buffer(r, (size_t)n * 16, &out),
		rr_buffer(r, (size_t)n * 8, &a),
		rr_buffer(r, (size_t)n * 16, &b),
		rr_buffer(r, (size_t)n * 4, &c),
		rr_buffer(r, (size_t)n * 16, &sums),
		rr_buffer(r, 5 * 16, &sizes),
	};
	int err = -ENOMEM, bad = 1, bad_sizes = 1;

	if (bufs[0] && bufs[1] && bufs[2] && bufs[3] && bufs[4] && bufs[5] &&
	    bufs[6]) {
		struct agile_rt_arg p[6];

		for (int i = 0; i < 6; i++)
			p[i] = rr_rw(bufs[i]);
		ref_vector_input(in, a, b, c, n);
		err = rr_launch(r, "vec_reverse", nr_blocks, 1, 1, block, 1, 1,
				p, 6);
		bad = ref_vector_reverse(in, a, b, c, out, sums, nr_blocks,
					 block);
		p[0] = rr_rw(bufs[6]);
		err = err ? err :
			    rr_launch(r, "vec_sizes", 2, 1, 1, 32, 1, 1, p, 1);
		bad_sizes = memcmp(sizes, ref_vector_sizes,
				   sizeof(ref_vector_sizes)) != 0;
	}
	tap_ok(!err && !bad && !bad_sizes,
	       "vector: vec_reverse, %u blocks of %u threads (%d words wrong); vec_sizes %s: %s",
	       nr_blocks, block, bad, bad_sizes ? "wrong" : "CUDA's",
	       agile_strerror(err));
	for (int i = 0; i < 7; i++)
		agile_rt_buffer_release(bufs[i]);
}

/* intrinsics.cu: bits and fmath over @n inputs, blocks of @block. */
static inline void rr_intrinsics(struct rr *r, uint32_t n, uint32_t block)
{
	unsigned int *in;
	unsigned long long *in64;
	int *out;
	float *x, *y, *z, *fout;
	struct agile_rt_buffer *bufs[] = {
		rr_buffer(r, (size_t)n * 4, &in),
		rr_buffer(r, (size_t)n * 8, &in64),
		rr_buffer(r, (size_t)n * 4 * REF_NR_BITS, &out),
		rr_buffer(r, (size_t)n * 4, &x),
		rr_buffer(r, (size_t)n * 4, &y),
		rr_buffer(r, (size_t)n * 4, &z),
		rr_buffer(r, (size_t)n * 4 * REF_NR_FMATH, &fout),
	};
	uint32_t blocks = (n + block - 1) / block;
	int err = -ENOMEM, bad = 1, fbad = 1;

	if (bufs[0] && bufs[1] && bufs[2] && bufs[3] && bufs[4] && bufs[5] &&
	    bufs[6]) {
		struct agile_rt_arg p[] = { rr_rw(bufs[0]), rr_rw(bufs[1]),
					    rr_rw(bufs[2]), rr_val(n) };
		struct agile_rt_arg f[] = { rr_rw(bufs[3]), rr_rw(bufs[4]),
					    rr_rw(bufs[5]), rr_rw(bufs[6]),
					    rr_val(n) };

		ref_bits_input(in, in64, n);
		ref_fmath_input(x, y, z, n);
		err = rr_launch(r, "bits", blocks, 1, 1, block, 1, 1, p, 4);
		err = err ? err :
			    rr_launch(r, "fmath", blocks, 1, 1, block, 1, 1, f,
				      5);
		bad = ref_bits(in, in64, out, n);
		/* a GPU's fast-math intrinsics are its approximations */
		fbad = ref_fmath(x, y, z, fout, n,
				 r->place != AGILE_RT_PLACE_GPU_ONLY);
	}
	tap_ok(!err && !bad && !fbad,
	       "intrinsics: bits and fmath, %u inputs in blocks of %u threads (%d and %d results wrong): %s",
	       n, block, bad, fbad, agile_strerror(err));
	for (int i = 0; i < 7; i++)
		agile_rt_buffer_release(bufs[i]);
}

/*
 * devbar.cu (__device__ functions with barriers, inlined): its three
 * kernels for blocks of @block threads (a power of two, whole warps).
 */
static inline void rr_devbar(struct rr *r, uint32_t block, uint32_t n)
{
	uint32_t nr_blocks = (n + block - 1) / block;
	uint32_t whole = nr_blocks * block;
	float *in, *out, *data;
	int *iin, *iout;
	struct agile_rt_buffer *b[5] = {
		rr_buffer(r, n * sizeof(float), &in),
		rr_buffer(r, 2 * nr_blocks * sizeof(float), &out),
		rr_buffer(r, whole * sizeof(float), &data),
		rr_buffer(r, whole * sizeof(int), &iin),
		rr_buffer(r, whole / 32 * sizeof(int), &iout),
	};
	int err = -ENOMEM, bad = 1;

	if (b[0] && b[1] && b[2] && b[3] && b[4]) {
		struct agile_rt_arg s[] = { rt_buf(b[0], AGILE_RT_READ),
					    rr_rw(b[1]), rr_val(n) };
		struct agile_rt_arg rot[] = { rr_rw(b[2]), rr_val(5) };
		struct agile_rt_arg w[] = { rt_buf(b[3], AGILE_RT_READ),
					    rr_rw(b[4]) };

		ref_devbar_input(in, n);
		ref_devbar_input(data, whole);
		for (uint32_t i = 0; i < whole; i++)
			iin[i] = (int)(i * 2654435761u % 1000) - 300;
		err = rr_launch(r, "devbar_sum", nr_blocks, 1, 1, block, 1, 1,
				s, 3);
		bad = ref_devbar_sum(in, out, n, block);
		err = err ? err :
			    rr_launch(r, "devbar_rotate", nr_blocks, 1, 1,
				      block, 1, 1, rot, 2);
		{
			float *ref = calloc(whole, sizeof(float));

			if (ref) {
				ref_devbar_input(ref, whole);
				bad += ref_devbar_rotate(ref, data, nr_blocks,
							 block, 5);
			} else {
				bad++;
			}
			free(ref);
		}
		err = err ? err :
			    rr_launch(r, "devbar_warp", nr_blocks, 1, 1, block,
				      1, 1, w, 2);
		bad += ref_devbar_warp(iin, iout, whole);
	}
	tap_ok(!err && !bad,
	       "devbar: blocks of %u threads on %u lanes, %u elements: inlined helpers with barriers (tree sums, rotation, warp sums), bit for bit (%d wrong): %s",
	       block, r->lanes, n, bad, agile_strerror(err));
	for (int i = 0; i < 5; i++)
		agile_rt_buffer_release(b[i]);
}

/* coop.cu (cooperative groups): both kernels, blocks of @block threads. */
static inline void rr_coop(struct rr *r, uint32_t block, uint32_t nr_blocks)
{
	uint32_t n = block * nr_blocks;
	int *in, *sums;
	unsigned *out;
	struct agile_rt_buffer *b[3] = {
		rr_buffer(r, n * sizeof(int), &in),
		rr_buffer(r, nr_blocks * sizeof(int), &sums),
		rr_buffer(r, 8 * (size_t)n * sizeof(unsigned), &out),
	};
	int err = -ENOMEM, bad = 1;

	if (b[0] && b[1] && b[2]) {
		struct agile_rt_arg red[] = { rt_buf(b[0], AGILE_RT_READ),
					      rr_rw(b[1]), rr_val(n - 5) };
		struct agile_rt_arg ranks[] = { rt_buf(b[0], AGILE_RT_READ),
						rr_rw(b[2]) };

		for (uint32_t i = 0; i < n; i++)
			in[i] = (int)(i * 2654435761u % 1000) - 300 +
				(i < 32 ? 1 - (int)(i * 2654435761u % 2) : 0);
		err = rr_launch(r, "coop_reduce", nr_blocks, 1, 1, block, 1, 1,
				red, 3);
		bad = ref_coop_reduce(in, sums, n - 5, block);
		err = err ? err :
			    rr_launch(r, "coop_ranks", nr_blocks, 1, 1, block,
				      1, 1, ranks, 2);
		bad += ref_coop_ranks(in, out, nr_blocks, block);
	}
	tap_ok(!err && !bad,
	       "coop: %u blocks of %u threads on %u lanes: cooperative groups' sums, ranks, shuffles and votes, bit for bit (%d wrong): %s",
	       nr_blocks, block, r->lanes, bad, agile_strerror(err));
	for (int i = 0; i < 3; i++)
		agile_rt_buffer_release(b[i]);
}

/* warpreduce.cu: blocks of @block threads on @r's lanes. */
static inline void rr_warp_reduce(struct rr *r, uint32_t block, uint32_t n)
{
	uint32_t nr_blocks = (n + block - 1) / block;
	int *in, *out;
	struct agile_rt_buffer *ib = rr_buffer(r, n * sizeof(int), &in);
	struct agile_rt_buffer *ob =
		rr_buffer(r, nr_blocks * sizeof(int), &out);
	int err = -ENOMEM, bad = 1;

	if (ib && ob) {
		struct agile_rt_arg p[] = { rt_buf(ib, AGILE_RT_READ),
					    rr_rw(ob), rr_val(n) };

		for (uint32_t i = 0; i < n; i++)
			in[i] = (int)(i * 2654435761u % 1000) - 300;
		err = rr_launch(r, "warp_reduce", nr_blocks, 1, 1, block, 1, 1,
				p, 3);
		bad = 0;
		for (uint32_t b = 0; b < nr_blocks; b++)
			bad += out[b] != ref_warp_reduce_block(in, n, b, block);
	}
	tap_ok(!err && !bad,
	       "warpreduce: blocks of %u threads on %u lanes, %u elements: __shfl_down_sync sums, bit for bit (%d blocks wrong): %s",
	       block, r->lanes, n, bad, agile_strerror(err));
	agile_rt_buffer_release(ib);
	agile_rt_buffer_release(ob);
}

/*
 * warpvote.cu: warp_vote's eight words and warp_xor's one a thread,
 * blocks of @block threads on @r's lanes.
 */
static inline void rr_warp_vote(struct rr *r, uint32_t block, uint32_t n)
{
	uint32_t nr_blocks = (n + block - 1) / block;
	int *in;
	unsigned int *out, *xout,
		*ref = calloc(8 * (size_t)block, sizeof(unsigned));
	struct agile_rt_buffer *ib = rr_buffer(r, n * sizeof(int), &in);
	struct agile_rt_buffer *ob =
		rr_buffer(r, 8 * (size_t)n * sizeof(unsigned), &out);
	struct agile_rt_buffer *xb = rr_buffer(r, n * sizeof(unsigned), &xout);
	int err = -ENOMEM, xerr = -ENOMEM, bad = 1, xbad = 1;

	if (ib && ob && xb && ref) {
		struct agile_rt_arg p[] = { rt_buf(ib, AGILE_RT_READ),
					    rr_rw(ob), rr_val(n) };

		ref_warp_vote_input(in, n);
		err = rr_launch(r, "warp_vote", nr_blocks, 1, 1, block, 1, 1, p,
				3);
		p[1] = rr_rw(xb);
		xerr = rr_launch(r, "warp_xor", nr_blocks, 1, 1, block, 1, 1, p,
				 3);
		bad = xbad = 0;
		for (uint32_t b = 0; b < nr_blocks; b++) {
			ref_warp_vote_block(in, n, b, block, ref);
			for (uint32_t t = 0; t < block && b * block + t < n;
			     t++)
				bad += memcmp(out + 8 * (size_t)(b * block + t),
					      ref + 8 * (size_t)t,
					      8 * sizeof(unsigned)) != 0;
			ref_warp_xor_block(in, n, b, block, ref);
			for (uint32_t t = 0; t < block && b * block + t < n;
			     t++)
				xbad += xout[b * block + t] != ref[t];
		}
	}
	tap_ok(!err && !bad,
	       "warpvote: warp_vote, blocks of %u threads on %u lanes: votes and shuffles of every kind, bit for bit (%d threads wrong): %s",
	       block, r->lanes, bad, agile_strerror(err));
	tap_ok(!xerr && !xbad,
	       "warpvote: warp_xor, blocks of %u threads on %u lanes: __shfl_xor_sync of every mask and width (%d threads wrong): %s",
	       block, r->lanes, xbad, agile_strerror(xerr));
	free(ref);
	agile_rt_buffer_release(ib);
	agile_rt_buffer_release(ob);
	agile_rt_buffer_release(xb);
}

/* shared_rotate (by hand, above) with @lanes lanes, one task. */
static inline void rr_shared_rotate(struct rr *r, uint32_t lanes)
{
	double *x;
	struct agile_rt_buffer *xb =
		rr_buffer(r, AGILE_MAX_LANES * sizeof(double), &x);
	struct agile_rt_kernel *k = NULL;
	struct agile_rt_event *ev;
	int err = -ENOMEM, bad = 0;

	if (xb) {
		struct agile_rt_arg a = rr_rw(xb);
		struct agile_rt_entry e = { .threads = lanes,
					    .groups = 1,
					    .place = r->place,
					    .nr_args = 1,
					    .args = &a };

		for (uint32_t l = 0; l < lanes; l++)
			x[l] = l + 1;
		err = agile_rt_program_kernel(r->prog, "shared_rotate", &k);
		e.kernel = k;
		err = err ? err : agile_rt_enqueue(r->q, &e, &ev);
		if (!err) {
			err = agile_rt_event_wait(ev, RT_WAIT_NS);
			agile_rt_event_release(ev);
		}
		for (uint32_t l = 0; l < lanes; l++)
			bad += x[l] != 2.0 * ((l + 1) % lanes + 1);
	}
	tap_ok(!err && !bad,
	       "shared-rotate (dialect 2 by hand, AGILE_IN_ORDER): %u lanes swap values through block-shared memory: %s",
	       lanes, agile_strerror(err));
	agile_rt_buffer_release(xb);
}

/*
 * cxx.cu (the C++ subset): block_reduce<T, BS> for float/64, int/256,
 * double/128, bitonic<int>, ops::smooth<2>, tile_transpose, by their
 * mangled names, vec_dots; @nb blocks (at least 12: vec_dots reads 768
 * floats of fi).
 */
static inline void rr_cxx(struct rr *r, uint32_t nb)
{
	float *fi, *fo, *sm, *so;
	int *ii, *io, *keys;
	double *di, *dout;
	struct agile_rt_buffer *b[9] = {
		rr_buffer(r, nb * 64 * sizeof(float), &fi),
		rr_buffer(r, nb * sizeof(float), &fo),
		rr_buffer(r, nb * 256 * sizeof(int), &ii),
		rr_buffer(r, nb * sizeof(int), &io),
		rr_buffer(r, nb * 128 * sizeof(double), &di),
		rr_buffer(r, nb * sizeof(double), &dout),
		rr_buffer(r, nb * 64 * sizeof(int), &keys),
		rr_buffer(r, 48 * 48 * sizeof(float), &sm),
		rr_buffer(r, 48 * 48 * sizeof(float), &so),
	};
	int *keys_in = calloc(nb * 64, sizeof(int));
	int err[6] = { -ENOMEM, -ENOMEM, -ENOMEM, -ENOMEM, -ENOMEM, -ENOMEM };
	int bad[6] = { 1, 1, 1, 1, 1, 1 };
	int ok = !!keys_in;

	for (int i = 0; i < 9; i++)
		ok = ok && b[i];
	if (ok) {
		struct agile_rt_arg pf[] = { rt_buf(b[0], AGILE_RT_READ),
					     rr_rw(b[1]) };
		struct agile_rt_arg pi[] = { rt_buf(b[2], AGILE_RT_READ),
					     rr_rw(b[3]) };
		struct agile_rt_arg pd[] = { rt_buf(b[4], AGILE_RT_READ),
					     rr_rw(b[5]) };
		struct agile_rt_arg pk[] = { rr_rw(b[6]) };
		struct agile_rt_arg ps[] = { rt_buf(b[7], AGILE_RT_READ),
					     rr_rw(b[8]), rr_val(48 * 48) };
		struct agile_rt_arg pt[] = { rt_buf(b[7], AGILE_RT_READ),
					     rr_rw(b[8]), rr_val(48) };

		for (uint32_t i = 0; i < nb * 256; i++) {
			if (i < nb * 64) {
				fi[i] = cxx_in_f(i);
				keys[i] = keys_in[i] = cxx_in_i(i * 7 + 3);
			}
			if (i < nb * 128)
				di[i] = cxx_in_d(i);
			ii[i] = cxx_in_i(i);
		}
		for (uint32_t i = 0; i < 48 * 48; i++)
			sm[i] = cxx_in_f(i) * 1.25f;
		err[0] = rr_launch(r, "block_reduce_float_64", nb, 1, 1, 64, 1,
				   1, pf, 2);
		bad[0] = ref_cxx_reduce_f(fi, fo, nb, 64);
		err[1] = rr_launch(r, "block_reduce_int_256", nb, 1, 1, 256, 1,
				   1, pi, 2);
		bad[1] = ref_cxx_reduce_i(ii, io, nb, 256);
		err[2] = rr_launch(r, "block_reduce_double_128", nb, 1, 1, 128,
				   1, 1, pd, 2);
		bad[2] = ref_cxx_reduce_d(di, dout, nb, 128);
		err[3] = rr_launch(r, "bitonic_int", nb, 1, 1, 64, 1, 1, pk, 1);
		bad[3] = ref_cxx_sorted(keys_in, keys, nb, sizeof(int), 1);
		err[4] = rr_launch(r, "ops_smooth_2", (48 * 48 + 127) / 128, 1,
				   1, 128, 1, 1, ps, 3);
		bad[4] = ref_cxx_smooth(sm, so, 48 * 48, 2);
		err[5] = rr_launch(r, "tile_transpose", 3, 3, 1, 16, 16, 1, pt,
				   3);
		bad[5] = ref_cxx_transpose(sm, so, 48);
	}
	tap_ok(!err[0] && !bad[0] && !err[1] && !bad[1] && !err[2] && !bad[2],
	       "cxx: block_reduce<float, 64>, <int, 256>, <double, 128> (%d, %d, %d wrong): %s",
	       bad[0], bad[1], bad[2],
	       agile_strerror(err[0] ? err[0] :
			      err[1] ? err[1] :
				       err[2]));
	tap_ok(!err[3] && !bad[3],
	       "cxx: bitonic<int> through swap_vals(T &, T &) (%d wrong): %s",
	       bad[3], agile_strerror(err[3]));
	tap_ok(!err[4] && !bad[4] && !err[5] && !bad[5],
	       "cxx: ops::smooth<2>, tile_transpose (%d, %d wrong): %s", bad[4],
	       bad[5], agile_strerror(err[4] ? err[4] : err[5]));
	if (ok) {
		/* vec_dots: 256 Vec3s of sm, 256 more, into so */
		struct agile_rt_arg pv[] = { rt_buf(b[7], AGILE_RT_READ),
					     rt_buf(b[0], AGILE_RT_READ),
					     rr_rw(b[8]), rr_val(256) };

		for (uint32_t i = 0; i < 3 * 256 && i < nb * 64; i++)
			fi[i] = cxx_in_f(i * 3 + 1);
		err[0] = rr_launch(r, "vec_dots", 4, 1, 1, 64, 1, 1, pv, 4);
		bad[0] = ref_cxx_vec_dots(sm, fi, so, 256);
	}
	tap_ok(ok && !err[0] && !bad[0],
	       "cxx: vec_dots, struct Vec3's member functions (%d wrong): %s",
	       bad[0], agile_strerror(err[0]));
	for (int i = 0; i < 9; i++)
		agile_rt_buffer_release(b[i]);
	free(keys_in);
}

/* Every case of file @f on @r's program. */
static inline void rr_run_file(struct rr *r, const char *f)
{
	if (!strcmp(f, "matlist")) {
		rr_matlist(r, 4);
		rr_matlist(r, 16);
		rr_matlist(r, 32);
		rr_too_big(r);
	} else if (!strcmp(f, "reduce")) {
		rr_reduce(r, 256, 1000);
		rr_reduce(r, 1024, 3000);
		rr_reduce_first(r, 64, 3, 5);
	} else if (!strcmp(f, "transpose")) {
		rr_transpose(r, 70, 2);
	} else if (!strcmp(f, "grid3d")) {
		rr_grid3d(r, 8, 4, 2, 0);
		rr_grid3d(r, 4, 4, 4, 1);
		rr_carry(r);
	} else if (!strcmp(f, "hipnames")) {
		rr_hipnames(r, 1000, 3, 128);
	} else if (!strcmp(f, "histogram")) {
		rr_histogram(r, "shared_histogram", 256, 4096, 100000);
		rr_histogram(r, "global_histogram", 256, 0, 1u << 20);
		rr_shared_ops(r, 100);
	} else if (!strcmp(f, "scan")) {
		rr_scan(r, 256, 10000);
	} else if (!strcmp(f, "pointers")) {
		rr_hist256(r, 256, 100003);
		rr_pointer_forms(r, 5, 32);
		rr_pointer_forms(r, 3, 1024);
	} else if (!strcmp(f, "vector")) {
		rr_saxpy4(r, 1000, 128);
		rr_vector(r, 5, 64);
		rr_vector(r, 3, 256);
	} else if (!strcmp(f, "intrinsics")) {
		rr_intrinsics(r, 5000, 256);
	} else if (!strcmp(f, "warpreduce") || !strcmp(f, "warpvote")) {
		/* whole and partial warps; 16 threads a lane at most */
		static const uint32_t blocks[] = { 32, 64, 80, 200, 1024 };
		struct rr few = *r;
		int reduce = !strcmp(f, "warpreduce");

		for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++)
			if (reduce)
				rr_warp_reduce(r, blocks[i],
					       20 * blocks[i] - 7);
			else
				rr_warp_vote(r, blocks[i], 5 * blocks[i] - 3);
		few.lanes = 5; /* 80 threads: 16 a lane */
		if (reduce)
			rr_warp_reduce(&few, 80, 1000);
		else
			rr_warp_vote(&few, 80, 397);
	} else if (!strcmp(f, "devbar")) {
		struct rr few = *r;

		rr_devbar(r, 64, 1000);
		rr_devbar(r, 256, 3000);
		rr_devbar(r, 1024, 5000);
		few.lanes = 5;
		rr_devbar(&few, 64, 999);
	} else if (!strcmp(f, "coop")) {
		struct rr few = *r;

		rr_coop(r, 32, 3);
		rr_coop(r, 256, 3);
		rr_coop(r, 1024, 2);
		few.lanes = 5;
		rr_coop(&few, 64, 2);
	} else if (!strcmp(f, "dynshared")) {
		struct rr gpu = *r;

		rr_dyn_shared(r, 32, 1000, 0, 0);
		rr_dyn_shared(r, 64, 64 * 37 - 5, 0, 0);
		rr_dyn_shared(r, 256, 20000, 0, 0);
		rr_dyn_shared(r, 1024, 5000, 0, 0);
		rr_dyn_shared(r, 64, 1000, AGILE_RT_MAX_LOCAL + 1, -E2BIG);
		gpu.place = AGILE_RT_PLACE_GPU_ONLY;
		rr_dyn_shared(&gpu, 64, 1000, 0, -E2BIG);
	} else if (!strcmp(f, "constant")) {
		rr_constant(r);
	} else if (!strcmp(f, "cxx")) {
		rr_cxx(r, 12);
	} else if (!strcmp(f, "shared-rotate")) {
		rr_shared_rotate(r, AGILE_MAX_LANES);
		rr_shared_rotate(r, 5);
	}
}

/* Test lines rr_run_file writes for every file but the CPU-only ones. */
#define RR_NR_CASES (21 + 4 + 6 + 12 + 4 + 4 + 7 + 4)
/* Files whose cases need CPU EUs: GPU EUs compile them, run none. */
#define RR_NR_CPU_ONLY 1

#endif /* AGILE_RTRETARGET_H */
