// SPDX-License-Identifier: MIT
/*
 * hipnames.hip - HIP only (hipcc, not nvcc): the built-in variables in
 * HIP's older spellings, hipThreadIdx_x, hipBlockIdx_x, hipBlockDim_x and
 * hipGridDim_x, in a grid-stride axpy with a block-wide barrier between
 * two passes: y = a x + y, then x = y - x.
 */
#include <hip/hip_runtime.h>

__global__ void axpy_then_diff(float a, float *x, float *y, int n)
{
	int stride = hipBlockDim_x * hipGridDim_x;

	for (int i = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x; i < n;
	     i += stride)
		y[i] = a * x[i] + y[i];
	__syncthreads();
	for (int i = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x; i < n;
	     i += stride)
		x[i] = y[i] - x[i];
}
