// SPDX-License-Identifier: MIT
/*
 * warpvote.cu - votes and shuffles of every kind, unmodified CUDA: each
 * thread's ballot of x > 0, __any_sync and __all_sync, __activemask, the
 * warp's maximum by a __shfl_xor_sync butterfly, lane 0's value
 * broadcast, the neighbour below in segments of 8 (__shfl_up_sync with a
 * width) and a rotation within segments of 16 (__shfl_sync with a lane
 * past the width), then a __syncwarp() and a second butterfly of sums;
 * and warp_xor, __shfl_xor_sync for every lane mask and width.
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

#define FULL_MASK 0xffffffffu

__global__ void warp_vote(const int *in, unsigned int *out, unsigned int n)
{
	unsigned int tid = threadIdx.x;
	unsigned int i = blockIdx.x * blockDim.x + tid;
	int x = i < n ? in[i] : -1;
	unsigned int ballot = __ballot_sync(FULL_MASK, x > 0);
	int any = __any_sync(FULL_MASK, x > 60);
	int all = __all_sync(FULL_MASK, x >= 0);
	int best = x;
	int sum = x;

	for (int mask = 1; mask < warpSize; mask *= 2)
		best = max(best, __shfl_xor_sync(FULL_MASK, best, mask));
	int first = __shfl_sync(FULL_MASK, x, 0);
	int below = __shfl_up_sync(FULL_MASK, x, 1, 8);
	int rotated = __shfl_sync(FULL_MASK, x, (tid & 15) + 17, 16);
	__syncwarp();
	for (int mask = 16; mask >= 1; mask /= 2)
		sum += __shfl_xor_sync(FULL_MASK, sum, mask, warpSize);
	if (i < n) {
		out[8 * i + 0] = ballot;
		out[8 * i + 1] = (unsigned int)(any | all << 1);
		out[8 * i + 2] = __activemask();
		out[8 * i + 3] = (unsigned int)best;
		out[8 * i + 4] = (unsigned int)first;
		out[8 * i + 5] = (unsigned int)below;
		out[8 * i + 6] = (unsigned int)rotated;
		out[8 * i + 7] = (unsigned int)sum;
	}
}

/*
 * __shfl_xor_sync with every lane mask from 1 to 31 and every width from
 * 1 to 32, folded into one word a thread: with a width below 32 a lane
 * may read an earlier segment's lane, never a later one's (it gets its
 * own value then).
 */
__global__ void warp_xor(const int *in, unsigned int *out, unsigned int n)
{
	unsigned int tid = threadIdx.x;
	unsigned int i = blockIdx.x * blockDim.x + tid;
	int x = i < n ? in[i] : -1;
	unsigned int h = 0;

	for (int width = 1; width <= warpSize; width *= 2)
		for (int mask = 1; mask < warpSize; mask++)
			h = h * 31u + (unsigned int)__shfl_xor_sync(
					      FULL_MASK, x, mask, width);
	if (i < n)
		out[i] = h;
}
