// SPDX-License-Identifier: MIT
/*
 * scan.cu - a block-wide inclusive scan (Hillis and Steele), unmodified
 * CUDA/HIP: block b writes to out[] the running sums of its blockDim.x
 * elements of in[] (a power of two up to 1024); each round every thread
 * adds the element offset places before its own, offset doubling, with a
 * barrier between the reads and the writes and after the writes.
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

#define MAX_SCAN_BLOCK 1024

__global__ void block_scan(const float *in, float *out, unsigned int n)
{
	__shared__ float buf[MAX_SCAN_BLOCK];
	unsigned int tid = threadIdx.x;
	unsigned int i = blockIdx.x * blockDim.x + tid;

	buf[tid] = i < n ? in[i] : 0.0f;
	__syncthreads();
	for (unsigned int offset = 1; offset < blockDim.x; offset <<= 1) {
		float add = tid >= offset ? buf[tid - offset] : 0.0f;

		__syncthreads();
		buf[tid] += add;
		__syncthreads();
	}
	if (i < n)
		out[i] = buf[tid];
}
