// SPDX-License-Identifier: MIT
/*
 * runtime-queue - the runtime of seed 003 in one page: pick devices by
 * score (the best GPU with doubles, if any, beside the CPU), make a
 * context on them, and queue three axpy steps whose buffers chain them
 * (y = 2 x + y, z = 3 y + z, then y = 1 z + y): the queue orders them by
 * data flow alone, places each by load, and the events say when the
 * results may be read.  Prints the values and the queue's statistics.
 *
 *	runtime-queue [N]
 */
#include <agile/error.h>
#include <agile/runtime.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t bits_of(double d)
{
	uint64_t b;

	memcpy(&b, &d, sizeof(b));
	return b;
}

/* dst = a src + dst on @q, any device. */
static int axpy(struct agile_rt_queue *q, struct agile_rt_kernel *k, double a,
		struct agile_rt_buffer *src, struct agile_rt_buffer *dst,
		uint64_t n, struct agile_rt_event **ev)
{
	struct agile_rt_arg args[] = {
		{ .kind = AGILE_RT_ARG_VALUE, .value = bits_of(a) },
		{ .kind = AGILE_RT_ARG_BUFFER,
		  .access = AGILE_RT_READ,
		  .buf = src },
		{ .kind = AGILE_RT_ARG_BUFFER,
		  .access = AGILE_RT_READ | AGILE_RT_WRITE,
		  .buf = dst },
		{ .kind = AGILE_RT_ARG_VALUE, .value = n },
	};
	struct agile_rt_entry e = { .kernel = k,
				    .threads = 64,
				    .groups = 1,
				    .place = AGILE_RT_PLACE_ANY,
				    .nr_args = 4,
				    .args = args };

	return agile_rt_enqueue(q, &e, ev);
}

int main(int argc, char **argv)
{
	struct agile_rt_req want[] = {
		{ .key = AGILE_RT_KEY_TYPE,
		  .cmp = AGILE_RT_CMP_EQ,
		  .value = AGILE_RT_DEVICE_GPU,
		  .weight = 4 },
		{ .key = AGILE_RT_KEY_FP64,
		  .cmp = AGILE_RT_CMP_EQ,
		  .value = 1,
		  .flags = AGILE_RT_REQ_MUST },
	};
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 4096;
	uint32_t ids[AGILE_RT_MAX_DEVICES], nr = 0, devs[2] = { 0 };
	struct agile_rt_buffer *x = NULL, *y = NULL, *z = NULL;
	struct agile_rt_event *ev[3] = { 0 };
	struct agile_rt_device_info info;
	struct agile_rt_ctx_opts o;
	struct agile_rt_kernel *k;
	struct agile_rt_queue *q = NULL;
	double *xh, *yh, *zh;
	agile_rt_ctx ctx;
	int err;

	if (!n) {
		fprintf(stderr, "usage: %s [N > 0]\n", argv[0]);
		return 2;
	}
	err = agile_rt_device_match(want, 2, AGILE_RT_MATCH_SCORE, ids,
				    AGILE_RT_MAX_DEVICES, &nr);
	agile_rt_ctx_opts_init(&o);
	o.devices = devs;
	if (!err && nr && ids[0] != 0)
		devs[o.nr_devices++] = ids[0];
	for (uint32_t i = 0; i < o.nr_devices; i++) {
		agile_rt_device_info(devs[i], &info);
		printf("device %u: %s %s %s, %u lanes\n", devs[i], info.vendor,
		       info.name, info.version, info.lanes);
	}
	err = agile_rt_ctx_create(&o, &ctx);
	if (err) {
		fprintf(stderr, "context: %s\n", agile_strerror(err));
		return 1;
	}
	err = agile_rt_kernel_get(ctx, AGILE_KERNEL_AXPY, &k);
	if (!err)
		err = agile_rt_queue_create(ctx, NULL, &q);
	if (!err)
		err = agile_rt_buffer_create(ctx, n * sizeof(double), &x);
	if (!err)
		err = agile_rt_buffer_create(ctx, n * sizeof(double), &y);
	if (!err)
		err = agile_rt_buffer_create(ctx, n * sizeof(double), &z);
	if (err)
		goto out;
	agile_rt_buffer_host(x, (void **)&xh, NULL);
	agile_rt_buffer_host(y, (void **)&yh, NULL);
	agile_rt_buffer_host(z, (void **)&zh, NULL);
	for (uint64_t i = 0; i < n; i++) {
		xh[i] = (double)i;
		yh[i] = 1;
		zh[i] = 0;
	}
	/* y = 2x + 1; z = 3y = 6x + 3; y = z + y = 8x + 4. */
	err = axpy(q, k, 2, x, y, n, &ev[0]);
	if (!err)
		err = axpy(q, k, 3, y, z, n, &ev[1]);
	if (!err)
		err = axpy(q, k, 1, z, y, n, &ev[2]);
	if (!err)
		err = agile_rt_event_wait(ev[2], AGILE_TIMEOUT_INFINITE);
	if (!err)
		printf("y[%llu] = %g (want %g), z[%llu] = %g (want %g)\n",
		       (unsigned long long)(n - 1), yh[n - 1],
		       8.0 * (double)(n - 1) + 4, (unsigned long long)(n - 1),
		       zh[n - 1], 6.0 * (double)(n - 1) + 3);
	if (!err && (yh[n - 1] != 8.0 * (double)(n - 1) + 4 ||
		     zh[n - 1] != 6.0 * (double)(n - 1) + 3))
		err = -EDOM;
	agile_rt_stats_print(q, stdout);
out:
	for (int i = 0; i < 3; i++)
		if (ev[i])
			agile_rt_event_release(ev[i]);
	if (q)
		agile_rt_queue_destroy(q);
	if (x)
		agile_rt_buffer_release(x);
	if (y)
		agile_rt_buffer_release(y);
	if (z)
		agile_rt_buffer_release(z);
	agile_rt_ctx_release(ctx);
	if (err)
		fprintf(stderr, "runtime-queue: %s\n", agile_strerror(err));
	return err ? 1 : 0;
}
