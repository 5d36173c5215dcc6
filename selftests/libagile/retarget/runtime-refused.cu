// SPDX-License-Identifier: MIT
/*
 * runtime-refused.cu - kernels agile-retarget translates for agile_launch
 * but must refuse with --emit=runtime, which the runtime's argument words
 * cannot carry (selftests/libagile/retarget-refused.c checks the messages
 * and lines; keep them where they are).
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

/* ten parameters: the runtime passes nine beside the block's three words */
__global__ void ten_params(float *out, int a, int b, int c, int d, int e, int f,
			   int g, int h, int i)
{
	out[threadIdx.x] = (float)(a + b + c + d + e + f + g + h + i);
}

struct pair {
	int a, b;
};

/* a struct by value fits no argument word */
__global__ void by_value(int *out, struct pair p)
{
	out[threadIdx.x] = p.a + p.b;
}

/* nine parameters and extern __shared__ sized at launch: ten words */
__global__ void nine_and_dynamic(float *out, int a, int b, int c, int d, int e,
				 int f, int g, int h)
{
	extern __shared__ float dyn[];

	dyn[threadIdx.x] = (float)(a + b + c + d + e + f + g + h);
	out[threadIdx.x] = dyn[threadIdx.x];
}
