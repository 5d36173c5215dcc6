// SPDX-License-Identifier: MIT
/*
 * runtime_kernels - GPU-style kernels on the runtime's CPU device, each
 * beside the same kernel in OpenCL C on PoCL and a plain C loop on one
 * thread, in one run (agile-bench runtime; issue 29):
 *
 *    saxpy      y = a x + y on RK_SAXPY_N floats, 64-lane groups:
 *               saxpy1 one element a lane (one group per 64 elements),
 *               saxpy16 16 a lane (coalesced: element k of lane l is
 *               l + 64 k of its group's 1024); PoCL one element a
 *               work-item at the local sizes of rk_saxpy_locals.
 *    sgemm      C = A B, RK_SG_N x RK_SG_N floats, 16 x 16 groups
 *               (threads = threads_y = 16) with two 16 x 16 tiles of
 *               local memory: load a tile pair, barrier, accumulate,
 *               barrier, the loop over tiles by the kernel's control
 *               function; PoCL the same tiled kernel (local 16 x 16) and
 *               a naive one (local size auto).
 *    transpose  RK_TR_N x RK_TR_N floats through a 32 x 33 local tile,
 *               32 x 8 groups, each thread copying 4 elements (the CUDA
 *               sample's); PoCL the same and a naive one (auto).
 *    reduce     the sum of RK_RD_N floats: groups of 256 each add 4
 *               elements a lane, then a tree in local memory; the host
 *               adds the groups' sums; PoCL the same at local 64, 256
 *               and 1024.
 *
 * Agile's kernels are one source in the runtime's dialect, built at run
 * time (agile_rt_program_create/build, cc) as an application would, on
 * a context of the CPU device alone.  Each set of rows runs at 2 threads
 * (agile: cpu_eus = 2; PoCL: 2 compute units) and, where -t differs, at
 * -t (rows named "-t<N>"); PoCL gets its compute units from a sub-device
 * (clCreateSubDevices by counts) when fewer than its device has, and is
 * n/a when more.  The serial rows run once.  Agile is compared with the
 * best PoCL row of its kernel and with the serial one.
 *
 * Checks: every contender's first (untimed) run is checked against C
 * (saxpy: y = y0 + a x exactly; sgemm: the serial product, small
 * integers, exact; transpose: element by element; reduce: every run's
 * sum against the exact one).  A wrong result fails the bench.
 */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <agile/error.h>
#include <agile/runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define RK_SAXPY_N (1u << 22)
#define RK_LANES 64 /* saxpy's group */
#define RK_PER 16 /* saxpy16's elements a lane */
#define RK_SG_N 512
#define RK_SG_T 16
#define RK_TR_N 2048
#define RK_TR_TILE 32
#define RK_TR_ROWS 8
#define RK_RD_N (1u << 22)
#define RK_RD_GROUP 256
#define RK_RD_PER 4 /* reduce: elements a lane adds before the tree */
#define RK_WAIT_NS (60ULL * 1000 * 1000 * 1000)
#define RK_A 0.5f /* saxpy's a */

/* Agile's kernels, in the runtime's dialect (docs/runtime.md). */
static const char rk_agile_src[] =
	"#define SX_PER 16\n"
	"#define SG_T 16\n"
	"#define TR_TILE 32\n"
	"#define TR_ROWS 8\n"
	"#define RD_PER 4\n"
	"\n"
	"/* args: a, x, y, n, group */\n"
	"AGILE_PHASE(saxpy1)\n"
	"{\n"
	"	const float *x = (const float *)(uintptr_t)args[1];\n"
	"	float *y = (float *)(uintptr_t)args[2];\n"
	"	agile_u64 i = args[4] * nr_lanes + lane;\n"
	"\n"
	"	if (i < args[3])\n"
	"		y[i] = agile_arg_float(args[0]) * x[i] + y[i];\n"
	"	return 0;\n"
	"}\n"
	"\n"
	"AGILE_PHASE(saxpy16)\n"
	"{\n"
	"	const float *x = (const float *)(uintptr_t)args[1];\n"
	"	float *y = (float *)(uintptr_t)args[2];\n"
	"	float a = agile_arg_float(args[0]);\n"
	"	agile_u64 base = args[4] * nr_lanes * SX_PER + lane;\n"
	"\n"
	"	for (int k = 0; k < SX_PER; k++) {\n"
	"		agile_u64 i = base + (agile_u64)k * nr_lanes;\n"
	"\n"
	"		if (i < args[3])\n"
	"			y[i] = a * x[i] + y[i];\n"
	"	}\n"
	"	return 0;\n"
	"}\n"
	"\n"
	"/*\n"
	" * sgemm: args A, B, C, n, group id, local (two SG_T x SG_T tiles);\n"
	" * lane = x + SG_T y.\n"
	" */\n"
	"struct sg_state { float acc; };\n"
	"struct sg_shared { uint32_t tile; };\n"
	"\n"
	"static AGILE_LANE_FN inline void sg_load(uint32_t lane,\n"
	"	const agile_u64 *args, uint32_t t)\n"
	"{\n"
	"	const float *a = (const float *)(uintptr_t)args[0];\n"
	"	const float *b = (const float *)(uintptr_t)args[1];\n"
	"	float *as = (float *)(uintptr_t)args[5];\n"
	"	float *bs = as + SG_T * SG_T;\n"
	"	struct agile_rt_dim3 g = agile_rt_dim3_of(args[4]);\n"
	"	uint32_t n = (uint32_t)args[3], tx = lane % SG_T, ty = lane / SG_T;\n"
	"	uint32_t row = g.y * SG_T + ty, col = g.x * SG_T + tx;\n"
	"\n"
	"	as[lane] = a[(size_t)row * n + t * SG_T + tx];\n"
	"	bs[lane] = b[(size_t)(t * SG_T + ty) * n + col];\n"
	"}\n"
	"\n"
	"AGILE_PHASE(sg_first)\n"
	"{\n"
	"	((struct sg_state *)state)->acc = 0;\n"
	"	sg_load(lane, args, 0);\n"
	"	return 0;\n"
	"}\n"
	"\n"
	"AGILE_PHASE(sg_acc)\n"
	"{\n"
	"	const float *as = (const float *)(uintptr_t)args[5];\n"
	"	const float *bs = as + SG_T * SG_T;\n"
	"	struct sg_state *st = (struct sg_state *)state;\n"
	"	uint32_t n = (uint32_t)args[3], tx = lane % SG_T, ty = lane / SG_T;\n"
	"	float acc = st->acc;\n"
	"\n"
	"	for (int k = 0; k < SG_T; k++)\n"
	"		acc += as[ty * SG_T + k] * bs[k * SG_T + tx];\n"
	"	st->acc = acc;\n"
	"	if (((struct sg_shared *)shared)->tile == n / SG_T - 1) {\n"
	"		float *c = (float *)(uintptr_t)args[2];\n"
	"		struct agile_rt_dim3 g = agile_rt_dim3_of(args[4]);\n"
	"\n"
	"		c[(size_t)(g.y * SG_T + ty) * n + g.x * SG_T + tx] = acc;\n"
	"	}\n"
	"	return 0;\n"
	"}\n"
	"\n"
	"AGILE_PHASE(sg_next_load)\n"
	"{\n"
	"	sg_load(lane, args, ((struct sg_shared *)shared)->tile);\n"
	"	return 0;\n"
	"}\n"
	"\n"
	"/* 0 sg_first, then 1 sg_acc and 2 sg_next_load in turn. */\n"
	"AGILE_NEXT(sg_ctl)\n"
	"{\n"
	"	struct sg_shared *s = (struct sg_shared *)shared;\n"
	"\n"
	"	if (done == 0) {\n"
	"		s->tile = 0;\n"
	"		return 1;\n"
	"	}\n"
	"	if (done == 2)\n"
	"		return 1;\n"
	"	return ++s->tile < (uint32_t)args[3] / SG_T ? 2 : AGILE_NEXT_DONE;\n"
	"}\n"
	"\n"
	"/* transpose: args in, out, n, group id, local (TR_TILE x TR_TILE + 1) */\n"
	"AGILE_PHASE(tr_load)\n"
	"{\n"
	"	const float *in = (const float *)(uintptr_t)args[0];\n"
	"	float *tile = (float *)(uintptr_t)args[4];\n"
	"	struct agile_rt_dim3 g = agile_rt_dim3_of(args[3]);\n"
	"	uint32_t n = (uint32_t)args[2], tx = lane % TR_TILE, ty = lane / TR_TILE;\n"
	"	uint32_t x = g.x * TR_TILE + tx, y = g.y * TR_TILE + ty;\n"
	"\n"
	"	for (int j = 0; j < TR_TILE; j += TR_ROWS)\n"
	"		tile[(ty + j) * (TR_TILE + 1) + tx] = in[(size_t)(y + j) * n + x];\n"
	"	return 0;\n"
	"}\n"
	"\n"
	"AGILE_PHASE(tr_store)\n"
	"{\n"
	"	float *out = (float *)(uintptr_t)args[1];\n"
	"	const float *tile = (const float *)(uintptr_t)args[4];\n"
	"	struct agile_rt_dim3 g = agile_rt_dim3_of(args[3]);\n"
	"	uint32_t n = (uint32_t)args[2], tx = lane % TR_TILE, ty = lane / TR_TILE;\n"
	"	uint32_t x = g.y * TR_TILE + tx, y = g.x * TR_TILE + ty;\n"
	"\n"
	"	for (int j = 0; j < TR_TILE; j += TR_ROWS)\n"
	"		out[(size_t)(y + j) * n + x] = tile[tx * (TR_TILE + 1) + ty + j];\n"
	"	return 0;\n"
	"}\n"
	"\n"
	"/* reduce: args in, sums, n, group, local (a float a lane) */\n"
	"struct rd_shared { uint32_t stride; };\n"
	"\n"
	"AGILE_PHASE(rd_load)\n"
	"{\n"
	"	const float *in = (const float *)(uintptr_t)args[0];\n"
	"	float *l = (float *)(uintptr_t)args[4];\n"
	"	agile_u64 i = args[3] * nr_lanes * RD_PER + lane;\n"
	"	float s = 0;\n"
	"\n"
	"	for (int k = 0; k < RD_PER; k++, i += nr_lanes)\n"
	"		if (i < args[2])\n"
	"			s += in[i];\n"
	"	l[lane] = s;\n"
	"	return 0;\n"
	"}\n"
	"\n"
	"AGILE_PHASE(rd_step)\n"
	"{\n"
	"	float *l = (float *)(uintptr_t)args[4];\n"
	"	uint32_t s = ((struct rd_shared *)shared)->stride;\n"
	"\n"
	"	if (lane < s)\n"
	"		l[lane] += l[lane + s];\n"
	"	if (s == 1 && lane == 0)\n"
	"		((float *)(uintptr_t)args[1])[args[3]] = l[0];\n"
	"	return 0;\n"
	"}\n"
	"\n"
	"/* 0 rd_load, then rd_step at strides nr_lanes / 2 .. 1 */\n"
	"AGILE_NEXT(rd_ctl)\n"
	"{\n"
	"	struct rd_shared *s = (struct rd_shared *)shared;\n"
	"\n"
	"	if (done == 0) {\n"
	"		s->stride = nr_lanes / 2;\n"
	"		return 1;\n"
	"	}\n"
	"	if (s->stride <= 1)\n"
	"		return AGILE_NEXT_DONE;\n"
	"	s->stride /= 2;\n"
	"	return 1;\n"
	"}\n"
	"\n"
	"#define AGILE_USER_KERNELS(K) \\\n"
	"	K(bench_saxpy1, struct agile_no_state, 0, saxpy1) \\\n"
	"	K(bench_saxpy16, struct agile_no_state, 0, saxpy16) \\\n"
	"	K(bench_sgemm, struct sg_state, 0, sg_first, sg_acc, sg_next_load) \\\n"
	"	K(bench_transpose, struct agile_no_state, 0, tr_load, tr_store) \\\n"
	"	K(bench_reduce, struct agile_no_state, 0, rd_load, rd_step)\n"
	"#define AGILE_USER_EXTRAS(X) \\\n"
	"	X(bench_sgemm, struct sg_shared, sg_ctl) \\\n"
	"	X(bench_reduce, struct rd_shared, rd_ctl)\n";

/* The same kernels in OpenCL C. */
static const char rk_ocl_src[] =
	"__kernel void saxpy(float a, __global const float *x,\n"
	"		    __global float *y, ulong n)\n"
	"{\n"
	"	size_t i = get_global_id(0);\n"
	"\n"
	"	if (i < n) /* as agile's, and as GPU code checks */\n"
	"		y[i] = a * x[i] + y[i];\n"
	"}\n"
	"__kernel void sgemm_tiled(__global const float *a,\n"
	"			  __global const float *b, __global float *c,\n"
	"			  int n)\n"
	"{\n"
	"	__local float as[16][16], bs[16][16];\n"
	"	int tx = get_local_id(0), ty = get_local_id(1);\n"
	"	int row = get_group_id(1) * 16 + ty, col = get_group_id(0) * 16 + tx;\n"
	"	float acc = 0;\n"
	"\n"
	"	for (int t = 0; t < n / 16; t++) {\n"
	"		as[ty][tx] = a[row * n + t * 16 + tx];\n"
	"		bs[ty][tx] = b[(t * 16 + ty) * n + col];\n"
	"		barrier(CLK_LOCAL_MEM_FENCE);\n"
	"		for (int k = 0; k < 16; k++)\n"
	"			acc += as[ty][k] * bs[k][tx];\n"
	"		barrier(CLK_LOCAL_MEM_FENCE);\n"
	"	}\n"
	"	c[row * n + col] = acc;\n"
	"}\n"
	"__kernel void sgemm_naive(__global const float *a,\n"
	"			  __global const float *b, __global float *c,\n"
	"			  int n)\n"
	"{\n"
	"	int col = get_global_id(0), row = get_global_id(1);\n"
	"	float acc = 0;\n"
	"\n"
	"	for (int k = 0; k < n; k++)\n"
	"		acc += a[row * n + k] * b[k * n + col];\n"
	"	c[row * n + col] = acc;\n"
	"}\n"
	"__kernel void transpose_tiled(__global const float *in,\n"
	"			      __global float *out, int n)\n"
	"{\n"
	"	__local float tile[32][33];\n"
	"	int lx = get_local_id(0), ly = get_local_id(1);\n"
	"	int x = get_group_id(0) * 32 + lx, y = get_group_id(1) * 32 + ly;\n"
	"\n"
	"	for (int j = 0; j < 32; j += 8)\n"
	"		tile[ly + j][lx] = in[(y + j) * n + x];\n"
	"	barrier(CLK_LOCAL_MEM_FENCE);\n"
	"	x = get_group_id(1) * 32 + lx;\n"
	"	y = get_group_id(0) * 32 + ly;\n"
	"	for (int j = 0; j < 32; j += 8)\n"
	"		out[(y + j) * n + x] = tile[lx][ly + j];\n"
	"}\n"
	"__kernel void transpose_naive(__global const float *in,\n"
	"			      __global float *out, int n)\n"
	"{\n"
	"	int x = get_global_id(0), y = get_global_id(1);\n"
	"\n"
	"	out[x * n + y] = in[y * n + x];\n"
	"}\n"
	"__kernel void reduce(__global const float *in, __global float *sums,\n"
	"		     __local float *l)\n"
	"{\n"
	"	size_t nl = get_local_size(0), lid = get_local_id(0);\n"
	"	size_t g = get_group_id(0), i = g * nl * 4 + lid;\n"
	"\n"
	"	l[lid] = in[i] + in[i + nl] + in[i + 2 * nl] + in[i + 3 * nl];\n"
	"	barrier(CLK_LOCAL_MEM_FENCE);\n"
	"	for (size_t s = nl / 2; s > 0; s >>= 1) {\n"
	"		if (lid < s)\n"
	"			l[lid] += l[lid + s];\n"
	"		barrier(CLK_LOCAL_MEM_FENCE);\n"
	"	}\n"
	"	if (lid == 0)\n"
	"		sums[g] = l[0];\n"
	"}\n";

/* The buffers, the same on every side. */
enum { B_X, B_Y, B_A, B_B, B_C, B_TIN, B_TOUT, B_RIN, B_RSUM, RK_NR_BUFS };

static size_t rk_floats(int b)
{
	switch (b) {
	case B_X:
	case B_Y:
		return RK_SAXPY_N;
	case B_A:
	case B_B:
	case B_C:
		return (size_t)RK_SG_N * RK_SG_N;
	case B_TIN:
	case B_TOUT:
		return (size_t)RK_TR_N * RK_TR_N;
	case B_RIN:
		return RK_RD_N;
	default: /* B_RSUM: a sum per group of the smallest (PoCL's 64) */
		return RK_RD_N / (64 * RK_RD_PER);
	}
}

/* Inputs: small integers, so that every sum here is exact in floats. */
static void rk_fill(int b, float *p)
{
	size_t n = rk_floats(b);

	for (size_t i = 0; i < n; i++)
		switch (b) {
		case B_X:
		case B_RIN:
			p[i] = (float)(i % 16);
			break;
		case B_Y:
			p[i] = (float)(i % 7);
			break;
		case B_A:
			p[i] = (float)((i / RK_SG_N * 3 + i % RK_SG_N * 5) % 4);
			break;
		case B_B:
			p[i] = (float)((i / RK_SG_N + i % RK_SG_N * 2) % 3);
			break;
		case B_TIN:
			p[i] = (float)(i % 100003);
			break;
		default:
			p[i] = 0;
		}
}

/* ---- the checks ---- */

/* After one saxpy on the filled buffers: y = y0 + a x, exact. */
static int check_saxpy(const float *y)
{
	for (size_t i = 0; i < RK_SAXPY_N; i++)
		if (y[i] != (float)(i % 7) + RK_A * (float)(i % 16))
			return -EDOM;
	return 0;
}

static int check_transpose(const float *out)
{
	for (size_t r = 0; r < RK_TR_N; r++)
		for (size_t c = 0; c < RK_TR_N; c++)
			if (out[c * RK_TR_N + r] !=
			    (float)((r * RK_TR_N + c) % 100003))
				return -EDOM;
	return 0;
}

/* The serial contender's product and sum: what the others must give. */
static float *rk_ref_c;
static double rk_ref_sum;

static int check_sgemm(const float *c)
{
	if (memcmp(c, rk_ref_c, rk_floats(B_C) * sizeof(float)))
		return -EDOM;
	return 0;
}

static int check_sum(const float *sums, size_t nr)
{
	double s = 0;

	for (size_t i = 0; i < nr; i++)
		s += sums[i];
	return s == rk_ref_sum ? 0 : -EDOM;
}

/* ---- the contenders ---- */

enum { K_SAXPY1, K_SAXPY16, K_SGEMM, K_TRANSPOSE, K_REDUCE, RK_NR_KERNELS };

static const char *const rk_agile_names[RK_NR_KERNELS] = {
	"bench_saxpy1", "bench_saxpy16", "bench_sgemm", "bench_transpose",
	"bench_reduce"
};

struct rk_agile {
	agile_rt_ctx ctx;
	struct agile_rt_program *prog;
	struct agile_rt_queue *q;
	struct agile_rt_kernel *k[RK_NR_KERNELS];
	struct agile_rt_buffer *buf[RK_NR_BUFS];
	float *h[RK_NR_BUFS];
};

/* PoCL's kernels: saxpy, sgemm tiled and naive, transpose both, reduce. */
enum {
	O_SAXPY,
	O_SG_TILED,
	O_SG_NAIVE,
	O_TR_TILED,
	O_TR_NAIVE,
	O_REDUCE,
	RK_NR_OCL
};

static const char *const rk_ocl_names[RK_NR_OCL] = {
	"saxpy",	   "sgemm_tiled",     "sgemm_naive",
	"transpose_tiled", "transpose_naive", "reduce"
};

struct rk_ocl {
	cl_device_id root, dev; /* dev: root, or a sub-device of it */
	cl_context ctx;
	cl_command_queue q;
	cl_program prog;
	cl_kernel k[RK_NR_OCL];
	cl_mem m[RK_NR_BUFS];
	float *back; /* read back for the checks */
	char why[128];
};

struct rk_serial {
	float *h[RK_NR_BUFS];
};

/* One contender: which side, which kernel, with what. */
struct rk_run {
	struct rk_agile *a;
	struct rk_ocl *o;
	struct rk_serial *s;
	int kernel; /* K_*; PoCL: O_* */
	size_t local; /* PoCL's local size in x (0: auto) */
	int calls;
	int err;
};

/* ---- agile ---- */

static struct agile_rt_arg rk_buf(struct rk_agile *a, int b, uint32_t access)
{
	return (struct agile_rt_arg){ .kind = AGILE_RT_ARG_BUFFER,
				      .access = access,
				      .buf = a->buf[b] };
}

static struct agile_rt_arg rk_val(uint32_t kind, uint64_t value)
{
	return (struct agile_rt_arg){ .kind = kind, .value = value };
}

static int agile_kernel_run(struct rk_agile *a, int kernel)
{
	const uint32_t r = AGILE_RT_READ, w = AGILE_RT_WRITE;
	struct agile_rt_arg args[6];
	struct agile_rt_entry e = { .kernel = a->k[kernel],
				    .place = AGILE_RT_PLACE_CPU,
				    .args = args };
	struct agile_rt_event *ev;
	int err;

	switch (kernel) {
	case K_SAXPY1:
	case K_SAXPY16:
		args[0] = rk_val(AGILE_RT_ARG_VALUE, agile_rt_float_word(RK_A));
		args[1] = rk_buf(a, B_X, r);
		args[2] = rk_buf(a, B_Y, r | w);
		args[3] = rk_val(AGILE_RT_ARG_VALUE, RK_SAXPY_N);
		args[4] = rk_val(AGILE_RT_ARG_GROUP, 0);
		e.nr_args = 5;
		e.threads = RK_LANES;
		e.groups = RK_SAXPY_N /
			   (RK_LANES * (kernel == K_SAXPY16 ? RK_PER : 1));
		break;
	case K_SGEMM:
		args[0] = rk_buf(a, B_A, r);
		args[1] = rk_buf(a, B_B, r);
		args[2] = rk_buf(a, B_C, w);
		args[3] = rk_val(AGILE_RT_ARG_VALUE, RK_SG_N);
		args[4] = rk_val(AGILE_RT_ARG_GROUP_ID, 0);
		args[5] = rk_val(AGILE_RT_ARG_LOCAL, 0);
		e.nr_args = 6;
		e.threads = e.threads_y = RK_SG_T;
		e.groups = e.groups_y = RK_SG_N / RK_SG_T;
		e.local_bytes = 2 * RK_SG_T * RK_SG_T * sizeof(float);
		break;
	case K_TRANSPOSE:
		args[0] = rk_buf(a, B_TIN, r);
		args[1] = rk_buf(a, B_TOUT, w);
		args[2] = rk_val(AGILE_RT_ARG_VALUE, RK_TR_N);
		args[3] = rk_val(AGILE_RT_ARG_GROUP_ID, 0);
		args[4] = rk_val(AGILE_RT_ARG_LOCAL, 0);
		e.nr_args = 5;
		e.threads = RK_TR_TILE;
		e.threads_y = RK_TR_ROWS;
		e.groups = e.groups_y = RK_TR_N / RK_TR_TILE;
		e.local_bytes = RK_TR_TILE * (RK_TR_TILE + 1) * sizeof(float);
		break;
	default:
		args[0] = rk_buf(a, B_RIN, r);
		args[1] = rk_buf(a, B_RSUM, w);
		args[2] = rk_val(AGILE_RT_ARG_VALUE, RK_RD_N);
		args[3] = rk_val(AGILE_RT_ARG_GROUP, 0);
		args[4] = rk_val(AGILE_RT_ARG_LOCAL, 0);
		e.nr_args = 5;
		e.threads = RK_RD_GROUP;
		e.groups = RK_RD_N / (RK_RD_GROUP * RK_RD_PER);
		e.local_bytes = RK_RD_GROUP * sizeof(float);
		break;
	}
	err = agile_rt_enqueue(a->q, &e, &ev);
	if (err) {
		fprintf(stderr, "  runtime: %s: %s\n", rk_agile_names[kernel],
			agile_rt_error_message());
		return err;
	}
	err = agile_rt_event_wait(ev, RK_WAIT_NS);
	agile_rt_event_release(ev);
	if (!err && kernel == K_REDUCE)
		err = check_sum(a->h[B_RSUM],
				RK_RD_N / (RK_RD_GROUP * RK_RD_PER));
	return err;
}

static void agile_contender(void *arg)
{
	struct rk_run *r = arg;
	struct rk_agile *a = r->a;

	if (r->err)
		return;
	if (r->calls++) {
		r->err = agile_kernel_run(a, r->kernel);
		return;
	}
	/* The first (untimed) run, on fresh data, checked. */
	rk_fill(B_Y, a->h[B_Y]);
	rk_fill(B_C, a->h[B_C]);
	rk_fill(B_TOUT, a->h[B_TOUT]);
	r->err = agile_kernel_run(a, r->kernel);
	if (r->err)
		return;
	if (r->kernel == K_SAXPY1 || r->kernel == K_SAXPY16)
		r->err = check_saxpy(a->h[B_Y]);
	else if (r->kernel == K_SGEMM)
		r->err = check_sgemm(a->h[B_C]);
	else if (r->kernel == K_TRANSPOSE)
		r->err = check_transpose(a->h[B_TOUT]);
}

static void agile_close(struct rk_agile *a)
{
	if (a->q)
		agile_rt_queue_destroy(a->q);
	for (int b = 0; b < RK_NR_BUFS; b++)
		if (a->buf[b])
			agile_rt_buffer_release(a->buf[b]);
	if (a->prog)
		agile_rt_program_release(a->prog);
	if (a->ctx)
		agile_rt_ctx_release(a->ctx);
}

/* A CPU context of @eus EUs with the program built, its buffers filled. */
static int agile_open(struct rk_agile *a, uint32_t eus)
{
	struct agile_rt_ctx_opts o;
	const char *log = "";
	int err;

	memset(a, 0, sizeof(*a));
	agile_rt_ctx_opts_init(&o);
	o.cpu_eus = eus;
	err = agile_rt_ctx_create(&o, &a->ctx);
	if (!err)
		err = agile_rt_program_create(a->ctx, rk_agile_src, NULL, 0,
					      &a->prog);
	if (!err) {
		err = agile_rt_program_build(a->prog, NULL);
		if (err) {
			agile_rt_program_build_log(a->prog, 0, &log);
			fprintf(stderr, "  runtime: kernels: build: %s\n%s\n",
				agile_strerror(err), log);
		}
	}
	for (int k = 0; k < RK_NR_KERNELS && !err; k++)
		err = agile_rt_program_kernel(a->prog, rk_agile_names[k],
					      &a->k[k]);
	if (!err)
		err = agile_rt_queue_create(a->ctx, NULL, &a->q);
	for (int b = 0; b < RK_NR_BUFS && !err; b++) {
		err = agile_rt_buffer_create(
			a->ctx, rk_floats(b) * sizeof(float), &a->buf[b]);
		if (!err)
			err = agile_rt_buffer_host(a->buf[b], (void **)&a->h[b],
						   NULL);
		if (!err)
			rk_fill(b, a->h[b]);
	}
	return err;
}

/* ---- OpenCL (PoCL) ---- */

static void ocl_close(struct rk_ocl *o)
{
	for (int k = 0; k < RK_NR_OCL; k++)
		if (o->k[k])
			clReleaseKernel(o->k[k]);
	for (int b = 0; b < RK_NR_BUFS; b++)
		if (o->m[b])
			clReleaseMemObject(o->m[b]);
	if (o->prog)
		clReleaseProgram(o->prog);
	if (o->q)
		clReleaseCommandQueue(o->q);
	if (o->ctx)
		clReleaseContext(o->ctx);
	if (o->dev && o->dev != o->root)
		clReleaseDevice(o->dev);
	free(o->back);
}

/* PoCL's CPU device, or any OpenCL CPU device; 0 or -ENODEV (o->why). */
static int ocl_root(struct rk_ocl *o, char *name, size_t len)
{
	cl_platform_id plats[8];
	cl_uint nr = 0;

	if (clGetPlatformIDs(8, plats, &nr) != CL_SUCCESS || !nr) {
		snprintf(o->why, sizeof(o->why), "no OpenCL platform");
		return -ENODEV;
	}
	for (int pass = 0; pass < 2; pass++)
		for (cl_uint i = 0; i < nr && i < 8; i++) {
			char pn[64] = "";

			clGetPlatformInfo(plats[i], CL_PLATFORM_NAME,
					  sizeof(pn) - 1, pn, NULL);
			if (!pass && !strstr(pn, "Portable Computing"))
				continue;
			if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_CPU, 1,
					   &o->root, NULL) == CL_SUCCESS) {
				clGetDeviceInfo(o->root, CL_DEVICE_NAME,
						len - 1, name, NULL);
				return 0;
			}
		}
	snprintf(o->why, sizeof(o->why), "no OpenCL CPU device");
	return -ENODEV;
}

/*
 * PoCL on @cus compute units: its device when it has that many, else a
 * sub-device of @cus (POCL_CPU_MAX_CU_COUNT would have to be set before
 * the platform starts, and the runtime rows started it already).
 */
static int ocl_open(struct rk_ocl *o, uint32_t cus)
{
	cl_device_partition_property props[] = {
		CL_DEVICE_PARTITION_BY_COUNTS,
		(cl_device_partition_property)cus,
		CL_DEVICE_PARTITION_BY_COUNTS_LIST_END, 0
	};
	const char *src = rk_ocl_src;
	char name[96] = "";
	cl_uint have = 0, nr = 0;
	cl_int e;
	int err;

	memset(o, 0, sizeof(*o));
	err = ocl_root(o, name, sizeof(name));
	if (err)
		return err;
	clGetDeviceInfo(o->root, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(have),
			&have, NULL);
	if (cus > have) {
		snprintf(o->why, sizeof(o->why),
			 "the device has %u compute units", have);
		return -ENODEV;
	}
	o->dev = o->root;
	if (cus < have) {
		e = clCreateSubDevices(o->root, props, 1, &o->dev, &nr);
		if (e != CL_SUCCESS || nr != 1) {
			o->dev = NULL;
			snprintf(o->why, sizeof(o->why),
				 "no sub-device of %u compute units (%d)", cus,
				 e);
			return -ENODEV;
		}
	}
	o->ctx = clCreateContext(NULL, 1, &o->dev, NULL, NULL, &e);
	if (e == CL_SUCCESS)
		o->q = clCreateCommandQueueWithProperties(o->ctx, o->dev, NULL,
							  &e);
	if (e == CL_SUCCESS)
		o->prog = clCreateProgramWithSource(o->ctx, 1, &src, NULL, &e);
	if (e == CL_SUCCESS)
		e = clBuildProgram(o->prog, 1, &o->dev, "", NULL, NULL);
	for (int k = 0; k < RK_NR_OCL && e == CL_SUCCESS; k++)
		o->k[k] = clCreateKernel(o->prog, rk_ocl_names[k], &e);
	o->back = malloc(rk_floats(B_TIN) * sizeof(float));
	for (int b = 0; b < RK_NR_BUFS && e == CL_SUCCESS && o->back; b++) {
		rk_fill(b, o->back);
		o->m[b] = clCreateBuffer(
			o->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
			rk_floats(b) * sizeof(float), o->back, &e);
	}
	if (e == CL_SUCCESS && o->back) {
		cl_float a = RK_A;
		cl_int n[2] = { RK_SG_N, RK_TR_N };
		cl_ulong saxpy_n = RK_SAXPY_N;

		e = clSetKernelArg(o->k[O_SAXPY], 0, sizeof(a), &a);
		e |= clSetKernelArg(o->k[O_SAXPY], 1, sizeof(cl_mem),
				    &o->m[B_X]);
		e |= clSetKernelArg(o->k[O_SAXPY], 2, sizeof(cl_mem),
				    &o->m[B_Y]);
		e |= clSetKernelArg(o->k[O_SAXPY], 3, sizeof(cl_ulong),
				    &saxpy_n);
		for (int k = O_SG_TILED; k <= O_SG_NAIVE; k++) {
			e |= clSetKernelArg(o->k[k], 0, sizeof(cl_mem),
					    &o->m[B_A]);
			e |= clSetKernelArg(o->k[k], 1, sizeof(cl_mem),
					    &o->m[B_B]);
			e |= clSetKernelArg(o->k[k], 2, sizeof(cl_mem),
					    &o->m[B_C]);
			e |= clSetKernelArg(o->k[k], 3, sizeof(n[0]), &n[0]);
		}
		for (int k = O_TR_TILED; k <= O_TR_NAIVE; k++) {
			e |= clSetKernelArg(o->k[k], 0, sizeof(cl_mem),
					    &o->m[B_TIN]);
			e |= clSetKernelArg(o->k[k], 1, sizeof(cl_mem),
					    &o->m[B_TOUT]);
			e |= clSetKernelArg(o->k[k], 2, sizeof(n[1]), &n[1]);
		}
		e |= clSetKernelArg(o->k[O_REDUCE], 0, sizeof(cl_mem),
				    &o->m[B_RIN]);
		e |= clSetKernelArg(o->k[O_REDUCE], 1, sizeof(cl_mem),
				    &o->m[B_RSUM]);
	}
	if (e != CL_SUCCESS || !o->back) {
		snprintf(o->why, sizeof(o->why), "OpenCL setup failed (%d)", e);
		return -ENODEV;
	}
	bench_note("runtime: kernels: PoCL on \"%s\" at %u compute units (%s)",
		   name, cus,
		   o->dev == o->root ? "the device" : "a sub-device");
	return 0;
}

static int ocl_kernel_run(struct rk_ocl *o, int k, size_t local)
{
	size_t g[2], l[2], nr_sums = 0;
	cl_uint dims = 1;
	cl_int e = CL_SUCCESS;
	bool auto_local = !local;

	switch (k) {
	case O_SAXPY:
		g[0] = RK_SAXPY_N;
		l[0] = local;
		break;
	case O_SG_TILED:
	case O_SG_NAIVE:
		dims = 2;
		g[0] = g[1] = RK_SG_N;
		l[0] = l[1] = RK_SG_T;
		auto_local = k == O_SG_NAIVE;
		break;
	case O_TR_TILED:
	case O_TR_NAIVE:
		dims = 2;
		g[0] = g[1] = RK_TR_N;
		l[0] = RK_TR_TILE;
		l[1] = RK_TR_ROWS;
		g[1] = RK_TR_N / (RK_TR_TILE / RK_TR_ROWS);
		auto_local = k == O_TR_NAIVE;
		if (auto_local)
			g[1] = RK_TR_N;
		break;
	default:
		nr_sums = RK_RD_N / (local * RK_RD_PER);
		g[0] = nr_sums * local;
		l[0] = local;
		e = clSetKernelArg(o->k[k], 2, local * sizeof(float), NULL);
		break;
	}
	if (e == CL_SUCCESS)
		e = clEnqueueNDRangeKernel(o->q, o->k[k], dims, NULL, g,
					   auto_local ? NULL : l, 0, NULL,
					   NULL);
	if (e == CL_SUCCESS && nr_sums)
		e = clEnqueueReadBuffer(o->q, o->m[B_RSUM], CL_TRUE, 0,
					nr_sums * sizeof(float), o->back, 0,
					NULL, NULL);
	if (e == CL_SUCCESS)
		e = clFinish(o->q);
	if (e != CL_SUCCESS)
		return -EIO;
	return nr_sums ? check_sum(o->back, nr_sums) : 0;
}

/* Refill buffer @b from the host (the first, checked run's inputs). */
static cl_int ocl_refill(struct rk_ocl *o, int b)
{
	rk_fill(b, o->back);
	return clEnqueueWriteBuffer(o->q, o->m[b], CL_TRUE, 0,
				    rk_floats(b) * sizeof(float), o->back, 0,
				    NULL, NULL);
}

static void ocl_contender(void *arg)
{
	struct rk_run *r = arg;
	struct rk_ocl *o = r->o;
	int out = r->kernel == O_SAXPY				     ? B_Y :
		  r->kernel == O_SG_TILED || r->kernel == O_SG_NAIVE ? B_C :
		  r->kernel == O_REDUCE				     ? -1 :
								       B_TOUT;
	cl_int e = CL_SUCCESS;

	if (r->err)
		return;
	if (r->calls++ || out < 0) {
		r->err = ocl_kernel_run(o, r->kernel, r->local);
		return;
	}
	e = ocl_refill(o, out);
	r->err = e == CL_SUCCESS ? ocl_kernel_run(o, r->kernel, r->local) :
				   -EIO;
	if (!r->err &&
	    clEnqueueReadBuffer(o->q, o->m[out], CL_TRUE, 0,
				rk_floats(out) * sizeof(float), o->back, 0,
				NULL, NULL) != CL_SUCCESS)
		r->err = -EIO;
	if (r->err)
		return;
	r->err = out == B_Y ? check_saxpy(o->back) :
		 out == B_C ? check_sgemm(o->back) :
			      check_transpose(o->back);
}

/* ---- serial C ---- */

static void serial_saxpy(struct rk_serial *s)
{
	const float *x = s->h[B_X];
	float *y = s->h[B_Y];

	for (size_t i = 0; i < RK_SAXPY_N; i++)
		y[i] = RK_A * x[i] + y[i];
}

static void serial_sgemm(struct rk_serial *s)
{
	const float *a = s->h[B_A], *b = s->h[B_B];
	float *c = s->h[B_C];
	const size_t n = RK_SG_N;

	memset(c, 0, n * n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < n; k++)
			for (size_t j = 0; j < n; j++)
				c[i * n + j] += a[i * n + k] * b[k * n + j];
}

static void serial_transpose(struct rk_serial *s)
{
	const float *in = s->h[B_TIN];
	float *out = s->h[B_TOUT];

	for (size_t y = 0; y < RK_TR_N; y++)
		for (size_t x = 0; x < RK_TR_N; x++)
			out[x * RK_TR_N + y] = in[y * RK_TR_N + x];
}

static double serial_sum(struct rk_serial *s)
{
	const float *in = s->h[B_RIN];
	double sum = 0;

	for (size_t i = 0; i < RK_RD_N; i++)
		sum += in[i];
	return sum;
}

static void serial_contender(void *arg)
{
	struct rk_run *r = arg;
	struct rk_serial *s = r->s;
	bool first = !r->calls++;

	if (r->err)
		return;
	if (first) {
		rk_fill(B_Y, s->h[B_Y]);
		rk_fill(B_TOUT, s->h[B_TOUT]);
	}
	switch (r->kernel) {
	case K_SAXPY1:
		serial_saxpy(s);
		if (first)
			r->err = check_saxpy(s->h[B_Y]);
		break;
	case K_SGEMM:
		serial_sgemm(s);
		break;
	case K_TRANSPOSE:
		serial_transpose(s);
		if (first)
			r->err = check_transpose(s->h[B_TOUT]);
		break;
	default:
		if (serial_sum(s) != rk_ref_sum)
			r->err = -EDOM;
		break;
	}
}

/* ---- rows ---- */

static const size_t rk_saxpy_locals[] = { 0, 64, 256, 1024 }; /* 0: auto */
static const size_t rk_reduce_locals[] = { 64, 256, 1024 };
#define RK_NR_SAXPY_LOCALS 4
#define RK_NR_REDUCE_LOCALS 3
#define RK_MAX_ROWS 8

/* One kernel's rows of one set: agile's, PoCL's, serial's. */
struct rk_rows {
	char names[RK_MAX_ROWS][32];
	struct contender c[RK_MAX_ROWS];
	struct rk_run r[RK_MAX_ROWS];
	int nr, nr_agile, first_ocl, nr_ocl, serial; /* serial: -1 none */
};

static void rows_add(struct rk_rows *rows, const char *name, const char *suffix,
		     int threads, void (*fn)(void *), struct rk_run run,
		     int reps)
{
	int i = rows->nr++;

	snprintf(rows->names[i], sizeof(rows->names[i]), "%.23s%.8s", name,
		 suffix);
	rows->r[i] = run;
	rows->c[i] = (struct contender){ rows->names[i], threads, fn,
					 &rows->r[i], reps };
}

/* The fastest PoCL row of @rows, or NULL. */
static const char *rows_best_ocl(const struct rk_rows *rows)
{
	const char *best = NULL;
	double best_ms = 0;
	struct timing t;

	for (int i = rows->first_ocl; i < rows->first_ocl + rows->nr_ocl; i++)
		if (!bench_find_timing("runtime", rows->names[i], &t) &&
		    (!best || t.median_ms < best_ms)) {
			best = rows->names[i];
			best_ms = t.median_ms;
		}
	return best;
}

/* The serial rows' names, for the later sets' comparisons. */
static char rk_serial_names[RK_NR_KERNELS][32];

/*
 * One kernel's rows: @kernel (K_*), agile (and saxpy16 beside saxpy1),
 * PoCL when @o, serial when @s; then the comparisons.
 */
static int rk_bench(const struct bench_opts *bo, int kernel, const char *suffix,
		    int threads, struct rk_agile *a, struct rk_ocl *o,
		    const char *ocl_why, struct rk_serial *s)
{
	static const char *const base[RK_NR_KERNELS] = { "saxpy", "saxpy",
							 "sgemm", "transpose",
							 "reduce" };
	struct rk_rows *rows = calloc(1, sizeof(*rows));
	const char *best;
	char name[32];
	int err = 0;

	if (!rows)
		return -ENOMEM;
	rows->serial = -1;
	if (kernel == K_SAXPY1) {
		rows_add(rows, "saxpy1-agile", suffix, threads, agile_contender,
			 (struct rk_run){ .a = a, .kernel = K_SAXPY1 },
			 bo->reps);
		rows_add(rows, "saxpy16-agile", suffix, threads,
			 agile_contender,
			 (struct rk_run){ .a = a, .kernel = K_SAXPY16 },
			 bo->reps);
	} else {
		snprintf(name, sizeof(name), "%s-agile", base[kernel]);
		rows_add(rows, name, suffix, threads, agile_contender,
			 (struct rk_run){ .a = a, .kernel = kernel }, bo->reps);
	}
	rows->nr_agile = rows->nr;
	rows->first_ocl = rows->nr;
	for (int i = 0; o && kernel == K_SAXPY1 && i < RK_NR_SAXPY_LOCALS;
	     i++) {
		size_t l = rk_saxpy_locals[i];

		if (l)
			snprintf(name, sizeof(name), "saxpy-pocl-l%u",
				 (unsigned int)l);
		else
			snprintf(name, sizeof(name), "saxpy-pocl-auto");
		rows_add(rows, name, suffix, threads, ocl_contender,
			 (struct rk_run){
				 .o = o, .kernel = O_SAXPY, .local = l },
			 bo->reps);
	}
	if (o && (kernel == K_SGEMM || kernel == K_TRANSPOSE)) {
		int tiled = kernel == K_SGEMM ? O_SG_TILED : O_TR_TILED;

		snprintf(name, sizeof(name), "%s-pocl-tiled", base[kernel]);
		rows_add(rows, name, suffix, threads, ocl_contender,
			 (struct rk_run){ .o = o, .kernel = tiled }, bo->reps);
		snprintf(name, sizeof(name), "%s-pocl-naive", base[kernel]);
		rows_add(rows, name, suffix, threads, ocl_contender,
			 (struct rk_run){ .o = o, .kernel = tiled + 1 },
			 bo->reps);
	}
	for (int i = 0; o && kernel == K_REDUCE && i < RK_NR_REDUCE_LOCALS;
	     i++) {
		snprintf(name, sizeof(name), "reduce-pocl-l%u",
			 (unsigned int)rk_reduce_locals[i]);
		rows_add(rows, name, suffix, threads, ocl_contender,
			 (struct rk_run){ .o = o,
					  .kernel = O_REDUCE,
					  .local = rk_reduce_locals[i] },
			 bo->reps);
	}
	rows->nr_ocl = rows->nr - rows->first_ocl;
	if (s) {
		snprintf(name, sizeof(name), "%s-serial", base[kernel]);
		rows->serial = rows->nr;
		rows_add(rows, name, "", 1, serial_contender,
			 (struct rk_run){ .s = s, .kernel = kernel }, bo->reps);
		snprintf(rk_serial_names[kernel], sizeof(rk_serial_names[0]),
			 "%s", name);
	}
	/* sgemm's reference is the serial product: made before any check. */
	if (s && kernel == K_SGEMM) {
		serial_sgemm(s);
		memcpy(rk_ref_c, s->h[B_C], rk_floats(B_C) * sizeof(float));
	}
	bench_run("runtime", rows->c, rows->nr);
	for (int i = 0; i < rows->nr && !err; i++) {
		err = rows->r[i].err;
		if (err)
			fprintf(stderr, "  runtime: %s: %s\n", rows->names[i],
				err == -EDOM ? "wrong result" :
					       agile_strerror(err));
	}
	if (err)
		goto out;
	if (!o) {
		snprintf(name, sizeof(name), "%.16s-pocl%.8s", base[kernel],
			 suffix);
		bench_row_na("runtime", name, threads, ocl_why);
	}
	best = rows_best_ocl(rows);
	for (int i = 0; i < rows->nr_agile; i++) {
		/* The targets: saxpy1 at least PoCL's speed. */
		if (best)
			bench_compare("runtime", rows->names[i], best, true,
				      i == 0 && kernel == K_SAXPY1 ? ">= 1" :
								     NULL);
		if (rk_serial_names[kernel][0])
			bench_compare("runtime", rows->names[i],
				      rk_serial_names[kernel], true, NULL);
	}
	/* ... and within 1.2x of saxpy16 (time of saxpy1 / saxpy16). */
	if (kernel == K_SAXPY1)
		bench_compare("runtime", rows->names[0], rows->names[1], false,
			      "<= 1.2");
out:
	free(rows);
	return err;
}

/* Agile's ns a group (median / groups) of the set @suffix, in a note. */
static void rk_group_note(const char *suffix)
{
	static const struct {
		const char *row;
		double groups;
	} g[] = {
		{ "saxpy1-agile", RK_SAXPY_N / RK_LANES },
		{ "saxpy16-agile", RK_SAXPY_N / (RK_LANES * RK_PER) },
		{ "sgemm-agile", (RK_SG_N / RK_SG_T) * (RK_SG_N / RK_SG_T) },
		{ "transpose-agile",
		  (RK_TR_N / RK_TR_TILE) * (RK_TR_N / RK_TR_TILE) },
		{ "reduce-agile", RK_RD_N / (RK_RD_GROUP * RK_RD_PER) },
	};
	char text[180], name[32];
	size_t len = 0;
	struct timing t;

	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
		snprintf(name, sizeof(name), "%.23s%.8s", g[i].row, suffix);
		if (len < sizeof(text) &&
		    !bench_find_timing("runtime", name, &t))
			len += snprintf(text + len, sizeof(text) - len,
					"%s %s %.0f", i ? "," : "", g[i].row,
					t.median_ms * 1e6 / g[i].groups);
	}
	bench_note("runtime: kernels%s: ns a group (median / groups):%s",
		   suffix, text);
}

static void serial_free(struct rk_serial *s)
{
	for (int b = 0; b < RK_NR_BUFS; b++)
		free(s->h[b]);
}

/* The kernels' rows at 2 threads and at @bo->threads. */
int bench_runtime_kernels(const struct bench_opts *bo)
{
	int sets[2] = { 2, bo->threads }, nr_sets = bo->threads == 2 ? 1 : 2;
	struct rk_serial s = { 0 };
	int err = 0;

	rk_ref_c = malloc(rk_floats(B_C) * sizeof(float));
	for (int b = 0; b < RK_NR_BUFS && rk_ref_c; b++) {
		s.h[b] = malloc(rk_floats(b) * sizeof(float));
		if (!s.h[b])
			break;
		rk_fill(b, s.h[b]);
	}
	if (!rk_ref_c || !s.h[RK_NR_BUFS - 1]) {
		err = -ENOMEM;
		goto out;
	}
	rk_ref_sum = serial_sum(&s);
	memset(rk_serial_names, 0, sizeof(rk_serial_names));
	for (int i = 0; i < nr_sets && !err; i++) {
		struct rk_agile a;
		struct rk_ocl o;
		char suffix[16] = "";
		bool have_ocl;

		if (sets[i] != 2)
			snprintf(suffix, sizeof(suffix), "-t%d", sets[i]);
		err = agile_open(&a, (uint32_t)sets[i]);
		if (err) {
			fprintf(stderr, "  runtime: kernels: agile: %s\n",
				agile_strerror(err));
			agile_close(&a);
			break;
		}
		have_ocl = !ocl_open(&o, (uint32_t)sets[i]);
		if (!have_ocl)
			bench_note("runtime: kernels%s: PoCL rows skipped: %s",
				   suffix, o.why);
		for (int k = K_SAXPY1; k < RK_NR_KERNELS && !err; k++) {
			if (k == K_SAXPY16)
				continue;
			err = rk_bench(bo, k, suffix, sets[i], &a,
				       have_ocl ? &o : NULL, o.why,
				       i == 0 ? &s : NULL);
		}
		if (!err)
			rk_group_note(suffix);
		ocl_close(&o);
		agile_close(&a);
	}
out:
	serial_free(&s);
	free(rk_ref_c);
	rk_ref_c = NULL;
	return err;
}
