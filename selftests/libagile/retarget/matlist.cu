// SPDX-License-Identifier: MIT
/*
 * matlist.cu - seed 004's example, unmodified CUDA/HIP: multiply a list of
 * small matrices, one block per matrix, one thread per output element;
 * A[m] = A[m] x B[m] in place, so every thread must have read its row of
 * A[m] before any thread overwrites it: the barrier.
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

__global__ void small_mm_list(float *A_list, float *B_list, const int size)
{
	float sum;
	int matrix_start, col, row, out_index, i;

	matrix_start = blockIdx.x * size * size;
	col = matrix_start + threadIdx.x;
	row = matrix_start + (threadIdx.y * size);
	sum = 0.0f;
	for (i = 0; i < size; i++)
		sum += A_list[row + i] * B_list[col + (i * size)];
	// synchronise before overwriting the input data
	__syncthreads();
	out_index = matrix_start + (threadIdx.y * size) + threadIdx.x;
	A_list[out_index] = sum;
}
