/* SPDX-License-Identifier: MIT */
/*
 * colltest.h - what the collectives' tests share (coll-threads,
 * coll-procs-*): the inputs, whose reductions are exact in every type
 * (small integers: sums below 2^10, 2^8 in bfloat16, products of 1s and
 * 2s), the naive
 * reference, one collective run and checked on one member, and a
 * non-commutative user op.
 */
#ifndef AGILE_COLLTEST_H
#define AGILE_COLLTEST_H

#include <agile/coll.h>
#include <agile/error.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

enum ct_kind { CT_ALLREDUCE, CT_REDUCE, CT_REDUCE_SCATTER, CT_ALLGATHER };

/* A group key no other test run uses (process-scope tests). */
static inline uint64_t ct_random_key(void)
{
	uint64_t key = 0;

	while (!key)
		if (getrandom(&key, sizeof(key), 0) != sizeof(key))
			key = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
	return key;
}

static const char *const ct_kind_names[] = { "allreduce", "reduce",
					     "reduce_scatter", "allgather" };
static const char *const ct_type_names[] = { "int32",  "int64",	  "float",
					     "double", "float16", "bfloat16" };
static const char *const ct_op_names[] = { "sum", "min", "max", "prod",
					   "user" };

struct ct_case {
	int kind;
	enum agile_coll_type type;
	enum agile_coll_op op;
	size_t count; /* allreduce, reduce: the vector; else per member */
	uint32_t root;
	bool in_place;
};

/* Member @r's element @i, for @op (bfloat16's sums stay below 2^8). */
static inline double ct_value(enum agile_coll_type t, enum agile_coll_op op,
			      uint32_t r, size_t i)
{
	switch (op) {
	case AGILE_COLL_PROD:
		return (i + r) % 3 == 0 ? 2 : 1;
	case AGILE_COLL_MIN:
	case AGILE_COLL_MAX:
		return (double)((i * 31 + r * 17) % 101) - 50;
	default:
		return (double)(i % (t == AGILE_COLL_BFLOAT16 ? 13 : 61) + r);
	}
}

/* bfloat16: a float's upper half (the values here are exact in it) */
static inline uint16_t ct_bf16(float v)
{
	uint32_t u;

	memcpy(&u, &v, sizeof(u));
	return (uint16_t)(u >> 16);
}

static inline float ct_bf16_value(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

static inline void ct_store(enum agile_coll_type t, void *buf, size_t i,
			    double v)
{
	switch (t) {
	case AGILE_COLL_INT32:
		((int32_t *)buf)[i] = (int32_t)v;
		break;
	case AGILE_COLL_INT64:
		((int64_t *)buf)[i] = (int64_t)v;
		break;
	case AGILE_COLL_FLOAT:
		((float *)buf)[i] = (float)v;
		break;
	case AGILE_COLL_FLOAT16:
		((_Float16 *)buf)[i] = (_Float16)v;
		break;
	case AGILE_COLL_BFLOAT16:
		((uint16_t *)buf)[i] = ct_bf16((float)v);
		break;
	default:
		((double *)buf)[i] = v;
	}
}

static inline double ct_load(enum agile_coll_type t, const void *buf, size_t i)
{
	switch (t) {
	case AGILE_COLL_INT32:
		return ((const int32_t *)buf)[i];
	case AGILE_COLL_INT64:
		return (double)((const int64_t *)buf)[i];
	case AGILE_COLL_FLOAT:
		return ((const float *)buf)[i];
	case AGILE_COLL_FLOAT16:
		return (double)((const _Float16 *)buf)[i];
	case AGILE_COLL_BFLOAT16:
		return ct_bf16_value(((const uint16_t *)buf)[i]);
	default:
		return ((const double *)buf)[i];
	}
}

/* The reduction of element @i over @n members, member by member. */
static inline double ct_reference(enum agile_coll_type t, enum agile_coll_op op,
				  uint32_t n, size_t i)
{
	double acc = ct_value(t, op, 0, i);

	for (uint32_t r = 1; r < n; r++) {
		double v = ct_value(t, op, r, i);

		switch (op) {
		case AGILE_COLL_MIN:
			acc = v < acc ? v : acc;
			break;
		case AGILE_COLL_MAX:
			acc = v > acc ? v : acc;
			break;
		case AGILE_COLL_PROD:
			acc *= v;
			break;
		default:
			acc += v;
		}
	}
	return acc;
}

/* ---- a non-commutative op: 2x2 matrices mod 65521 packed in an int64 ---- */

#define CT_PRIME 65521u

static inline int64_t ct_pack(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	return (int64_t)(a | b << 16 | c << 32 | d << 48);
}

static inline int64_t ct_matmul(int64_t x, int64_t y)
{
	uint64_t a = (uint64_t)x & 0xffff, b = (uint64_t)x >> 16 & 0xffff;
	uint64_t c = (uint64_t)x >> 32 & 0xffff, d = (uint64_t)x >> 48;
	uint64_t e = (uint64_t)y & 0xffff, f = (uint64_t)y >> 16 & 0xffff;
	uint64_t g = (uint64_t)y >> 32 & 0xffff, h = (uint64_t)y >> 48;

	return ct_pack((a * e + b * g) % CT_PRIME, (a * f + b * h) % CT_PRIME,
		       (c * e + d * g) % CT_PRIME, (c * f + d * h) % CT_PRIME);
}

/* inout = inout x in; @arg counts the calls (never per element). */
static inline void ct_matmul_op(void *inout, const void *in, size_t count,
				enum agile_coll_type type, void *arg)
{
	int64_t *d = inout;
	const int64_t *s = in;

	(void)arg;
	if (type != AGILE_COLL_INT64)
		return;
	for (size_t i = 0; i < count; i++)
		d[i] = ct_matmul(d[i], s[i]);
}

static inline int64_t ct_matrix(uint32_t r, size_t i)
{
	uint64_t h = (r + 1) * 0x9e3779b97f4a7c15ULL ^
		     (i + 7) * 0xbf58476d1ce4e5b9ULL;

	h ^= h >> 29;
	return ct_pack(h % CT_PRIME, (h >> 16) % CT_PRIME, (h >> 32) % CT_PRIME,
		       (h >> 48) % CT_PRIME);
}

static inline int64_t ct_matrix_reference(uint32_t n, size_t i)
{
	int64_t acc = ct_matrix(0, i);

	for (uint32_t r = 1; r < n; r++)
		acc = ct_matmul(acc, ct_matrix(r, i));
	return acc;
}

/* ---- one collective on one member ---- */

/* Elements of the send and recv buffers of @cs among @n members. */
static inline void ct_sizes(const struct ct_case *cs, uint32_t n, size_t *send,
			    size_t *recv)
{
	switch (cs->kind) {
	case CT_REDUCE_SCATTER:
		*send = cs->count * n;
		*recv = cs->count;
		break;
	case CT_ALLGATHER:
		*send = cs->count;
		*recv = cs->count * n;
		break;
	default:
		*send = *recv = cs->count;
	}
}

/*
 * Run @cs on member @rank of @n through @coll with @send and @recv big
 * enough (ct_sizes, in bytes of the type; any memory); 0 and *@bad =
 * SIZE_MAX when right, else the call's error or 0 with the first wrong
 * element in *@bad.
 */
static inline int ct_run(struct agile_coll *coll, const struct ct_case *cs,
			 uint32_t rank, uint32_t n, void *send, void *recv,
			 size_t *bad)
{
	size_t ns, nr, es = agile_coll_type_size(cs->type);
	bool matrix = cs->op == AGILE_COLL_USER;
	char *sbuf = send;
	int err = 0;

	*bad = SIZE_MAX;
	ct_sizes(cs, n, &ns, &nr);
	if (cs->in_place && cs->kind == CT_ALLGATHER)
		sbuf = (char *)recv + (size_t)rank * cs->count * es;
	else if (cs->in_place)
		sbuf = recv;
	for (size_t i = 0; i < ns; i++) {
		if (matrix)
			((int64_t *)sbuf)[i] = ct_matrix(rank, i);
		else
			ct_store(cs->type, sbuf, i,
				 ct_value(cs->type, cs->op, rank, i));
	}
	switch (cs->kind) {
	case CT_ALLREDUCE:
		err = agile_coll_allreduce(coll, sbuf, recv, cs->count,
					   cs->type, cs->op);
		break;
	case CT_REDUCE:
		err = agile_coll_reduce(coll, sbuf, recv, cs->count, cs->type,
					cs->op, cs->root);
		break;
	case CT_REDUCE_SCATTER:
		err = agile_coll_reduce_scatter(coll, sbuf, recv, cs->count,
						cs->type, cs->op);
		break;
	case CT_ALLGATHER:
		err = agile_coll_allgather(coll, sbuf, recv, cs->count,
					   cs->type);
		break;
	}
	if (err)
		return err;
	if (cs->kind == CT_REDUCE && rank != cs->root)
		return 0;
	for (size_t k = 0; k < nr; k++) {
		size_t i = cs->kind == CT_REDUCE_SCATTER ?
				   rank * cs->count + k :
				   k;
		bool ok;

		if (cs->kind == CT_ALLGATHER)
			ok = ct_load(cs->type, recv, k) ==
			     ct_value(cs->type, cs->op,
				      (uint32_t)(k / cs->count), k % cs->count);
		else if (matrix)
			ok = ((int64_t *)recv)[k] == ct_matrix_reference(n, i);
		else
			ok = ct_load(cs->type, recv, k) ==
			     ct_reference(cs->type, cs->op, n, i);
		if (!ok) {
			*bad = k;
			return 0;
		}
	}
	return 0;
}

static inline void ct_describe(const struct ct_case *cs, char *buf, size_t size)
{
	snprintf(buf, size, "%s %s %s count %zu%s%s", ct_kind_names[cs->kind],
		 ct_op_names[cs->op], ct_type_names[cs->type], cs->count,
		 cs->in_place ? " in place" : "",
		 cs->kind == CT_REDUCE ? " root" : "");
	if (cs->kind == CT_REDUCE)
		snprintf(buf + strlen(buf), size - strlen(buf), " %u",
			 cs->root);
}

/* Append @kind x @type x @op at @count (every root of @roots) to @v. */
static inline size_t ct_add(struct ct_case *v, size_t k, int kind, int type,
			    int op, size_t count, const uint32_t *roots)
{
	uint32_t nr_roots = kind == CT_REDUCE ? 3 : 1;

	for (uint32_t r = 0; r < nr_roots; r++) {
		if (r && roots[r] == roots[r - 1])
			continue;
		v[k++] = (struct ct_case){
			.kind = kind,
			.type = (enum agile_coll_type)type,
			.op = (enum agile_coll_op)op,
			.count = count,
			.root = roots[r],
			/* some in place (never reduce_scatter's) */
			.in_place = kind != CT_REDUCE_SCATTER &&
				    (op + type + (int)r) % 3 == 0,
		};
	}
	return k;
}

/*
 * The matrix of cases for @n members: every kind x op x type (or int32
 * and double only, !@all_types) at the @sizes (element counts; allgather
 * and reduce_scatter per member), the reduce at roots 0, n/2 and n-1,
 * some in place, and the non-commutative user op for each reducing kind.
 * The caller frees the array; *@nr receives its length.
 */
static inline struct ct_case *ct_matrix_cases(uint32_t n, const size_t *sizes,
					      size_t nr_sizes, bool all_types,
					      size_t *nr)
{
	const uint32_t roots[3] = { 0, n / 2, n - 1 };
	/* per size, per type: 4 + 4 x 3 + 4 + 1 cases; + 5 user ops */
	struct ct_case *v =
		calloc(nr_sizes * (21 * AGILE_COLL_NR_TYPES + 5), sizeof(*v));
	size_t k = 0;

	if (!v)
		return NULL;
	for (size_t s = 0; s < nr_sizes; s++) {
		for (int kind = 0; kind <= CT_ALLGATHER; kind++) {
			for (int t = 0; t < AGILE_COLL_NR_TYPES; t++) {
				if (!all_types && t != AGILE_COLL_INT32 &&
				    t != AGILE_COLL_DOUBLE)
					continue;
				/* allgather has no op: once per type */
				for (int op = 0; op < AGILE_COLL_USER &&
						 (kind != CT_ALLGATHER || !op);
				     op++)
					k = ct_add(v, k, kind, t, op, sizes[s],
						   roots);
			}
		}
		for (int kind = 0; kind < CT_ALLGATHER; kind++)
			k = ct_add(v, k, kind, AGILE_COLL_INT64,
				   AGILE_COLL_USER, sizes[s], roots);
	}
	*nr = k;
	return v;
}

#endif /* AGILE_COLLTEST_H */
