// SPDX-License-Identifier: MIT
/*
 * retarget-transpose - 2-D blocks and barriers inside a loop: the
 * unmodified CUDA kernel retarget/transpose.cu (a shared-tile transpose,
 * then rounds of a 5-point smoothing of the tile, two barriers a round),
 * translated by agile-retarget and run through agile_launch on a pool,
 * against plain C; matrices that are and are not whole tiles.
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "retargetref.h"
#include "tap.h"
#include "transpose-rt.h"

#define TILE 32
#define TILE_ROWS 8

static void test_size(struct agile_launch_pool *pool, int n, int passes)
{
	size_t cells = (size_t)n * n;
	float *in = calloc(cells, sizeof(float));
	float *out = calloc(cells, sizeof(float));
	float *smooth = calloc(cells, sizeof(float));
	float *want = calloc(cells, sizeof(float));
	uint32_t tiles = (uint32_t)((n + TILE - 1) / TILE);
	int bad_t = 0, bad_s = 0, err;

	for (size_t i = 0; i < cells; i++)
		in[i] = (float)((i * 37) % 101) * 0.5f;
	ref_smooth(in, want, n, passes);
	err = transpose_smooth_launch(pool,
				      (struct agile_dim3){ tiles, tiles, 1 },
				      (struct agile_dim3){ TILE, TILE_ROWS, 1 },
				      0, in, out, smooth, n, passes);
	for (int r = 0; r < n; r++)
		for (int c = 0; c < n; c++)
			bad_t += out[r * n + c] != in[c * n + r];
	for (size_t i = 0; i < cells; i++)
		bad_s += fabsf(smooth[i] - want[i]) >
			 1e-4f * (1 + fabsf(want[i]));
	tap_ok(!err && !bad_t, "%dx%d: the transpose is right (%d)", n, n, err);
	tap_ok(!err && !bad_s,
	       "%dx%d: %d rounds of tile smoothing are right (%d cells wrong)",
	       n, n, passes, bad_s);
	free(in);
	free(out);
	free(smooth);
	free(want);
}

int main(void)
{
	struct agile_launch_pool *pool;
	int err = agile_launch_pool_create(3, &pool);

	tap_ok_call(err, "a pool of 3 threads");
	if (err)
		return tap_done();
	test_size(pool, 32, 1);
	test_size(pool, 100, 3);
	test_size(pool, 256, 2);
	test_size(pool, 7, 0);
	agile_launch_pool_destroy(pool);
	return tap_done();
}
