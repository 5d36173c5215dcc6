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

/*
 * A template __device__ helper holding a barrier, inlined (inline.c) into
 * a kernel of a file cxx.c lowered: its barrier under a branch on
 * threadIdx.x is named at the helper's own line:col and the call's, not
 * at their places in the lowered text.
 */
template <typename T> __device__ void fold(T *s)
{
	if (threadIdx.x < cfg::HALF)
		__syncthreads();
	s[threadIdx.x] += (T)1;
}

__global__ void fold_all(float *s)
{
	fold<float>(s);
}
