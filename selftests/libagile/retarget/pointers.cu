// SPDX-License-Identifier: MIT
/*
 * pointers.cu - writes through kernel parameters and pointer locals in
 * every form CUDA is written in, none of which assigns the pointer
 * itself, so agile-retarget must take them all (issue 31):
 *
 *	hist256   the common idiom atomicAdd(&bins[b], 1u) on a parameter
 *	forms     one slice of out[] per form: *local = where the local is
 *	          &p[i]; *(p + i) = ; __device__ helpers given &p[i] and
 *	          p + i; a cast of &p[i]; ++p[i] and p[i] += ; a local
 *	          pointer moved with += (a local may be); (*local)++; the
 *	          pointer local carried across a barrier; atomics on
 *	          &p[i] and on p itself
 *
 * retargetref.h's ref_pointer_forms says what forms leaves in out[];
 * retarget-pointers runs it through agile_launch, rt-retarget through
 * the runtime.
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

#define NR_FORMS 9
#define MAX_THREADS 1024

__global__ void hist256(const unsigned char *in, unsigned int n,
			unsigned int *bins)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		unsigned int b = in[i];

		atomicAdd(&bins[b], 1u);
	}
}

__device__ void put(unsigned int *where, unsigned int v)
{
	*where = v;
}

__device__ unsigned int get(const unsigned int *from)
{
	return *from;
}

/*
 * Block b owns out[b * NR_FORMS * nt ..], a slice of nt words per form
 * (zeroed by the caller); count[0] counts the threads, count[1 + t % 4]
 * sums in[] by t % 4.
 */
__global__ void forms(const unsigned int *in, unsigned int *out,
		      unsigned int *count)
{
	__shared__ unsigned int tile[MAX_THREADS];
	unsigned int nt = blockDim.x;
	unsigned int t = threadIdx.x;
	unsigned int base = blockIdx.x * nt * NR_FORMS;
	unsigned int *mine = &out[base + t];
	const unsigned int *src = in + blockIdx.x * nt;
	unsigned int *walk = out + base + 6 * nt;

	*mine = src[t] + 1;
	*(out + base + nt + t) = *(in + blockIdx.x * nt + t) + 2;
	put(&out[base + 2 * nt + t], get(&src[t]) + 3);
	put(out + base + 3 * nt + t, get(in + blockIdx.x * nt + t) + 4);
	*(unsigned int *)(void *)&out[base + 4 * nt + t] = src[t] ^ 0x5a5au;
	++out[base + 5 * nt + t];
	out[base + 5 * nt + t] += src[t];
	walk += t;
	*walk = src[t] * 3u;
	(*mine)++;
	tile[t] = *mine;
	__syncthreads();
	mine[7 * nt] = tile[nt - 1 - t];
	atomicAdd(count, 1u);
	atomicAdd(&count[1 + t % 4], src[t]);
	atomicAdd(&(out[base + 8 * nt + t]), t);
}
