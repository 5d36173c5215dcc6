/*
 * intrinsics.cu - the integer and float intrinsics CUDA kernels use
 * (issue 31), each result stored for the test to check against its
 * documented meaning (retargetbuiltins.h):
 *
 *	bits    __popc, __popcll, __clz, __clzll, __ffs, __ffsll, __brev,
 *	        __brevll, __umulhi, __mulhi, __umul64hi, __mul64hi, __mul24,
 *	        __umul24, loaded through __ldg
 *	fmath   fmaf, fminf, fmaxf, __saturatef, __fdividef, __fadd_rn,
 *	        __fmul_rn, __fmaf_rn, rsqrtf and the fast-math __expf,
 *	        __logf, __sinf, __cosf, __powf (the C library's values on
 *	        the CPU; on a GPU its approximations, not checked there),
 *	        in a __forceinline__ helper
 *
 * retarget-intrinsics runs them through agile_launch, rt-retarget
 * through the runtime.
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

#define NR_BITS 14
#define NR_FMATH 14

__global__ void bits(const unsigned int *__restrict__ in,
		     const unsigned long long *__restrict__ in64, int *out,
		     unsigned int n)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	unsigned int v = __ldg(&in[i]);
	unsigned long long w = __ldg(in64 + i);
	int *o = &out[i * NR_BITS];

	o[0] = __popc(v);
	o[1] = __popcll(w);
	o[2] = __clz((int)v);
	o[3] = __clzll((long long)w);
	o[4] = __ffs((int)v);
	o[5] = __ffsll((long long)w);
	o[6] = (int)__brev(v);
	o[7] = (int)(__brevll(w) >> 20);
	o[8] = (int)__umulhi(v, 2654435761u);
	o[9] = __mulhi((int)v, -7);
	o[10] = (int)(__umul64hi(w, 0x9e3779b97f4a7c15ull) >> 16);
	o[11] = (int)__mul64hi((long long)w, -3ll);
	o[12] = __mul24((int)v, (int)(v >> 7));
	o[13] = (int)__umul24(v, v >> 3);
}

__device__ __forceinline__ float fast(float a, float b)
{
	/* no a * b + c: a compiler may contract it to an fma, or not */
	return __expf(a) + __logf(fabsf(b) + 1.0f) + (__sinf(a) - __cosf(b)) +
	       __powf(fabsf(a) + 0.5f, b);
}

__global__ void fmath(const float *x, const float *y, const float *z,
		      float *out, unsigned int n)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		float a = x[i], b = y[i], c = z[i];
		float *o = out + i * NR_FMATH;

		o[0] = fmaf(a, b, c);
		o[1] = fminf(a, b);
		o[2] = fmaxf(a, b);
		o[3] = __saturatef(a);
		o[4] = __fdividef(a, b);
		o[5] = __fadd_rn(a, b);
		o[6] = __fmul_rn(a, b);
		o[7] = __fmaf_rn(a, b, c);
		o[8] = rsqrtf(fabsf(a));
		o[9] = __expf(a);
		o[10] = __logf(fabsf(b));
		o[11] = __sinf(a);
		o[12] = __cosf(b);
		o[13] = fast(a, b);
	}
}
