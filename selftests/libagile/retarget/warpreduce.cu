// SPDX-License-Identifier: MIT
/*
 * warpreduce.cu - a block sum in two levels of warp shuffles, unmodified
 * CUDA as the shuffle reductions are written: each warp sums its 32
 * values with __shfl_down_sync, lane 0 writes the warp's sum to shared
 * memory, and after the barrier the first blockDim.x / 32 threads' sums
 * are reduced the same way; thread 0 writes the block's sum.  Every
 * thread of the block runs both levels (a block of up to 1024 threads
 * has at most 32 warps).
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

#define FULL_MASK 0xffffffff

__global__ void warp_reduce(const int *in, int *out, unsigned int n)
{
	__shared__ int warp_sums[32];
	unsigned int tid = threadIdx.x;
	unsigned int i = blockIdx.x * blockDim.x + tid;
	unsigned int lane = tid % warpSize;
	unsigned int warp = tid / warpSize;
	unsigned int nr_warps = (blockDim.x + warpSize - 1) / warpSize;
	int v = i < n ? in[i] : 0;

	for (int offset = 16; offset > 0; offset >>= 1)
		v += __shfl_down_sync(FULL_MASK, v, offset);
	if (lane == 0)
		warp_sums[warp] = v;
	__syncthreads();
	v = tid < nr_warps ? warp_sums[lane] : 0;
	for (int offset = warpSize / 2; offset > 0; offset /= 2)
		v += __shfl_down_sync(FULL_MASK, v, offset);
	if (tid == 0)
		out[blockIdx.x] = v;
}
