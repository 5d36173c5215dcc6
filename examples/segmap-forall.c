// SPDX-License-Identifier: MIT
/*
 * segmap-forall.c - C = A + B^T over a segmented matrix (seed 000).
 *
 * An N x N matrix of doubles is cut into 3 x 3 segments ("node blocks"
 * of N/3 x N/3), dealt row block-cyclic to Q compute nodes: segment s,
 * counted row by row, belongs to node s mod Q.  Each node keeps its
 * segments in its own home memory, in memory blocks of N/6 columns by
 * N/3 rows: the unit data moves in.  The same code runs on two kinds of
 * node, chosen by the segment map's constructor:
 *
 *   threads (the default): Q = 4 nodes, shares of one process's pool of
 *     worker threads (agile_segmap_threads); home memory is the heap.
 *   procs P: P forked processes, one node each, joined by a key
 *     (agile_segmap_procs_join); home memory is group segments of
 *     /dev/agile where the module is loaded, else the user backend's
 *     shared memory ($AGILE_BACKEND chooses; the program says which).
 *
 * agile_forall runs the kernel once per segment of C on the node that
 * owns it.  The kernel reads A and the transposed view of B through the
 * full global view: any element, by its global index.  Where B's element
 * lives on another node, the node copies that whole memory block once
 * (owner-copy) and reads its copy from then on; the trace callback below
 * prints each copy, in the process that makes it.  Then every process
 * gathers C and checks it against a plain loop, and a reduce sums C.
 *
 *	cc -O2 segmap-forall.c $(pkg-config --cflags --libs agile) -o segmap-forall
 *	./segmap-forall [N, a multiple of 6 (default 96)]
 *	./segmap-forall procs [P (default 4) [N]]
 *
 * Exits 0 when C and its sum are right (on every process).
 */
#include <agile/agile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define THREAD_NODES 4

/* Small integers, so that every sum is exact. */
static double a_value(int64_t x, int64_t y)
{
	return (double)((x * 7 + y * 3) % 1000);
}

static double b_value(int64_t x, int64_t y)
{
	return (double)((x * 5 + y * 11) % 997);
}

/*
 * Fill: each node writes its own segment of A (acc[0]) and B (acc[1]).
 * ctx->grid is the segment; index[0] is the column x, index[1] the row y.
 */
static int fill(struct agile_forall_ctx *ctx, void *arg)
{
	const struct agile_grid *g = &ctx->grid;

	(void)arg;
	for (int64_t y = g->offset.i[1];
	     y < g->offset.i[1] + (int64_t)g->extent.n[1]; y++)
		for (int64_t x = g->offset.i[0];
		     x < g->offset.i[0] + (int64_t)g->extent.n[0]; x++) {
			int64_t idx[2] = { x, y };
			double a = a_value(x, y), b = b_value(x, y);
			int err = agile_acc_write(&ctx->acc[0], idx, &a);

			if (!err)
				err = agile_acc_write(&ctx->acc[1], idx, &b);
			if (err)
				return err;
		}
	return 0;
}

/* C(x, y) = A(x, y) + B^T(x, y): acc[0] C, acc[1] A, acc[2] B^T. */
static int add_transposed(struct agile_forall_ctx *ctx, void *arg)
{
	const struct agile_grid *g = &ctx->grid;

	(void)arg;
	for (int64_t y = g->offset.i[1];
	     y < g->offset.i[1] + (int64_t)g->extent.n[1]; y++)
		for (int64_t x = g->offset.i[0];
		     x < g->offset.i[0] + (int64_t)g->extent.n[0]; x++) {
			int64_t idx[2] = { x, y };
			double a, bt, c;
			int err = agile_acc_read(&ctx->acc[1], idx, &a);

			if (!err)
				err = agile_acc_read(&ctx->acc[2], idx, &bt);
			c = a + bt;
			if (!err)
				err = agile_acc_write(&ctx->acc[0], idx, &c);
			if (err)
				return err;
		}
	return 0;
}

/* Called at every owner-copy (from the threads of the copying process). */
static void on_copy(struct agile_field *f, uint64_t block, uint32_t from,
		    uint32_t to, void *arg)
{
	(void)f;
	printf("  %s: memory block %llu copied from node %u to node %u\n",
	       (const char *)arg, (unsigned long long)block, from, to);
}

/*
 * The demo on @sm's @nodes nodes, the same in both scopes.  In the procs
 * scope every process runs it, and the collective calls (field create and
 * destroy, forall, reduce) meet in the same order on all of them.
 */
static int demo(struct agile_segmap *sm, uint32_t nodes, uint64_t n)
{
	struct agile_rmap *rm = NULL;
	struct agile_field *a = NULL, *b = NULL, *bt = NULL, *c = NULL;
	struct agile_field_stats moved_b, moved_a;
	double *got = NULL, sum = 0, want_sum = 0;
	uint64_t wrong = 0;
	uint32_t self = AGILE_SEGMAP_ALL_NODES;
	char who[32] = ""; /* "node k: " in the procs scope */
	int gathered, err;

	/* Every node is here (threads), or just ours (procs). */
	agile_segmap_self(sm, &self);
	if (self != AGILE_SEGMAP_ALL_NODES)
		snprintf(who, sizeof(who), "node %u: ", self);

	/* The parent grid, its segments and who owns them. */
	struct agile_grid matrix = {
		.extent = { .rank = 2, .n = { n, n } },
		.offset = { .rank = 2 },
	};
	struct agile_extent segment = { .rank = 2, .n = { n / 3, n / 3 } };
	struct agile_proto row_block_cyclic = { .proto = AGILE_PROTO_CYCLIC,
						.nr_nodes = nodes };
	/* Algorithmic tiles N/6 square; memory blocks N/6 wide, N/3 high. */
	struct agile_levels levels = {
		.tile = { .rank = 2, .n = { n / 6, n / 6 } },
		.block = { .rank = 2, .n = { n / 6, n / 3 } },
	};

	err = agile_rmap_tiles(&matrix, &segment, &row_block_cyclic, &rm);
	if (!err)
		err = agile_field_create(sm, rm, &levels, sizeof(double), &a);
	if (!err)
		err = agile_field_create(sm, rm, &levels, sizeof(double), &b);
	if (!err)
		err = agile_field_create(sm, rm, &levels, sizeof(double), &c);
	/* A view, not a copy: B^T(x, y) is B(y, x). */
	if (!err)
		err = agile_field_transpose(b, 0, 1, &bt);
	if (err) {
		fprintf(stderr, "%sset-up: %s %s\n", who, agile_strerror(err),
			agile_segmap_why());
		goto out;
	}
	if (self == AGILE_SEGMAP_ALL_NODES || self == 0)
		printf("%llu x %llu doubles, %d segments on %u nodes (row block-cyclic)\n",
		       (unsigned long long)n, (unsigned long long)n,
		       agile_rmap_nr_segments(rm), nodes);

	struct agile_forall_field fill_fields[] = {
		{ a, AGILE_ACC_WRITE },
		{ b, AGILE_ACC_WRITE },
	};
	err = agile_forall(sm, a, fill, NULL, fill_fields, 2, 0, NULL);
	if (err) {
		fprintf(stderr, "%sfill: %s\n", who, agile_strerror(err));
		goto out;
	}

	agile_field_set_trace(b, on_copy, "B");
	struct agile_forall_field add_fields[] = {
		{ c, AGILE_ACC_WRITE },
		{ a, AGILE_ACC_READ },
		{ bt, AGILE_ACC_READ },
	};
	err = agile_forall(sm, c, add_transposed, NULL, add_fields, 3, 0, NULL);
	if (err) {
		fprintf(stderr, "%sC = A + B^T: %s\n", who,
			agile_strerror(err));
		goto out;
	}
	/* A is read where it lives: only B's blocks move. */
	agile_field_stats(b, self, &moved_b);
	agile_field_stats(a, self, &moved_a);
	printf("%sC = A + B^T moved %llu memory blocks of B (%llu bytes), %llu of A\n",
	       who, (unsigned long long)moved_b.moves,
	       (unsigned long long)moved_b.bytes,
	       (unsigned long long)moved_a.moves);

	/* The check: C gathered into a plain array beside a plain loop. */
	got = malloc(n * n * sizeof(double));
	gathered = got && !agile_field_gather(c, got, n * n * sizeof(double));
	if (!gathered)
		fprintf(stderr, "%sgather failed\n", who);
	for (uint64_t y = 0; y < n; y++)
		for (uint64_t x = 0; x < n; x++) {
			double want = a_value((int64_t)x, (int64_t)y) +
				      b_value((int64_t)y, (int64_t)x);

			want_sum += want;
			wrong += !gathered || got[y * n + x] != want;
		}

	/*
	 * Gather is not collective; reduce is.  Reducing after gathering
	 * keeps every process from destroying C (or, in a longer program,
	 * rewriting it in the next forall) while another still gathers it.
	 */
	err = agile_field_reduce(c, AGILE_COLL_DOUBLE, AGILE_COLL_SUM, &sum);
	if (err) {
		fprintf(stderr, "%sreduce: %s\n", who, agile_strerror(err));
		goto out;
	}
	printf("%ssum of C: %.0f (want %.0f); %llu wrong elements: %s\n", who,
	       sum, want_sum, (unsigned long long)wrong,
	       !wrong && sum == want_sum ? "correct" : "WRONG");
	if (wrong || sum != want_sum)
		err = 1;
out:
	free(got);
	agile_field_destroy(bt);
	agile_field_destroy(a);
	agile_field_destroy(b);
	agile_field_destroy(c);
	agile_rmap_destroy(rm);
	return err;
}

/* Node k of the procs scope: one process of the group @key names. */
static int member(uint64_t key, uint32_t nodes, uint64_t n)
{
	struct agile_segmap *sm;
	int err;

	/* Whole lines, at once: the processes share one stdout. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	err = agile_segmap_procs_join(key, nodes, 60ULL * 1000000000ULL, NULL,
				      &sm);
	if (err) {
		fprintf(stderr, "join: %s\n", agile_strerror(err));
		return 1;
	}
	err = demo(sm, nodes, n);
	agile_segmap_destroy(sm);
	return err ? 1 : 0;
}

static int procs(uint32_t nodes, uint64_t n)
{
	struct agile_dev *dev;
	uint64_t key;
	int backend, failed = 0;

	/* The backend a group joined now gets: open a context and ask it. */
	backend = agile_dev_open(NULL, &dev);
	if (backend) {
		fprintf(stderr, "agile_dev_open: %s\n",
			agile_strerror(backend));
		return 1;
	}
	backend = agile_dev_backend(dev);
	agile_dev_close(dev);
	printf("%u processes, one node each; home memory: %s\n", nodes,
	       backend == AGILE_BACKEND_KMOD ?
		       "group segments of /dev/agile (kmod backend)" :
		       "shared memory of the user backend (no module)");
	fflush(stdout); /* before fork, or the children print it again */

	/* A key of our own: the pid and the time. */
	key = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
	for (uint32_t i = 0; i < nodes; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0)
			exit(member(key, nodes, n));
	}
	for (uint32_t i = 0; i < nodes; i++) {
		int status;

		if (wait(&status) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			failed = 1;
	}
	printf("%u processes: %s\n", nodes, failed ? "FAILED" : "all correct");
	return failed;
}

int main(int argc, char **argv)
{
	int use_procs = argc > 1 && !strcmp(argv[1], "procs");
	uint32_t nodes = THREAD_NODES;
	uint64_t n = 96;
	struct agile_sched_opts opts;
	struct agile_sched *pool = NULL;
	struct agile_segmap *sm = NULL;
	int err;

	/* segmap-forall [N], or segmap-forall procs [P [N]] */
	const char *size_arg = use_procs ? (argc > 3 ? argv[3] : NULL) :
					   (argc > 1 ? argv[1] : NULL);

	if (use_procs && argc > 2)
		nodes = (uint32_t)strtoul(argv[2], NULL, 0);
	if (size_arg)
		n = strtoull(size_arg, NULL, 0);
	if (n < 6 || n % 6 || n > 6144 || nodes < 1 ||
	    nodes > AGILE_GROUP_MAX_MEMBERS) {
		fprintf(stderr,
			"usage: %s [N]  or  %s procs [P [N]]\n"
			"  N: a multiple of 6, <= 6144; P: 1 .. %d processes\n",
			argv[0], argv[0], AGILE_GROUP_MAX_MEMBERS);
		return 2;
	}
	if (use_procs)
		return procs(nodes, n);

	agile_sched_opts_init(&opts); /* a worker per CPU */
	err = agile_sched_create(&opts, &pool);
	if (!err)
		err = agile_segmap_threads(nodes, pool, &sm);
	if (err)
		fprintf(stderr, "set-up: %s\n", agile_strerror(err));
	else
		err = demo(sm, nodes, n);
	if (sm)
		agile_segmap_destroy(sm);
	if (pool)
		agile_sched_destroy(pool);
	return err ? 1 : 0;
}
