// SPDX-License-Identifier: MIT
/* devbar-refused.cu - __device__ functions with barriers it cannot inline */
__device__ void sync_store(float *sh, float v)
{
	sh[threadIdx.x] = v;
	__syncthreads();
}

__device__ float sync_load(float *sh)
{
	__syncthreads();
	return sh[threadIdx.x ^ 1];
}

__device__ void recurse(float *sh, int depth)
{
	__syncthreads();
	if (depth > 0)
		recurse(sh, depth - 1);
}

__device__ float early(float *sh, int n)
{
	if (n == 0)
		return 0.0f;
	__syncthreads();
	return sh[0];
}

__global__ void devbar_refused(float *out, int n)
{
	__shared__ float sh[256];
	float x;

	if (threadIdx.x < 16)
		sync_store(sh, 1.0f);
	x = 2.0f * sync_load(sh);
	recurse(sh, n);
	x += early(sh, n);
	void (*p)(float *, float) = sync_store;
	out[threadIdx.x] = x;
	(void)p;
}
