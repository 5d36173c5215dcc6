// SPDX-License-Identifier: MIT
/*
 * corpus/sort.cu - a sort network and sparse matrix-vector products, as
 * the CUDA samples and SHOC write them (docs/retarget.md, "Corpus"):
 *
 *	bitonic_sort     the CUDA samples' bitonicSortShared: 2 blockDim.x
 *	                 keys (with their values) of each block sorted in
 *	                 __shared__ memory, ascending or descending by
 *	                 @dir, a __device__ comparator swapping by pointers
 *	odd_even_sort    a transposition sort network, one compare-exchange
 *	                 a thread a phase, blockDim.x phases, in place in
 *	                 global memory (blocks of any size)
 *	spmv_csr_scalar  y = A x, A in CSR, one row a thread
 *	spmv_csr_vector  the same, one warp a row: the lanes' partial sums
 *	                 added with __shfl_down_sync
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

#define FULL_MASK 0xffffffffu
#define MAX_SORT_BLOCK 512

__device__ __forceinline__ void comparator(unsigned int *keyA,
					   unsigned int *valA,
					   unsigned int *keyB,
					   unsigned int *valB, unsigned int dir)
{
	unsigned int t;

	if ((*keyA > *keyB) == dir) {
		t = *keyA;
		*keyA = *keyB;
		*keyB = t;
		t = *valA;
		*valA = *valB;
		*valB = t;
	}
}

__global__ void bitonic_sort(unsigned int *d_DstKey, unsigned int *d_DstVal,
			     const unsigned int *d_SrcKey,
			     const unsigned int *d_SrcVal, unsigned int dir)
{
	__shared__ unsigned int s_key[2 * MAX_SORT_BLOCK];
	__shared__ unsigned int s_val[2 * MAX_SORT_BLOCK];
	unsigned int arrayLength = 2 * blockDim.x;
	unsigned int offset = blockIdx.x * arrayLength + threadIdx.x;

	s_key[threadIdx.x + 0] = d_SrcKey[offset];
	s_val[threadIdx.x + 0] = d_SrcVal[offset];
	s_key[threadIdx.x + blockDim.x] = d_SrcKey[offset + blockDim.x];
	s_val[threadIdx.x + blockDim.x] = d_SrcVal[offset + blockDim.x];

	for (unsigned int size = 2; size < arrayLength; size <<= 1) {
		/* Bitonic merge */
		unsigned int ddd = dir ^ ((threadIdx.x & (size / 2)) != 0);

		for (unsigned int stride = size / 2; stride > 0; stride >>= 1) {
			__syncthreads();
			unsigned int pos =
				2 * threadIdx.x - (threadIdx.x & (stride - 1));
			comparator(&s_key[pos + 0], &s_val[pos + 0],
				   &s_key[pos + stride], &s_val[pos + stride],
				   ddd);
		}
	}

	/* ddd == dir for the last bitonic merge step */
	for (unsigned int stride = arrayLength / 2; stride > 0; stride >>= 1) {
		__syncthreads();
		unsigned int pos =
			2 * threadIdx.x - (threadIdx.x & (stride - 1));
		comparator(&s_key[pos + 0], &s_val[pos + 0],
			   &s_key[pos + stride], &s_val[pos + stride], dir);
	}

	__syncthreads();
	d_DstKey[offset] = s_key[threadIdx.x + 0];
	d_DstVal[offset] = s_val[threadIdx.x + 0];
	d_DstKey[offset + blockDim.x] = s_key[threadIdx.x + blockDim.x];
	d_DstVal[offset + blockDim.x] = s_val[threadIdx.x + blockDim.x];
}

/* Block b sorts its blockDim.x keys of a[] ascending, in place. */
__global__ void odd_even_sort(int *a, int n)
{
	int base = blockIdx.x * blockDim.x;
	int i = threadIdx.x;

	for (int phase = 0; phase < blockDim.x; phase++) {
		if ((i & 1) == (phase & 1) && i + 1 < blockDim.x &&
		    base + i + 1 < n && a[base + i] > a[base + i + 1]) {
			int t = a[base + i];

			a[base + i] = a[base + i + 1];
			a[base + i + 1] = t;
		}
		__syncthreads();
	}
}

__global__ void spmv_csr_scalar(int num_rows, const int *ptr,
				const int *indices, const float *data,
				const float *x, float *y)
{
	int row = blockDim.x * blockIdx.x + threadIdx.x;

	if (row < num_rows) {
		float dot = 0;
		int row_start = ptr[row];
		int row_end = ptr[row + 1];

		for (int jj = row_start; jj < row_end; jj++)
			dot += data[jj] * x[indices[jj]];
		y[row] = dot;
	}
}

__global__ void spmv_csr_vector(int num_rows, const int *ptr,
				const int *indices, const float *data,
				const float *x, float *y)
{
	int thread_id = blockDim.x * blockIdx.x + threadIdx.x;
	int warp_id = thread_id / 32;
	int lane = thread_id & (32 - 1);
	int row = warp_id;
	float sum = 0;

	if (row < num_rows) {
		int row_start = ptr[row];
		int row_end = ptr[row + 1];

		for (int jj = row_start + lane; jj < row_end; jj += 32)
			sum += data[jj] * x[indices[jj]];
	}
	for (int offset = 16; offset > 0; offset /= 2)
		sum += __shfl_down_sync(FULL_MASK, sum, offset);
	if (lane == 0 && row < num_rows)
		y[row] = sum;
}
