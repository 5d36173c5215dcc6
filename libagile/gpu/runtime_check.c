// SPDX-License-Identifier: MIT
/*
 * runtime_check.c - compile only: every call and constant
 * src/eu/gpu_runtime.h names for src/eu/gpu_launch.c, against the vendor's own
 * header.  gpu_launch.c includes no vendor header (libagile must build
 * and run without them); this is where a renamed symbol or a renumbered
 * enum would show.  Built by `make -C libagile gpu` with -DAGILE_CHECK_HIP
 * (hip_runtime_api.h) or -DAGILE_CHECK_CUDA (cuda.h).
 */
#include "eu/gpu_runtime.h"

#if defined(AGILE_CHECK_HIP)
#include <hip/hip_runtime_api.h>

#define CHECK_CALL(f) (void)&hip##f;
#define OPTIONAL_CALL(f) /* not in every ROCm: looked up at run time */

_Static_assert(AGILE_HIP_HOST_REGISTER_PORTABLE == hipHostRegisterPortable,
	       "hipHostRegisterPortable");
_Static_assert(AGILE_HIP_HOST_REGISTER_MAPPED == hipHostRegisterMapped,
	       "hipHostRegisterMapped");
_Static_assert(AGILE_HIP_REGISTER_COARSE_GRAINED ==
		       hipExtHostRegisterCoarseGrained,
	       "hipExtHostRegisterCoarseGrained");
_Static_assert(AGILE_HIP_STREAM_NON_BLOCKING == hipStreamNonBlocking,
	       "hipStreamNonBlocking");
_Static_assert(AGILE_HIP_ATTR_COOPERATIVE_LAUNCH ==
		       (int)hipDeviceAttributeCooperativeLaunch,
	       "hipDeviceAttributeCooperativeLaunch");
_Static_assert(AGILE_HIP_ATTR_MULTIPROCESSOR_COUNT ==
		       (int)hipDeviceAttributeMultiprocessorCount,
	       "hipDeviceAttributeMultiprocessorCount");
_Static_assert(AGILE_HIP_ERROR_NOT_READY == (int)hipErrorNotReady,
	       "hipErrorNotReady");
_Static_assert(AGILE_HIP_ATTR_KERNEL_EXEC_TIMEOUT ==
		       (int)hipDeviceAttributeKernelExecTimeout,
	       "hipDeviceAttributeKernelExecTimeout");

void agile_gpu_runtime_check(void);
void agile_gpu_runtime_check(void)
{
	AGILE_HIP_CALLS(CHECK_CALL, OPTIONAL_CALL)
	AGILE_HIP_LIVENESS_CALLS(CHECK_CALL, OPTIONAL_CALL)
	AGILE_HIP_CODE_CALLS(CHECK_CALL)
}

#elif defined(AGILE_CHECK_CUDA)
#include <cuda.h>

#define CHECK_CALL(field, sym) (void)&sym;

_Static_assert(AGILE_CU_MEMHOSTREGISTER_PORTABLE == CU_MEMHOSTREGISTER_PORTABLE,
	       "CU_MEMHOSTREGISTER_PORTABLE");
_Static_assert(AGILE_CU_MEMHOSTREGISTER_DEVICEMAP ==
		       CU_MEMHOSTREGISTER_DEVICEMAP,
	       "CU_MEMHOSTREGISTER_DEVICEMAP");
_Static_assert(AGILE_CU_STREAM_NON_BLOCKING == (int)CU_STREAM_NON_BLOCKING,
	       "CU_STREAM_NON_BLOCKING");
_Static_assert(AGILE_CU_ATTR_MULTIPROCESSOR_COUNT ==
		       (int)CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
	       "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT");
_Static_assert(AGILE_CU_ATTR_COOPERATIVE_LAUNCH ==
		       (int)CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH,
	       "CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH");
_Static_assert(AGILE_CU_ERROR_NOT_READY == (int)CUDA_ERROR_NOT_READY,
	       "CUDA_ERROR_NOT_READY");
_Static_assert(AGILE_CU_ATTR_KERNEL_EXEC_TIMEOUT ==
		       (int)CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT,
	       "CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT");

void agile_gpu_runtime_check(void);
void agile_gpu_runtime_check(void)
{
	AGILE_CUDA_CALLS(CHECK_CALL)
	AGILE_CUDA_LIVENESS_CALLS(CHECK_CALL)
	AGILE_CUDA_CODE_CALLS(CHECK_CALL)
}

#else
#error "define AGILE_CHECK_HIP or AGILE_CHECK_CUDA"
#endif
