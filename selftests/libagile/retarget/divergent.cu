// SPDX-License-Identifier: MIT
/*
 * divergent.cu - NOT translatable: the barrier sits under a branch that
 * depends on threadIdx.x, so only some threads of a block would reach it
 * (undefined on a GPU; no thread-loop schedule can honour it).
 * agile-retarget must refuse it, naming the barrier's line.
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

__global__ void half_sync(float *data, int k)
{
	float v = data[threadIdx.x];

	if (threadIdx.x < k) {
		v *= 2.0f;
		__syncthreads();
	}
	data[threadIdx.x] = v;
}
