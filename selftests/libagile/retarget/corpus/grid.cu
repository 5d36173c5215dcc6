// SPDX-License-Identifier: MIT
/*
 * corpus/grid.cu - 2-D and 3-D kernels as the CUDA samples and Rodinia
 * write them (docs/retarget.md, "Corpus"):
 *
 *	stencil2d      a 5-point Jacobi step, the block's tile and its halo
 *	               in __shared__ memory (2-D blocks up to 32 x 32), the
 *	               border cells copied
 *	stencil3d      a 7-point step on a 3-D grid of 3-D blocks, straight
 *	               from global memory (hotspot3D's form)
 *	matmul_tiled   C = A B through TILE x TILE __shared__ tiles (the
 *	               CUDA samples' matrixMul), any sizes: the tiles padded
 *	               with zeros
 *	transpose      the CUDA samples' transposeNoBankConflicts: a
 *	               32 x 33 tile, 32 x 8 blocks, 4 rows a thread
 *	nbody_tiles    GPU Gems 3's n-body forces: float4 bodies (w the
 *	               mass), blockDim.x of them staged in __shared__ a tile
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

#define MAX_TILE 32
#define TILE 16
#define TILE_DIM 32
#define BLOCK_ROWS 8
#define MAX_BODIES_TILE 256
#define SOFTENING 0.01f

__global__ void stencil2d(const float *in, float *out, int nx, int ny, float c0,
			  float c1)
{
	__shared__ float tile[MAX_TILE + 2][MAX_TILE + 2];
	int tx = threadIdx.x + 1;
	int ty = threadIdx.y + 1;
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;
	int inside = x < nx && y < ny;

	if (inside) {
		tile[ty][tx] = in[y * nx + x];
		if (threadIdx.x == 0 && x > 0)
			tile[ty][0] = in[y * nx + x - 1];
		if ((threadIdx.x == blockDim.x - 1 || x == nx - 1) &&
		    x < nx - 1)
			tile[ty][tx + 1] = in[y * nx + x + 1];
		if (threadIdx.y == 0 && y > 0)
			tile[0][tx] = in[(y - 1) * nx + x];
		if ((threadIdx.y == blockDim.y - 1 || y == ny - 1) &&
		    y < ny - 1)
			tile[ty + 1][tx] = in[(y + 1) * nx + x];
	}
	__syncthreads();
	if (!inside)
		return;
	if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
		out[y * nx + x] = tile[ty][tx];
		return;
	}
	out[y * nx + x] =
		c0 * tile[ty][tx] + c1 * (tile[ty - 1][tx] + tile[ty + 1][tx] +
					  tile[ty][tx - 1] + tile[ty][tx + 1]);
}

__global__ void stencil3d(const float *__restrict__ in, float *__restrict__ out,
			  int nx, int ny, int nz, float cc, float cn)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;
	int z = blockIdx.z * blockDim.z + threadIdx.z;
	int plane = nx * ny;
	int c = z * plane + y * nx + x;

	if (x >= nx || y >= ny || z >= nz)
		return;
	float w = x > 0 ? in[c - 1] : in[c];
	float e = x < nx - 1 ? in[c + 1] : in[c];
	float n = y > 0 ? in[c - nx] : in[c];
	float s = y < ny - 1 ? in[c + nx] : in[c];
	float b = z > 0 ? in[c - plane] : in[c];
	float t = z < nz - 1 ? in[c + plane] : in[c];

	out[c] = cc * in[c] + cn * (w + e + n + s + b + t);
}

__global__ void matmul_tiled(const float *A, const float *B, float *C, int M,
			     int N, int K)
{
	__shared__ float As[TILE][TILE];
	__shared__ float Bs[TILE][TILE];
	int tx = threadIdx.x, ty = threadIdx.y;
	int row = blockIdx.y * TILE + ty;
	int col = blockIdx.x * TILE + tx;
	float Csub = 0.0f;

	for (int t = 0; t < (K + TILE - 1) / TILE; t++) {
		int ka = t * TILE + tx, kb = t * TILE + ty;

		As[ty][tx] = row < M && ka < K ? A[row * K + ka] : 0.0f;
		Bs[ty][tx] = kb < K && col < N ? B[kb * N + col] : 0.0f;
		__syncthreads();
#pragma unroll
		for (int k = 0; k < TILE; ++k)
			Csub += As[ty][k] * Bs[k][tx];
		__syncthreads();
	}
	if (row < M && col < N)
		C[row * N + col] = Csub;
}

__global__ void transpose(float *odata, const float *idata, int width,
			  int height)
{
	__shared__ float tile[TILE_DIM][TILE_DIM + 1];
	int x = blockIdx.x * TILE_DIM + threadIdx.x;
	int y = blockIdx.y * TILE_DIM + threadIdx.y;

	for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
		if (x < width && y + j < height)
			tile[threadIdx.y + j][threadIdx.x] =
				idata[(y + j) * width + x];
	__syncthreads();
	x = blockIdx.y * TILE_DIM + threadIdx.x;
	y = blockIdx.x * TILE_DIM + threadIdx.y;
	for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
		if (x < height && y + j < width)
			odata[(y + j) * height + x] =
				tile[threadIdx.x][threadIdx.y + j];
}

__device__ float3 body_body(float4 bi, float4 bj, float3 ai)
{
	float3 r;

	r.x = bj.x - bi.x;
	r.y = bj.y - bi.y;
	r.z = bj.z - bi.z;
	float distSqr = r.x * r.x + r.y * r.y + r.z * r.z + SOFTENING;
	float invDist = 1.0f / sqrtf(distSqr);
	float invDist3 = invDist * invDist * invDist;
	float s = bj.w * invDist3;

	ai.x += r.x * s;
	ai.y += r.y * s;
	ai.z += r.z * s;
	return ai;
}

/* n a multiple of blockDim.x */
__global__ void nbody_tiles(const float4 *pos, float4 *acc, int n)
{
	__shared__ float4 shPos[MAX_BODIES_TILE];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float4 myPos = pos[i];
	float3 a = make_float3(0.0f, 0.0f, 0.0f);

	for (int tile = 0; tile < n / blockDim.x; tile++) {
		shPos[threadIdx.x] = pos[tile * blockDim.x + threadIdx.x];
		__syncthreads();
		for (int j = 0; j < blockDim.x; j++)
			a = body_body(myPos, shPos[j], a);
		__syncthreads();
	}
	acc[i] = make_float4(a.x, a.y, a.z, 0.0f);
}
