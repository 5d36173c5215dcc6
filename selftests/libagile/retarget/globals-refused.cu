/*
 * globals-refused.cu - a __shared__ variable at file scope, which
 * agile-retarget refuses at its name (retarget-refused): declare it in
 * the kernel.
 */
__shared__ int file_scope_shared[64];

__global__ void uses_it(int *out)
{
	file_scope_shared[threadIdx.x] = (int)threadIdx.x;
	__syncthreads();
	out[threadIdx.x] = file_scope_shared[63 - threadIdx.x];
}
