// SPDX-License-Identifier: MIT
/*
 * dynshared.cu - dynamic shared memory sized at launch, as CUDA's
 * kernel<<<grid, block, bytes>>> gives it: a block sum whose tile is
 * blockDim.x floats of extern __shared__ memory, a tree in it, beside a
 * static __shared__ count of the rounds (which must not overlap the
 * tile).  Block b writes out[b], the sum of in[b blockDim.x ..] (0 past
 * n), and rounds[b].  agile-retarget --emit=runtime without
 * --dynamic-shared: the tile is the entry's local memory
 * (AGILE_RT_ARG_LOCAL), local_bytes = blockDim.x * sizeof(float).
 *
 * rt-retarget checks it against plain C (retargetref.h), bit for bit.
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

__global__ void dyn_block_sum(const float *in, float *out, unsigned int *rounds,
			      int n)
{
	extern __shared__ float tile[];
	__shared__ unsigned int nr_rounds;
	unsigned int t = threadIdx.x;
	int i = (int)(blockIdx.x * blockDim.x + t);

	tile[t] = i < n ? in[i] : 0.0f;
	if (t == 0)
		nr_rounds = 0;
	__syncthreads();
	for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (t < s)
			tile[t] += tile[t + s];
		if (t == 0)
			nr_rounds++;
		__syncthreads();
	}
	if (t == 0) {
		out[blockIdx.x] = tile[0];
		rounds[blockIdx.x] = nr_rounds;
	}
}
