// SPDX-License-Identifier: MIT
/*
 * rt-context - contexts' reference counts and handles: retain and release
 * count; a context released to zero, a handle never created, garbage and
 * a double release all give -AGILE_E_INVALID_CONTEXT and touch nothing
 * (this test runs under ASan too: a use of the freed context would be
 * reported); a new context in the freed slot does not revive the old
 * handle; buffers and the queue hold their context.
 */
#include <agile/error.h>
#include <agile/runtime.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "tap.h"
#include "rttest.h"

#define INVALID (-AGILE_E_INVALID_CONTEXT)

int main(void)
{
	struct agile_rt_ctx_opts o;
	struct agile_rt_buffer *buf;
	struct agile_rt_kernel *k;
	struct agile_rt_queue *q;
	agile_rt_ctx ctx, ctx2;
	uint32_t refs = 0, dev = 99;
	int err;

	err = rt_cpu_ctx(1, &ctx);
	if (!tap_ok(!err, "a context on the CPU: %s", agile_strerror(err)))
		return tap_done();
	tap_ok(ctx != 0, "its handle is not 0");
	tap_ok(!agile_rt_ctx_retain(ctx) && !agile_rt_ctx_refs(ctx, &refs) &&
		       refs == 2,
	       "retain: 2 references");
	tap_ok(!agile_rt_ctx_release(ctx) && !agile_rt_ctx_refs(ctx, &refs) &&
		       refs == 1,
	       "release: 1 reference");
	tap_ok(!agile_rt_kernel_get(ctx, AGILE_KERNEL_AXPY, &k),
	       "the built-in axpy is a kernel of the context");

	/* A buffer and a queue each hold the context. */
	tap_ok(!agile_rt_buffer_create(ctx, 100, &buf) &&
		       !agile_rt_queue_create(ctx, NULL, &q) &&
		       !agile_rt_ctx_refs(ctx, &refs) && refs == 3,
	       "a buffer and a queue: 3 references");
	tap_ok(agile_rt_queue_create(ctx, NULL, &q) == -EBUSY,
	       "a second queue: -EBUSY");
	tap_ok(!agile_rt_ctx_release(ctx) && !agile_rt_ctx_refs(ctx, &refs) &&
		       refs == 2,
	       "the application's release: the context lives on");
	tap_ok(!agile_rt_queue_destroy(q) && !agile_rt_ctx_refs(ctx, &refs) &&
		       refs == 1,
	       "the queue's destroy drops its reference");
	tap_ok(!agile_rt_buffer_release(buf), "the buffer's release");

	/* Released to zero: every use is refused, nothing touched. */
	tap_ok(agile_rt_ctx_retain(ctx) == INVALID,
	       "retain of a freed context: -AGILE_E_INVALID_CONTEXT");
	tap_ok(agile_rt_ctx_release(ctx) == INVALID,
	       "double release: -AGILE_E_INVALID_CONTEXT");
	tap_ok(agile_rt_ctx_refs(ctx, &refs) == INVALID &&
		       agile_rt_kernel_get(ctx, AGILE_KERNEL_AXPY, &k) ==
			       INVALID &&
		       agile_rt_buffer_create(ctx, 100, &buf) == INVALID &&
		       agile_rt_queue_create(ctx, NULL, &q) == INVALID,
	       "refs, kernel, buffer, queue on a freed context: refused");

	/* Never created, garbage. */
	tap_ok(agile_rt_ctx_retain(0) == INVALID &&
		       agile_rt_ctx_release(0) == INVALID,
	       "handle 0: -AGILE_E_INVALID_CONTEXT");
	tap_ok(agile_rt_ctx_retain(0xdeadbeefcafef00dULL) == INVALID &&
		       agile_rt_ctx_release(UINT64_MAX) == INVALID &&
		       agile_rt_ctx_release((uint64_t)1 << 32 | 63) == INVALID,
	       "garbage handles: -AGILE_E_INVALID_CONTEXT");

	/* The slot taken again: the old handle stays dead. */
	err = rt_cpu_ctx(1, &ctx2);
	tap_ok(!err && ctx2 != ctx && agile_rt_ctx_retain(ctx) == INVALID &&
		       !agile_rt_ctx_refs(ctx2, &refs) && refs == 1,
	       "a new context (maybe in the same slot): the old handle is "
	       "still invalid, the new one has 1 reference");
	tap_ok(!agile_rt_ctx_release(ctx2) &&
		       agile_rt_ctx_release(ctx2) == INVALID,
	       "the new context: release, then double release refused");

	/* Bad options. */
	agile_rt_ctx_opts_init(&o);
	o.devices = &dev;
	tap_ok(agile_rt_ctx_create(&o, &ctx) == -ENODEV,
	       "an unknown device id: -ENODEV");
	o.devices = (uint32_t[]){ 0, 0 };
	o.nr_devices = 2;
	tap_ok(agile_rt_ctx_create(&o, &ctx) == -EINVAL,
	       "a device twice: -EINVAL");
	o.nr_devices = 0;
	tap_ok(agile_rt_ctx_create(&o, &ctx) == -EINVAL, "no device: -EINVAL");
	tap_ok(!strcmp(agile_strerror(INVALID),
		       "Invalid runtime context: released, never created, or "
		       "garbage") &&
		       strstr(agile_strerror(-AGILE_E_DEPENDENCY), "depended"),
	       "agile_strerror knows both new codes");
	return tap_done();
}
