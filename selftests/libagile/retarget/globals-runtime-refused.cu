// SPDX-License-Identifier: MIT
/*
 * globals-runtime-refused.cu - file-scope variables --emit=runtime does
 * not put in the globals' struct, each refused at its name or its
 * initialiser (retarget-refused checks the lines; keep them where they
 * are): an extern one, a struct, a pointer, an initialiser that is not
 * a constant.  --emit=launch takes them.
 */
struct pair {
	int a, b;
};

extern __device__ int defined_elsewhere;
__device__ struct pair a_pair;
__device__ float *a_pointer;
__device__ int five = 5;
__device__ int six = five + 1;

__global__ void uses_them(int *out)
{
	out[threadIdx.x] = defined_elsewhere + a_pair.a + (int)*a_pointer + six;
}

/* nine parameters and the globals' word: ten */
__global__ void nine_params(int *out, int a, int b, int c, int d, int e, int f,
			    int g, int h)
{
	out[threadIdx.x] = a + b + c + d + e + f + g + h + five;
}
