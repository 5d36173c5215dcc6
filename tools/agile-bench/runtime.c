// SPDX-License-Identifier: MIT
/*
 * runtime - the runtime of seed 003 (agile/runtime.h) beside OpenCL on
 * PoCL's CPU device (Debian's pocl-opencl-icd), in one run:
 *
 *    empty      enqueue-to-completion latency of an empty kernel, 64
 *               lanes in one group (OpenCL: global = local = 64):
 *               agile_rt_enqueue + agile_rt_event_wait of a CPU kernel
 *               registered with agile_rt_kernel_register whose phase does
 *               nothing, on the CPU device; PoCL: clEnqueueNDRangeKernel
 *               of an empty kernel + clFinish ("pocl-finish") or + an
 *               event and clWaitForEvents ("pocl-event").  Rows: RT_LAT
 *               calls back to back per repetition; "-1" rows: every
 *               single call of the timed repetitions, each timed alone
 *               (median, p10-p90), notes give p50 and p99 per call.
 *    chain      RT_CHAIN axpys on RT_N doubles, each after the last
 *               (y = a x + y: agile orders them by data flow through y;
 *               OpenCL: an in-order queue), then the result read and
 *               checked (y = RT_CHAIN a x); a note gives tasks/s at the
 *               medians.  PoCL runs with the local sizes of rt_locals
 *               ("auto": NULL, PoCL picks); agile is compared with the
 *               best of them.
 *    mixed      RT_MIX independent axpys on RT_MIX_N doubles, each on its
 *               own y, that either device may run, on a context of the
 *               CPU and a GPU: placed AGILE_RT_PLACE_GPU (GPU, CPU EUs
 *               when the GPU is busy) beside AGILE_RT_PLACE_GPU_ONLY and
 *               AGILE_RT_PLACE_CPU, and AGILE_RT_PLACE_ANY (least loaded)
 *               for comparison; each run adds 2 x to every y, checked
 *               after the runs (y = 2 runs x); a note gives the groups
 *               each device ran and the fallbacks.  Where
 *               agile_gpu_available() the real GPU runs it; else the
 *               stand-in GPU runtime of the selftests
 *               (build/libagile/gpu/mock/cuda, selftests/libagile/
 *               gpu-mock.c) in a child with it on LD_LIBRARY_PATH, one
 *               CPU EU and one stand-in GPU EU (a CPU thread): the
 *               numbers then show the policy, not a GPU, and the rows'
 *               names and a note say so.
 *    kernels    GPU-style kernels (runtime_kernels.c, issue 29), each
 *               beside the same kernel in OpenCL C on PoCL at its best
 *               local size and a plain C loop on one thread ("-serial"),
 *               checked against C, at 2 threads and at -t (rows of the
 *               second set end "-t<N>"; one set when -t is 2):
 *               saxpy1-agile, saxpy16-agile, saxpy-pocl-{auto,l64,l256,
 *               l1024}, saxpy-serial: y = a x + y on 1 << 22 floats in
 *               64-lane groups, one or 16 elements a lane;
 *               sgemm-agile, sgemm-pocl-{tiled,naive}, sgemm-serial: C =
 *               A B of 512 x 512 floats, 16 x 16 groups through two
 *               local tiles, the loop over tiles by an AGILE_NEXT
 *               control function;
 *               transpose-agile, transpose-pocl-{tiled,naive},
 *               transpose-serial: 2048 x 2048 floats through a 32 x 33
 *               local tile, 32 x 8 groups, 4 elements a thread;
 *               reduce-agile, reduce-pocl-{l64,l256,l1024},
 *               reduce-serial: a sum of 1 << 22 floats, a local-memory
 *               tree in groups of 256 (PoCL: of its local size), the
 *               host adding the groups' sums.  Agile is compared with
 *               the best PoCL row and with serial; saxpy1 carries the
 *               issue's targets (>= 1x PoCL, <= 1.2x saxpy16's time); a
 *               note gives agile's ns a group.
 *
 * PoCL's environment is left as it is (POCL_WORK_GROUP_METHOD,
 * POCL_CPU_MAX_CU_COUNT ...; docs/runtime.md says what was tried); notes
 * name the platform and device.  Without an OpenCL CPU device the PoCL
 * rows are "n/a" with the reason, not a failure; a wrong result is.
 */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/gpu.h>
#include <agile/runtime.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define RT_N 4096 /* chain: doubles per axpy */
#define RT_CHAIN 1000 /* chain: axpys per repetition */
#define RT_LAT 200 /* empty: calls per repetition */
#define RT_LANES 64 /* lanes per group; OpenCL's local size for empty */
#define RT_MIX 64 /* mixed: entries per repetition */
#define RT_MIX_N 65536 /* mixed: doubles per entry */
/* mixed: AGILE_RT_PLACE_GPU, _GPU_ONLY, _CPU, then _ANY (for comparison) */
#define RT_NR_PLACES 4
#define RT_MAX_REPS 64 /* as bench_run's MAX_REPS */
#define RT_WAIT_NS (30ULL * 1000 * 1000 * 1000)
/* The child that runs the mixed rows on the stand-in reports to this fd. */
#define RT_CHILD_ENV "AGILE_BENCH_RT_CHILD_FD"

static const size_t rt_locals[] = { 0, 64, 256, 1024 }; /* 0: auto */
#define RT_NR_LOCALS (int)(sizeof(rt_locals) / sizeof(rt_locals[0]))

static uint64_t bits_of(double d)
{
	uint64_t b;

	memcpy(&b, &d, sizeof(b));
	return b;
}

/* ---- agile ---- */

static int empty_phase(uint32_t lane, uint32_t nr_lanes, const __u64 *args,
		       void *state, void *shared)
{
	(void)lane;
	(void)nr_lanes;
	(void)args;
	(void)state;
	(void)shared;
	return 0;
}

struct rt_agile {
	agile_rt_ctx ctx;
	struct agile_rt_queue *q;
	struct agile_rt_kernel *empty, *axpy;
	struct agile_rt_buffer *x, *y;
	double *xh, *yh;
};

/* Per-call times of the timed repetitions of a latency contender. */
struct rt_calls {
	double *ms;
	int nr, max;
	int runs; /* calls of fn so far: the first (warm-up) is not kept */
};

struct rt_run {
	struct rt_agile *a;
	struct rt_ocl *o;
	struct rt_calls calls;
	size_t local; /* OpenCL local size; 0: NULL */
	bool use_event;
	int err; /* the first failure */
};

static void calls_add(struct rt_calls *c, double ms)
{
	if (c->runs > 1 && c->nr < c->max)
		c->ms[c->nr++] = ms;
}

static void agile_empty(void *arg)
{
	struct rt_run *r = arg;
	struct agile_rt_entry e = { .kernel = r->a->empty,
				    .threads = RT_LANES,
				    .groups = 1,
				    .place = AGILE_RT_PLACE_CPU };

	r->calls.runs++;
	for (int i = 0; i < RT_LAT && !r->err; i++) {
		struct agile_rt_event *ev;
		double t = bench_now_ms();

		r->err = agile_rt_enqueue(r->a->q, &e, &ev);
		if (r->err)
			break;
		r->err = agile_rt_event_wait(ev, RT_WAIT_NS);
		calls_add(&r->calls, bench_now_ms() - t);
		agile_rt_event_release(ev);
	}
}

/* y = a x + y on @q, data flow through @x (read) and @y (read, write). */
static int agile_axpy(struct agile_rt_queue *q, struct agile_rt_kernel *k,
		      uint32_t place, double a, struct agile_rt_buffer *x,
		      struct agile_rt_buffer *y, uint64_t n,
		      struct agile_rt_event **ev)
{
	struct agile_rt_arg args[] = {
		{ .kind = AGILE_RT_ARG_VALUE, .value = bits_of(a) },
		{ .kind = AGILE_RT_ARG_BUFFER,
		  .access = AGILE_RT_READ,
		  .buf = x },
		{ .kind = AGILE_RT_ARG_BUFFER,
		  .access = AGILE_RT_READ | AGILE_RT_WRITE,
		  .buf = y },
		{ .kind = AGILE_RT_ARG_VALUE, .value = n },
	};
	struct agile_rt_entry e = { .kernel = k,
				    .threads = RT_LANES,
				    .groups = 1,
				    .place = place,
				    .nr_args = 4,
				    .args = args };

	return agile_rt_enqueue(q, &e, ev);
}

/* y = RT_CHAIN a x, with x[i] = i and a = 0.5: exact in doubles. */
static int chain_check(const double *y)
{
	for (int i = 0; i < RT_N; i++)
		if (y[i] != RT_CHAIN * 0.5 * i)
			return -EDOM;
	return 0;
}

static void agile_chain(void *arg)
{
	struct rt_run *r = arg;
	struct agile_rt_event *last = NULL;

	if (r->err)
		return;
	memset(r->a->yh, 0, RT_N * sizeof(double));
	for (int i = 0; i < RT_CHAIN && !r->err; i++)
		r->err = agile_axpy(r->a->q, r->a->axpy, AGILE_RT_PLACE_CPU,
				    0.5, r->a->x, r->a->y, RT_N,
				    i == RT_CHAIN - 1 ? &last : NULL);
	if (!r->err)
		r->err = agile_rt_event_wait(last, RT_WAIT_NS);
	if (last)
		agile_rt_event_release(last);
	if (!r->err)
		r->err = chain_check(r->a->yh);
}

static int agile_open(struct rt_agile *a)
{
	static const agile_phase_fn phases[] = { empty_phase };
	struct agile_kernel k = { .name = "bench.empty",
				  .nr_phases = 1,
				  .phases = phases };
	struct agile_rt_ctx_opts o;
	int err;

	memset(a, 0, sizeof(*a));
	agile_rt_ctx_opts_init(&o); /* the CPU alone, min(cores, 4) EUs */
	err = agile_rt_ctx_create(&o, &a->ctx);
	if (err)
		return err;
	err = agile_rt_kernel_register(a->ctx, &k, &a->empty);
	if (!err)
		err = agile_rt_kernel_get(a->ctx, AGILE_KERNEL_AXPY, &a->axpy);
	if (!err)
		err = agile_rt_queue_create(a->ctx, NULL, &a->q);
	if (!err)
		err = agile_rt_buffer_create(a->ctx, RT_N * sizeof(double),
					     &a->x);
	if (!err)
		err = agile_rt_buffer_create(a->ctx, RT_N * sizeof(double),
					     &a->y);
	if (err)
		return err;
	agile_rt_buffer_host(a->x, (void **)&a->xh, NULL);
	agile_rt_buffer_host(a->y, (void **)&a->yh, NULL);
	for (int i = 0; i < RT_N; i++)
		a->xh[i] = i;
	return 0;
}

static void agile_close(struct rt_agile *a)
{
	if (a->q)
		agile_rt_queue_destroy(a->q);
	if (a->x)
		agile_rt_buffer_release(a->x);
	if (a->y)
		agile_rt_buffer_release(a->y);
	if (a->ctx)
		agile_rt_ctx_release(a->ctx);
}

/* ---- OpenCL (PoCL) ---- */

static const char ocl_src[] =
	"#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
	"__kernel void empty(void) { }\n"
	"__kernel void axpy(double a, __global const double *x,\n"
	"		   __global double *y)\n"
	"{\n"
	"	size_t i = get_global_id(0);\n"
	"	y[i] = a * x[i] + y[i];\n"
	"}\n";

struct rt_ocl {
	cl_context ctx;
	cl_command_queue q;
	cl_program prog;
	cl_kernel empty, axpy;
	cl_mem x, y;
	double *yh; /* read back here */
	char platform[64], device[96], why[128];
};

static void ocl_close(struct rt_ocl *o)
{
	if (o->empty)
		clReleaseKernel(o->empty);
	if (o->axpy)
		clReleaseKernel(o->axpy);
	if (o->prog)
		clReleaseProgram(o->prog);
	if (o->x)
		clReleaseMemObject(o->x);
	if (o->y)
		clReleaseMemObject(o->y);
	if (o->q)
		clReleaseCommandQueue(o->q);
	if (o->ctx)
		clReleaseContext(o->ctx);
	free(o->yh);
}

/* 0, or -ENODEV with the reason in o->why (not a failure of the bench). */
static int ocl_open(struct rt_ocl *o)
{
	cl_platform_id plats[8], plat = NULL;
	cl_device_id dev = NULL;
	cl_uint nr = 0;
	double *xh;
	cl_int e;

	memset(o, 0, sizeof(*o));
	e = clGetPlatformIDs(8, plats, &nr);
	if (e != CL_SUCCESS || !nr) {
		snprintf(o->why, sizeof(o->why), "no OpenCL platform (%d)", e);
		return -ENODEV;
	}
	/* PoCL's CPU device if there is one, else any CPU device. */
	for (int pass = 0; pass < 2 && !dev; pass++)
		for (cl_uint i = 0; i < nr && i < 8 && !dev; i++) {
			char name[64] = "";

			clGetPlatformInfo(plats[i], CL_PLATFORM_NAME,
					  sizeof(name) - 1, name, NULL);
			if (!pass && !strstr(name, "Portable Computing"))
				continue;
			if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_CPU, 1,
					   &dev, NULL) != CL_SUCCESS)
				dev = NULL;
			else {
				plat = plats[i];
				snprintf(o->platform, sizeof(o->platform), "%s",
					 name);
			}
		}
	if (!dev) {
		snprintf(o->why, sizeof(o->why), "no OpenCL CPU device");
		return -ENODEV;
	}
	(void)plat;
	clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(o->device) - 1, o->device,
			NULL);
	o->ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
	if (e == CL_SUCCESS)
		o->q = clCreateCommandQueueWithProperties(o->ctx, dev, NULL,
							  &e);
	if (e == CL_SUCCESS) {
		const char *src = ocl_src;

		o->prog = clCreateProgramWithSource(o->ctx, 1, &src, NULL, &e);
	}
	if (e == CL_SUCCESS)
		e = clBuildProgram(o->prog, 1, &dev, "", NULL, NULL);
	if (e == CL_SUCCESS)
		o->empty = clCreateKernel(o->prog, "empty", &e);
	if (e == CL_SUCCESS)
		o->axpy = clCreateKernel(o->prog, "axpy", &e);
	o->yh = calloc(RT_N, sizeof(double));
	xh = calloc(RT_N, sizeof(double));
	if (!o->yh || !xh) {
		free(xh);
		snprintf(o->why, sizeof(o->why), "out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < RT_N; i++)
		xh[i] = i;
	if (e == CL_SUCCESS)
		o->x = clCreateBuffer(o->ctx,
				      CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
				      RT_N * sizeof(double), xh, &e);
	if (e == CL_SUCCESS)
		o->y = clCreateBuffer(o->ctx, CL_MEM_READ_WRITE,
				      RT_N * sizeof(double), NULL, &e);
	free(xh);
	if (e == CL_SUCCESS) {
		double a = 0.5;

		e = clSetKernelArg(o->axpy, 0, sizeof(a), &a);
		if (e == CL_SUCCESS)
			e = clSetKernelArg(o->axpy, 1, sizeof(cl_mem), &o->x);
		if (e == CL_SUCCESS)
			e = clSetKernelArg(o->axpy, 2, sizeof(cl_mem), &o->y);
	}
	if (e != CL_SUCCESS) {
		snprintf(o->why, sizeof(o->why), "OpenCL setup failed (%d)", e);
		return -ENODEV;
	}
	return 0;
}

static void ocl_empty(void *arg)
{
	struct rt_run *r = arg;
	size_t g = RT_LANES, l = RT_LANES;

	r->calls.runs++;
	for (int i = 0; i < RT_LAT && !r->err; i++) {
		cl_event ev = NULL;
		double t = bench_now_ms();
		cl_int e = clEnqueueNDRangeKernel(r->o->q, r->o->empty, 1, NULL,
						  &g, &l, 0, NULL,
						  r->use_event ? &ev : NULL);

		if (e == CL_SUCCESS)
			e = r->use_event ? clWaitForEvents(1, &ev) :
					   clFinish(r->o->q);
		calls_add(&r->calls, bench_now_ms() - t);
		if (e == CL_SUCCESS && ev) {
			cl_int st = CL_QUEUED;

			clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
				       sizeof(st), &st, NULL);
			e = st == CL_COMPLETE ? CL_SUCCESS : st;
		}
		if (ev)
			clReleaseEvent(ev);
		if (e != CL_SUCCESS)
			r->err = -EIO;
	}
}

static void ocl_chain(void *arg)
{
	struct rt_run *r = arg;
	size_t g = RT_N, l = r->local;
	cl_int e;

	if (r->err)
		return;
	memset(r->o->yh, 0, RT_N * sizeof(double));
	e = clEnqueueWriteBuffer(r->o->q, r->o->y, CL_FALSE, 0,
				 RT_N * sizeof(double), r->o->yh, 0, NULL,
				 NULL);
	for (int i = 0; i < RT_CHAIN && e == CL_SUCCESS; i++)
		e = clEnqueueNDRangeKernel(r->o->q, r->o->axpy, 1, NULL, &g,
					   l ? &l : NULL, 0, NULL, NULL);
	if (e == CL_SUCCESS)
		e = clEnqueueReadBuffer(r->o->q, r->o->y, CL_TRUE, 0,
					RT_N * sizeof(double), r->o->yh, 0,
					NULL, NULL);
	if (e != CL_SUCCESS)
		r->err = -EIO;
	else
		r->err = chain_check(r->o->yh);
}

/* ---- rows ---- */

static int cmp_ms(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The "-1" row and p50/p99 note of a latency contender's single calls. */
static void calls_row(const char *variant, struct rt_calls *c)
{
	int n = c->nr, k99;

	if (!n)
		return;
	qsort(c->ms, (size_t)n, sizeof(c->ms[0]), cmp_ms);
	k99 = (int)(0.99 * n + 0.999999);
	k99 = k99 < 1 ? 1 : k99 > n ? n : k99;
	bench_note("runtime: %s: %d single calls: p50 %.2f us, p99 %.2f us, "
		   "max %.2f us",
		   variant, n, c->ms[(n + 1) / 2 - 1] * 1e3,
		   c->ms[k99 - 1] * 1e3, c->ms[n - 1] * 1e3);
	bench_row_bytes_detail("runtime", variant, 1, bench_summarize(c->ms, n),
			       0, false);
}

static int calls_alloc(struct rt_calls *c, int reps)
{
	c->max = (reps < RT_MAX_REPS ? reps : RT_MAX_REPS) * RT_LAT;
	c->ms = calloc((size_t)c->max, sizeof(double));
	return c->ms ? 0 : -ENOMEM;
}

static int bench_empty(const struct bench_opts *bo, struct rt_agile *a,
		       struct rt_ocl *o, bool have_ocl)
{
	struct rt_run ra = { .a = a }, rf = { .o = o },
		      re = { .o = o, .use_event = true };
	struct contender c[3];
	int nr = 0, err;

	err = calls_alloc(&ra.calls, bo->reps);
	if (!err && have_ocl)
		err = calls_alloc(&rf.calls, bo->reps);
	if (!err && have_ocl)
		err = calls_alloc(&re.calls, bo->reps);
	if (err)
		goto out;
	c[nr++] = (struct contender){ "empty-agile", 1, agile_empty, &ra,
				      bo->reps };
	if (have_ocl) {
		c[nr++] = (struct contender){ "empty-pocl-finish", 1, ocl_empty,
					      &rf, bo->reps };
		c[nr++] = (struct contender){ "empty-pocl-event", 1, ocl_empty,
					      &re, bo->reps };
	}
	bench_run("runtime", c, nr);
	err = ra.err ? ra.err : rf.err ? rf.err : re.err;
	if (err)
		goto out;
	calls_row("empty-agile-1", &ra.calls);
	if (have_ocl) {
		struct timing tf, te;
		const char *best = "empty-pocl-finish-1";

		calls_row("empty-pocl-finish-1", &rf.calls);
		calls_row("empty-pocl-event-1", &re.calls);
		if (!bench_find_timing("runtime", "empty-pocl-event-1", &te) &&
		    !bench_find_timing("runtime", "empty-pocl-finish-1", &tf) &&
		    te.median_ms < tf.median_ms)
			best = "empty-pocl-event-1";
		bench_compare("runtime", "empty-agile-1", best, true, NULL);
	} else {
		bench_row_na("runtime", "empty-pocl-finish", 1, o->why);
		bench_row_na("runtime", "empty-pocl-event", 1, o->why);
	}
out:
	free(ra.calls.ms);
	free(rf.calls.ms);
	free(re.calls.ms);
	return err;
}

static int bench_chain(const struct bench_opts *bo, struct rt_agile *a,
		       struct rt_ocl *o, bool have_ocl)
{
	static const char *names[RT_NR_LOCALS] = { "chain-pocl-auto",
						   "chain-pocl-l64",
						   "chain-pocl-l256",
						   "chain-pocl-l1024" };
	struct rt_run ra = { .a = a }, ro[RT_NR_LOCALS];
	struct contender c[1 + RT_NR_LOCALS];
	const char *best = NULL;
	double best_ms = 0;
	struct timing t;
	char rates[160] = "";
	int nr = 0, err = 0;
	size_t len = 0;

	c[nr++] = (struct contender){ "chain-agile", 1, agile_chain, &ra,
				      bo->reps };
	for (int i = 0; have_ocl && i < RT_NR_LOCALS; i++) {
		ro[i] = (struct rt_run){ .o = o, .local = rt_locals[i] };
		c[nr++] = (struct contender){ names[i], 1, ocl_chain, &ro[i],
					      bo->reps };
	}
	bench_run("runtime", c, nr);
	err = ra.err;
	for (int i = 0; have_ocl && i < RT_NR_LOCALS && !err; i++)
		err = ro[i].err;
	if (err)
		return err;
	/* One note for all: tasks/s at each row's median. */
	for (int i = 0; i < nr; i++)
		if (len < sizeof(rates) &&
		    !bench_find_timing("runtime", c[i].variant, &t))
			len += snprintf(rates + len, sizeof(rates) - len,
					"%s %s %.0f", i ? "," : "",
					c[i].variant + strlen("chain-"),
					RT_CHAIN / (t.median_ms / 1e3));
	bench_note("runtime: chain of %d axpys of %d doubles, checked: "
		   "tasks/s:%s",
		   RT_CHAIN, RT_N, rates);
	for (int i = 1; i < nr; i++)
		if (!bench_find_timing("runtime", c[i].variant, &t) &&
		    (!best || t.median_ms < best_ms)) {
			best = c[i].variant;
			best_ms = t.median_ms;
		}
	if (best)
		bench_compare("runtime", "chain-agile", best, true, NULL);
	else
		bench_row_na("runtime", "chain-pocl", 1, o->why);
	return 0;
}

/* ---- mixed placement ---- */

struct rt_mix {
	agile_rt_ctx ctx;
	struct agile_rt_queue *q;
	struct agile_rt_kernel *axpy;
	struct agile_rt_buffer *x, *y[RT_MIX];
	double *xh, *yh[RT_MIX];
	int64_t runs; /* runs of mix_run, every contender's */
};

struct rt_mix_run {
	struct rt_mix *m;
	uint32_t place;
	int err;
};

/*
 * y_i = 2 x + y_i for every i, placed r->place; each run adds 2 x to
 * every y, so after all the runs y_i = 2 runs x (mix_check).
 */
static void mix_run(void *arg)
{
	struct rt_mix_run *r = arg;
	struct rt_mix *m = r->m;
	struct agile_rt_event *ev[RT_MIX] = { 0 };

	if (r->err)
		return;
	for (int i = 0; i < RT_MIX && !r->err; i++)
		r->err = agile_axpy(m->q, m->axpy, r->place, 2.0, m->x, m->y[i],
				    RT_MIX_N, &ev[i]);
	for (int i = 0; i < RT_MIX; i++) {
		if (!ev[i])
			continue;
		if (!r->err)
			r->err = agile_rt_event_wait(ev[i], RT_WAIT_NS);
		agile_rt_event_release(ev[i]);
	}
	if (!r->err)
		m->runs++;
}

/* x[j] = j, so y_i[j] = 2 runs j: exact in doubles. */
static int mix_check(const struct rt_mix *m)
{
	for (int i = 0; i < RT_MIX; i++)
		for (int j = 0; j < RT_MIX_N; j++)
			if (m->yh[i][j] != 2.0 * (double)m->runs * j)
				return -EDOM;
	return 0;
}

static void mix_close(struct rt_mix *m)
{
	if (m->q)
		agile_rt_queue_destroy(m->q);
	if (m->x)
		agile_rt_buffer_release(m->x);
	for (int i = 0; i < RT_MIX; i++)
		if (m->y[i])
			agile_rt_buffer_release(m->y[i]);
	if (m->ctx)
		agile_rt_ctx_release(m->ctx);
}

static char mix_stats[200];

/*
 * The placements on a context of the CPU and the first usable GPU
 * (@standin: the stand-in's, one EU each); @variants gets the rows' names.
 */
static int mix_bench(const struct bench_opts *bo, bool standin,
		     const char *const *variants, char *gpu, size_t gpu_len)
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
	static const uint32_t places[RT_NR_PLACES] = { AGILE_RT_PLACE_GPU,
						       AGILE_RT_PLACE_GPU_ONLY,
						       AGILE_RT_PLACE_CPU,
						       AGILE_RT_PLACE_ANY };
	struct rt_mix m = { 0 };
	struct rt_mix_run r[RT_NR_PLACES];
	struct contender c[RT_NR_PLACES];
	struct agile_rt_device_info info;
	struct agile_rt_ctx_opts o;
	struct agile_rt_stats st;
	uint32_t devs[2] = { 0, 0 }, nr = 0;
	int err;

	err = agile_rt_device_match(reqs, 2, AGILE_RT_MATCH_SCORE, &devs[1], 1,
				    &nr);
	if (!err && !nr)
		err = -ENODEV;
	if (err)
		return err;
	agile_rt_device_info(devs[1], &info);
	snprintf(gpu, gpu_len, "%s %s", info.vendor, info.name);
	agile_rt_ctx_opts_init(&o);
	o.devices = devs;
	o.nr_devices = 2;
	if (standin) {
		o.cpu_eus = 1;
		o.gpu_eus = 1;
	}
	err = agile_rt_ctx_create(&o, &m.ctx);
	if (!err)
		err = agile_rt_kernel_get(m.ctx, AGILE_KERNEL_AXPY, &m.axpy);
	if (!err)
		err = agile_rt_queue_create(m.ctx, NULL, &m.q);
	if (!err)
		err = agile_rt_buffer_create(m.ctx, RT_MIX_N * sizeof(double),
					     &m.x);
	for (int i = 0; i < RT_MIX && !err; i++)
		err = agile_rt_buffer_create(m.ctx, RT_MIX_N * sizeof(double),
					     &m.y[i]);
	if (!err)
		err = agile_rt_stats(m.q, &st);
	if (!err && st.devices[1].eu_kind != AGILE_EU_KIND_GPU)
		err = -ENODEV; /* the pool fell back to CPU EUs */
	if (err)
		goto out;
	agile_rt_buffer_host(m.x, (void **)&m.xh, NULL);
	for (int i = 0; i < RT_MIX; i++)
		agile_rt_buffer_host(m.y[i], (void **)&m.yh[i], NULL);
	for (int j = 0; j < RT_MIX_N; j++)
		m.xh[j] = j;
	for (int i = 0; i < RT_NR_PLACES; i++) {
		r[i] = (struct rt_mix_run){ &m, places[i], 0 };
		c[i] = (struct contender){ variants[i], 1, mix_run, &r[i],
					   bo->reps };
	}
	bench_run("runtime", c, RT_NR_PLACES);
	for (int i = 0; i < RT_NR_PLACES && !err; i++)
		err = r[i].err;
	if (!err)
		err = mix_check(&m);
	if (!err && !agile_rt_stats(m.q, &st)) {
		snprintf(mix_stats, sizeof(mix_stats),
			 "runtime: mixed: %s; EUs: CPU %u, GPU %u; %d entries "
			 "of %d doubles a run; all runs: CPU ran %llu groups "
			 "(%llu fallback), GPU %llu",
			 standin ? "stand-in GPU" : "real GPU",
			 st.devices[0].nr_eus, st.devices[1].nr_eus, RT_MIX,
			 RT_MIX_N, (unsigned long long)st.devices[0].groups,
			 (unsigned long long)st.cpu_fallback,
			 (unsigned long long)st.devices[1].groups);
		if (!standin)
			bench_note("%s (%s)", mix_stats, gpu);
	}
out:
	mix_close(&m);
	return err;
}

static const char *const mix_real[RT_NR_PLACES] = { "mixed-gpu",
						    "mixed-gpu-only",
						    "mixed-cpu", "mixed-any" };
static const char *const mix_standin[RT_NR_PLACES] = { "mixed-gpu-standin",
						       "mixed-gpuonly-standin",
						       "mixed-cpu-standin",
						       "mixed-any-standin" };

static void mix_na(const char *why)
{
	for (int i = 0; i < RT_NR_PLACES; i++)
		bench_row_na("runtime", mix_standin[i], 1, "skipped");
	bench_note("runtime: mixed: skipped: %s", why);
}

static void mix_compare(const char *const *v)
{
	bench_compare("runtime", v[0], v[1], true, "> 1");
	bench_compare("runtime", v[0], v[2], true, "> 1");
	bench_compare("runtime", v[3], v[2], true, NULL);
}

/* In the child: the mixed rows on the stand-in, sent to @fd as text. */
static int mix_child(const struct bench_opts *bo, int fd)
{
	char gpu[160];
	FILE *f = fdopen(fd, "w");
	int err;

	if (!f)
		return -errno;
	err = mix_bench(bo, true, mix_standin, gpu, sizeof(gpu));
	for (int i = 0; i < RT_NR_PLACES && !err; i++) {
		struct timing t;

		if (!bench_find_timing("runtime", mix_standin[i], &t))
			fprintf(f, "row %d %.9f %.9f %.9f %.9f %.9f %d\n", i,
				t.min_ms, t.median_ms, t.p10_ms, t.p90_ms,
				t.max_ms, t.reps);
	}
	if (!err)
		fprintf(f, "gpu %s\n", gpu);
	if (!err)
		fprintf(f, "note %s\n", mix_stats);
	fprintf(f, "err %d\n", err);
	fclose(f);
	/* Nothing for main's table here: the parent prints the rows. */
	return err;
}

/* In the parent: run the child on the stand-in and take its rows. */
static int mix_standin_run(const struct bench_opts *bo)
{
	char dir[512], lib[600], code[600], reps[16], fdtxt[16], line[256];
	int fds[2], status, err = -EPROTO, got = 0;
	FILE *in;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/mock/cuda", AGILE_GPU_BUILD_DIR);
	snprintf(lib, sizeof(lib), "%s/libcuda.so.1", dir);
	snprintf(code, sizeof(code), "%s/agile-gpu-cuda.fatbin",
		 AGILE_GPU_BUILD_DIR);
	if (access(lib, R_OK) || access(code, R_OK)) {
		mix_na("no GPU, and the stand-in is not built (make -C "
		       "selftests/libagile tests; needs nvcc for the code "
		       "object)");
		return 0;
	}
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	snprintf(reps, sizeof(reps), "%d", bo->reps);
	snprintf(fdtxt, sizeof(fdtxt), "%d", fds[1]);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, 1);
		fcntl(fds[1], F_SETFD, 0);
		setenv(RT_CHILD_ENV, fdtxt, 1);
		setenv("LD_LIBRARY_PATH", dir, 1);
		setenv("AGILE_QUIET", "1", 1);
		unsetenv("AGILE_GPU_CODE_DIR");
		unsetenv("AGILE_EU_POOL");
		unsetenv("AGILE_GPU_SHARE");
		execl("/proc/self/exe", "agile-bench", "-r", reps, "runtime",
		      (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return -errno;
	}
	in = fdopen(fds[0], "r");
	while (in && fgets(line, sizeof(line), in)) {
		struct timing t;
		int i;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "row %d %lf %lf %lf %lf %lf %d", &i, &t.min_ms,
			   &t.median_ms, &t.p10_ms, &t.p90_ms, &t.max_ms,
			   &t.reps) == 7 &&
		    i >= 0 && i < RT_NR_PLACES) {
			bench_row("runtime", mix_standin[i], 1, t);
			got++;
		} else if (!strncmp(line, "gpu ", 4)) {
			bench_note("runtime: mixed: on the stand-in GPU "
				   "runtime (\"%s\", gpu-mock.c: its GPU EU is "
				   "a CPU thread): the policy, not a GPU",
				   line + 4);
		} else if (!strncmp(line, "note ", 5)) {
			bench_note("%s", line + 5);
		} else if (!strncmp(line, "err ", 4)) {
			err = atoi(line + 4);
		}
	}
	if (in)
		fclose(in);
	else
		close(fds[0]);
	waitpid(pid, &status, 0);
	if (!err &&
	    (got != RT_NR_PLACES || !WIFEXITED(status) || WEXITSTATUS(status)))
		err = -EPROTO;
	if (err == -ENODEV) {
		mix_na("the stand-in GPU did not start GPU EUs");
		return 0;
	}
	if (!err)
		mix_compare(mix_standin);
	return err;
}

int bench_runtime(const struct bench_opts *bo)
{
	const char *child = getenv(RT_CHILD_ENV);
	struct rt_agile a;
	struct rt_ocl o;
	bool have_ocl;
	char gpu[160];
	int err;

	if (child && *child)
		return mix_child(bo, atoi(child));

	err = agile_open(&a);
	if (err) {
		fprintf(stderr, "  runtime: agile context: %s\n",
			agile_strerror(err));
		agile_close(&a);
		return err;
	}
	have_ocl = !ocl_open(&o);
	if (have_ocl)
		bench_note("runtime: OpenCL: %s, device \"%s\"; "
			   "POCL_WORK_GROUP_METHOD=%s",
			   o.platform, o.device,
			   getenv("POCL_WORK_GROUP_METHOD") ?
				   getenv("POCL_WORK_GROUP_METHOD") :
				   "(default)");
	else
		bench_note("runtime: PoCL rows skipped: %s", o.why);
	err = bench_empty(bo, &a, &o, have_ocl);
	if (!err)
		err = bench_chain(bo, &a, &o, have_ocl);
	ocl_close(&o);
	agile_close(&a);
	if (!err)
		err = bench_runtime_kernels(bo);
	if (err)
		return err;

	/* Mixed: a real GPU where one is usable, else the stand-in. */
	if (agile_gpu_available()) {
		err = mix_bench(bo, false, mix_real, gpu, sizeof(gpu));
		if (!err)
			mix_compare(mix_real);
		if (err == -ENODEV) {
			for (int i = 0; i < RT_NR_PLACES; i++)
				bench_row_na("runtime", mix_real[i], 1,
					     "skipped");
			bench_note("runtime: mixed: skipped: the GPU did not "
				   "start GPU EUs");
			err = 0;
		}
		return err;
	}
	return mix_standin_run(bo);
}
