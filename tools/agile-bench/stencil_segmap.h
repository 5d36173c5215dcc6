/* SPDX-License-Identifier: MIT */
/*
 * stencil_segmap.h - the stencil's forall kernels over segmented fields,
 * shared by agile-bench segmap's threads and processes rows (segmap.c)
 * and its segmap-over-MPI row (segmap_mpi.c): the same kernel in every
 * scope.  A kernel's argument points to N, the field's side.  The fields
 * are row-block maps with one-row memory blocks and one-row algorithmic
 * tiles, so a row is one tile, contiguous.
 */
#ifndef AGILE_BENCH_STENCIL_SEGMAP_H
#define AGILE_BENCH_STENCIL_SEGMAP_H

#include <agile/segmap.h>
#include <errno.h>
#include <stdint.h>

#include "stencil.h"

/* Row @y of the field of accessor @acc, as a plain pointer. */
static inline int stencil_row_of(struct agile_acc *acc, int64_t y, double **row)
{
	int64_t at[2] = { 0, y };
	struct agile_tile t;
	int err = agile_tile_get(acc, at, &t);

	if (err)
		return err;
	if (t.stride[0] != 1)
		return -EPROTO; /* a row tile is contiguous */
	*row = (double *)t.base;
	return 0;
}

/* acc[0] and acc[1] (both written): the starting field, twice. */
static inline int stencil_fill_kernel(struct agile_forall_ctx *ctx, void *arg)
{
	const int64_t n = *(const int64_t *)arg;
	const struct agile_grid *g = &ctx->grid;

	for (int64_t y = g->offset.i[1];
	     y < g->offset.i[1] + (int64_t)g->extent.n[1]; y++) {
		double *r0, *r1;
		int err = stencil_row_of(&ctx->acc[0], y, &r0);

		if (!err)
			err = stencil_row_of(&ctx->acc[1], y, &r1);
		if (err)
			return err;
		for (int64_t x = 0; x < n; x++)
			r0[x] = r1[x] = stencil_start(x, y);
	}
	return 0;
}

/* acc[0] the new field (write), acc[1] the old one (read). */
static inline int stencil_kernel(struct agile_forall_ctx *ctx, void *arg)
{
	const int64_t n = *(const int64_t *)arg;
	const struct agile_grid *g = &ctx->grid;

	for (int64_t y = g->offset.i[1];
	     y < g->offset.i[1] + (int64_t)g->extent.n[1]; y++) {
		double *out, *up, *mid, *down;
		int err;

		if (y == 0 || y == n - 1)
			continue; /* the fixed boundary */
		err = stencil_row_of(&ctx->acc[0], y, &out);
		if (!err)
			err = stencil_row_of(&ctx->acc[1], y - 1, &up);
		if (!err)
			err = stencil_row_of(&ctx->acc[1], y, &mid);
		if (!err)
			err = stencil_row_of(&ctx->acc[1], y + 1, &down);
		if (err)
			return err;
		stencil_row(out, up, mid, down, n);
	}
	return 0;
}

#endif /* AGILE_BENCH_STENCIL_SEGMAP_H */
