// SPDX-License-Identifier: MIT
/*
 * corpus/conv.cu - the CUDA samples' convolutionSeparable row pass: a
 * filter in __constant__ memory the host sets (cudaMemcpyToSymbol; with
 * agile-retarget the symbol itself), the block's row segment and its
 * halo in a __shared__ tile (docs/retarget.md, "Corpus").  With
 * --emit=runtime (and -x cuda) the filter is the program's globals'
 * buffer, the word after the parameters.
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

#define KERNEL_RADIUS 4
#define KERNEL_LENGTH (2 * KERNEL_RADIUS + 1)
#define MAX_ROW_BLOCK 256

__constant__ float c_Kernel[KERNEL_LENGTH];

/* dst[y][x] = sum over k of c_Kernel[KERNEL_RADIUS - k] src[y][x + k], 0 outside */
__global__ void convolution_rows(float *d_Dst, const float *d_Src, int imageW,
				 int imageH)
{
	__shared__ float s_Data[MAX_ROW_BLOCK + 2 * KERNEL_RADIUS];
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y;
	const float *row = d_Src + y * imageW;

	s_Data[KERNEL_RADIUS + threadIdx.x] = x < imageW ? row[x] : 0;
	if (threadIdx.x < KERNEL_RADIUS) {
		int left = x - KERNEL_RADIUS;
		int right = blockIdx.x * blockDim.x + blockDim.x + threadIdx.x;

		s_Data[threadIdx.x] = left >= 0 ? row[left] : 0;
		s_Data[KERNEL_RADIUS + blockDim.x + threadIdx.x] =
			right < imageW ? row[right] : 0;
	}
	__syncthreads();
	if (x >= imageW)
		return;

	float sum = 0;

#pragma unroll
	for (int j = -KERNEL_RADIUS; j <= KERNEL_RADIUS; j++)
		sum += c_Kernel[KERNEL_RADIUS - j] *
		       s_Data[KERNEL_RADIUS + threadIdx.x + j];
	d_Dst[y * imageW + x] = sum;
}
