// SPDX-License-Identifier: MIT
/*
 * coll-mpi - the machines scope (agile/coll_mpi.h) under mpirun: every
 * collective x op x type x size against a reference each rank computes on
 * its own (every rank can generate every rank's data), for several
 * layouts of "nodes" faked on this one machine through the test hook
 * $AGILE_COLL_NODE_ID:
 *
 *   shared    no override: MPI_COMM_TYPE_SHARED: one node, or
 *             $COLL_MPI_NODES when the ranks run on that many machines
 *             (coll-mpi.sh's network namespaces)
 *   1/node    node = rank: one process per node, inter-node only
 *   2/node    node = rank / 2 (uneven when the size is odd)
 *   3/node    node = rank / 3
 *   2 nodes   node = rank % 2: members of a node are not contiguous
 *
 * Each layout has its own segments per exchange (M = 1 to 4) and plain or
 * interleaved halving.  The user op is commutative (a sum) in even layouts
 * and, for int64, the composition of affine maps x -> a x + b (mod 2^32)
 * in odd ones: not commutative, so a result that reordered the members is
 * caught.
 * Values are small integers, so sums and products are exact in any order
 * in every type (bfloat16 rounds some min/max inputs, the same for every
 * order).  Run by coll-mpi.sh (mpirun, TCP forced); rank 0 prints the TAP.
 */
#define _GNU_SOURCE
#include <agile/coll_mpi.h>
#include <agile/error.h>
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll/coll_impl.h"
#include "coll/plan.h"
#include "colltest.h"
#include "tap.h"

static int world_rank, world_size;
/* Machines (or network namespaces) the ranks run on, evenly: coll-mpi.sh. */
static int real_nodes = 1;

/* Sizes in elements; the last one is "a few MiB" (16-bit types: as many
 * elements as float's, half the bytes). */
#define NR_SIZES 5
static size_t test_count(int k, enum agile_coll_type type)
{
	size_t esize = agile_coll_type_size(type);

	if (esize < 4)
		esize = 4;
	switch (k) {
	case 0:
		return 0;
	case 1:
		return 1;
	case 2:
		return 1001;
	case 3:
		return 4096 / esize;
	default:
		return (3u << 20) / esize + 5;
	}
}

/* ---- the user ops ---- */

static uint64_t affine_then(uint64_t f, uint64_t g)
{
	uint32_t fa = (uint32_t)(f >> 32), fb = (uint32_t)f;
	uint32_t ga = (uint32_t)(g >> 32), gb = (uint32_t)g;

	return (uint64_t)(ga * fa) << 32 | (uint32_t)(ga * fb + gb);
}

static void user_sum(void *inout, const void *in, size_t count,
		     enum agile_coll_type type, void *arg)
{
	(void)arg;
	for (size_t i = 0; i < count; i++) {
		switch (type) {
		case AGILE_COLL_INT32:
			((int32_t *)inout)[i] += ((const int32_t *)in)[i];
			break;
		case AGILE_COLL_INT64:
			((int64_t *)inout)[i] += ((const int64_t *)in)[i];
			break;
		case AGILE_COLL_FLOAT:
			((float *)inout)[i] += ((const float *)in)[i];
			break;
		case AGILE_COLL_FLOAT16:
			((_Float16 *)inout)[i] += ((const _Float16 *)in)[i];
			break;
		case AGILE_COLL_BFLOAT16:
			((uint16_t *)inout)[i] = ct_bf16(
				ct_bf16_value(((uint16_t *)inout)[i]) +
				ct_bf16_value(((const uint16_t *)in)[i]));
			break;
		default:
			((double *)inout)[i] += ((const double *)in)[i];
			break;
		}
	}
}

/* inout = inout then in: inout is the left (lower-ranked) operand. */
static void user_affine(void *inout, const void *in, size_t count,
			enum agile_coll_type type, void *arg)
{
	if (type != AGILE_COLL_INT64) {
		user_sum(inout, in, count, type, arg);
		return;
	}
	for (size_t i = 0; i < count; i++)
		((uint64_t *)inout)[i] = affine_then(((uint64_t *)inout)[i],
						     ((const uint64_t *)in)[i]);
}

/* ---- data and reference ---- */

struct layout {
	const char *name;
	int per_node; /* 0: no override; -1: node = rank % 2 */
	bool commutative;
	uint32_t segments, interleaved; /* the plan's M and layout */
};

/* Element i of rank @rank's vector for @op, as a double (all exact). */
static double gen(int rank, size_t i, enum agile_coll_op op)
{
	unsigned int h =
		(unsigned int)rank * 2654435761u + (unsigned int)i * 40503u;

	switch (op) {
	case AGILE_COLL_SUM:
	case AGILE_COLL_USER:
		return (double)((int)((rank * 7 + i * 3) % 11) - 5);
	case AGILE_COLL_PROD:
		return (rank + i) % 3 == 0 ? -1 : (rank + i) % 3 == 1 ? 1 : 2;
	default:
		return (double)((int)(h % 1000) - 500);
	}
}

static void fill(void *buf, int rank, size_t first, size_t count,
		 enum agile_coll_type type, enum agile_coll_op op, bool affine)
{
	for (size_t k = 0; k < count; k++) {
		size_t i = first + k;
		double v = gen(rank, i, op);

		switch (type) {
		case AGILE_COLL_INT32:
			((int32_t *)buf)[k] = (int32_t)v;
			break;
		case AGILE_COLL_INT64:
			if (affine && op == AGILE_COLL_USER)
				((uint64_t *)buf)[k] =
					(uint64_t)(2 * ((rank + i) % 7) + 1)
						<< 32 |
					(uint32_t)(rank * 31 + i);
			else
				((int64_t *)buf)[k] = (int64_t)v;
			break;
		case AGILE_COLL_FLOAT:
			((float *)buf)[k] = (float)v;
			break;
		case AGILE_COLL_FLOAT16:
			((_Float16 *)buf)[k] = (_Float16)v;
			break;
		case AGILE_COLL_BFLOAT16:
			((uint16_t *)buf)[k] = ct_bf16((float)v);
			break;
		default:
			((double *)buf)[k] = v;
			break;
		}
	}
}

#define REDUCE_TYPED(T, acc, x, op)                \
	do {                                       \
		T *a_ = (T *)(acc);                \
		T x_ = *(const T *)(x);            \
		switch (op) {                      \
		case AGILE_COLL_MIN:               \
			*a_ = x_ < *a_ ? x_ : *a_; \
			break;                     \
		case AGILE_COLL_MAX:               \
			*a_ = x_ > *a_ ? x_ : *a_; \
			break;                     \
		case AGILE_COLL_PROD:              \
			*a_ *= x_;                 \
			break;                     \
		default:                           \
			*a_ += x_;                 \
			break;                     \
		}                                  \
	} while (0)

/* The reduction over ranks 0 .. size-1, in rank order, of elements first.. */
static void reference(void *ref, size_t first, size_t count,
		      enum agile_coll_type type, enum agile_coll_op op,
		      bool affine)
{
	size_t esize = agile_coll_type_size(type);
	char *row;

	if (type == AGILE_COLL_FLOAT16 || type == AGILE_COLL_BFLOAT16) {
		/* in float (exact for these values), converted once: the
		 * 16-bit conversions are calls into libgcc */
		float *wide = malloc(count * sizeof(*wide));

		if (!wide)
			abort();
		reference(wide, first, count, AGILE_COLL_FLOAT, op, affine);
		for (size_t k = 0; k < count; k++) {
			if (type == AGILE_COLL_FLOAT16)
				((_Float16 *)ref)[k] = (_Float16)wide[k];
			else
				((uint16_t *)ref)[k] = ct_bf16(wide[k]);
		}
		free(wide);
		return;
	}

	/* rank by rank: each rank's row generated at once */
	row = malloc(count * esize + 1);
	if (!row)
		abort();
	fill(ref, 0, first, count, type, op, affine);
	for (int r = 1; r < world_size; r++) {
		fill(row, r, first, count, type, op, affine);
		for (size_t k = 0; k < count; k++) {
			char *acc = (char *)ref + k * esize;
			const char *x = row + k * esize;

			if (op == AGILE_COLL_USER && affine &&
			    type == AGILE_COLL_INT64) {
				*(uint64_t *)acc = affine_then(*(uint64_t *)acc,
							       *(uint64_t *)x);
				continue;
			}
			switch (type) {
			case AGILE_COLL_INT32:
				REDUCE_TYPED(int32_t, acc, x, op);
				break;
			case AGILE_COLL_INT64:
				REDUCE_TYPED(int64_t, acc, x, op);
				break;
			case AGILE_COLL_FLOAT:
				REDUCE_TYPED(float, acc, x, op);
				break;
			default:
				REDUCE_TYPED(double, acc, x, op);
				break;
			}
		}
	}
	free(row);
}

/* ---- the checks ---- */

struct tally {
	int failed;
	char first[160]; /* the first failure, for the diagnostic */
};

static __attribute__((format(printf, 3, 4))) void fail(struct tally *t, int err,
						       const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->failed++)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->first, sizeof(t->first), fmt, ap);
	va_end(ap);
	if (err && n > 0 && (size_t)n < sizeof(t->first))
		snprintf(t->first + n, sizeof(t->first) - (size_t)n, ": %s",
			 agile_strerror(err));
}

static void *xmalloc(size_t bytes)
{
	void *p = malloc(bytes ? bytes : 1);

	if (!p) {
		fprintf(stderr, "coll-mpi: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return p;
}

static void check_allreduce(struct agile_coll *coll, struct tally *t,
			    enum agile_coll_type type, enum agile_coll_op op,
			    size_t count, bool affine, bool in_place)
{
	size_t bytes = count * agile_coll_type_size(type);
	char *send = xmalloc(bytes), *recv = xmalloc(bytes),
	     *ref = xmalloc(bytes);
	int err;

	fill(send, world_rank, 0, count, type, op, affine);
	memset(recv, 0xa5, bytes);
	if (in_place)
		memcpy(recv, send, bytes);
	reference(ref, 0, count, type, op, affine);
	err = agile_coll_allreduce(coll, in_place ? recv : send, recv, count,
				   type, op);
	if (err)
		fail(t, err, "allreduce %s %s count %zu", ct_op_names[op],
		     ct_type_names[type], count);
	else if (memcmp(recv, ref, bytes))
		fail(t, 0, "allreduce %s %s count %zu%s: wrong result",
		     ct_op_names[op], ct_type_names[type], count,
		     in_place ? " in place" : "");
	free(send);
	free(recv);
	free(ref);
}

static void check_reduce(struct agile_coll *coll, struct tally *t,
			 enum agile_coll_type type, enum agile_coll_op op,
			 size_t count, bool affine, int root)
{
	size_t bytes = count * agile_coll_type_size(type);
	char *send = xmalloc(bytes), *recv = NULL, *ref = NULL;
	int err;

	fill(send, world_rank, 0, count, type, op, affine);
	if (world_rank == root) {
		recv = xmalloc(bytes);
		ref = xmalloc(bytes);
		memset(recv, 0xa5, bytes);
		reference(ref, 0, count, type, op, affine);
	}
	/* Not the root: @recv may be NULL. */
	err = agile_coll_reduce(coll, send, recv, count, type, op,
				(uint32_t)root);
	if (err)
		fail(t, err, "reduce %s %s count %zu root %d", ct_op_names[op],
		     ct_type_names[type], count, root);
	else if (recv && memcmp(recv, ref, bytes))
		fail(t, 0, "reduce %s %s count %zu root %d: wrong result",
		     ct_op_names[op], ct_type_names[type], count, root);
	free(send);
	free(recv);
	free(ref);
}

static void check_reduce_scatter(struct agile_coll *coll, struct tally *t,
				 enum agile_coll_type type,
				 enum agile_coll_op op, size_t recv_count,
				 bool affine)
{
	size_t esize = agile_coll_type_size(type), bytes = recv_count * esize;
	char *send = xmalloc(bytes * (size_t)world_size),
	     *recv = xmalloc(bytes);
	char *ref = xmalloc(bytes);
	int err;

	fill(send, world_rank, 0, recv_count * (size_t)world_size, type, op,
	     affine);
	memset(recv, 0xa5, bytes);
	reference(ref, recv_count * (size_t)world_rank, recv_count, type, op,
		  affine);
	err = agile_coll_reduce_scatter(coll, send, recv, recv_count, type, op);
	if (err)
		fail(t, err, "reduce_scatter %s %s count %zu", ct_op_names[op],
		     ct_type_names[type], recv_count);
	else if (memcmp(recv, ref, bytes))
		fail(t, 0, "reduce_scatter %s %s count %zu: wrong result",
		     ct_op_names[op], ct_type_names[type], recv_count);
	free(send);
	free(recv);
	free(ref);
}

static void check_allgather(struct agile_coll *coll, struct tally *t,
			    enum agile_coll_type type, size_t count)
{
	size_t esize = agile_coll_type_size(type), bytes = count * esize;
	char *send = xmalloc(bytes),
	     *recv = xmalloc(bytes * (size_t)world_size);
	char *ref = xmalloc(bytes * (size_t)world_size);
	int err;

	fill(send, world_rank, 0, count, type, AGILE_COLL_MIN, false);
	for (int r = 0; r < world_size; r++)
		fill(ref + (size_t)r * bytes, r, 0, count, type, AGILE_COLL_MIN,
		     false);
	memset(recv, 0xa5, bytes * (size_t)world_size);
	err = agile_coll_allgather(coll, send, recv, count, type);
	if (err)
		fail(t, err, "allgather %s count %zu", ct_type_names[type],
		     count);
	else if (memcmp(recv, ref, bytes * (size_t)world_size))
		fail(t, 0, "allgather %s count %zu: wrong result",
		     ct_type_names[type], count);
	free(send);
	free(recv);
	free(ref);
}

/* One TAP line for what every rank tallied. */
static void report(struct tally *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void report(struct tally *t, const char *fmt, ...)
{
	int failed = 0, first_rank, me = t->failed ? world_rank : world_size;
	char what[160], first[160];
	va_list ap;

	MPI_Allreduce(&t->failed, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(&me, &first_rank, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (failed) {
		/* The first failing rank's first failure, to rank 0. */
		if (first_rank == 0)
			memcpy(first, t->first, sizeof(first));
		else if (world_rank == first_rank)
			MPI_Send(t->first, sizeof(t->first), MPI_CHAR, 0, 7,
				 MPI_COMM_WORLD);
		else if (world_rank == 0)
			MPI_Recv(first, sizeof(first), MPI_CHAR, first_rank, 7,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	if (world_rank == 0) {
		va_start(ap, fmt);
		vsnprintf(what, sizeof(what), fmt, ap);
		va_end(ap);
		if (failed)
			tap_diag("%d failures; first, rank %d: %s", failed,
				 first_rank, first);
		tap_ok(!failed, "%s", what);
	}
	memset(t, 0, sizeof(*t));
}

static int node_of(const struct layout *l, int rank)
{
	return l->per_node > 0 ? rank / l->per_node : rank % 2;
}

static void run_layout(const struct layout *l)
{
	struct agile_coll_opts opts;
	struct agile_coll_mpi_info info;
	struct agile_coll *coll = NULL;
	struct tally t = { 0 };
	bool affine = !l->commutative;
	int err, want_nodes, sizes_even = 1;
	char id[16];

	if (l->per_node) {
		snprintf(id, sizeof(id), "%d", node_of(l, world_rank));
		setenv("AGILE_COLL_NODE_ID", id, 1);
	} else {
		unsetenv("AGILE_COLL_NODE_ID");
	}
	agile_coll_opts_init(&opts);
	opts.user_fn = l->commutative ? user_sum : user_affine;
	opts.user_commutative = l->commutative;
	/* Small exchange segments: the few-MiB vectors go through in pieces. */
	opts.max_bytes = 1u << 20;
	opts.segments = l->segments;
	opts.interleaved = l->interleaved;
	err = agile_coll_mpi_create(MPI_COMM_WORLD, &opts, &coll);
	if (err)
		fail(&t, err, "agile_coll_mpi_create");
	report(&t, "%s: agile_coll_mpi_create", l->name);
	if (err)
		return;

	/* The layout is the one asked for ($COLL_MPI_NODES: real nodes). */
	if (l->per_node == 0)
		want_nodes = real_nodes;
	else if (l->per_node > 0)
		want_nodes = (world_size + l->per_node - 1) / l->per_node;
	else
		want_nodes = world_size > 1 ? 2 : 1;
	if (l->per_node == 0)
		sizes_even = world_size % real_nodes == 0;
	else if (l->per_node > 0)
		sizes_even = world_size % l->per_node == 0 ||
			     world_size < l->per_node;
	else if (l->per_node < 0)
		sizes_even = world_size % 2 == 0 || world_size == 1;
	err = agile_coll_mpi_info(coll, &info);
	if (err || info.nr_nodes != want_nodes ||
	    info.hierarchical !=
		    (sizes_even && want_nodes > 1 && info.node_size > 1) ||
	    agile_coll_rank(coll) != world_rank ||
	    agile_coll_size(coll) != world_size)
		fail(&t, err,
		     "info: %d nodes (want %d), node %d rank %d of %d, hierarchical %d",
		     info.nr_nodes, want_nodes, info.node, info.node_rank,
		     info.node_size, info.hierarchical);
	report(&t, "%s: %d nodes, hierarchical %d, rank and size", l->name,
	       want_nodes, info.hierarchical);

	for (int op = 0; op < AGILE_COLL_NR_OPS; op++) {
		for (int type = 0; type < AGILE_COLL_NR_TYPES; type++)
			for (int k = 0; k < NR_SIZES; k++)
				check_allreduce(coll, &t, type, op,
						test_count(k, type), affine,
						false);
		check_allreduce(coll, &t, AGILE_COLL_FLOAT, op, 1001, affine,
				true);
	}
	report(&t, "%s: allreduce, every op x type x size, and in place",
	       l->name);

	for (int op = 0; op < AGILE_COLL_NR_OPS; op++)
		for (int type = 0; type < AGILE_COLL_NR_TYPES; type++)
			for (int k = 0; k < NR_SIZES; k++)
				check_reduce(coll, &t, type, op,
					     test_count(k, type), affine,
					     (op + type + k) % world_size);
	report(&t, "%s: reduce, every op x type x size, roots in turn",
	       l->name);

	for (int op = 0; op < AGILE_COLL_NR_OPS; op++)
		for (int type = 0; type < AGILE_COLL_NR_TYPES; type++)
			for (int k = 0; k < NR_SIZES; k++) {
				size_t n = test_count(k, type);

				check_reduce_scatter(
					coll, &t, type, op,
					k == NR_SIZES - 1 ?
						n / (size_t)world_size :
						n,
					affine);
			}
	report(&t, "%s: reduce_scatter, every op x type x size", l->name);

	for (int type = 0; type < AGILE_COLL_NR_TYPES; type++)
		for (int k = 0; k < NR_SIZES; k++) {
			size_t n = test_count(k, type);

			check_allgather(
				coll, &t, type,
				k == NR_SIZES - 1 ? n / (size_t)world_size : n);
		}
	report(&t, "%s: allgather, every type x size", l->name);

	for (int i = 0; i < 5; i++) {
		err = agile_coll_barrier(coll);
		if (err)
			fail(&t, err, "barrier");
	}
	report(&t, "%s: barrier", l->name);

	err = agile_coll_destroy(coll);
	if (err)
		fail(&t, err, "agile_coll_destroy");
	report(&t, "%s: agile_coll_destroy", l->name);
}

static void check_bad_input(void)
{
	struct agile_coll_opts opts;
	struct agile_coll *coll;
	struct tally t = { 0 };
	int err;
	char one[8];

	if (agile_coll_mpi_create(MPI_COMM_WORLD, NULL, NULL) != -EINVAL)
		fail(&t, 0, "create with no @out: not -EINVAL");
	if (agile_coll_mpi_create(MPI_COMM_NULL, NULL, &coll) != -EINVAL)
		fail(&t, 0, "create on MPI_COMM_NULL: not -EINVAL");
	agile_coll_opts_init(&opts);
	opts.segments = AGILE_COLL_SEGMENTS_MAX + 1;
	if (agile_coll_mpi_create(MPI_COMM_WORLD, &opts, &coll) != -EINVAL)
		fail(&t, 0, "create with too many segments: not -EINVAL");
	/*
	 * Rank 0's schedule differs from the others': all get -EINVAL.  One
	 * process per node, so that no node communicator compares them.
	 */
	if (world_size > 1) {
		char id[16];

		snprintf(id, sizeof(id), "%d", world_rank);
		setenv("AGILE_COLL_NODE_ID", id, 1);
		agile_coll_opts_init(&opts);
		if (world_rank == 0)
			opts.segments = 3;
		err = agile_coll_mpi_create(MPI_COMM_WORLD, &opts, &coll);
		if (err != -EINVAL) {
			fail(&t, err,
			     "create with rank 0's segments "
			     "different: not -EINVAL");
			if (!err)
				agile_coll_destroy(coll);
		}
		agile_coll_opts_init(&opts);
		if (world_rank == world_size - 1)
			opts.interleaved = 1;
		err = agile_coll_mpi_create(MPI_COMM_WORLD, &opts, &coll);
		if (err != -EINVAL) {
			fail(&t, err,
			     "create with the last rank "
			     "interleaved alone: not -EINVAL");
			if (!err)
				agile_coll_destroy(coll);
		}
		unsetenv("AGILE_COLL_NODE_ID");
	}
	err = agile_coll_mpi_create(MPI_COMM_WORLD, NULL, &coll);
	if (err) {
		fail(&t, err, "create with the defaults");
	} else {
		struct agile_coll_mpi_info info;

		/* Argument errors are found before any member communicates. */
		if (agile_coll_allreduce(coll, one, one, 1, AGILE_COLL_NR_TYPES,
					 AGILE_COLL_SUM) != -EINVAL)
			fail(&t, 0, "allreduce of a bad type: not -EINVAL");
		if (agile_coll_allreduce(coll, one, one, 1, AGILE_COLL_INT32,
					 AGILE_COLL_NR_OPS) != -EINVAL)
			fail(&t, 0, "allreduce with a bad op: not -EINVAL");
		if (agile_coll_allreduce(coll, one, one, 1, AGILE_COLL_INT32,
					 AGILE_COLL_USER) != -EINVAL)
			fail(&t, 0, "user op with no callback: not -EINVAL");
		if (agile_coll_reduce(coll, one, one, 1, AGILE_COLL_INT32,
				      AGILE_COLL_SUM,
				      (uint32_t)world_size) != -EINVAL)
			fail(&t, 0,
			     "reduce to a root past the size: not -EINVAL");
		if (agile_coll_mpi_info(NULL, &info) != -EINVAL)
			fail(&t, 0, "info of no handle: not -EINVAL");
		err = agile_coll_destroy(coll);
		if (err)
			fail(&t, err, "destroy");
	}
	report(&t, "bad input and members with different schedules: -EINVAL, "
		   "and nothing left behind");
}

/*
 * A max_bytes below one element per node member (here 1 byte, two members
 * per node): the hierarchical paths still make progress, one element per
 * member at a time, instead of looping on empty pieces.
 */
static void check_tiny_pieces(void)
{
	struct agile_coll_opts opts;
	struct agile_coll *coll;
	struct tally t = { 0 };
	char id[16];
	int err;

	snprintf(id, sizeof(id), "%d", world_rank / 2);
	setenv("AGILE_COLL_NODE_ID", id, 1);
	agile_coll_opts_init(&opts);
	opts.max_bytes = 1;
	err = agile_coll_mpi_create(MPI_COMM_WORLD, &opts, &coll);
	if (err) {
		fail(&t, err, "agile_coll_mpi_create with max_bytes 1");
	} else {
		check_allreduce(coll, &t, AGILE_COLL_DOUBLE, AGILE_COLL_SUM,
				301, false, false);
		check_reduce(coll, &t, AGILE_COLL_INT64, AGILE_COLL_SUM, 301,
			     false, world_size - 1);
		err = agile_coll_destroy(coll);
		if (err)
			fail(&t, err, "agile_coll_destroy");
	}
	unsetenv("AGILE_COLL_NODE_ID");
	report(&t, "max_bytes of 1 byte, 2/node: allreduce and reduce go "
		   "one element per member at a time");
}

/* A commutative sum that takes 20 ns per element: reducing is slow. */
static void slow_sum(void *inout, const void *in, size_t count,
		     enum agile_coll_type type, void *arg)
{
	struct timespec t0, t;
	long ns = (long)count * 20;

	user_sum(inout, in, count, type, arg);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec <
	       ns);
}

/*
 * The network pipeline makes progress while it reduces: with one process
 * per node and a slow op, the next segment's receive completes (in the
 * MPI_Testsome between reduce chunks) before the current segment's reduce
 * ends, on every member of the halving rounds (not the folded extras;
 * white box: the hook
 * agile__coll_mpi_overlapped counts such receives).  Without the progress calls
 * no receive completes before its own wait, and the count stays 0.
 */
static void check_overlap(void)
{
	const size_t count = 4u << 20;
	float *send = xmalloc(count * sizeof(float));
	float *recv = xmalloc(count * sizeof(float));
	struct agile_coll_opts opts;
	struct agile_coll *coll;
	struct tally t = { 0 };
	int err;
	char id[16];

	snprintf(id, sizeof(id), "%d", world_rank);
	setenv("AGILE_COLL_NODE_ID", id, 1);
	agile_coll_opts_init(&opts);
	opts.segments = 4;
	opts.user_fn = slow_sum;
	opts.user_commutative = 1;
	for (size_t i = 0; i < count; i++)
		send[i] = (float)((i + (size_t)world_rank) % 7);
	err = agile_coll_mpi_create(MPI_COMM_WORLD, &opts, &coll);
	if (err) {
		fail(&t, err, "agile_coll_mpi_create, 1/node");
	} else {
		uint64_t overlapped;

		err = agile_coll_allreduce(coll, send, recv, count,
					   AGILE_COLL_FLOAT, AGILE_COLL_USER);
		overlapped = agile__coll_mpi_overlapped(coll);
		if (err)
			fail(&t, err, "allreduce with a slow op");
		for (size_t i = 0; !err && i < count; i++) {
			float want = 0;

			for (int r = 0; r < world_size; r++)
				want += (float)((i + (size_t)r) % 7);
			if (recv[i] != want) {
				fail(&t, 0, "element %zu: %g, want %g", i,
				     (double)recv[i], (double)want);
				break;
			}
		}
		if (world_size > 1 &&
		    agile_coll_plan_newrank((uint32_t)world_size,
					    (uint32_t)world_rank) >= 0 &&
		    !overlapped)
			fail(&t, 0,
			     "rank %d: no receive completed during a reduce",
			     world_rank);
		err = agile_coll_destroy(coll);
		if (err)
			fail(&t, err, "agile_coll_destroy");
	}
	unsetenv("AGILE_COLL_NODE_ID");
	report(&t, "1/node, M=4, a slow op: the next segment's receive "
		   "completes while the current one is reduced");
	free(send);
	free(recv);
}

/*
 * Bit for bit: an allreduce of order-sensitive floats (wide exponents,
 * both signs) gives the same bits in every run, on fresh communicators
 * whose members join their nodes in opposite orders (delays), and on
 * every member: the node ranks follow MPI rank order, not join order.
 * Layouts: one node (the process scope does it all) and 2 per node (the
 * hierarchy).
 */
#define REPRO_COUNT 300001

static void check_reproducible(int per_node)
{
	float *send = xmalloc(REPRO_COUNT * sizeof(float));
	float *recv = xmalloc(REPRO_COUNT * sizeof(float));
	uint64_t *all = xmalloc((size_t)world_size * sizeof(uint64_t));
	uint64_t first = 0;
	struct tally t = { 0 };
	char id[16];

	if (per_node) {
		snprintf(id, sizeof(id), "%d", world_rank / per_node);
		setenv("AGILE_COLL_NODE_ID", id, 1);
	} else {
		unsetenv("AGILE_COLL_NODE_ID");
	}
	for (size_t j = 0; j < REPRO_COUNT; j++) {
		int m = (int)(((size_t)world_rank * 7919 + j * 104729) % 2001) -
			1000;

		send[j] =
			ldexpf((float)m,
			       (int)(((size_t)world_rank * 13 + j) % 48) - 24);
	}
	for (int run = 0; run < 4; run++) {
		struct agile_coll *coll;
		uint64_t h = 1469598103934665603ULL;
		const unsigned char *b = (const unsigned char *)recv;
		int err;

		usleep((useconds_t)(run % 2 ? world_rank :
					      world_size - 1 - world_rank) *
		       20000);
		err = agile_coll_mpi_create(MPI_COMM_WORLD, NULL, &coll);
		if (err) {
			fail(&t, err, "agile_coll_mpi_create, run %d", run);
			break;
		}
		err = agile_coll_allreduce(coll, send, recv, REPRO_COUNT,
					   AGILE_COLL_FLOAT, AGILE_COLL_SUM);
		if (err)
			fail(&t, err, "allreduce, run %d", run);
		agile_coll_destroy(coll);
		for (size_t i = 0; i < REPRO_COUNT * sizeof(float); i++)
			h = (h ^ b[i]) * 1099511628211ULL;
		MPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T,
			      MPI_COMM_WORLD);
		if (!run)
			first = all[0];
		for (int r = 0; r < world_size; r++)
			if (all[r] != first)
				fail(&t, 0,
				     "run %d: rank %d's result differs from "
				     "rank 0's of run 0",
				     run, r);
	}
	unsetenv("AGILE_COLL_NODE_ID");
	free(send);
	free(recv);
	free(all);
	report(&t,
	       "%s: order-sensitive float allreduce, 4 runs, members "
	       "joining in opposite orders: the same bits every run",
	       per_node ? "2/node" : "one node");
}

int main(int argc, char **argv)
{
	static const struct layout layouts[] = {
		{ "shared", 0, true, 2, 0 },   { "1/node", 1, false, 4, 1 },
		{ "2/node", 2, true, 3, 0 },   { "3/node", 3, false, 1, 1 },
		{ "2 nodes", -1, true, 2, 1 },
	};
	int rc;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &world_size);
	if (getenv("COLL_MPI_NODES"))
		real_nodes = atoi(getenv("COLL_MPI_NODES"));
	if (real_nodes < 1 || real_nodes > world_size)
		real_nodes = 1;
	if (world_rank == 0)
		tap_diag("coll-mpi: %d processes on %d nodes", world_size,
			 real_nodes);
	check_bad_input();
	check_tiny_pieces();
	check_overlap();
	check_reproducible(0);
	check_reproducible(2);
	/* $COLL_MPI_LAYOUT: one layout by name (when chasing a failure). */
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (!getenv("COLL_MPI_LAYOUT") ||
		    !strcmp(getenv("COLL_MPI_LAYOUT"), layouts[i].name))
			run_layout(&layouts[i]);
	rc = world_rank == 0 ? tap_done() : 0;
	MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Finalize();
	return rc;
}
