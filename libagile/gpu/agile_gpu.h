/* SPDX-License-Identifier: MIT */
/*
 * agile_gpu.h - the portability layer of the persistent GPU kernel
 *
 * One source (persistent.cu) compiles with hipcc -x hip for AMD and with
 * nvcc for NVIDIA.  HIP's own NVIDIA headers in Debian 12 (ROCm 5.2) do not
 * compile under CUDA 13, so instead of hip_runtime.h on both sides this
 * header maps the few things the kernel and its launcher need onto each
 * vendor's own API:
 *
 *	agile_gpu_load_relaxed_sys / agile_gpu_store_relaxed_sys
 *		32-bit atomic loads and stores with system scope and no
 *		ordering (the doorbell, which a CPU thread writes and reads
 *		through host-registered pages): never cached on the way, so
 *		a poll sees the CPU's store, and no cache maintenance each
 *		time
 *	agile_gpu_fence_acquire_sys / agile_gpu_fence_release_sys
 *		the one system-scope fence after a poll saw POSTED, and the
 *		one before the store of IDLE
 *	agile_gpu_barrier, agile_gpu_backoff
 *	agile_gpu_lane, agile_gpu_group, agile_gpu_nr_lanes
 *	agile_gpu* host calls: device attributes, occupancy, cooperative launch
 *
 * Outside hipcc/nvcc only struct agile_gpu_params and the launcher's
 * declaration are visible, so C host code can include it too.  Under
 * AGILE_GPU_RTC (hiprtc, NVRTC: src/runtime/compile_rtc.c) only the device
 * side is: the runtime compilers build no host code.
 */
#ifndef AGILE_GPU_AGILE_GPU_H
#define AGILE_GPU_AGILE_GPU_H

#include <stdint.h>

#include <linux/agile.h>

/* Common kernels the GPU runs (kernels_body.h: AGILE_COMMON_NR). */
#define AGILE_GPU_NR_COMMON 2
/*
 * User kernels a runtime-compiled persistent kernel may carry
 * (kernels_body.h: AGILE_USER_NR_MAX; docs/runtime.md): their
 * opcodes follow the common kernels' in agile_gpu_params.opcodes.
 */
#define AGILE_GPU_NR_USER 16
#define AGILE_GPU_NR_KERNELS (AGILE_GPU_NR_COMMON + AGILE_GPU_NR_USER)

/**
 * struct agile_gpu_params - what the persistent kernel is launched with
 * @doorbells:     device address of the doorbell area (host-registered)
 * @task_regs:     device address of the task-register area
 * @task_reg_size: bytes per task register
 * @nr_eus:        EUs = work-groups = slots 0 .. nr_eus - 1
 * @opcodes:       the registry opcode given to each common kernel
 *                 (AGILE_COMMON_*), then to each user kernel compiled
 *                 in (AGILE_COMMON_NR + i), 0 when it is not registered
 */
struct agile_gpu_params {
	struct agile_doorbell *doorbells;
	unsigned char *task_regs;
	uint32_t task_reg_size;
	uint32_t nr_eus;
	uint32_t opcodes[AGILE_GPU_NR_KERNELS];
};

#ifndef AGILE_GPU_RTC
#ifdef __cplusplus
extern "C" {
#endif
/**
 * agile_gpu_launch - start the persistent kernel, one work-group per EU
 * @params:   the areas and the opcode table (copied into the launch)
 * @nr_lanes: threads per work-group, 1 .. AGILE_MAX_LANES
 * @stream:   hipStream_t / cudaStream_t, NULL for the default stream
 *
 * Cooperative launch, so every EU is resident at once.  Returns 0, or
 * -EINVAL (bad parameters), -ENODEV (no device, or it cannot launch
 * cooperatively), -ENOSPC (more EUs than work-groups fit at once) or -EIO
 * (the runtime refused the launch).  The kernel runs until every EU has
 * taken AGILE_OP_DISCONNECT.
 */
int agile_gpu_launch(const struct agile_gpu_params *params, uint32_t nr_lanes,
		     void *stream);
#ifdef __cplusplus
}
#endif
#endif /* !AGILE_GPU_RTC */

#if defined(__HIPCC__) || defined(__CUDACC__)

#if defined(__HIPCC__)
#ifndef AGILE_GPU_RTC /* hiprtc brings its own */
#include <hip/hip_runtime.h>
#endif

#define AGILE_GPU_VENDOR "hip"

static __device__ inline uint32_t agile_gpu_load_relaxed_sys(uint32_t *p)
{
	return __hip_atomic_load(p, __ATOMIC_RELAXED,
				 __HIP_MEMORY_SCOPE_SYSTEM);
}

static __device__ inline void agile_gpu_store_relaxed_sys(uint32_t *p,
							  uint32_t v)
{
	__hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}

/* Sync scope "" is the system scope of clang's AMDGPU memory model. */
static __device__ inline void agile_gpu_fence_acquire_sys(void)
{
	__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "");
}

static __device__ inline void agile_gpu_fence_release_sys(void)
{
	__builtin_amdgcn_fence(__ATOMIC_RELEASE, "");
}

/* One polling round's pause: s_sleep takes a constant (64 clocks each). */
static __device__ inline void agile_gpu_backoff(uint32_t round)
{
	if (round < 16)
		__builtin_amdgcn_s_sleep(1);
	else
		__builtin_amdgcn_s_sleep(32);
}

#ifndef AGILE_GPU_RTC
typedef hipError_t agile_gpu_error_t;
typedef hipStream_t agile_gpu_stream_t;
#define agile_gpu_success hipSuccess
#define agile_gpu_get_device hipGetDevice
#define agile_gpu_dev_attr hipDeviceGetAttribute
#define AGILE_GPU_ATTR_SMS hipDeviceAttributeMultiprocessorCount
#define AGILE_GPU_ATTR_COOP hipDeviceAttributeCooperativeLaunch
#define agile_gpu_occupancy hipOccupancyMaxActiveBlocksPerMultiprocessor
#define agile_gpu_launch_coop hipLaunchCooperativeKernel
#endif /* !AGILE_GPU_RTC */

#else /* __CUDACC__ */
#include <cuda/atomic>
#ifndef AGILE_GPU_RTC /* NVRTC compiles device code only */
#include <cuda_runtime.h>
#endif

#define AGILE_GPU_VENDOR "cuda"

static __device__ inline uint32_t agile_gpu_load_relaxed_sys(uint32_t *p)
{
	cuda::atomic_ref<uint32_t, cuda::thread_scope_system> a(*p);

	return a.load(cuda::memory_order_relaxed);
}

static __device__ inline void agile_gpu_store_relaxed_sys(uint32_t *p,
							  uint32_t v)
{
	cuda::atomic_ref<uint32_t, cuda::thread_scope_system> a(*p);

	a.store(v, cuda::memory_order_relaxed);
}

static __device__ inline void agile_gpu_fence_acquire_sys(void)
{
	cuda::atomic_thread_fence(cuda::memory_order_acquire,
				  cuda::thread_scope_system);
}

static __device__ inline void agile_gpu_fence_release_sys(void)
{
	cuda::atomic_thread_fence(cuda::memory_order_release,
				  cuda::thread_scope_system);
}

/* One polling round's pause: short at first, then about a microsecond. */
static __device__ inline void agile_gpu_backoff(uint32_t round)
{
	__nanosleep(round < 16 ? 32 : 1000);
}

#ifndef AGILE_GPU_RTC
typedef cudaError_t agile_gpu_error_t;
typedef cudaStream_t agile_gpu_stream_t;
#define agile_gpu_success cudaSuccess
#define agile_gpu_get_device cudaGetDevice
#define agile_gpu_dev_attr cudaDeviceGetAttribute
#define AGILE_GPU_ATTR_SMS cudaDevAttrMultiProcessorCount
#define AGILE_GPU_ATTR_COOP cudaDevAttrCooperativeLaunch
#define agile_gpu_occupancy cudaOccupancyMaxActiveBlocksPerMultiprocessor
#define agile_gpu_launch_coop cudaLaunchCooperativeKernel
#endif /* !AGILE_GPU_RTC */

#endif /* vendor */

/* The work-group barrier (and block-scope fence) between phases. */
static __device__ inline void agile_gpu_barrier(void)
{
	__syncthreads();
}

static __device__ inline uint32_t agile_gpu_lane(void)
{
	return threadIdx.x;
}

static __device__ inline uint32_t agile_gpu_nr_lanes(void)
{
	return blockDim.x;
}

/* The work-group's index: EU k, slot k. */
static __device__ inline uint32_t agile_gpu_group(void)
{
	return blockIdx.x;
}

#endif /* __HIPCC__ || __CUDACC__ */

#endif /* AGILE_GPU_AGILE_GPU_H */
