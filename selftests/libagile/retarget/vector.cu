/*
 * vector.cu - CUDA's vector types as kernels are written with them
 * (issue 31): float4 loads and stores through parameters, make_float4
 * and friends, .x .y .z .w, float4 and double2 in __shared__ memory, a
 * float2 local carried across a barrier, and sizeof/__alignof__ as the
 * GPU has them.
 *
 *	saxpy4      y = a x + y, four floats a thread (the vectorised form
 *	            of the SDK's saxpy), __restrict__ parameters
 *	vec_reverse each block reverses its float4s through a __shared__
 *	            tile, swapping components; a float2 crosses the barrier;
 *	            a __shared__ double2 sum of int2, uint4, uchar4
 *	vec_sizes   the sizes and alignments of the types, by one thread
 *
 * retargetref.h's ref_vector_* say what they leave; retarget-vector runs
 * them through agile_launch, rt-retarget through the runtime.
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

#define MAX_THREADS 256

__global__ void saxpy4(int n4, float a, const float4 *__restrict__ x,
		       float4 *__restrict__ y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n4) {
		float4 xi = x[i];
		float4 yi = y[i];

		yi.x = a * xi.x + yi.x;
		yi.y = a * xi.y + yi.y;
		yi.z = a * xi.z + yi.z;
		yi.w = a * xi.w + yi.w;
		y[i] = yi;
	}
}

__device__ __forceinline__ float4 swizzle(float4 v)
{
	return make_float4(v.w, v.z, v.y, v.x);
}

/*
 * Block b: out[b nt + t] is the swizzled in[b nt + nt - 1 - t], plus the
 * thread's own float2 (x + y, z - w of its own in[]) added to .x and .y;
 * sums[b nt + t] is the double2 of its int2, uint4 and uchar4 inputs.
 */
__global__ void vec_reverse(const float4 *in, float4 *out, const int2 *a,
			    const uint4 *b, const uchar4 *c, double2 *sums)
{
	__shared__ float4 tile[MAX_THREADS];
	__shared__ double2 acc[MAX_THREADS];
	unsigned int t = threadIdx.x;
	unsigned int g = blockIdx.x * blockDim.x + t;
	float4 v = in[g];
	float2 own = make_float2(v.x + v.y, v.z - v.w);
	int2 ai = a[g];
	uint4 bi = b[g];
	uchar4 ci = c[g];

	tile[t] = swizzle(v);
	acc[t] = make_double2((double)ai.x * bi.w + ci.x + ci.y,
			      (double)ai.y * bi.z - bi.x - bi.y + ci.z * ci.w);
	__syncthreads();
	float4 r = tile[blockDim.x - 1 - t];

	r.x += own.x;
	r.y += own.y;
	out[g] = r;
	sums[g] = acc[t];
}

__global__ void vec_sizes(int4 *sizes)
{
	if (threadIdx.x == 0 && blockIdx.x == 0) {
		sizes[0] = make_int4(sizeof(float2), sizeof(float3),
				     sizeof(float4), sizeof(double2));
		sizes[1] = make_int4(__alignof__(float2), __alignof__(float3),
				     __alignof__(float4), __alignof__(double2));
		sizes[2] = make_int4(sizeof(int2), sizeof(int3), sizeof(int4),
				     sizeof(uchar4));
		sizes[3] = make_int4(__alignof__(int2), __alignof__(int3),
				     __alignof__(int4), __alignof__(uchar4));
		sizes[4] = make_int4(sizeof(uint2), sizeof(uint4),
				     __alignof__(uint2), __alignof__(uint4));
	}
}
