// SPDX-License-Identifier: MIT
/* warp-helper.cu - a shuffle in a __device__ helper: refused there. */
__device__ int helper_shfl(int v)
{
	return __shfl_sync(0xffffffff, v, 0);
}

__global__ void warp_helper(int *out)
{
	out[threadIdx.x] = helper_shfl(out[threadIdx.x]);
}
