// SPDX-License-Identifier: MIT
/*
 * rt-fallback - placement by load and the CPU fallback of seed 003, on
 * the stand-in GPU runtime (gpu-mock.c, as HIP and as CUDA): the GPU's
 * row in the capability table; a context on the CPU and the GPU; with the
 * GPU's work-groups stalled (mock_stall), two axpy entries meant for the
 * GPU take both GPU EUs and stay there (their doorbells POSTED: the GPU
 * is busy), a third one meant for the GPU runs on a CPU EU and completes
 * while the GPU is still stalled, counted as a fallback in agile_rt_stats
 * and in the printed table; a GPU_ONLY one waits for the GPU.  Once the
 * GPU goes on, everything completes with the right values.
 *
 * Where a GPU is usable the stand-in cannot stand in: three chained
 * axpys run on its GPU EUs instead.  Skipped in the static build.
 */
#define _GNU_SOURCE
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/runtime.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eu/gpu_impl.h"
#include "tap.h"
#include "rttest.h"

#ifndef AGILE_NO_DLOPEN
#include "gpumock.h"

#define N 1024
#define NR_GPU 3

static struct agile_rt_buffer *vec(agile_rt_ctx ctx, double v, double **h)
{
	struct agile_rt_buffer *b;

	if (agile_rt_buffer_create(ctx, N * sizeof(double), &b))
		return NULL;
	agile_rt_buffer_host(b, (void **)h, NULL);
	for (int i = 0; i < N; i++)
		(*h)[i] = v;
	return b;
}

/* y = a x + y with the built-in axpy, groups of 64 x @ty, placed @place. */
static int axpy_2d(struct agile_rt_queue *q, struct agile_rt_kernel *k,
		   uint32_t place, uint32_t tx, uint32_t ty, double a,
		   struct agile_rt_buffer *x, struct agile_rt_buffer *y,
		   struct agile_rt_event **ev)
{
	struct agile_rt_arg args[] = {
		rt_val(rt_bits(a)),
		rt_buf(x, AGILE_RT_READ),
		rt_buf(y, AGILE_RT_READ | AGILE_RT_WRITE),
		rt_val(N),
	};
	struct agile_rt_entry e = { .kernel = k,
				    .threads = tx,
				    .threads_y = ty,
				    .groups = 1,
				    .place = place,
				    .nr_args = 4,
				    .args = args };

	return agile_rt_enqueue(q, &e, ev);
}

/* y = a x + y with the built-in axpy, placed @place. */
static int axpy(struct agile_rt_queue *q, struct agile_rt_kernel *k,
		uint32_t place, double a, struct agile_rt_buffer *x,
		struct agile_rt_buffer *y, struct agile_rt_event **ev)
{
	struct agile_rt_arg args[] = {
		rt_val(rt_bits(a)),
		rt_buf(x, AGILE_RT_READ),
		rt_buf(y, AGILE_RT_READ | AGILE_RT_WRITE),
		rt_val(N),
	};
	struct agile_rt_entry e = { .kernel = k,
				    .threads = 64,
				    .groups = 1,
				    .place = place,
				    .nr_args = 4,
				    .args = args };

	return agile_rt_enqueue(q, &e, ev);
}

/*
 * Where a GPU is usable: a context on the CPU and it, three axpys on y
 * chained by data flow, GPU only: they run on GPU EUs, in order.
 */
static int real_gpu(void)
{
	struct agile_rt_req gpu_req = { .key = AGILE_RT_KEY_TYPE,
					.cmp = AGILE_RT_CMP_EQ,
					.value = AGILE_RT_DEVICE_GPU };
	struct agile_rt_req usable = { .key = AGILE_RT_KEY_USABLE,
				       .cmp = AGILE_RT_CMP_EQ,
				       .value = 1,
				       .flags = AGILE_RT_REQ_MUST };
	struct agile_rt_req reqs[] = { gpu_req, usable };
	struct agile_rt_event *ev[3] = { 0 };
	struct agile_rt_buffer *x, *y;
	struct agile_rt_device_info info;
	struct agile_rt_ctx_opts o;
	struct agile_rt_stats st;
	struct agile_rt_kernel *k;
	struct agile_rt_queue *q;
	uint32_t devs[2] = { 0, 0 }, nr = 0;
	double *xh, *yh;
	agile_rt_ctx ctx;
	int err, bad = 0;

	err = agile_rt_device_match(reqs, 2, AGILE_RT_MATCH_SCORE, &devs[1], 1,
				    &nr);
	if (!tap_ok(!err && nr >= 1, "a usable GPU in the table"))
		return tap_done();
	agile_rt_device_info(devs[1], &info);
	tap_diag("GPU: %s %s %s, %u units, %llu MiB", info.vendor, info.name,
		 info.version, info.units,
		 (unsigned long long)(info.memory >> 20));
	agile_rt_ctx_opts_init(&o);
	o.devices = devs;
	o.nr_devices = 2;
	err = agile_rt_ctx_create(&o, &ctx);
	if (!err)
		err = agile_rt_kernel_get(ctx, AGILE_KERNEL_AXPY, &k);
	if (!err)
		err = agile_rt_queue_create(ctx, NULL, &q);
	if (!tap_ok(!err, "a context on the CPU and the GPU: %s",
		    agile_strerror(err)))
		return tap_done();
	x = vec(ctx, 1, &xh);
	y = vec(ctx, 0, &yh);
	/* y = 1 x + y, three times, each after the last by data flow. */
	for (int i = 0; i < 3 && !err; i++)
		err = axpy(q, k, AGILE_RT_PLACE_GPU_ONLY, 1, x, y, &ev[i]);
	for (int i = 0; i < 3 && !err; i++)
		err = agile_rt_event_wait(ev[i], RT_WAIT_NS);
	for (int j = 0; j < N; j++)
		bad += yh[j] != 3;
	agile_rt_stats(q, &st);
	tap_ok(!err && !bad && st.devices[1].eu_kind == AGILE_EU_KIND_GPU &&
		       st.devices[1].groups == 3 && st.devices[1].tasks == 3,
	       "three chained axpys on GPU EUs: y = 3, %d wrong: %s", bad,
	       agile_strerror(err));
	for (int i = 0; i < 3; i++)
		if (ev[i])
			agile_rt_event_release(ev[i]);
	agile_rt_buffer_release(x);
	agile_rt_buffer_release(y);
	tap_ok_call(agile_rt_queue_destroy(q), "queue destroy");
	tap_ok_call(agile_rt_ctx_release(ctx), "context release");
	return tap_done();
}

static int child(const char *lib)
{
	struct agile_rt_req gpu_req = { .key = AGILE_RT_KEY_TYPE,
					.cmp = AGILE_RT_CMP_EQ,
					.value = AGILE_RT_DEVICE_GPU };
	struct agile_rt_buffer *x, *y[NR_GPU + 1];
	struct agile_rt_event *ev[NR_GPU + 1] = { 0 };
	struct agile_rt_device_info info;
	struct agile_rt_ctx_opts o;
	struct agile_rt_stats st;
	struct agile_rt_kernel *k;
	struct agile_rt_queue *q;
	double *xh, *yh[NR_GPU + 1];
	uint32_t devs[2] = { 0, 0 }, nr = 0;
	char *text = NULL;
	size_t len = 0;
	agile_rt_ctx ctx;
	FILE *mem;
	int err, bad = 0;

	setenv("AGILE_QUIET", "1", 1);
	err = agile_rt_device_match(&gpu_req, 1, AGILE_RT_MATCH_ALL, &devs[1],
				    1, &nr);
	if (!tap_ok(!err && nr == 1, "the stand-in GPU is in the table (%u)",
		    nr))
		return tap_done();
	agile_rt_device_info(devs[1], &info);
	tap_ok(info.type == AGILE_RT_DEVICE_GPU && info.usable &&
		       !strcmp(info.vendor,
			       strstr(lib, "hip") ? "amd" : "nvidia") &&
		       strstr(info.extensions, "agile.doorbell"),
	       "its row: GPU, usable, vendor %s, \"%s\"", info.vendor,
	       info.name);

	agile_rt_ctx_opts_init(&o);
	o.devices = devs;
	o.nr_devices = 2;
	o.cpu_eus = 2;
	o.gpu_eus = 2;
	err = agile_rt_ctx_create(&o, &ctx);
	if (!err)
		err = agile_rt_kernel_get(ctx, AGILE_KERNEL_AXPY, &k);
	if (!err)
		err = agile_rt_queue_create(ctx, NULL, &q);
	if (!tap_ok(!err, "a context on the CPU and the GPU, a queue: %s",
		    agile_strerror(err)))
		return tap_done();
	agile_rt_stats(q, &st);
	tap_ok(st.nr_devices == 2 &&
		       st.devices[1].type == AGILE_RT_DEVICE_GPU &&
		       st.devices[1].eu_kind == AGILE_EU_KIND_GPU &&
		       st.devices[1].nr_eus == 2,
	       "the GPU device runs GPU EUs");

	x = vec(ctx, 1, &xh);
	for (int i = 0; i <= NR_GPU; i++)
		y[i] = vec(ctx, i, &yh[i]);
	mock_call(lib, "mock_stall", 1);
	/* Two for the GPU: both its EUs take one and hold it. */
	err = axpy(q, k, AGILE_RT_PLACE_GPU, 10, x, y[0], &ev[0]);
	if (!err)
		err = axpy(q, k, AGILE_RT_PLACE_GPU, 10, x, y[1], &ev[1]);
	for (int spins = 0; !err && spins < 100000; spins++) {
		agile_rt_stats(q, &st);
		if (st.devices[1].busy == 2)
			break;
		sched_yield();
	}
	tap_ok(!err && st.devices[1].busy == 2 && st.cpu_fallback == 0,
	       "stalled GPU: both its doorbells busy, no fallback yet: %s",
	       agile_strerror(err));

	/* The third meant for the GPU: a CPU EU runs it now. */
	err = axpy(q, k, AGILE_RT_PLACE_GPU, 10, x, y[2], &ev[2]);
	if (!err)
		err = agile_rt_event_wait(ev[2], RT_WAIT_NS);
	agile_rt_stats(q, &st);
	tap_ok(!err && yh[2][0] == 12 && yh[2][N - 1] == 12 &&
		       st.cpu_fallback == 1 && st.devices[0].fallback_in == 1 &&
		       st.devices[1].busy == 2,
	       "GPU busy: the third ran on a CPU EU (y = %g), 1 fallback, "
	       "GPU still stalled: %s",
	       yh[2][0], agile_strerror(err));
	mem = open_memstream(&text, &len);
	if (mem) {
		agile_rt_stats_print(q, mem);
		fclose(mem);
	}
	tap_ok(text && strstr(text, "cpu fallback: 1 groups"),
	       "the printed table shows the fallback");
	for (char *line = text ? strtok(text, "\n") : NULL; line;
	     line = strtok(NULL, "\n"))
		tap_diag("%s", line);
	free(text);

	/* GPU only: it waits for the GPU. */
	err = axpy(q, k, AGILE_RT_PLACE_GPU_ONLY, 10, x, y[3], &ev[3]);
	tap_ok(!err && agile_rt_event_wait(ev[3], 20000000) == -ETIMEDOUT,
	       "GPU_ONLY while the GPU is busy: still waiting after 20 ms");

	mock_call(lib, "mock_stall", 0);
	for (int i = 0; i <= NR_GPU && !err; i++)
		err = agile_rt_event_wait(ev[i], RT_WAIT_NS);
	for (int i = 0; i <= NR_GPU; i++)
		for (int j = 0; j < N; j++)
			bad += yh[i][j] != i + 10;
	agile_rt_stats(q, &st);
	tap_ok(!err && !bad && st.devices[1].groups == 3 &&
		       st.devices[0].groups == 1 && st.devices[1].tasks == 3,
	       "GPU going on: all four done, %d wrong; GPU ran 3, CPU 1: %s",
	       bad, agile_strerror(err));

	/*
	 * Shapes: 16 x 8 threads (128) is more than a GPU EU's lanes: a
	 * GPU-preferred entry runs on the CPU though the GPU is idle, and a
	 * GPU-only one is refused; 8 x 8 (64) runs on GPU EUs as 64 lanes.
	 */
	{
		struct agile_rt_stats st0;
		struct agile_rt_event *e2;

		agile_rt_stats(q, &st0);
		err = axpy_2d(q, k, AGILE_RT_PLACE_GPU, 16, 8, 1, x, y[0], &e2);
		if (!err) {
			err = agile_rt_event_wait(e2, RT_WAIT_NS);
			agile_rt_event_release(e2);
		}
		err = err ? err :
			    axpy_2d(q, k, AGILE_RT_PLACE_GPU_ONLY, 8, 8, 1, x,
				    y[0], &e2);
		if (!err) {
			err = agile_rt_event_wait(e2, RT_WAIT_NS);
			agile_rt_event_release(e2);
		}
		agile_rt_stats(q, &st);
		bad = 0;
		for (int j = 0; j < N; j++)
			bad += yh[0][j] != 12;
		tap_ok(!err && !bad &&
			       st.devices[0].groups ==
				       st0.devices[0].groups + 1 &&
			       st.devices[1].groups ==
				       st0.devices[1].groups + 1,
		       "a 16x8 group GPU-preferred ran on the CPU, an 8x8 one "
		       "GPU-only on the GPU (%d wrong; CPU +%llu, GPU +%llu): "
		       "%s",
		       bad,
		       (unsigned long long)(st.devices[0].groups -
					    st0.devices[0].groups),
		       (unsigned long long)(st.devices[1].groups -
					    st0.devices[1].groups),
		       agile_strerror(err));
		e2 = NULL;
		err = axpy_2d(q, k, AGILE_RT_PLACE_GPU_ONLY, 16, 8, 1, x, y[0],
			      &e2);
		tap_ok(err == -E2BIG && !e2 &&
			       strstr(agile_rt_error_message(),
				      "AGILE_MAX_LANES"),
		       "a 16x8 group GPU-only: %s, \"%s\"", agile_strerror(err),
		       agile_rt_error_message());
	}

	for (int i = 0; i <= NR_GPU; i++) {
		if (ev[i])
			agile_rt_event_release(ev[i]);
		agile_rt_buffer_release(y[i]);
	}
	agile_rt_buffer_release(x);
	tap_ok_call(agile_rt_queue_destroy(q), "queue destroy");
	tap_ok_call(agile_rt_ctx_release(ctx), "context release");
	tap_ok(mock_call(lib, "mock_registered", 0) == 0,
	       "nothing left registered");
	return tap_done();
}
#endif

int main(int argc, char **argv)
{
#ifdef AGILE_NO_DLOPEN
	(void)argc;
	(void)argv;
	tap_skip("runtime CPU fallback on a stand-in GPU",
		 "a static build loads no runtime");
	return tap_done();
#else
	char why[512];

	if (argc <= 2 && agile__gpu_status(why, sizeof(why))) {
		tap_skip("runtime CPU fallback on a stand-in GPU",
			 "a usable GPU is here: %s", why);
		return real_gpu();
	}
	return mock_main(argc, argv, child, 10);
#endif
}
