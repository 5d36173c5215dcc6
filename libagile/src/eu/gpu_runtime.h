/* SPDX-License-Identifier: MIT */
/*
 * gpu_runtime.h - the HIP and CUDA driver API calls and constants
 * gpu_launch.c uses, written down once: gpu_launch.c declares and loads
 * them (dlopen, no vendor header), and gpu/runtime_check.c checks every
 * name and value against the vendor headers where they are installed
 * (`make -C libagile gpu`).
 */
#ifndef AGILE_GPU_RUNTIME_H
#define AGILE_GPU_RUNTIME_H

/* HIP (hip_runtime_api.h, ROCm 5.2).  hipError_t: 0 is hipSuccess. */
#define AGILE_HIP_HOST_REGISTER_PORTABLE 0x1 /* hipHostRegisterPortable */
#define AGILE_HIP_HOST_REGISTER_MAPPED 0x2 /* hipHostRegisterMapped */
#define AGILE_HIP_REGISTER_COARSE_GRAINED 0x8 /* never passed: docs/gpu.md */
#define AGILE_HIP_STREAM_NON_BLOCKING 0x1 /* hipStreamNonBlocking */
#define AGILE_HIP_ATTR_COOPERATIVE_LAUNCH \
	10 /* hipDeviceAttributeCooperativeLaunch */
#define AGILE_HIP_ATTR_MULTIPROCESSOR_COUNT \
	63 /* hipDeviceAttributeMultiprocessorCount */

/*
 * The calls: X(name after "hip") for required ones, OPT(name) for those a
 * runtime may lack (hipModuleLaunchCooperativeKernel: ROCm 6).
 */
#define AGILE_HIP_CALLS(X, OPT)                            \
	X(GetDeviceCount)                                  \
	X(SetDevice)                                       \
	X(DeviceGetAttribute)                              \
	X(HostRegister)                                    \
	X(HostUnregister)                                  \
	X(HostGetDevicePointer)                            \
	X(ModuleLoad)                                      \
	X(ModuleUnload)                                    \
	X(ModuleGetFunction)                               \
	X(ModuleOccupancyMaxActiveBlocksPerMultiprocessor) \
	X(ModuleLaunchKernel)                              \
	OPT(ModuleLaunchCooperativeKernel)                 \
	X(StreamCreateWithFlags)                           \
	X(StreamSynchronize)                               \
	X(StreamDestroy)

/* CUDA driver API (cuda.h).  CUresult: 0 is CUDA_SUCCESS. */
#define AGILE_CU_MEMHOSTREGISTER_PORTABLE 0x01 /* CU_MEMHOSTREGISTER_PORTABLE */
#define AGILE_CU_MEMHOSTREGISTER_DEVICEMAP \
	0x02 /* CU_MEMHOSTREGISTER_DEVICEMAP */
#define AGILE_CU_STREAM_NON_BLOCKING 0x1 /* CU_STREAM_NON_BLOCKING */
#define AGILE_CU_ATTR_MULTIPROCESSOR_COUNT \
	16 /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
#define AGILE_CU_ATTR_COOPERATIVE_LAUNCH \
	95 /* CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH */

/*
 * The calls: X(field, symbol).  The symbols are what cuda.h's macros
 * resolve to (the _v2 versions), which is what dlsym must ask for.
 */
#define AGILE_CUDA_CALLS(X)                                      \
	X(Init, cuInit)                                          \
	X(DeviceGetCount, cuDeviceGetCount)                      \
	X(DeviceGet, cuDeviceGet)                                \
	X(DeviceGetAttribute, cuDeviceGetAttribute)              \
	X(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)      \
	X(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2) \
	X(CtxSetCurrent, cuCtxSetCurrent)                        \
	X(MemHostRegister, cuMemHostRegister_v2)                 \
	X(MemHostUnregister, cuMemHostUnregister)                \
	X(MemHostGetDevicePointer, cuMemHostGetDevicePointer_v2) \
	X(ModuleLoad, cuModuleLoad)                              \
	X(ModuleUnload, cuModuleUnload)                          \
	X(ModuleGetFunction, cuModuleGetFunction)                \
	X(OccupancyMaxActiveBlocksPerMultiprocessor,             \
	  cuOccupancyMaxActiveBlocksPerMultiprocessor)           \
	X(LaunchKernel, cuLaunchKernel)                          \
	X(LaunchCooperativeKernel, cuLaunchCooperativeKernel)    \
	X(StreamCreate, cuStreamCreate)                          \
	X(StreamSynchronize, cuStreamSynchronize)                \
	X(StreamDestroy, cuStreamDestroy_v2)

/* ---- probing (gpu.c): which library, which device, which code ---- */
#include <stddef.h>

/*
 * The runtime libraries by soname family, newest first: a process runs
 * whichever ROCm or NVIDIA driver is installed, not the one agile was
 * built beside.  HIP is also looked for in $ROCM_PATH/lib and
 * /opt/rocm/lib (ROCm 6 and 7 install there and not always in ld.so's
 * path).  CUDA is the driver API only (libcuda, installed with the
 * driver): the runtime API's libcudart.so.N is tied to one toolkit and
 * refuses an older driver (error 35), which says nothing of the GPU.
 */
#define AGILE_HIP_LIB_NAMES                                                 \
	{                                                                   \
		"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", \
			"libamdhip64.so", NULL                              \
	}
#define AGILE_CUDA_LIB_NAMES                       \
	{                                          \
		"libcuda.so.1", "libcuda.so", NULL \
	}
#define AGILE_HIP_LIB_DEFAULT_DIR "/opt/rocm/lib"

/* A CUDA device's architecture, sm_<major><minor>. */
#define AGILE_CU_ATTR_COMPUTE_MAJOR \
	75 /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
#define AGILE_CU_ATTR_COMPUTE_MINOR \
	76 /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR */

/*
 * Beside each code object, `make gpu` writes the targets it holds, one
 * line, e.g. "gfx908 gfx90a gfx1030" or "sm_80 sm_90 compute_90": the
 * probe compares them with the device's architecture.
 */
#define AGILE_GPU_TARGETS_HIP "agile-gpu-hip.targets"
#define AGILE_GPU_TARGETS_CUDA "agile-gpu-cuda.targets"

/*
 * agile__gpu_lib_open - dlopen the first library of @names (NULL
 * terminated) found: one already loaded in the process first (an
 * application's own runtime is the one to share), then each name in turn,
 * newest first, in ld.so's path and then in each of @dirs (NULL
 * terminated; NULL or empty entries skipped).  Returns the handle with the name or path that
 * answered in @loaded (@len bytes), or NULL.  Never unloaded.
 */
void *agile__gpu_lib_open(const char *const *names, const char *const *dirs,
			  char *loaded, size_t len);

/*
 * agile__gpu_arch_covered - whether code built for @targets (the line of
 * a .targets file) runs on a device of architecture @arch: an AMD
 * "gfxNNN" needs its own ISA; an NVIDIA "sm_XY" runs SASS of sm_XZ with
 * Z <= Y (same major) or JIT-compiles PTX of compute_AB with AB <= XY.
 */
int agile__gpu_arch_covered(const char *arch, const char *targets);

/*
 * agile__gpu_gfx_name - the ISA name of a KFD topology node's
 * gfx_target_version (major * 10000 + minor * 100 + stepping; 90402 is
 * "gfx942", 90010 "gfx90a"), into @name (@len bytes).
 */
void agile__gpu_gfx_name(unsigned int version, char *name, size_t len);
/* ---- end of probing ---- */

/*
 * ---- liveness and headroom (issue 14: gpu_launch.c's waits, stop and
 * start checks; one block, kept apart from the probe's entries) ----
 */
#define AGILE_HIP_ERROR_NOT_READY 600 /* hipErrorNotReady */
#define AGILE_HIP_ATTR_KERNEL_EXEC_TIMEOUT \
	18 /* hipDeviceAttributeKernelExecTimeout */
#define AGILE_CU_ERROR_NOT_READY 600 /* CUDA_ERROR_NOT_READY */
#define AGILE_CU_ATTR_KERNEL_EXEC_TIMEOUT \
	17 /* CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT */
/* hipStreamQuery: hipSuccess (ended), hipErrorNotReady (runs), an error. */
#define AGILE_HIP_LIVENESS_CALLS(X, OPT) \
	X(StreamQuery)                   \
	OPT(GetErrorString)
/* cuGetErrorString: CUresult (CUresult, const char **). */
#define AGILE_CUDA_LIVENESS_CALLS(X)  \
	X(StreamQuery, cuStreamQuery) \
	X(GetErrorString, cuGetErrorString)
/* ---- end of issue 14's block ---- */

/*
 * ---- code images built at run time (issue 15: src/runtime/compile_rtc.c
 * makes them, gpu_launch.c loads them; one block) ----
 */
#define AGILE_HIP_CODE_CALLS(X) X(ModuleLoadData)
#define AGILE_CUDA_CODE_CALLS(X) X(ModuleLoadData, cuModuleLoadData)
/* ---- end of issue 15's block ---- */

#endif /* AGILE_GPU_RUNTIME_H */
