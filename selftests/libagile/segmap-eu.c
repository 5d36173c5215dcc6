// SPDX-License-Identifier: MIT
/*
 * segmap-eu - agile_forall_eu: seed 000's example (segmap-seed-example's
 * layout at 96x96 doubles: 16x16 algorithmic blocks, memory blocks of 2
 * block rows x 1 block column, nine 2x2-block segments on 4 nodes, row
 * block-cyclic) with the nodes as groups of 2 CPU EUs each.  C = A + B^T
 * by a registered kernel, one EU task per algorithmic tile, posted by the
 * workers of a sched pool (and by the caller without one): C equals the
 * plain reference, B moves 8 memory blocks as in the accessor forall
 * (through the transposed view, and through B with swapped tile
 * coordinates), a second run moves nothing, every EU ran tasks, a lane's
 * error and an unregistered opcode come back.
 *
 * GPU EUs: A += D by the built-in axpy (a tile is contiguous here), D
 * spread by another map so that its blocks move, the copies mapped for
 * the forall only; and the example kernel, which GPU EUs lack, refused
 * with -AGILE_E_OPCODE.  On a usable GPU in this process; without one in
 * a child whose runtime is the stand-in of gpu-mock.c (HIP), with a code
 * object of the right kind written for it (the stand-in runs the
 * built-in kernels' bodies on CPU threads, not the code object).
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/gpu.h>
#include <agile/kernels.h>
#include <agile/sched.h>
#include <agile/segmap.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#ifndef AGILE_NO_DLOPEN
#include <dlfcn.h>
#endif

#include "eu/gpu_impl.h"
#include "tap.h"
#include "segmaptest.h"

#define N 96 /* elements per side */
#define BLK 16 /* per algorithmic block */
#define NR_NODES 4
#define NR_EUS 8
#define NR_TILES ((N / BLK) * (N / BLK))

/* ---- the example kernel: c = a + b over a tile with strides ---- */

/*
 * args (agile_forall_eu's default layout, rank 2, three fields): n0, n1,
 * then base, stride 0, stride 1 of c, a and b.  Lanes cut the tile's
 * rows (axis 1) into blocks.  A NaN in a fails the lane with -EDOM.
 */
static inline AGILE_LANE_FN int tile_add(uint32_t lane, uint32_t nr_lanes,
					 const __u64 *args, void *state,
					 void *shared)
{
	uint64_t n0 = args[0], n1 = args[1];
	double *c = (double *)(uintptr_t)args[2];
	const double *a = (const double *)(uintptr_t)args[5];
	const double *b = (const double *)(uintptr_t)args[8];
	int64_t cs0 = (int64_t)args[3], cs1 = (int64_t)args[4];
	int64_t as0 = (int64_t)args[6], as1 = (int64_t)args[7];
	int64_t bs0 = (int64_t)args[9], bs1 = (int64_t)args[10];
	uint64_t lo = n1 * lane / nr_lanes, hi = n1 * (lane + 1) / nr_lanes;

	(void)state;
	(void)shared;
	for (uint64_t y = lo; y < hi; y++)
		for (uint64_t x = 0; x < n0; x++) {
			double av = a[(int64_t)x * as0 + (int64_t)y * as1];

			if (av != av)
				return -EDOM;
			c[(int64_t)x * cs0 + (int64_t)y * cs1] =
				av + b[(int64_t)x * bs0 + (int64_t)y * bs1];
		}
	return 0;
}

static const agile_phase_fn tile_add_phases[] = { tile_add };

static const struct agile_kernel tile_add_kernel = {
	.name = "segmap-eu.add",
	.nr_phases = 1,
	.phases = tile_add_phases,
};

/* ---- the example ---- */

static double value_a(int64_t x, int64_t y)
{
	return (double)((x * 7 + y * 3) % 1000);
}

static double value_b(int64_t x, int64_t y)
{
	return (double)((x * 5 + y * 11) % 997);
}

struct example {
	struct agile_segmap *sm;
	struct agile_rmap *rm;
	struct agile_field *a, *b, *bt, *c;
};

static int fill_kernel(struct agile_forall_ctx *ctx, void *arg)
{
	const struct agile_grid *g = &ctx->grid;

	(void)arg;
	for (uint64_t y = 0; y < g->extent.n[1]; y++)
		for (uint64_t x = 0; x < g->extent.n[0]; x++) {
			int64_t i[2] = { g->offset.i[0] + (int64_t)x,
					 g->offset.i[1] + (int64_t)y };
			double va = value_a(i[0], i[1]),
			       vb = value_b(i[0], i[1]);
			int err = agile_acc_write(&ctx->acc[0], i, &va);

			if (!err)
				err = agile_acc_write(&ctx->acc[1], i, &vb);
			if (err)
				return err;
		}
	return 0;
}

static int setup(struct example *ex, struct agile_eu_pool *eus,
		 struct agile_sched *pool)
{
	struct agile_grid parent = grid2(0, 0, N, N);
	struct agile_extent seg = ext2(2 * BLK, 2 * BLK);
	struct agile_proto p = proto(AGILE_PROTO_CYCLIC, NR_NODES);
	struct agile_levels lv = { .tile = ext2(BLK, BLK),
				   .block = ext2(BLK, 2 * BLK) };
	struct agile_forall_field fill[2];
	int err;

	memset(ex, 0, sizeof(*ex));
	err = agile_segmap_eus(eus, NR_NODES, pool, &ex->sm);
	if (!err)
		err = agile_rmap_tiles(&parent, &seg, &p, &ex->rm);
	if (!err)
		err = agile_field_create(ex->sm, ex->rm, &lv, sizeof(double),
					 &ex->a);
	if (!err)
		err = agile_field_create(ex->sm, ex->rm, &lv, sizeof(double),
					 &ex->b);
	if (!err)
		err = agile_field_create(ex->sm, ex->rm, &lv, sizeof(double),
					 &ex->c);
	if (!err)
		err = agile_field_transpose(ex->b, 0, 1, &ex->bt);
	if (err) {
		tap_diag("set-up: %s", agile_segmap_why());
		return err;
	}
	/* the callback forall on a map of EU groups, as on any other */
	fill[0] = (struct agile_forall_field){ ex->a, AGILE_ACC_WRITE };
	fill[1] = (struct agile_forall_field){ ex->b, AGILE_ACC_WRITE };
	return agile_forall(ex->sm, ex->a, fill_kernel, NULL, fill, 2, 0, NULL);
}

static void teardown(struct example *ex)
{
	agile_field_destroy(ex->bt);
	agile_field_destroy(ex->a);
	agile_field_destroy(ex->b);
	agile_field_destroy(ex->c);
	agile_rmap_destroy(ex->rm);
	tap_ok(agile_segmap_destroy(ex->sm) == 0, "segment map destroyed");
}

static bool c_is_sum(struct example *ex)
{
	static double c[N * N];
	uint64_t bad = 0;

	if (agile_field_gather(ex->c, c, sizeof(c)))
		return false;
	for (int64_t y = 0; y < N; y++)
		for (int64_t x = 0; x < N; x++)
			bad += c[y * N + x] != value_a(x, y) + value_b(y, x);
	if (bad)
		tap_diag("%llu elements of C wrong", (unsigned long long)bad);
	return bad == 0;
}

static uint64_t moves(struct agile_field *f)
{
	struct agile_field_stats st;

	agile_field_stats(f, AGILE_SEGMAP_ALL_NODES, &st);
	return st.moves;
}

static uint64_t eu_tasks(struct agile_eu_pool *eus, uint32_t eu)
{
	struct agile_eu_stats st;

	return agile_eu_stats(eus, eu, &st) ? 0 : st.tasks;
}

static void test_cpu(struct agile_eu_pool *eus, struct agile_sched *pool,
		     uint32_t op)
{
	const char *on = pool ? "pool" : "caller";
	struct agile_forall_field add[3];
	const uint32_t swap_b[3] = { AGILE_EU_TILE_SAME, AGILE_EU_TILE_SAME,
				     AGILE_EU_TILE_SWAP };
	struct agile_forall_eu_opts o = { .opcode = op, .nr_lanes = 4 };
	struct agile_forall_stats fs = { 0 };
	uint64_t before[NR_EUS];
	struct example ex;
	uint32_t first = 99, count = 99;
	bool all_ran = true;
	double nan_value = NAN, keep;
	int err;

	if (!tap_ok_call(setup(&ex, eus, pool), "set-up: A and B filled"))
		return;
	tap_ok(agile_segmap_kind(ex.sm) == AGILE_NODE_CPU &&
		       !agile_segmap_node_eus(ex.sm, 1, &first, &count) &&
		       first == 2 && count == 2,
	       "%s: CPU nodes; node 1 owns EUs 2, 3", on);
	for (uint32_t e = 0; e < NR_EUS; e++)
		before[e] = eu_tasks(eus, e);

	add[0] = (struct agile_forall_field){ ex.c, AGILE_ACC_WRITE };
	add[1] = (struct agile_forall_field){ ex.a, AGILE_ACC_READ };
	add[2] = (struct agile_forall_field){ ex.bt, AGILE_ACC_READ };
	err = agile_forall_eu(ex.sm, ex.c, &o, add, 3, &fs);
	tap_ok(!err && fs.calls == NR_TILES && c_is_sum(&ex),
	       "%s: C = A + B^T on EUs, %llu tasks (want %d): %s", on,
	       (unsigned long long)fs.calls, NR_TILES, agile_strerror(err));
	tap_ok(moves(ex.b) == 8 && moves(ex.a) == 0 && moves(ex.c) == 0,
	       "%s: B moved 8 memory blocks (%llu), A and C none", on,
	       (unsigned long long)moves(ex.b));
	for (uint32_t e = 0; e < NR_EUS; e++)
		all_ran &= eu_tasks(eus, e) > before[e];
	tap_ok(all_ran, "%s: every one of the 8 EUs ran tasks", on);

	err = agile_forall_eu(ex.sm, ex.c, &o, add, 3, NULL);
	tap_ok(!err && moves(ex.b) == 8 && c_is_sum(&ex),
	       "%s: again: B's copies are held, nothing moves (%llu)", on,
	       (unsigned long long)moves(ex.b));

	/* B itself, its tile (j, i) for C's (i, j): the same blocks move */
	agile_field_drop_copies(ex.b);
	agile_field_stats_reset(ex.b);
	add[2].field = ex.b;
	o.tile_map = swap_b;
	o.nr_lanes = 3;
	err = agile_forall_eu(ex.sm, ex.c, &o, add, 3, NULL);
	tap_ok(!err && moves(ex.b) == 8 && c_is_sum(&ex),
	       "%s: B by swapped tile coordinates: C right, 8 moves (%llu): %s",
	       on, (unsigned long long)moves(ex.b), agile_strerror(err));
	o.tile_map = NULL;
	add[2].field = ex.bt;

	/* one NaN in A: its lane fails, forall says so */
	agile_field_get(ex.a,
			&(struct agile_index){ .rank = 2, .i = { 40, 70 } },
			&keep);
	agile_field_put(ex.a,
			&(struct agile_index){ .rank = 2, .i = { 40, 70 } },
			&nan_value);
	err = agile_forall_eu(ex.sm, ex.c, &o, add, 3, NULL);
	tap_ok(err == -EDOM, "%s: a lane's error comes back: %s", on,
	       agile_strerror(err));
	agile_field_put(ex.a,
			&(struct agile_index){ .rank = 2, .i = { 40, 70 } },
			&keep);

	for (uint32_t e = 0; e < NR_EUS; e++)
		before[e] = eu_tasks(eus, e);
	o.opcode = AGILE_OP_USER_BASE + AGILE_KERNELS_MAX - 1;
	err = agile_forall_eu(ex.sm, ex.c, &o, add, 3, NULL);
	tap_ok(err == -AGILE_E_OPCODE && eu_tasks(eus, 0) == before[0] &&
		       strstr(agile_segmap_why(), "opcode"),
	       "%s: an unregistered opcode: %s, nothing posted", on,
	       agile_strerror(err));
	o.opcode = op;

	{
		struct agile_forall_field four[4] = { add[0], add[1], add[2],
						      add[1] };

		err = agile_forall_eu(ex.sm, ex.c, &o, four, 4, NULL);
		tap_ok(err == -E2BIG,
		       "%s: 4 fields do not fit a 128-byte register: %s", on,
		       agile_strerror(err));
	}
	err = agile_forall_eu(ex.sm, ex.bt, &o, add, 3, NULL);
	failed_with(err, -EINVAL, "transposed", "iterating a transposed view");
	err = agile_forall_eu(ex.sm, ex.c, &o, add, 3, NULL);
	tap_ok(!err && c_is_sum(&ex), "%s: after the failures, right again",
	       on);
	teardown(&ex);
}

/* agile_eu_pool_alloc on CPU EUs: pages, first fit, reuse, refusals. */
static void test_arena(struct agile_eu_pool *eus)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *p[4] = { NULL };
	uint64_t eu = 0;
	void *v;
	int err;

	err = agile_eu_pool_alloc(eus, (size_t)page + 1, &v, &eu);
	p[0] = v;
	if (!tap_ok(!err && p[0] && eu == (uint64_t)(uintptr_t)p[0] &&
			    (uintptr_t)p[0] % (uintptr_t)page == 0 &&
			    !p[0][0] && !p[0][page],
		    "arena: 2 zeroed pages, at their own address on CPU EUs: %s",
		    agile_strerror(err)))
		return;
	memset(p[0], 0xa5, 2 * (size_t)page);
	agile_eu_pool_alloc(eus, 1, &v, &eu);
	p[1] = v;
	tap_ok(p[1] == p[0] + 2 * page, "arena: the next page follows");
	tap_ok(agile_eu_pool_free(eus, p[0]) == 0 &&
		       agile_eu_pool_free(eus, p[0]) == -EINVAL &&
		       agile_eu_pool_free(eus, p[1] + 1) == -EINVAL &&
		       agile_eu_pool_free(eus, &eu) == -EINVAL &&
		       agile_eu_pool_free(eus, NULL) == 0,
	       "arena: a double free, an inner or foreign pointer: -EINVAL");
	agile_eu_pool_alloc(eus, 1, &v, &eu);
	p[2] = v;
	tap_ok(p[2] == p[0] && !p[2][0], "arena: a freed page, zeroed again");
	/* p[0]'s second page and p[1] join p[2]'s neighbours when freed */
	agile_eu_pool_free(eus, p[1]);
	agile_eu_pool_alloc(eus, 3 * (size_t)page, &v, &eu);
	p[3] = v;
	tap_ok(p[3] == p[2] + page, "arena: free pages coalesce (%td)",
	       p[3] ? (p[3] - p[2]) / page : -1);
	agile_eu_pool_free(eus, p[2]);
	agile_eu_pool_free(eus, p[3]);
	tap_ok(agile_eu_pool_alloc(eus, 0, &v, &eu) == -EINVAL &&
		       agile_eu_pool_alloc(NULL, 1, &v, &eu) == -EINVAL &&
		       agile_eu_pool_free(NULL, NULL) == -EINVAL,
	       "arena: 0 bytes, NULL pool: -EINVAL");
}

static void test_maps(struct agile_eu_pool *eus)
{
	struct agile_segmap *sm;
	uint32_t first, count;
	int err;

	err = agile_segmap_eus(eus, NR_EUS + 1, NULL, &sm);
	failed_with(err, -EINVAL, "one EU each", "9 nodes on 8 EUs");
	err = agile_segmap_eus(eus, 0, NULL, &sm);
	failed_with(err, -EINVAL, "nodes", "0 nodes");
	tap_ok(agile_segmap_eus(NULL, 1, NULL, &sm) == -EINVAL,
	       "no EU pool: -EINVAL");
	if (!tap_ok_call(agile_segmap_eus(eus, 3, NULL, &sm), "3 nodes"))
		return;
	tap_ok(!agile_segmap_node_eus(sm, 0, &first, &count) && first == 0 &&
		       count == 3 &&
		       !agile_segmap_node_eus(sm, 2, &first, &count) &&
		       first == 6 && count == 2,
	       "8 EUs on 3 nodes: 3, 3, 2 (as offload.h splits them)");
	tap_ok(agile_segmap_node_eus(sm, 3, &first, &count) == -EINVAL,
	       "node 3 of 3: -EINVAL");
	agile_segmap_destroy(sm);
	if (!agile_segmap_threads(2, NULL, &sm)) {
		struct agile_forall_eu_opts o = { 0 };

		failed_with(agile_segmap_node_eus(sm, 0, NULL, NULL), -EINVAL,
			    "agile_segmap_eus", "EUs of a threads map");
		failed_with(agile_forall_eu(sm, NULL, &o, NULL, 0, NULL),
			    -EINVAL, "NULL", "forall eu, no field");
		agile_segmap_destroy(sm);
	}
}

static int open_dev(struct agile_dev **dev)
{
	struct agile_dev_opts o;

	agile_dev_opts_init(&o);
	o.nr_slots = NR_EUS;
	o.task_reg_size = 128;
	return agile_dev_open(&o, dev);
}

static int make_pool(struct agile_dev *dev, struct agile_kernels *reg,
		     uint32_t flags, struct agile_eu_pool **eus)
{
	struct agile_eu_pool_opts o;

	agile_eu_pool_opts_init(&o);
	o.nr_eus = NR_EUS;
	o.flags = flags;
	/*
	 * The stand-in GPU holds 8 work-groups at once: 8 EUs are all of it,
	 * past the default share (a cap; a real GPU has room to spare).
	 */
	if (flags)
		o.gpu_share = 100;
	return agile_eu_pool_create(dev, reg, &o, eus);
}

/* ---- GPU EUs ---- */

static uint64_t double_bits(double d)
{
	uint64_t bits;

	memcpy(&bits, &d, sizeof(bits));
	return bits;
}

typedef int (*registered_fn)(void);
static int registered(void);
/* the most registrations the encoder saw: the copies are mapped by then */
static int regs_seen;

/* axpy's args (a, x, y, n) for y = A's tile, x = D's: contiguous tiles */
static int encode_axpy(const struct agile_forall_eu_task *task, uint64_t *args,
		       uint32_t nr_args, void *arg)
{
	uint64_t n = task->grid.extent.n[0] * task->grid.extent.n[1];

	(void)arg;
	if (registered() > regs_seen)
		regs_seen = registered();
	for (uint32_t k = 0; k < 2; k++)
		if (task->field[k].stride[0] != 1 ||
		    task->field[k].stride[1] != (int64_t)task->grid.extent.n[0])
			return -EINVAL;
	if (nr_args < 4)
		return -E2BIG;
	args[0] = double_bits(1.0);
	args[1] = task->field[1].base;
	args[2] = task->field[0].base;
	args[3] = n;
	return 0;
}

/* The stand-in runtime's registrations still in place, -1 if none. */
static int registered(void)
{
#ifndef AGILE_NO_DLOPEN
	static const char *const libs[] = { "libamdhip64.so.5",
					    "libcuda.so.1" };

	for (unsigned int i = 0; i < 2; i++) {
		void *lib = dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD);
		registered_fn fn =
			lib ? (registered_fn)dlsym(lib, "mock_registered") :
			      NULL;

		if (fn)
			return fn();
	}
#endif
	return -1;
}

static void test_gpu(struct agile_dev *dev, struct agile_kernels *reg,
		     uint32_t add_op)
{
	struct agile_grid parent = grid2(0, 0, N, N);
	struct agile_extent seg = ext2(2 * BLK, 2 * BLK);
	struct agile_proto cyc = proto(AGILE_PROTO_CYCLIC, NR_NODES);
	struct agile_proto blk = proto(AGILE_PROTO_BLOCK, NR_NODES);
	struct agile_levels lv = { .tile = ext2(BLK, BLK),
				   .block = ext2(BLK, 2 * BLK) };
	const struct agile_kernel *axpy;
	struct agile_eu_pool_info info;
	struct agile_forall_eu_opts o = { 0 };
	struct agile_forall_field f[3];
	struct agile_rmap *rm_a = NULL, *rm_d = NULL;
	struct agile_field *a = NULL, *d = NULL, *c = NULL, *e;
	struct agile_eu_pool *eus;
	struct agile_segmap *sm = NULL;
	static double got[N * N], want[N * N];
	int err, regs0, regs_homes, regs_after = -1, bad = 0, k;

	setenv("AGILE_QUIET", "1", 1);
	err = make_pool(dev, reg, AGILE_EU_POOL_GPU_ONLY, &eus);
	unsetenv("AGILE_QUIET");
	if (!tap_ok(!err, "GPU EUs: %s", agile_strerror(err)))
		return;
	agile_eu_pool_info(eus, &info);
	regs0 = registered();
	err = agile_segmap_eus(eus, NR_NODES, NULL, &sm);
	if (!err)
		err = agile_rmap_tiles(&parent, &seg, &cyc, &rm_a);
	if (!err)
		err = agile_rmap_tiles(&parent, &seg, &blk, &rm_d);
	if (!err)
		err = agile_field_create(sm, rm_a, &lv, sizeof(double), &a);
	if (!err)
		err = agile_field_create(sm, rm_d, &lv, sizeof(double), &d);
	if (!err)
		err = agile_field_create(sm, rm_a, &lv, sizeof(double), &c);
	if (!tap_ok(!err && info.kind == AGILE_EU_KIND_GPU &&
			    agile_segmap_kind(sm) == AGILE_NODE_GPU,
		    "GPU nodes, fields on them: %s %s", agile_strerror(err),
		    agile_segmap_why()))
		goto out;
	for (int64_t y = 0; y < N; y++)
		for (int64_t x = 0; x < N; x++) {
			struct agile_index i = idx2(x, y);
			double va = value_a(x, y), vd = value_b(x, y);

			err |= agile_field_put(a, &i, &va);
			err |= agile_field_put(d, &i, &vd);
		}
	regs_homes = registered();
	tap_ok(regs0 < 0 || (regs_homes > regs0 &&
			     regs_homes < regs0 + 3 * NR_NODES),
	       "the %d homes come from the pool's arena: %d registrations, %d before",
	       3 * NR_NODES, regs_homes, regs0);

	agile_kernels_find(reg, AGILE_KERNEL_AXPY, &axpy);
	o.opcode = axpy->opcode;
	o.nr_lanes = AGILE_MAX_LANES;
	o.encode = encode_axpy;
	f[0] = (struct agile_forall_field){ a, AGILE_ACC_RW };
	f[1] = (struct agile_forall_field){ d, AGILE_ACC_READ };
	err = agile_forall_eu(sm, a, &o, f, 2, NULL);
	regs_after = registered();
	if (!err)
		err = agile_field_gather(a, got, sizeof(got));
	for (int64_t y = 0; y < N && !err; y++)
		for (int64_t x = 0; x < N; x++)
			bad += got[y * N + x] != value_a(x, y) + value_b(x, y);
	tap_ok(!err && !bad && moves(d) > 0,
	       "A += D by the built-in axpy on GPU EUs: %d wrong, %llu of D's blocks moved: %s",
	       bad, (unsigned long long)moves(d), agile_strerror(err));
	tap_ok(regs0 < 0 ||
		       (regs_seen >= regs_homes && regs_after == regs_seen),
	       "D's copies' mirrors come from the arena too (%d registrations during the forall, %d after)",
	       regs_seen, regs_after);

	/* 49 more: every forall takes mirrors and gives them back */
	for (k = 1; k < 50 && !err; k++)
		err = agile_forall_eu(sm, a, &o, f, 2, NULL);
	if (!err)
		err = agile_field_gather(a, got, sizeof(got));
	bad = 0;
	for (int64_t y = 0; y < N && !err; y++)
		for (int64_t x = 0; x < N; x++) {
			double v = value_a(x, y);

			for (int i = 0; i < 50; i++)
				v += value_b(x, y);
			bad += got[y * N + x] != v;
		}
	tap_ok(!err && !bad, "A += D 50 times: %d wrong: %s %s", bad,
	       agile_strerror(err), err ? agile_segmap_why() : "");
	tap_ok(regs0 < 0 ||
		       (registered() == regs_after && regs_seen == regs_after),
	       "50 foralls' mirrors reuse the arena: %d registrations after the first, %d after the 50th (%d at most)",
	       regs_after, registered(), regs_seen);

	/* fields of changing sizes made and destroyed: their homes reuse it */
	for (k = 0; k < 40 && !err; k++) {
		struct agile_index i = idx2(k % N, 1);
		double v[5] = { k, -k, k, -k, k }, back[5] = { -1 };

		err = agile_field_create(sm, k % 2 ? rm_a : rm_d, &lv,
					 (size_t)(1 + k % 5) * sizeof(double),
					 &e);
		if (err)
			break;
		/* an element is 1 + k % 5 doubles */
		err = agile_field_put(e, &i, v);
		if (!err)
			err = agile_field_get(e, &i, back);
		if (!err && memcmp(back, v, (size_t)(1 + k % 5) * sizeof(v[0])))
			err = -EIO;
		agile_field_destroy(e);
	}
	tap_ok(!err && (regs0 < 0 || registered() == regs_after),
	       "40 fields of 5 sizes made and destroyed: %s, %d registrations (%d before)",
	       agile_strerror(err), registered(), regs_after);
	memcpy(want, got, sizeof(want));
	err = agile_forall_eu(sm, a, &o, f, 2, NULL);
	if (!err)
		err = agile_field_gather(a, got, sizeof(got));
	bad = 0;
	for (int64_t y = 0; y < N && !err; y++)
		for (int64_t x = 0; x < N; x++)
			bad += got[y * N + x] !=
			       want[y * N + x] + value_b(x, y);
	tap_ok(!err && !bad && (regs0 < 0 || registered() == regs_after),
	       "and a forall after them: %d wrong, %d registrations: %s", bad,
	       registered(), agile_strerror(err));

	/* the example kernel is no built-in: a GPU EU refuses it */
	o.opcode = add_op;
	o.nr_lanes = 4;
	o.encode = NULL;
	f[0] = (struct agile_forall_field){ c, AGILE_ACC_WRITE };
	f[1] = (struct agile_forall_field){ a, AGILE_ACC_READ };
	f[2] = (struct agile_forall_field){ a, AGILE_ACC_READ };
	err = agile_forall_eu(sm, c, &o, f, 3, NULL);
	tap_ok(err == -AGILE_E_OPCODE,
	       "a registered kernel that is not built in, on GPU EUs: %s",
	       agile_strerror(err));
out:
	agile_field_destroy(a);
	agile_field_destroy(d);
	agile_field_destroy(c);
	agile_rmap_destroy(rm_a);
	agile_rmap_destroy(rm_d);
	if (sm)
		agile_segmap_destroy(sm);
	tap_ok(regs0 < 0 || regs_after < 0 || registered() == regs_after,
	       "map gone: the arena's chunks stay registered with the pool (%d)",
	       registered());
	tap_ok_call(agile_eu_pool_destroy(eus), "GPU pool destroyed");
	tap_ok(regs0 < 0 || registered() == 0, "nothing left registered (%d)",
	       registered());
}

/* The GPU part, in this process: a registry with the built-ins first. */
static void gpu_here(void)
{
	struct agile_kernels *reg;
	struct agile_dev *dev;
	uint32_t op = 0;

	agile_kernels_create(&reg);
	agile_kernels_register_builtins(reg);
	agile_kernels_register(reg, &tile_add_kernel, &op);
	if (tap_ok_call(open_dev(&dev), "a context for GPU EUs")) {
		test_gpu(dev, reg, op);
		agile_dev_close(dev);
	}
	agile_kernels_destroy(reg);
}

#ifndef AGILE_NO_DLOPEN
/* Runs the GPU part in a child, the stand-in HIP runtime on its path. */
static void gpu_mock(void)
{
	char dir[1024], lib[2048], code[] = "/tmp/segmap-eu-XXXXXX";
	char file[1100], line[1024];
	static const char bundle[] = "__CLANG_OFFLOAD_BUNDLE__";
	int fds[2], status, bad = 0, n = 0;
	FILE *out;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/mock/hip", AGILE_GPU_BUILD_DIR);
	snprintf(lib, sizeof(lib), "%s/libamdhip64.so.5", dir);
	if (access(lib, R_OK)) {
		tap_skip("GPU EUs on the stand-in runtime", "%s not built",
			 lib);
		return;
	}
	/* the stand-in checks a code object's kind, never runs it */
	if (!mkdtemp(code)) {
		tap_ok(0, "a directory for the code object");
		return;
	}
	snprintf(file, sizeof(file), "%s/%s", code, AGILE_GPU_CODE_HIP);
	out = fopen(file, "w");
	if (!out ||
	    fwrite(bundle, 1, sizeof(bundle) - 1, out) != sizeof(bundle) - 1 ||
	    fclose(out) || pipe(fds)) {
		tap_ok(0, "write %s", file);
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		setenv("LD_LIBRARY_PATH", dir, 1);
		setenv("AGILE_GPU_CODE_DIR", code, 1);
		execl("/proc/self/exe", "segmap-eu", "--gpu", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	out = fdopen(fds[0], "r");
	while (out && fgets(line, sizeof(line), out)) {
		line[strcspn(line, "\n")] = '\0';
		tap_diag("hip mock: %s", line);
		bad += !strncmp(line, "not ok", 6);
		n += !strncmp(line, "ok", 2);
	}
	if (out)
		fclose(out);
	waitpid(pid, &status, 0);
	unlink(file);
	rmdir(code);
	tap_ok(pid > 0 && WIFEXITED(status) && !WEXITSTATUS(status) && !bad &&
		       n >= 8,
	       "forall on GPU EUs of the stand-in runtime: %d passed, %d failed",
	       n, bad);
}
#else
static void gpu_mock(void)
{
	tap_skip("GPU EUs on the stand-in runtime",
		 "a static build loads no runtime");
}
#endif

int main(int argc, char **argv)
{
	struct agile_sched_opts so;
	struct agile_sched *pool = NULL;
	struct agile_kernels *reg;
	struct agile_eu_pool *eus;
	struct agile_dev *dev;
	char why[512];
	uint32_t op = 0;

	if (argc > 1 && !strcmp(argv[1], "--gpu")) {
		gpu_here();
		return tap_done();
	}
	if (!tap_ok_call(agile_kernels_create(&reg), "a registry") ||
	    !tap_ok_call(agile_kernels_register(reg, &tile_add_kernel, &op),
			 "register the example kernel, c = a + b by tile"))
		return tap_done();
	if (!tap_ok_call(open_dev(&dev), "a context of 8 slots"))
		return tap_done();
	/* flags 0: CPU EUs, whatever AGILE_EU_POOL says */
	if (!tap_ok_call(make_pool(dev, reg, 0, &eus), "8 CPU EUs"))
		return tap_done();
	test_arena(eus);
	test_maps(eus);
	test_cpu(eus, NULL, op);
	agile_sched_opts_init(&so);
	so.nr_workers = 3;
	so.flags = AGILE_SCHED_QUIET;
	if (tap_ok_call(agile_sched_create(&so, &pool), "a sched pool of 3")) {
		test_cpu(eus, pool, op);
		agile_sched_destroy(pool);
	}
	tap_ok(!agile_eu_pool_destroy(eus) && !agile_dev_close(dev) &&
		       !agile_kernels_destroy(reg),
	       "EU pool, context and registry gone");

	unsetenv("AGILE_EU_POOL");
	if (agile__gpu_status(why, sizeof(why))) {
		tap_diag("GPU: %s", why);
		gpu_here();
	} else {
		tap_diag("no usable GPU (%s): the stand-in runtime", why);
		gpu_mock();
	}
	return tap_done();
}
