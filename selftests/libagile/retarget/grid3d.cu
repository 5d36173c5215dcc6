// SPDX-License-Identifier: MIT
/*
 * grid3d.cu - unmodified CUDA/HIP using what the other kernels do not:
 * 3-D blocks, dynamic shared memory (extern __shared__),
 * __device__ helpers calling helpers that read
 * threadIdx, a uniform if/else with a barrier in each branch, a do/while
 * loop holding a barrier whose condition reads a local assigned in a
 * region, an atomic on shared memory, and a region that depends on no
 * thread (run once per block).
 *
 * Block b writes out[4 b .. 4 b + 3]: the sum (mode 0) or the max (mode
 * 1) of 2 t + b over its threads t, the rounds of the halving loop
 * (floor(log2(threads)) + 1), the mode, and its thread count.
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

__device__ unsigned int flat_tid(void)
{
	return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x +
	       threadIdx.x;
}

__device__ unsigned int twice_flat(void)
{
	return 2 * flat_tid();
}

__global__ void grid3d(int *out, int mode)
{
	extern __shared__ int buf[];
	__shared__ int best;
	__shared__ int rounds;
	unsigned int me = flat_tid();
	unsigned int nt = blockDim.x * blockDim.y * blockDim.z;
	int result;

	buf[me] = (int)twice_flat() + (int)blockIdx.x;
	if (me == 0) {
		best = 0;
		rounds = 0;
	}
	__syncthreads();
	if (mode == 0) {
		if (me == 0) {
			int sum = 0;

			for (unsigned int i = 0; i < nt; i++)
				sum += buf[i];
			best = sum;
		}
		__syncthreads();
	} else {
		atomicMax(&best, buf[me]);
		__syncthreads();
	}
	result = best;
	out[4 * blockIdx.x + 2] = mode;
	__syncthreads();
	out[4 * blockIdx.x + 3] = blockDim.x * blockDim.y * blockDim.z;
	__syncthreads();
	unsigned int width = nt;
	do {
		if (me == 0)
			rounds++;
		width /= 2;
		__syncthreads();
	} while (width > 0);
	if (me == 0) {
		out[4 * blockIdx.x] = result;
		out[4 * blockIdx.x + 1] = rounds;
	}
}

/*
 * A local carried across barriers by "v = v ...": read before written in
 * its regions, so one copy per thread; out[t] = 4 t + 1.
 */
__global__ void carry(int *out)
{
	int t = threadIdx.x + blockDim.x * threadIdx.y;
	int v = t;

	__syncthreads();
	v = v * 3 + 1;
	__syncthreads();
	v = v + t;
	out[blockIdx.x * blockDim.x * blockDim.y + t] = v;
}
