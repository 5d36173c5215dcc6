// SPDX-License-Identifier: MIT
/*
 * warp-refused.cu - warp primitives agile-retarget refuses (tested by
 * retarget-refused; the line and column of each matter).
 */
#define FULL 0xffffffff

__global__ void warp_divergent(int *out)
{
	int v = out[threadIdx.x];

	if (threadIdx.x < 32)
		v += __shfl_down_sync(FULL, v, 1);
	out[threadIdx.x] = v;
}

__global__ void warp_refused(int *out)
{
	int v = out[threadIdx.x];

	v += __shfl_sync(0xffff, v, 0);
	v += __shfl_xor_sync(FULL, v, 1, 3);
	v = v > 0 ? __shfl_up_sync(FULL, v, 1) : 0;
	v += __shfl_sync(FULL, __shfl_sync(FULL, v, 1), 2);
	while (__any_sync(FULL, v > 0))
		v--;
	out[threadIdx.x] = v;
}
