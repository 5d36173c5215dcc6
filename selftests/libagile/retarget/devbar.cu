// SPDX-License-Identifier: MIT
/*
 * devbar.cu - __device__ functions that hold barriers, as CUDA code
 * writes them (docs/retarget.md, "Inlining"): a block sum whose tree step
 * is a helper with __syncthreads() in a loop, called by a helper that
 * returns the sum (nested, twice a kernel, as a declaration and as an
 * assignment); a rotation through shared memory called in a loop of the
 * kernel; a warp sum by __shfl_down_sync in a helper.
 */
#define DEVBAR_MAX 1024

/* Halves the sums in @sh each round: the tree of a power-of-two block. */
__device__ void tree_step(float *sh, unsigned int tid)
{
	for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (tid < s)
			sh[tid] += sh[tid + s];
		__syncthreads();
	}
}

/* The block's sum of @v, through @sh, in every thread. */
__device__ float block_sum(float v, float *sh)
{
	unsigned int tid = threadIdx.x;

	sh[tid] = v;
	__syncthreads();
	tree_step(sh, tid);
	float sum = sh[0];
	__syncthreads(); /* sh is reused */
	return sum;
}

/* out[2 b], out[2 b + 1]: block b's sum of in[i] and of in[i] squared. */
__global__ void devbar_sum(const float *in, float *out, unsigned int n)
{
	__shared__ float partial[DEVBAR_MAX];
	unsigned int tid = threadIdx.x;
	unsigned int i = blockIdx.x * blockDim.x + tid;
	float v = i < n ? in[i] : 0.0f;
	float sum = block_sum(v, partial);
	float squares;

	squares = block_sum(v * v, partial);
	if (tid == 0) {
		out[2 * blockIdx.x] = sum;
		out[2 * blockIdx.x + 1] = squares;
	}
}

/* Each thread takes its right neighbour's value, around the block. */
__device__ void rotate(float *sh, unsigned int tid)
{
	float right = sh[(tid + 1) % blockDim.x];

	__syncthreads();
	sh[tid] = right;
	__syncthreads();
}

/* data rotated left by @rounds places within each block. */
__global__ void devbar_rotate(float *data, int rounds)
{
	__shared__ float sh[DEVBAR_MAX];
	unsigned int tid = threadIdx.x;
	float *mine = data + blockIdx.x * blockDim.x;

	sh[tid] = mine[tid];
	__syncthreads();
	for (int r = 0; r < rounds; r++)
		rotate(sh, tid);
	mine[tid] = sh[tid];
}

/* The sum of @v over the caller's warp, in lane 0. */
__device__ int warp_sum(int v)
{
	for (int offset = 16; offset > 0; offset >>= 1)
		v += __shfl_down_sync(0xffffffff, v, offset);
	return v;
}

/* out[w]: the sum of warp w's values (blocks of whole warps). */
__global__ void devbar_warp(const int *in, int *out)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
	int total = 0;

	total += warp_sum(in[i]);
	if (i % 32 == 0)
		out[i / 32] = total;
}
