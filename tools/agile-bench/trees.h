/* SPDX-License-Identifier: MIT */
/*
 * trees.h - the task trees of the interference benchmark, shared by its
 * agile, oneTBB and OpenMP versions so that all three walk the same tree:
 *
 *  - nqueens: place N queens row by row; every safe placement above the
 *    bottom NQ_SERIAL_ROWS rows is a task that gets a copy of the board;
 *  - uts: an unbalanced tree (binomial, as UTS's T3 family): the root has
 *    UTS_ROOT_KIDS children, every other node UTS_KIDS children with
 *    probability UTS_Q, else none, decided by a hash of the node, so the
 *    tree is the same on every run; a node's children are split in halves
 *    down to single children, one task per half.
 *
 * Plain C that C++ compiles too (tbb_trees.cpp includes it).
 */
#ifndef AGILE_BENCH_TREES_H
#define AGILE_BENCH_TREES_H

#include <stdint.h>

#define NQ_MAX 16
#define NQ_SERIAL_ROWS 3

struct nq_board {
	int8_t n, row;
	int8_t cols[NQ_MAX];
};

static inline int nq_safe(const struct nq_board *b, int col)
{
	for (int r = 0; r < b->row; r++) {
		int d = b->cols[r] - col;

		if (d == 0 || d == b->row - r || d == r - b->row)
			return 0;
	}
	return 1;
}

/* The board with a queen in @col of the next row. */
static inline struct nq_board nq_place(const struct nq_board *b, int col)
{
	struct nq_board c = *b;

	c.cols[c.row++] = (int8_t)col;
	return c;
}

static inline int nq_spawns(const struct nq_board *b)
{
	return b->row < b->n - NQ_SERIAL_ROWS;
}

static inline int64_t nq_serial(const struct nq_board *b)
{
	int64_t sum = 0;

	if (b->row == b->n)
		return 1;
	for (int col = 0; col < b->n; col++) {
		if (nq_safe(b, col)) {
			struct nq_board c = nq_place(b, col);

			sum += nq_serial(&c);
		}
	}
	return sum;
}

static inline struct nq_board nq_root(int n)
{
	struct nq_board b = { (int8_t)n, 0, { 0 } };

	return b;
}

#define UTS_ROOT_KIDS 500
#define UTS_KIDS 5
#define UTS_Q 0.1996
#define UTS_SEED 7

/* The children lo..hi - 1 of node @parent, at depth @depth + 1. */
struct uts_span {
	uint64_t parent;
	int32_t depth, lo, hi;
};

static inline uint64_t uts_mix(uint64_t x)
{
	/* splitmix64's finaliser, a few rounds: the node's "work" */
	for (int i = 0; i < 4; i++) {
		x += 0x9e3779b97f4a7c15ULL;
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
		x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
		x ^= x >> 31;
	}
	return x;
}

static inline uint64_t uts_child(uint64_t parent, int i)
{
	return uts_mix(parent ^ (0x100000001b3ULL * (uint64_t)(i + 1)));
}

static inline int uts_nr_kids(uint64_t node, int depth)
{
	if (depth == 0)
		return UTS_ROOT_KIDS;
	return (double)(node >> 11) * 0x1.0p-53 < UTS_Q ? UTS_KIDS : 0;
}

static inline struct uts_span uts_root(void)
{
	struct uts_span s = { uts_mix(UTS_SEED), 0, 0, UTS_ROOT_KIDS };

	return s;
}

/* The span of the children of the single child of @s. */
static inline struct uts_span uts_down(const struct uts_span *s)
{
	uint64_t node = uts_child(s->parent, s->lo);
	struct uts_span d = { node, s->depth + 1, 0,
			      uts_nr_kids(node, s->depth + 1) };

	return d;
}

/* Nodes under span @s (the children and their subtrees). */
static inline int64_t uts_serial(const struct uts_span *s)
{
	int64_t sum = 0;

	for (int i = s->lo; i < s->hi; i++) {
		struct uts_span one = *s, d;

		one.lo = i;
		one.hi = i + 1;
		d = uts_down(&one);
		sum += 1 + uts_serial(&d);
	}
	return sum;
}

#endif /* AGILE_BENCH_TREES_H */
