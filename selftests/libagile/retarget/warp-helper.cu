// SPDX-License-Identifier: MIT
/*
 * warp-helper.cu - a shuffle in a __device__ helper, inlined: refused
 * where the call is under a branch on threadIdx.x.
 */
__device__ int helper_shfl(int v)
{
	return __shfl_sync(0xffffffff, v, 0);
}

__global__ void warp_helper(int *out)
{
	if (threadIdx.x < 32)
		out[threadIdx.x] = helper_shfl(out[threadIdx.x]);
}
