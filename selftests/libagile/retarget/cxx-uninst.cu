// SPDX-License-Identifier: MIT
/*
 * cxx-uninst.cu - a __global__ template never instantiated, which
 * agile-retarget refuses (retarget-refused): it cannot know which
 * specialisations the host launches.
 */
#include <cuda_runtime.h>

template <typename T> __global__ void fill(T *out, T v)
{
	out[threadIdx.x] = v;
}
