/* SPDX-License-Identifier: MIT */
/*
 * cuda_prelude.h - what agile-retarget's parser sees of CUDA and HIP
 *
 * The translator parses a .cu/.hip file as C++ with this header included
 * first (-include), so no CUDA or ROCm installation is needed: the
 * execution-space and memory-space keywords become annotations the
 * translator reads back, the built-in variables and functions are
 * declared here.  Nothing here is ever compiled into code: the translator
 * emits C of its own (emit.c) from the kernel's source text.
 */
#ifndef AGILE_RETARGET_CUDA_PRELUDE_H
#define AGILE_RETARGET_CUDA_PRELUDE_H

/* glibc declares __expf and friends itself */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define __global__ __attribute__((annotate("agile_global")))
#define __device__ __attribute__((annotate("agile_device")))
#define __shared__ __attribute__((annotate("agile_shared")))
#define __constant__ __attribute__((annotate("agile_constant")))
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __launch_bounds__(...)

struct uint3 {
	unsigned int x, y, z;
};
struct dim3 {
	unsigned int x, y, z;
	dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
		: x(vx)
		, y(vy)
		, z(vz)
	{
	}
};
extern const uint3 threadIdx;
extern const uint3 blockIdx;
extern const dim3 blockDim;
extern const dim3 gridDim;
extern const int warpSize;

/* HIP's older spellings of the built-in variables. */
#define hipThreadIdx_x (threadIdx.x)
#define hipThreadIdx_y (threadIdx.y)
#define hipThreadIdx_z (threadIdx.z)
#define hipBlockIdx_x (blockIdx.x)
#define hipBlockIdx_y (blockIdx.y)
#define hipBlockIdx_z (blockIdx.z)
#define hipBlockDim_x (blockDim.x)
#define hipBlockDim_y (blockDim.y)
#define hipBlockDim_z (blockDim.z)
#define hipGridDim_x (gridDim.x)
#define hipGridDim_y (gridDim.y)
#define hipGridDim_z (gridDim.z)

/*
 * CUDA's vector types with its sizes and alignments (float4 16 bytes,
 * 16-aligned; float3 12, 4-aligned), so sizeof reads as on the GPU, and
 * their make_ constructors; uint3 is threadIdx's, above.
 */
#define AGILE_VEC2(type, name, align) \
	struct alignas(align) name    \
	{                             \
		type x, y;            \
	};                            \
	name make_##name(type x, type y);
#define AGILE_VEC3(type, name) \
	struct name {          \
		type x, y, z;  \
	};                     \
	name make_##name(type x, type y, type z);
#define AGILE_VEC4(type, name, align) \
	struct alignas(align) name    \
	{                             \
		type x, y, z, w;      \
	};                            \
	name make_##name(type x, type y, type z, type w);
AGILE_VEC2(float, float2, 8)
AGILE_VEC3(float, float3)
AGILE_VEC4(float, float4, 16)
AGILE_VEC2(int, int2, 8)
AGILE_VEC3(int, int3)
AGILE_VEC4(int, int4, 16)
AGILE_VEC2(unsigned int, uint2, 8)
uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z);
AGILE_VEC4(unsigned int, uint4, 16)
AGILE_VEC4(unsigned char, uchar4, 4)
AGILE_VEC2(double, double2, 16)
#undef AGILE_VEC2
#undef AGILE_VEC3
#undef AGILE_VEC4

/*
 * The intrinsics <agile/retarget.h> defines; glibc's <math.h> declares
 * __expf, __logf, __sinf, __cosf, __powf and the like itself.
 */
int __popc(unsigned int x);
int __popcll(unsigned long long x);
int __clz(int x);
int __clzll(long long x);
int __ffs(int x);
int __ffsll(long long x);
unsigned int __brev(unsigned int x);
unsigned long long __brevll(unsigned long long x);
unsigned int __umulhi(unsigned int x, unsigned int y);
int __mulhi(int x, int y);
unsigned long long __umul64hi(unsigned long long x, unsigned long long y);
long long __mul64hi(long long x, long long y);
int __mul24(int x, int y);
unsigned int __umul24(unsigned int x, unsigned int y);
float __saturatef(float x);
float __fadd_rn(float x, float y);
float __fmul_rn(float x, float y);
float __fmaf_rn(float x, float y, float z);
template <typename T> T __ldg(const T *address);

/* The block barrier (CUDA and HIP spell it alike). */
void __syncthreads(void);
/* Fences and the trap: no barrier, handled by emit.c. */
void __threadfence(void);
void __threadfence_block(void);
void __threadfence_system(void);
void __trap(void);

/*
 * The atomics: T from the address alone, the value converted to it as
 * CUDA's overloads do (atomicAdd(&unsigned_bin, 1) is CUDA's unsigned
 * one; <agile/retarget.h> converts the same way).
 */
template <typename T> struct agile_same {
	typedef T type;
};
template <typename T> T atomicAdd(T *address, typename agile_same<T>::type val);
template <typename T> T atomicSub(T *address, typename agile_same<T>::type val);
template <typename T>
T atomicExch(T *address, typename agile_same<T>::type val);
template <typename T> T atomicMin(T *address, typename agile_same<T>::type val);
template <typename T> T atomicMax(T *address, typename agile_same<T>::type val);
template <typename T> T atomicAnd(T *address, typename agile_same<T>::type val);
template <typename T> T atomicOr(T *address, typename agile_same<T>::type val);
template <typename T> T atomicXor(T *address, typename agile_same<T>::type val);
template <typename T>
T atomicCAS(T *address, typename agile_same<T>::type compare,
	    typename agile_same<T>::type val);
unsigned int atomicInc(unsigned int *address, unsigned int val);
unsigned int atomicDec(unsigned int *address, unsigned int val);

/*
 * Warp-level primitives, CUDA's 32-lane forms (warp.c lowers them; the
 * width's default is CUDA's).
 */
template <typename T>
T __shfl_sync(unsigned int mask, T var, int srcLane, int width = warpSize);
template <typename T>
T __shfl_up_sync(unsigned int mask, T var, unsigned int delta,
		 int width = warpSize);
template <typename T>
T __shfl_down_sync(unsigned int mask, T var, unsigned int delta,
		   int width = warpSize);
template <typename T>
T __shfl_xor_sync(unsigned int mask, T var, int laneMask, int width = warpSize);
unsigned int __ballot_sync(unsigned int mask, int predicate);
int __any_sync(unsigned int mask, int predicate);
int __all_sync(unsigned int mask, int predicate);
unsigned int __activemask(void);
void __syncwarp(unsigned int mask = 0xffffffffu);

template <typename T> T min(T a, T b);
template <typename T> T max(T a, T b);
float rsqrtf(float x);
float __fdividef(float x, float y);

/*
 * Cooperative groups, the subset the translator maps (inline.c, coop.c;
 * docs/retarget.md): the calls are rewritten before the translation, so
 * only their declarations are here.  <cooperative_groups.h> is empty.
 */
namespace cooperative_groups
{
class thread_block {
    public:
	void sync() const;
	unsigned int thread_rank() const;
	unsigned int size() const;
	unsigned int num_threads() const;
	dim3 group_index() const;
	dim3 thread_index() const;
	dim3 group_dim() const;
	dim3 dim_threads() const;
};
template <unsigned int N> class thread_block_tile {
    public:
	void sync() const;
	unsigned int thread_rank() const;
	unsigned int size() const;
	unsigned int num_threads() const;
	unsigned int meta_group_rank() const;
	unsigned int meta_group_size() const;
	template <class T> T shfl(T var, int src_rank) const;
	template <class T> T shfl_down(T var, unsigned int delta) const;
	template <class T> T shfl_up(T var, unsigned int delta) const;
	template <class T> T shfl_xor(T var, unsigned int mask) const;
	int any(int predicate) const;
	int all(int predicate) const;
	unsigned int ballot(int predicate) const;
};
class thread_group {
    public:
	void sync() const;
	unsigned int thread_rank() const;
	unsigned int size() const;
};
class grid_group {
    public:
	void sync() const;
	unsigned long long thread_rank() const;
	unsigned long long size() const;
};
class coalesced_group {
    public:
	void sync() const;
	unsigned int thread_rank() const;
	unsigned int size() const;
};
thread_block this_thread_block();
grid_group this_grid();
coalesced_group coalesced_threads();
template <unsigned int N>
thread_block_tile<N> tiled_partition(const thread_block &parent);
thread_group tiled_partition(const thread_group &parent, unsigned int size);
thread_group tiled_partition(const thread_block &parent, unsigned int size);
void sync(const thread_block &group);
template <unsigned int N> void sync(const thread_block_tile<N> &group);
void sync(const grid_group &group);
void sync(const thread_group &group);
} // namespace cooperative_groups

#endif /* AGILE_RETARGET_CUDA_PRELUDE_H */
