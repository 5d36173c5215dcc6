// SPDX-License-Identifier: MIT
/*
 * cxx-method-order.cu - a member function calling one defined after it
 * in the struct: nvcc takes it, but the free functions keep the struct's
 * order, so the C would call add before its definition; refused by
 * retarget-refused, at the call, both ways.
 */
#include <cuda_runtime.h>

struct Acc {
	float sum;
	__device__ void add2(float v)
	{
		add(v);
		add(v);
	}
	__device__ void add(float v)
	{
		sum += v;
	}
};

__global__ void accumulate(Acc *a, const float *in)
{
	a[threadIdx.x].add2(in[threadIdx.x]);
}
