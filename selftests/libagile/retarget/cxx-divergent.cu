// SPDX-License-Identifier: MIT
/*
 * cxx-divergent.cu - a template kernel's barrier under thread-dependent
 * control flow: refused (retarget-refused) at the template's own
 * FILE:LINE:COL, not the instantiation's place in the lowered text.
 */
#include <cuda_runtime.h>

namespace cfg
{
constexpr unsigned HALF = 32;
}

template <typename T, unsigned N> __global__ void half_sync(T *out)
{
	if (threadIdx.x < N)
		__syncthreads();
	out[threadIdx.x] = (T)N;
}

template __global__ void half_sync<float, cfg::HALF>(float *);
