// SPDX-License-Identifier: MIT
/*
 * rt-program-lanes - a program's CPU build runs each phase over a group's
 * lanes as one compiled loop (dialect 3's lanes functions), with the
 * same outcome lane by lane as the phase called once per lane:
 *
 *	failures  groups of 64 lanes where lanes fail in phases 0 and 1:
 *	          the first error (by phase, then lane) and its lane, the
 *	          lanes after a failed one in the same phase still run, a
 *	          failed lane runs no later phase; through the runtime's
 *	          queue and on a CPU EU (which reports the lane)
 *	barriers  three phases passing values between lanes through
 *	          block-shared memory (lane l reads what lane n - 1 - l wrote
 *	          in the phase before): every write lands before the next
 *	          phase's reads
 *	local id  agile_rt_local_id of every lane of a 4 x 3 x 2 group
 *
 * Skipped without cc or in the static build.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "rttest.h"
#include "compiletest.h"
#include "kernels/kernels_impl.h"

#define LANES 64
#define GROUPS 2
#define NR_PHASES 3

/*
 * lanes_fail: in phase p, lane l of group g sets ran[p][g * 64 + l];
 * lanes 5 (-ERANGE) and 9 (-EDOM) fail phase 0, lane 20 (-EIO) phase 1.
 * Arguments: ran, the group, all the lanes of the entry.
 * lanes_mirror: phase 0 a[l] = 7 l + 1 + 1000 g; phase 1 b[l] = 3 a[n - 1
 * - l]; phase 2 out[g * n + l] = b[n - 1 - l] + 1, in block-shared
 * memory.  Arguments: out, the group.
 * lanes_local: out[l] = agile_rt_local_id(l, size) as x | y << 8 | z << 16.
 * Arguments: out, the group's size (AGILE_RT_ARG_GROUP_SIZE).
 */
static const char lanes_source[] =
	"static AGILE_LANE_FN inline void mark(uint32_t phase, uint32_t lane,\n"
	"\tuint32_t nr_lanes, const agile_u64 *args)\n"
	"{\n"
	"\tuint32_t *ran = (uint32_t *)(uintptr_t)args[0];\n"
	"\n"
	"\tran[phase * args[2] + args[1] * nr_lanes + lane] = 1;\n"
	"}\n"
	"AGILE_PHASE(fail_p0)\n"
	"{\n"
	"\tmark(0, lane, nr_lanes, args);\n"
	"\tif (lane == 5)\n"
	"\t\treturn -ERANGE;\n"
	"\treturn lane == 9 ? -EDOM : 0;\n"
	"}\n"
	"AGILE_PHASE(fail_p1)\n"
	"{\n"
	"\tmark(1, lane, nr_lanes, args);\n"
	"\treturn lane == 20 ? -EIO : 0;\n"
	"}\n"
	"AGILE_PHASE(fail_p2)\n"
	"{\n"
	"\tmark(2, lane, nr_lanes, args);\n"
	"\treturn 0;\n"
	"}\n"
	"struct mirror { uint32_t a[64], b[64]; };\n"
	"AGILE_PHASE(mirror_p0)\n"
	"{\n"
	"\tstruct mirror *m = (struct mirror *)shared;\n"
	"\n"
	"\tm->a[lane] = 7 * lane + 1 + 1000 * (uint32_t)args[1];\n"
	"\treturn 0;\n"
	"}\n"
	"AGILE_PHASE(mirror_p1)\n"
	"{\n"
	"\tstruct mirror *m = (struct mirror *)shared;\n"
	"\n"
	"\tm->b[lane] = 3 * m->a[nr_lanes - 1 - lane];\n"
	"\treturn 0;\n"
	"}\n"
	"AGILE_PHASE(mirror_p2)\n"
	"{\n"
	"\tconst struct mirror *m = (const struct mirror *)shared;\n"
	"\tuint32_t *out = (uint32_t *)(uintptr_t)args[0];\n"
	"\n"
	"\tout[args[1] * nr_lanes + lane] = m->b[nr_lanes - 1 - lane] + 1;\n"
	"\treturn 0;\n"
	"}\n"
	"AGILE_PHASE(local_p0)\n"
	"{\n"
	"\tuint32_t *out = (uint32_t *)(uintptr_t)args[0];\n"
	"\tstruct agile_rt_dim3 id = agile_rt_local_id(lane, args[1]);\n"
	"\n"
	"\tout[lane] = id.x | id.y << 8 | id.z << 16;\n"
	"\treturn 0;\n"
	"}\n"
	"#define AGILE_USER_KERNELS(K) \\\n"
	"\tK(lanes_fail, struct agile_no_state, 64, fail_p0, fail_p1, \\\n"
	"\t  fail_p2) \\\n"
	"\tK(lanes_mirror, struct agile_no_state, 64, mirror_p0, \\\n"
	"\t  mirror_p1, mirror_p2) \\\n"
	"\tK(lanes_local, struct agile_no_state, 0, local_p0)\n"
	"#define AGILE_USER_EXTRAS(X) \\\n"
	"\tX(lanes_mirror, struct mirror, AGILE_IN_ORDER)\n";

/*
 * What lanes_fail's lanes ran, in @groups groups: 0, or -EDOM with the
 * first wrong entry in @why.
 */
static int check_ran(const uint32_t *ran, uint32_t groups, char *why,
		     size_t len)
{
	uint32_t all = groups * LANES;

	for (uint32_t p = 0; p < NR_PHASES; p++) {
		for (uint32_t i = 0; i < all; i++) {
			uint32_t lane = i % LANES;
			/* Failed in phase 0: 5, 9; in phase 1: 20. */
			int want = p == 0 || (lane != 5 && lane != 9 &&
					      (p == 1 || lane != 20));

			if ((int)ran[p * all + i] != want) {
				snprintf(why, len,
					 "phase %u, group %u, lane %u %s", p,
					 i / LANES, lane,
					 want ? "did not run" : "ran");
				return -EDOM;
			}
		}
	}
	return 0;
}

static uint32_t mirror_expect(uint32_t group, uint32_t lane)
{
	return 3 * (7 * lane + 1 + 1000 * group) + 1;
}

/* Both kernels through the queue of a fresh CPU context (two EUs). */
static void test_queue(void)
{
	struct agile_rt_arg group = { .kind = AGILE_RT_ARG_GROUP };
	struct agile_rt_build_info info = { 0 };
	struct agile_rt_program *prog = NULL;
	struct agile_rt_kernel *fail, *mirror, *local;
	struct agile_rt_buffer *ran_b = NULL, *out_b = NULL;
	struct agile_rt_queue *q = NULL;
	struct agile_rt_event *ev;
	uint32_t *ran, *out;
	agile_rt_ctx ctx = 0;
	char why[128] = "";
	int err, st, wrong = 0;

	err = rt_cpu_ctx(2, &ctx);
	if (!err)
		err = agile_rt_program_create(ctx, lanes_source, NULL, 0,
					      &prog);
	if (!err) {
		err = agile_rt_program_build(prog, NULL);
		agile_rt_program_build_info(prog, 0, &info);
	}
	if (!tap_ok(!err && info.branch == AGILE_RT_BUILD_COMPILED,
		    "the source built by cc: %s, branch %u",
		    agile_strerror(err), info.branch))
		goto out;
	err = agile_rt_program_kernel(prog, "lanes_fail", &fail);
	if (!err)
		err = agile_rt_program_kernel(prog, "lanes_mirror", &mirror);
	if (!err)
		err = agile_rt_program_kernel(prog, "lanes_local", &local);
	if (!err)
		err = agile_rt_queue_create(ctx, NULL, &q);
	if (!err)
		err = agile_rt_buffer_create(
			ctx, NR_PHASES * GROUPS * LANES * sizeof(uint32_t),
			&ran_b);
	if (!err)
		err = agile_rt_buffer_create(
			ctx, GROUPS * LANES * sizeof(uint32_t), &out_b);
	if (!tap_ok_call(err, "kernels, a queue, buffers"))
		goto out;
	agile_rt_buffer_host(ran_b, (void **)&ran, NULL);
	agile_rt_buffer_host(out_b, (void **)&out, NULL);
	memset(ran, 0, NR_PHASES * GROUPS * LANES * sizeof(uint32_t));

	err = agile_rt_enqueue(
		q,
		&(struct agile_rt_entry){
			.kernel = fail,
			.threads = LANES,
			.groups = GROUPS,
			.nr_args = 3,
			.args =
				(struct agile_rt_arg[]){
					rt_buf(ran_b,
					       AGILE_RT_READ | AGILE_RT_WRITE),
					group, rt_val(GROUPS * LANES) } },
		&ev);
	st = err ? err : agile_rt_event_wait(ev, RT_WAIT_NS);
	if (!err)
		agile_rt_event_release(ev);
	tap_ok(st == -ERANGE,
	       "lanes_fail, %d groups of %d lanes: the first error, lane 5's "
	       "-ERANGE before lane 9's -EDOM (%s)",
	       GROUPS, LANES, agile_strerror(st));
	err = check_ran(ran, GROUPS, why, sizeof(why));
	tap_ok(!err,
	       "the lanes after a failed one still ran its phase; failed lanes "
	       "ran no later phase%s%s",
	       err ? ": " : "", why);

	memset(out, 0, GROUPS * LANES * sizeof(uint32_t));
	err = agile_rt_enqueue(
		q,
		&(struct agile_rt_entry){
			.kernel = mirror,
			.threads = LANES,
			.groups = GROUPS,
			.nr_args = 2,
			.args = (struct agile_rt_arg[]){ rt_buf(out_b,
								AGILE_RT_WRITE),
							 group } },
		&ev);
	st = err ? err : agile_rt_event_wait(ev, RT_WAIT_NS);
	if (!err)
		agile_rt_event_release(ev);
	for (uint32_t i = 0; i < GROUPS * LANES; i++)
		wrong += out[i] != mirror_expect(i / LANES, i % LANES);
	tap_ok(!st && !wrong,
	       "lanes_mirror: lane l reads what lane %d - l wrote a phase "
	       "before, 3 phases, %d groups (%s, %d wrong)",
	       LANES - 1, GROUPS, agile_strerror(st), wrong);

	memset(out, 0xff, 24 * sizeof(uint32_t));
	err = agile_rt_enqueue(
		q,
		&(struct agile_rt_entry){
			.kernel = local,
			.threads = 4,
			.threads_y = 3,
			.threads_z = 2,
			.groups = 1,
			.nr_args = 2,
			.args =
				(struct agile_rt_arg[]){
					rt_buf(out_b, AGILE_RT_WRITE),
					{ .kind = AGILE_RT_ARG_GROUP_SIZE } } },
		&ev);
	st = err ? err : agile_rt_event_wait(ev, RT_WAIT_NS);
	if (!err)
		agile_rt_event_release(ev);
	wrong = 0;
	for (uint32_t l = 0; l < 24; l++)
		wrong += out[l] != (l % 4 | l / 4 % 3 << 8 | l / 12 << 16);
	tap_ok(!st && !wrong,
	       "agile_rt_local_id: x, y, z of each lane of a 4 x 3 x 2 group "
	       "(%s, %d wrong)",
	       agile_strerror(st), wrong);
out:
	if (ran_b)
		agile_rt_buffer_release(ran_b);
	if (out_b)
		agile_rt_buffer_release(out_b);
	if (q)
		agile_rt_queue_destroy(q);
	if (prog)
		agile_rt_program_release(prog);
	if (ctx)
		agile_rt_ctx_release(ctx);
}

/*
 * The CPU build loaded into a registry by hand: every phase has its lanes
 * function, and a CPU EU reports the first failed lane.
 */
static void test_eu(void)
{
	struct agile__rt_build b = { .target = AGILE_RT_CPU };
	struct agile__rt_diag diag = { 0 };
	struct agile__rt_image *img = NULL;
	struct agile__rt_module *mod = NULL;
	struct agile_eu_pool_opts po;
	struct agile_eu_pool *pool;
	struct agile_kernels *reg;
	struct agile_dev_opts o;
	struct agile_dev *dev;
	const struct agile_kernel *k;
	const agile__lanes_fn *lanes;
	uint32_t ran[NR_PHASES * LANES] = { 0 }, lane = 0;
	char why[128] = "";
	int err, nr_lanes_fns = 0;

	err = agile__rt_compile(lanes_source, &b, &img, &diag);
	if (!tap_ok(!err, "compiled for a registry: %s %s", agile_strerror(err),
		    diag.message)) {
		agile__rt_diag_clear(&diag);
		return;
	}
	agile_kernels_create(&reg);
	err = agile__rt_cpu_load(img, reg, &mod, &diag);
	if (!tap_ok(!err, "loaded: %s %s", agile_strerror(err), diag.message))
		goto out;
	for (uint32_t i = 0; i < 3; i++) {
		if (agile_kernels_find(reg, agile__rt_module_name(mod, i), &k))
			continue;
		lanes = agile__kernels_lanes(k);
		for (uint32_t p = 0; lanes && p < k->nr_phases; p++)
			nr_lanes_fns += lanes[p] != NULL;
	}
	tap_ok(nr_lanes_fns == 2 * NR_PHASES + 1,
	       "registered with a lanes function per phase (%d of %d)",
	       nr_lanes_fns, 2 * NR_PHASES + 1);

	agile_dev_opts_init(&o);
	o.nr_slots = 1;
	err = agile_dev_open(&o, &dev);
	if (!tap_ok_call(err, "open a context"))
		goto out;
	agile_eu_pool_opts_init(&po);
	err = agile_eu_pool_create(dev, reg, &po, &pool);
	if (!tap_ok_call(err, "CPU EUs")) {
		agile_dev_close(dev);
		goto out;
	}
	err = eu_task(pool, 0, agile__rt_module_opcode(mod, 0), LANES,
		      (__u64[]){ (uintptr_t)ran, 0, LANES }, 3, &lane);
	tap_ok(err == -ERANGE && lane == 5,
	       "lanes_fail on a CPU EU: lane %u, %s (want lane 5, -ERANGE)",
	       lane, agile_strerror(err));
	err = check_ran(ran, 1, why, sizeof(why));
	tap_ok(!err, "on a CPU EU, the same lanes ran%s%s", err ? ": " : "",
	       why);
	tap_ok(!agile_eu_pool_destroy(pool) && !agile_dev_close(dev),
	       "pool and context gone");
out:
	agile_kernels_destroy(reg);
	agile__rt_module_unload(mod);
	agile__rt_image_free(img);
	agile__rt_diag_clear(&diag);
}

int main(void)
{
	struct agile__rt_diag diag = { 0 };
	char id[256];

#ifdef AGILE_NO_DLOPEN
	tap_skip("lanes loops", "a static build loads no compiled code");
	return tap_done();
#endif
	unsetenv("AGILE_CC");
	if (agile__rt_compiler_id(AGILE_RT_CPU, id, sizeof(id), &diag)) {
		tap_skip("lanes loops", "%s", diag.message);
		return tap_done();
	}
	if (!tap_ok_call(cache_fresh(), "a fresh cache folder"))
		return tap_done();
	test_queue();
	test_eu();
	cache_remove();
	return tap_done();
}
