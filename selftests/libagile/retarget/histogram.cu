// SPDX-License-Identifier: MIT
/*
 * histogram.cu - atomics on __shared__ and on global memory, unmodified
 * CUDA/HIP.  On CPU threads one OS thread runs a whole block, so
 * agile-retarget makes an atomic whose address is in a __shared__
 * variable a plain read-modify-write and keeps the others atomic (blocks
 * run on several OS threads at once):
 *
 *	shared_histogram  each block counts its per_block elements of in[]
 *	                  into a block-local histogram in __shared__ memory,
 *	                  then adds it to the global hist[] atomically
 *	global_histogram  every thread adds each of its elements, mixed,
 *	                  to the global hist[] itself (NR_GLOBAL_BINS
 *	                  counters that every block hits), and appends the
 *	                  index of each one with bit 3 set to list[], at
 *	                  the slot an atomicAdd on the global *count returns:
 *	                  a lost update there leaves two in one slot
 *	shared_ops        each of CUDA's atomics on __shared__ memory, the
 *	                  old values they return, in results that do not
 *	                  depend on the order the threads run in
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

#define NR_BINS 64
#define NR_GLOBAL_BINS 8
#define MIX_ROUNDS 32

__global__ void shared_histogram(const unsigned int *in, unsigned int n,
				 unsigned int per_block, unsigned int *hist)
{
	__shared__ unsigned int local[NR_BINS];
	unsigned int tid = threadIdx.x;
	unsigned int first = blockIdx.x * per_block;

	for (unsigned int b = tid; b < NR_BINS; b += blockDim.x)
		local[b] = 0;
	__syncthreads();
	for (unsigned int i = first + tid; i < first + per_block && i < n;
	     i += blockDim.x)
		atomicAdd(&local[in[i] % NR_BINS], 1u);
	__syncthreads();
	for (unsigned int b = tid; b < NR_BINS; b += blockDim.x)
		atomicAdd(&hist[b], local[b]);
}

__device__ unsigned int mix(unsigned int v)
{
	for (int r = 0; r < MIX_ROUNDS; r++)
		v = v * 1664525u + 1013904223u;
	return v >> 16;
}

__global__ void global_histogram(const unsigned int *in, unsigned int n,
				 unsigned int *hist, unsigned int *count,
				 unsigned int *list)
{
	unsigned int stride = blockDim.x * gridDim.x;

	for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += stride) {
		unsigned int v = mix(in[i]);

		atomicAdd(&hist[v % NR_GLOBAL_BINS], 1u);
		if (v & 8)
			list[atomicAdd(count, 1u)] = i;
	}
}

/*
 * out[] of block b: OPS_PER_THREAD words a thread (the old values its
 * atomics returned), then OPS_FINAL words (the shared variables at the
 * end, written by thread 0).
 */
#define OPS_PER_THREAD 4
#define OPS_FINAL 12

__global__ void shared_ops(int *out, float *fout)
{
	__shared__ int sum, low, high, owner, last;
	__shared__ unsigned int bits, mask, flips, ring, down;
	__shared__ float fsum;
	__shared__ unsigned long long wide[2];
	__shared__ int down_by_two[2];
	__shared__ unsigned int nested[2][4];
	unsigned int tid = threadIdx.x;
	unsigned int nt = blockDim.x;
	int *mine = out + blockIdx.x * (nt * OPS_PER_THREAD + OPS_FINAL);

	if (tid == 0) {
		sum = 0;
		low = 1 << 30;
		high = -1;
		owner = -1;
		last = -1;
		bits = 0;
		mask = 0xffffffffu;
		flips = 0;
		ring = 0;
		down = 0;
		fsum = 0.0f;
		wide[1] = 0;
		down_by_two[1] = 0;
		nested[1][2] = 0;
	}
	__syncthreads();
	atomicAdd(&sum, (int)tid);
	atomicSub(down_by_two + 1, 2);
	atomicMin(&low, (int)((tid * 7 + 3) % nt));
	atomicMax(&high, (int)((tid * 5 + 1) % nt));
	atomicOr(&nested[1][2], 1u << (tid % 32));
	atomicAnd(&mask, ~(1u << (tid % 32)));
	atomicXor(&flips, 1u << (tid % 32));
	atomicOr(&bits, 1u << (tid % 16));
	atomicAdd(&fsum, 0.5f);
	atomicAdd(wide + 1, 3ull);
	/* distinct old values: 0 .. nt - 1, each once */
	mine[tid * OPS_PER_THREAD] = (int)atomicInc(&ring, 1u << 30);
	/* exactly one thread sees -1 and owns it */
	mine[tid * OPS_PER_THREAD + 1] = atomicCAS(&owner, -1, (int)tid);
	/* the old values and the last one: -1, 0 .. nt - 1, each once */
	mine[tid * OPS_PER_THREAD + 2] = atomicExch(&last, (int)tid);
	/* the old values: 0, then nt - 1 (0 wraps to it) .. 1, each once */
	mine[tid * OPS_PER_THREAD + 3] = (int)atomicDec(&down, nt - 1);
	__syncthreads();
	if (tid == 0) {
		int *fin = mine + nt * OPS_PER_THREAD;

		fin[0] = sum;
		fin[1] = down_by_two[1];
		fin[2] = low;
		fin[3] = high;
		fin[4] = (int)nested[1][2];
		fin[5] = (int)mask;
		fin[6] = (int)flips;
		fin[7] = (int)bits;
		fin[8] = (int)wide[1];
		fin[9] = owner;
		fin[10] = last;
		fin[11] = (int)ring;
		fout[blockIdx.x] = fsum;
	}
}
