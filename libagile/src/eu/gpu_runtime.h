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

#endif /* AGILE_GPU_RUNTIME_H */
