// SPDX-License-Identifier: MIT
/*
 * rt-queue-shapes - an entry's group and grid shapes, its local memory
 * and the limits, on two CPU EUs (whose runners take groups in ranges):
 *
 *  - 1-3-D grids of 1-3-D groups up to 1,024 threads: every thread sees
 *    its group's flat index, (x, y, z), the grid's and the group's shape
 *    in its words, and writes its global element exactly once;
 *  - local memory sized at enqueue: 64-byte aligned, after the kernel's
 *    block-shared memory, one per running group, kept across a barrier
 *    (lane l reads what lane n - 1 - l wrote), 256 and 1,024 lanes;
 *  - 20,000 one-lane groups: each runs once (ranges lose and repeat
 *    none), and the device's counters say 20,000;
 *  - a lane of a 1,024-lane group failing fails the entry with its error;
 *  - each limit refused with its errno and a message naming it, nothing
 *    enqueued; the message cleared by the next good enqueue.
 */
#include <agile/error.h>
#include <agile/runtime.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "rttest.h"

struct dim3 {
	uint32_t x, y, z;
};

static struct dim3 dim3_of(uint64_t w)
{
	return (struct dim3){ (uint32_t)w, (uint32_t)(w >> 32 & 0xffff),
			      (uint32_t)(w >> 48) };
}

/*
 * rt.shape: args out (uint32 counters, one per thread of the grid),
 * GROUP, GROUP_ID, NR_GROUPS, GROUP_SIZE, the grid's and the group's
 * shapes again as values.  A word that disagrees fails the lane.
 */
static int shape_phase(uint32_t lane, uint32_t lanes, const __u64 *args,
		       void *state, void *shared)
{
	uint32_t *out = (uint32_t *)(uintptr_t)args[0];
	struct dim3 id = dim3_of(args[2]), ng = dim3_of(args[3]),
		    bs = dim3_of(args[4]);
	uint64_t nx, ny, gx, gy, gz;

	(void)state;
	(void)shared;
	if (args[3] != args[5] || args[4] != args[6] ||
	    lanes != bs.x * bs.y * bs.z)
		return -EPROTO;
	if (id.x >= ng.x || id.y >= ng.y || id.z >= ng.z ||
	    args[1] !=
		    id.x + (uint64_t)id.y * ng.x + (uint64_t)id.z * ng.x * ng.y)
		return -ERANGE;
	nx = (uint64_t)ng.x * bs.x;
	ny = (uint64_t)ng.y * bs.y;
	gx = (uint64_t)id.x * bs.x + lane % bs.x;
	gy = (uint64_t)id.y * bs.y + lane / bs.x % bs.y;
	gz = (uint64_t)id.z * bs.z + lane / (bs.x * bs.y);
	__atomic_fetch_add(&out[(gz * ny + gy) * nx + gx], 1, __ATOMIC_RELAXED);
	return 0;
}

/* rt.local, phase 0: local[lane] = 1000 g + lane; shared filled with 0xa5. */
static int local_put(uint32_t lane, uint32_t lanes, const __u64 *args,
		     void *state, void *shared)
{
	uint32_t *local = (uint32_t *)(uintptr_t)args[1];

	(void)state;
	(void)lanes;
	if ((uintptr_t)local % 64 ||
	    (unsigned char *)local < (unsigned char *)shared + 100)
		return -EFAULT;
	if (lane == 0)
		memset(shared, 0xa5, 100);
	local[lane] = (uint32_t)(1000 * args[2] + lane);
	return 0;
}

/* Phase 1: out[g n + l] = local[n - 1 - l]; the shared bytes intact. */
static int local_get(uint32_t lane, uint32_t lanes, const __u64 *args,
		     void *state, void *shared)
{
	uint32_t *out = (uint32_t *)(uintptr_t)args[0];
	const uint32_t *local = (const uint32_t *)(uintptr_t)args[1];
	const unsigned char *sh = shared;

	(void)state;
	if (sh[lane % 100] != 0xa5)
		return -EIO;
	out[args[2] * lanes + lane] = local[lanes - 1 - lane];
	return 0;
}

/* rt.wide-fail: lane args[0] fails with -EDOM. */
static int fail_at(uint32_t lane, uint32_t lanes, const __u64 *args,
		   void *state, void *shared)
{
	(void)lanes;
	(void)state;
	(void)shared;
	return lane == args[0] ? -EDOM : 0;
}

static struct agile_rt_kernel *reg(agile_rt_ctx ctx, const char *name,
				   const agile_phase_fn *phases, uint32_t nr,
				   uint32_t shared, uint32_t max_lanes)
{
	struct agile_kernel k = { .name = name,
				  .nr_phases = nr,
				  .phases = phases,
				  .shared_size = shared,
				  .max_lanes = max_lanes };
	struct agile_rt_kernel *out = NULL;

	return agile_rt_kernel_register(ctx, &k, &out) ? NULL : out;
}

static int wait_release(struct agile_rt_event *ev)
{
	int err = agile_rt_event_wait(ev, RT_WAIT_NS);

	agile_rt_event_release(ev);
	return err;
}

static void shape(struct agile_rt_queue *q, struct agile_rt_kernel *k,
		  struct agile_rt_buffer *buf, uint32_t *out, struct dim3 b,
		  struct dim3 g)
{
	uint64_t n = (uint64_t)b.x * b.y * b.z * g.x * g.y * g.z, bad = 0;
	uint64_t gw = AGILE_RT_DIM3_WORD(g.x, g.y, g.z);
	uint64_t bw = AGILE_RT_DIM3_WORD(b.x, b.y, b.z);
	struct agile_rt_arg a[] = {
		rt_buf(buf, AGILE_RT_READ | AGILE_RT_WRITE),
		{ .kind = AGILE_RT_ARG_GROUP },
		{ .kind = AGILE_RT_ARG_GROUP_ID },
		{ .kind = AGILE_RT_ARG_NR_GROUPS },
		{ .kind = AGILE_RT_ARG_GROUP_SIZE },
		rt_val(gw),
		rt_val(bw),
	};
	struct agile_rt_entry e = { .kernel = k,
				    .threads = b.x,
				    .threads_y = b.y,
				    .threads_z = b.z,
				    .groups = g.x,
				    .groups_y = g.y,
				    .groups_z = g.z,
				    .nr_args = 7,
				    .args = a };
	struct agile_rt_event *ev;
	int err;

	memset(out, 0, n * sizeof(*out));
	err = agile_rt_enqueue(q, &e, &ev);
	if (!err)
		err = wait_release(ev);
	for (uint64_t i = 0; i < n; i++)
		bad += out[i] != 1;
	tap_ok(!err && !bad,
	       "groups of %ux%ux%u in a grid of %ux%ux%u: every thread's words "
	       "right, %llu of %llu elements not written once: %s",
	       b.x, b.y, b.z, g.x, g.y, g.z, (unsigned long long)bad,
	       (unsigned long long)n, agile_strerror(err));
}

static void local(struct agile_rt_queue *q, struct agile_rt_kernel *k,
		  struct agile_rt_buffer *buf, uint32_t *out, uint32_t lanes,
		  uint32_t groups)
{
	struct agile_rt_arg a[] = {
		rt_buf(buf, AGILE_RT_WRITE),
		{ .kind = AGILE_RT_ARG_LOCAL },
		{ .kind = AGILE_RT_ARG_GROUP },
	};
	struct agile_rt_entry e = { .kernel = k,
				    .threads = lanes,
				    .groups = groups,
				    .nr_args = 3,
				    .args = a,
				    .local_bytes = lanes * 4 };
	struct agile_rt_event *ev;
	uint32_t bad = 0;
	int err;

	memset(out, 0xff, (size_t)lanes * groups * 4);
	err = agile_rt_enqueue(q, &e, &ev);
	if (!err)
		err = wait_release(ev);
	for (uint32_t g = 0; g < groups; g++)
		for (uint32_t l = 0; l < lanes; l++)
			bad += out[g * lanes + l] != 1000 * g + lanes - 1 - l;
	tap_ok(!err && !bad,
	       "local memory of %u bytes, %u groups of %u lanes: aligned, "
	       "after the shared, kept across the barrier, one a group (%u "
	       "wrong): %s",
	       lanes * 4, groups, lanes, bad, agile_strerror(err));
}

struct limit {
	const char *what;
	struct agile_rt_entry e;
	int err;
	const char *names;
};

static void limits(struct agile_rt_queue *q, struct agile_rt_kernel *k,
		   struct agile_rt_kernel *k8)
{
	struct agile_rt_arg bad_kind = { .kind = AGILE_RT_ARG_LOCAL + 1 };
	const struct limit lim[] = {
		{ "1025 threads",
		  { .kernel = k, .threads = 1025, .groups = 1 },
		  -E2BIG,
		  "AGILE_RT_MAX_GROUP_THREADS" },
		{ "threads_y 1025",
		  { .kernel = k, .threads = 1, .threads_y = 1025, .groups = 1 },
		  -E2BIG,
		  "threads_y 1025 over AGILE_RT_MAX_GROUP_THREADS" },
		{ "32 x 64 threads",
		  { .kernel = k, .threads = 32, .threads_y = 64, .groups = 1 },
		  -E2BIG,
		  "32 x 64 x 1 = 2048 over AGILE_RT_MAX_GROUP_THREADS" },
		{ "threads_z 65",
		  { .kernel = k, .threads = 1, .threads_z = 65, .groups = 1 },
		  -E2BIG,
		  "AGILE_RT_MAX_GROUP_Z" },
		{ "groups_y 65536",
		  { .kernel = k, .threads = 1, .groups = 1, .groups_y = 65536 },
		  -E2BIG,
		  "groups_y 65536 over AGILE_RT_MAX_GROUPS_YZ" },
		{ "groups_z 65536",
		  { .kernel = k, .threads = 1, .groups = 1, .groups_z = 65536 },
		  -E2BIG,
		  "groups_z 65536 over AGILE_RT_MAX_GROUPS_YZ" },
		{ "local_bytes over",
		  { .kernel = k,
		    .threads = 1,
		    .groups = 1,
		    .local_bytes = AGILE_RT_MAX_LOCAL + 1 },
		  -E2BIG,
		  "AGILE_RT_MAX_LOCAL" },
		{ "0 threads",
		  { .kernel = k, .threads = 0, .groups = 1 },
		  -EINVAL,
		  "threads is 0" },
		{ "0 groups",
		  { .kernel = k, .threads = 1, .groups = 0 },
		  -EINVAL,
		  "groups is 0" },
		{ "16 threads, max_lanes 8",
		  { .kernel = k8, .threads = 16, .groups = 1 },
		  -E2BIG,
		  "over kernel rt.eight's max_lanes (8)" },
		{ "128 threads GPU-only",
		  { .kernel = k,
		    .threads = 128,
		    .groups = 1,
		    .place = AGILE_RT_PLACE_GPU_ONLY },
		  -E2BIG,
		  "AGILE_MAX_LANES" },
		{ "reserved",
		  { .kernel = k, .threads = 1, .groups = 1, .reserved = 1 },
		  -EINVAL,
		  "reserved" },
		{ "an unknown argument kind",
		  { .kernel = k,
		    .threads = 1,
		    .groups = 1,
		    .nr_args = 1,
		    .args = &bad_kind },
		  -EINVAL,
		  "kind 7 unknown" },
	};
	struct agile_rt_arg none = rt_val(100); /* no lane 100: none fails */
	struct agile_rt_entry ok = { .kernel = k8,
				     .threads = 8,
				     .groups = 1,
				     .nr_args = 1,
				     .args = &none };
	struct agile_rt_stats before, after;
	struct agile_rt_event *ev;
	int err;

	agile_rt_stats(q, &before);
	for (size_t i = 0; i < sizeof(lim) / sizeof(lim[0]); i++) {
		const char *msg;

		ev = NULL;
		err = agile_rt_enqueue(q, &lim[i].e, &ev);
		msg = agile_rt_error_message();
		tap_ok(err == lim[i].err && !ev && strstr(msg, lim[i].names),
		       "%s: %s, \"%s\"", lim[i].what, agile_strerror(err), msg);
	}
	agile_rt_stats(q, &after);
	tap_ok(after.enqueued == before.enqueued,
	       "nothing refused was enqueued (%llu, %llu)",
	       (unsigned long long)before.enqueued,
	       (unsigned long long)after.enqueued);
	err = agile_rt_enqueue(q, &ok, &ev);
	tap_ok(!err && !agile_rt_error_message()[0],
	       "a good enqueue clears the message: %s", agile_strerror(err));
	if (!err)
		wait_release(ev);
}

int main(void)
{
	static const agile_phase_fn shape_p[] = { shape_phase };
	static const agile_phase_fn local_p[] = { local_put, local_get };
	static const agile_phase_fn fail_p[] = { fail_at };
	struct agile_rt_kernel *ks, *kl, *kf, *k8;
	struct agile_rt_buffer *buf;
	struct agile_rt_stats st0, st1;
	struct agile_rt_queue *q;
	agile_rt_ctx ctx;
	uint32_t *out;
	int err;

	err = rt_cpu_ctx(2, &ctx);
	if (!err)
		err = agile_rt_queue_create(ctx, NULL, &q);
	if (!err)
		err = agile_rt_buffer_create(ctx, 4 << 20, &buf);
	ks = err ? NULL : reg(ctx, "rt.shape", shape_p, 1, 0, 0);
	kl = err ? NULL : reg(ctx, "rt.local", local_p, 2, 100, 0);
	kf = err ? NULL : reg(ctx, "rt.wide-fail", fail_p, 1, 0, 0);
	k8 = err ? NULL : reg(ctx, "rt.eight", fail_p, 1, 0, 8);
	if (!tap_ok(!err && ks && kl && kf && k8,
		    "a CPU context of 2 EUs, a queue, 4 kernels: %s",
		    agile_strerror(err)))
		return tap_done();
	agile_rt_buffer_host(buf, (void **)&out, NULL);

	shape(q, ks, buf, out, (struct dim3){ 16, 16, 1 },
	      (struct dim3){ 3, 2, 1 });
	shape(q, ks, buf, out, (struct dim3){ 32, 8, 1 },
	      (struct dim3){ 2, 3, 2 });
	shape(q, ks, buf, out, (struct dim3){ 8, 4, 4 },
	      (struct dim3){ 2, 2, 3 });
	shape(q, ks, buf, out, (struct dim3){ 1024, 1, 1 },
	      (struct dim3){ 5, 1, 1 });
	shape(q, ks, buf, out, (struct dim3){ 4, 4, 64 },
	      (struct dim3){ 1, 1, 2 });
	shape(q, ks, buf, out, (struct dim3){ 1, 1, 1 },
	      (struct dim3){ 7, 5, 3 });
	shape(q, ks, buf, out, (struct dim3){ 7, 3, 1 },
	      (struct dim3){ 1, 700, 1 });

	local(q, kl, buf, out, 256, 40);
	local(q, kl, buf, out, 1024, 9);

	agile_rt_stats(q, &st0);
	shape(q, ks, buf, out, (struct dim3){ 1, 1, 1 },
	      (struct dim3){ 20000, 1, 1 });
	agile_rt_stats(q, &st1);
	tap_ok(st1.devices[0].groups - st0.devices[0].groups == 20000 &&
		       st1.devices[0].tasks - st0.devices[0].tasks == 20000,
	       "the device counts 20000 groups run (%llu) and tasks (%llu)",
	       (unsigned long long)(st1.devices[0].groups -
				    st0.devices[0].groups),
	       (unsigned long long)(st1.devices[0].tasks -
				    st0.devices[0].tasks));

	{
		struct agile_rt_arg a = rt_val(700);
		struct agile_rt_entry e = { .kernel = kf,
					    .threads = 1024,
					    .groups = 3,
					    .nr_args = 1,
					    .args = &a };
		struct agile_rt_event *ev;

		err = agile_rt_enqueue(q, &e, &ev);
		if (!err)
			err = wait_release(ev);
		tap_ok(err == -EDOM,
		       "lane 700 of 1024 fails: the entry fails with its "
		       "error: %s",
		       agile_strerror(err));
	}

	limits(q, ks, k8);

	agile_rt_queue_destroy(q);
	agile_rt_buffer_release(buf);
	agile_rt_ctx_release(ctx);
	return tap_done();
}
