// SPDX-License-Identifier: MIT
/*
 * cxx-order.cu - C++ that nvcc takes but whose C would call a function
 * before its definition: an instantiation goes after its template, so a
 * call above a template declared but defined below is refused by
 * retarget-refused, at the call, both ways (cxx-method-order.cu: the
 * same for member functions).
 */
#include <cuda_runtime.h>

template <typename T> __device__ T twice(T v);

__global__ void early(float *out)
{
	out[threadIdx.x] = twice<float>(out[threadIdx.x]);
}

template <typename T> __device__ T twice(T v)
{
	return v + v;
}
