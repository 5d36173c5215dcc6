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
