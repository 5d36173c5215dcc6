// SPDX-License-Identifier: MIT
/*
 * transpose.cu - unmodified CUDA/HIP with 2-D blocks and barriers inside a
 * loop: out = in^T for an n x n matrix, through a shared tile, TILE x
 * TILE_ROWS threads per block each moving TILE / TILE_ROWS elements; the
 * block then runs `passes` rounds of a 5-point smoothing of its tile (zero
 * past the matrix's edge; the tile's border cells kept) in shared memory,
 * two barriers per round, and writes it to smooth[].
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

#define TILE 32
#define TILE_ROWS 8

__global__ void transpose_smooth(const float *in, float *out, float *smooth,
				 int n, int passes)
{
	__shared__ float tile[TILE][TILE + 1];
	__shared__ float next[TILE][TILE + 1];
	int x = blockIdx.x * TILE + threadIdx.x;
	int y = blockIdx.y * TILE + threadIdx.y;

	for (int j = 0; j < TILE; j += TILE_ROWS)
		tile[threadIdx.y + j][threadIdx.x] =
			x < n && y + j < n ? in[(y + j) * n + x] : 0.0f;
	__syncthreads();
	x = blockIdx.y * TILE + threadIdx.x;
	y = blockIdx.x * TILE + threadIdx.y;
	for (int j = 0; j < TILE; j += TILE_ROWS)
		if (x < n && y + j < n)
			out[(y + j) * n + x] =
				tile[threadIdx.x][threadIdx.y + j];

	for (int p = 0; p < passes; p++) {
		for (int j = 0; j < TILE; j += TILE_ROWS) {
			int r = threadIdx.y + j, c = threadIdx.x;
			float v = tile[r][c];

			if (r > 0 && r < TILE - 1 && c > 0 && c < TILE - 1)
				v = 0.5f * v +
				    0.125f * (tile[r - 1][c] + tile[r + 1][c] +
					      tile[r][c - 1] + tile[r][c + 1]);
			next[r][c] = v;
		}
		__syncthreads();
		for (int j = 0; j < TILE; j += TILE_ROWS)
			tile[threadIdx.y + j][threadIdx.x] =
				next[threadIdx.y + j][threadIdx.x];
		__syncthreads();
	}
	x = blockIdx.x * TILE + threadIdx.x;
	y = blockIdx.y * TILE + threadIdx.y;
	for (int j = 0; j < TILE; j += TILE_ROWS)
		if (x < n && y + j < n)
			smooth[(y + j) * n + x] =
				tile[threadIdx.y + j][threadIdx.x];
}
