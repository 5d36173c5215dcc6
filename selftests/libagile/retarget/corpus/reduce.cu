// SPDX-License-Identifier: MIT
/*
 * corpus/reduce.cu - reductions, a histogram, a scan and a stream
 * compaction, written the way the CUDA samples and Rodinia write them
 * (docs/retarget.md, "Corpus"); retarget-corpus and rt-corpus check them
 * bit for bit against corpusref.h:
 *
 *	reduce_warp       a block sum: __shfl_down_sync within each warp,
 *	                  the warps' sums through __shared__ memory, then
 *	                  the first warp's values shuffled again (blocks a
 *	                  multiple of 32 threads)
 *	dot_product       "CUDA by Example": a grid-stride partial product,
 *	                  a __shared__ cache halved by a while loop
 *	max_xor           an int maximum, a __shfl_xor_sync butterfly in
 *	                  every warp, atomicMax on the global result
 *	histogram256      a byte histogram, atomicAdd on __shared__ bins,
 *	                  then on the global ones
 *	scan_blelloch     GPU Gems 3's work-efficient exclusive scan of
 *	                  2 blockDim.x elements a block, up-sweep and
 *	                  down-sweep, each block's total in sums[]
 *	compact_block     stream compaction within each block: a
 *	                  Hillis-Steele scan of the flags, then a scatter
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

#define FULL_MASK 0xffffffffu
#define MAX_BLOCK 1024
#define NR_BINS 256
/* INT_MIN: nvcc has it from <climits>, the translator's prelude not */
#define LOWEST_INT (-2147483647 - 1)

__global__ void reduce_warp(const float *__restrict__ in, float *out,
			    unsigned int n)
{
	__shared__ float warp_sums[MAX_BLOCK / 32];
	unsigned int tid = threadIdx.x;
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned int lane = tid & 31;
	unsigned int warp = tid >> 5;
	float sum = i < n ? in[i] : 0.0f;

	for (int offset = 16; offset > 0; offset >>= 1)
		sum += __shfl_down_sync(FULL_MASK, sum, offset);
	if (lane == 0)
		warp_sums[warp] = sum;
	__syncthreads();
	sum = tid < blockDim.x / 32 ? warp_sums[lane] : 0.0f;
	for (int offset = 16; offset > 0; offset >>= 1)
		sum += __shfl_down_sync(FULL_MASK, sum, offset);
	if (tid == 0)
		out[blockIdx.x] = sum;
}

__global__ void dot_product(const float *a, const float *b, float *c, int n)
{
	__shared__ float cache[MAX_BLOCK];
	int tid = threadIdx.x + blockIdx.x * blockDim.x;
	int cacheIndex = threadIdx.x;
	float temp = 0;

	while (tid < n) {
		temp += a[tid] * b[tid];
		tid += blockDim.x * gridDim.x;
	}
	cache[cacheIndex] = temp;
	__syncthreads();

	int i = blockDim.x / 2;
	while (i != 0) {
		if (cacheIndex < i)
			cache[cacheIndex] += cache[cacheIndex + i];
		__syncthreads();
		i /= 2;
	}
	if (cacheIndex == 0)
		c[blockIdx.x] = cache[0];
}

__global__ void max_xor(const int *in, int *result, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int v = i < n ? in[i] : LOWEST_INT;

	for (int mask = 16; mask > 0; mask >>= 1) {
		int other = __shfl_xor_sync(FULL_MASK, v, mask);

		v = max(v, other);
	}
	if ((threadIdx.x & 31) == 0)
		atomicMax(result, v);
}

__global__ void histogram256(const unsigned char *data, unsigned int *hist,
			     int n)
{
	__shared__ unsigned int bins[NR_BINS];

	for (int b = threadIdx.x; b < NR_BINS; b += blockDim.x)
		bins[b] = 0;
	__syncthreads();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += blockDim.x * gridDim.x)
		atomicAdd(&bins[data[i]], 1);
	__syncthreads();
	for (int b = threadIdx.x; b < NR_BINS; b += blockDim.x)
		if (bins[b])
			atomicAdd(&hist[b], bins[b]);
}

__global__ void scan_blelloch(const unsigned int *g_idata,
			      unsigned int *g_odata, unsigned int *sums, int n)
{
	__shared__ unsigned int temp[2 * MAX_BLOCK];
	int thid = threadIdx.x;
	int m = 2 * blockDim.x;
	int base = blockIdx.x * m;
	int offset = 1;

	temp[2 * thid] = base + 2 * thid < n ? g_idata[base + 2 * thid] : 0;
	temp[2 * thid + 1] =
		base + 2 * thid + 1 < n ? g_idata[base + 2 * thid + 1] : 0;
	for (int d = m >> 1; d > 0; d >>= 1) {
		__syncthreads();
		if (thid < d) {
			int ai = offset * (2 * thid + 1) - 1;
			int bi = offset * (2 * thid + 2) - 1;

			temp[bi] += temp[ai];
		}
		offset *= 2;
	}
	if (thid == 0) {
		sums[blockIdx.x] = temp[m - 1];
		temp[m - 1] = 0;
	}
	for (int d = 1; d < m; d *= 2) {
		offset >>= 1;
		__syncthreads();
		if (thid < d) {
			int ai = offset * (2 * thid + 1) - 1;
			int bi = offset * (2 * thid + 2) - 1;
			unsigned int t = temp[ai];

			temp[ai] = temp[bi];
			temp[bi] += t;
		}
	}
	__syncthreads();
	if (base + 2 * thid < n)
		g_odata[base + 2 * thid] = temp[2 * thid];
	if (base + 2 * thid + 1 < n)
		g_odata[base + 2 * thid + 1] = temp[2 * thid + 1];
}

/* Keep the elements divisible by @div: block b's at out[b blockDim.x ..]. */
__global__ void compact_block(const int *in, int *out, int *counts, int n,
			      int div)
{
	__shared__ int flags[MAX_BLOCK];
	int tid = threadIdx.x;
	int i = blockIdx.x * blockDim.x + tid;
	int keep = i < n && in[i] % div == 0;

	flags[tid] = keep;
	__syncthreads();
	for (int stride = 1; stride < blockDim.x; stride *= 2) {
		int add = tid >= stride ? flags[tid - stride] : 0;

		__syncthreads();
		flags[tid] += add;
		__syncthreads();
	}
	if (keep)
		out[blockIdx.x * blockDim.x + flags[tid] - 1] = in[i];
	if (tid == blockDim.x - 1)
		counts[blockIdx.x] = flags[tid];
}
