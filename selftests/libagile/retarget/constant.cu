/*
 * constant.cu - __constant__ and __device__ variables as CUDA samples
 * use them (issue 31): a 1-D convolution whose filter taps and their
 * count the host sets in __constant__ memory (cudaMemcpyToSymbol on a
 * GPU; with agile-retarget the symbols themselves, declared in the -H
 * header), a __device__ float initialised in the source, and a
 * __device__ counter every thread bumps with atomicAdd; and an
 * initialised __device__ array and __constant__ double that a
 * __device__ helper reads (weigh).  With --emit=launch each is a C
 * global; with --emit=runtime they are the members of struct
 * constant_globals, a buffer the host passes (constant_globals_init).
 *
 * retarget-constant checks it against plain C with --emit=launch,
 * rt-retarget through the runtime.
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

#define MAX_TAPS 15

__constant__ float taps[MAX_TAPS];
__constant__ int nr_taps;
__device__ float bias = 0.25f;
__device__ unsigned int calls;

/* out[i] = bias + sum over k of taps[k] in[i + k - nr_taps / 2], 0 outside */
__global__ void conv1d(const float *__restrict__ in, float *__restrict__ out,
		       int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	atomicAdd(&calls, 1u);
	if (i < n) {
		float sum = bias;

		for (int k = 0; k < nr_taps; k++) {
			int j = i + k - nr_taps / 2;

			if (j >= 0 && j < n)
				sum += taps[k] * in[j];
		}
		out[i] = sum;
	}
}

#define WEIGHT_LAST (1 << 4)

__device__ int weights[4] = { 1, -2, 3, WEIGHT_LAST };
__constant__ double third = 1.0 / 3.0;

__device__ float weighted(int i)
{
	return (float)weights[i & 3] * bias;
}

/* out[i] = weights[i % 4] bias + (float)third */
__global__ void weigh(float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = weighted(i) + (float)third;
}
