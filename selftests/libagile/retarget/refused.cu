// SPDX-License-Identifier: MIT
/*
 * refused.cu - kernels agile-retarget must refuse, each with the line of
 * what it cannot translate (selftests/libagile/retarget-refused.c checks
 * the messages and lines; keep them where they are).
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

/* a barrier in a loop whose trip count depends on the thread */
__global__ void divergent_loop(float *data)
{
	for (int i = 0; i < threadIdx.x; i++) {
		data[threadIdx.x] += 1.0f;
		__syncthreads();
	}
}

/* threads that return early would miss the barrier that follows */
__global__ void return_before_barrier(float *data, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	data[i] *= 2.0f;
	__syncthreads();
	data[i] += 1.0f;
}

/* a barrier inside a switch */
__global__ void barrier_in_switch(float *data, int mode)
{
	switch (mode) {
	case 0:
		__syncthreads();
		break;
	default:
		break;
	}
	data[threadIdx.x] = 0.0f;
}

/* a barrier whose condition varies through a local */
__global__ void divergent_through_local(float *data)
{
	int odd = threadIdx.y & 1;

	if (odd) {
		__syncthreads();
	}
	data[threadIdx.x] = 1.0f;
}

/* thread-dependent through a struct member */
struct pair {
	int a, b;
};

__global__ void divergent_through_member(float *data)
{
	struct pair p;

	p.a = threadIdx.x;
	p.b = 0;
	while (p.a > p.b) {
		__syncthreads();
		p.b++;
	}
	data[threadIdx.x] = 1.0f;
}

/*
 * kernel parameters written, each at the write: p itself assigned,
 * incremented, through parentheses, its address taken; beside them,
 * writes through p (p[i] = , *p = , &p[i]) that are fine
 */
__global__ void param_assigned(float *p, float *q, float *r, float *s, int n)
{
	p[threadIdx.x] = 1.0f;
	*q = 2.0f;
	atomicAdd(&r[threadIdx.x], 1.0f);
	p = p + n;
	q++;
	(r) = 0;
	float **where = &s;

	**where = 3.0f;
}

/* a local assigned in a barrier loop's head and in a region */
__global__ void counter_assigned(float *data, int n)
{
	int s;

	for (s = n; s > 0; s--) {
		data[threadIdx.x] += 1.0f;
		__syncthreads();
		s = s - 1;
	}
}
