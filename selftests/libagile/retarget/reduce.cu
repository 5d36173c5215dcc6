// SPDX-License-Identifier: MIT
/*
 * reduce.cu - a shared-memory tree reduction, unmodified CUDA/HIP: each
 * block sums blockDim.x elements of in[] (a power of two up to 1024) into
 * out[blockIdx.x], halving the active threads each step with a barrier in
 * the loop; the grid's total goes into *total with an atomic.  A helper
 * __device__ function loads with a bounds check, and threads past the end
 * of a short last block return early (no barrier follows for them... they
 * still take part: the return is after the last barrier).
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

#define MAX_BLOCK 1024

__device__ float load_or_zero(const float *in, unsigned int i, unsigned int n)
{
	return i < n ? in[i] : 0.0f;
}

__global__ void block_sum(const float *in, float *out, unsigned int n,
			  unsigned long long *total)
{
	__shared__ float partial[MAX_BLOCK];
	unsigned int tid = threadIdx.x;
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

	partial[tid] = load_or_zero(in, i, n);
	__syncthreads();
	for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (tid < s)
			partial[tid] += partial[tid + s];
		__syncthreads();
	}
	if (tid != 0)
		return;
	out[blockIdx.x] = partial[0];
	atomicAdd(total, (unsigned long long)partial[0]);
}

/*
 * Only the first nr_used blocks sum; the others return at once, all their
 * threads alike: a uniform return before the barriers (the block ends
 * there, control code and all).
 */
__global__ void block_sum_first(const float *in, float *out,
				unsigned int nr_used)
{
	__shared__ float partial[MAX_BLOCK];
	unsigned int tid = threadIdx.x;

	if (blockIdx.x >= nr_used)
		return;
	partial[tid] = in[blockIdx.x * blockDim.x + tid];
	__syncthreads();
	for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (tid < s)
			partial[tid] += partial[tid + s];
		__syncthreads();
	}
	if (tid == 0)
		out[blockIdx.x] = partial[0];
}
