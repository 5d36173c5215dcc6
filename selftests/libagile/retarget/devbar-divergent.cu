// SPDX-License-Identifier: MIT
/* devbar-divergent.cu - a helper with a barrier under a thread's branch */
__device__ void sync_store(float *sh, float v)
{
	sh[threadIdx.x] = v;
	__syncthreads();
}

__global__ void devbar_divergent(float *out)
{
	__shared__ float sh[256];

	if (threadIdx.x < 16)
		sync_store(sh, 1.0f);
	out[threadIdx.x] = sh[threadIdx.x ^ 1];
}

#include <cooperative_groups.h>

__global__ void coop_divergent(float *out)
{
	cooperative_groups::thread_block_tile<32> tile =
		cooperative_groups::tiled_partition<32>(
			cooperative_groups::this_thread_block());

	if (threadIdx.x < 16)
		out[threadIdx.x] = tile.shfl_down(out[threadIdx.x], 1);
}
