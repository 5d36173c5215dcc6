/* SPDX-License-Identifier: MIT */
/*
 * agile/gpu.h - finding the GPUs that could run GPU execution units
 *
 * Two sources, so one libagile binary runs on machines with AMD, NVIDIA,
 * both or neither:
 *
 *  - libdrm's drmGetDevices2: the PCI GPUs the kernel drives (vendor
 *    0x1002 AMD, 0x10de NVIDIA), with their bus ids;
 *  - the vendor runtimes, loaded at run time with dlopen: HIP
 *    (libamdhip64.so.5, libamdhip64.so) for AMD, CUDA (libcudart.so.13,
 *    libcudart.so, libcuda.so.1) for NVIDIA.  hipGetDeviceCount /
 *    cudaGetDeviceCount (cuInit + cuDeviceGetCount for libcuda.so.1)
 *    say how many devices each can use.  A runtime that is absent,
 *    fails, or reports 0 devices means no usable GPU of that vendor.
 *
 * A GPU is usable when its vendor's runtime reports it.  The static
 * build (the test guests: no shared libraries) has no dlopen, so it finds
 * no runtime and no usable GPU; it still lists what libdrm sees.
 *
 * Thread safety: every call here is thread safe.  The runtimes are looked
 * for once per process (the first call; later calls reuse the answer) and
 * stay loaded until exit: a GPU runtime does not survive dlclose.
 */
#ifndef AGILE_GPU_H
#define AGILE_GPU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AGILE_GPU_VENDOR_AMD 0x1002
#define AGILE_GPU_VENDOR_NVIDIA 0x10de

/* struct agile_gpu_info.flags */
#define AGILE_GPU_DRM (1u << 0) /* found by libdrm; pci_bus_id is set */
#define AGILE_GPU_RUNTIME (1u << 1) /* the vendor's runtime was loaded */
#define AGILE_GPU_USABLE (1u << 2) /* the runtime counts this device */

#define AGILE_GPU_NAME_LEN 64
#define AGILE_GPU_BUS_ID_LEN 16

/**
 * struct agile_gpu_info - one GPU agile_gpu_probe found
 * @vendor:     PCI vendor id, AGILE_GPU_VENDOR_*
 * @flags:      AGILE_GPU_*
 * @index:      the device's index in its runtime (valid with USABLE)
 * @reserved:   zero
 * @name:       "amd" or "nvidia", then the runtime library loaded, if any
 * @pci_bus_id: "dddd:bb:dd.f" with AGILE_GPU_DRM, else ""
 */
struct agile_gpu_info {
	uint32_t vendor;
	uint32_t flags;
	uint32_t index;
	uint32_t reserved;
	char name[AGILE_GPU_NAME_LEN];
	char pci_bus_id[AGILE_GPU_BUS_ID_LEN];
};

/**
 * agile_gpu_probe - list the AMD and NVIDIA GPUs
 * @out: receives up to @max entries; may be NULL when @max is 0
 * @max: room in @out, in entries
 * @nr:  receives how many GPUs there are (may be more than @max)
 *
 * One entry per GPU libdrm sees, and one per device a runtime counts
 * beyond those (a runtime can see GPUs that have no DRM node here).
 * Finding nothing is not an error.
 *
 * Thread safety: thread safe; the first call of the process loads the
 * runtimes, later ones reuse what it found.
 *
 * Return: 0, or -EINVAL (@nr NULL, or @out NULL with @max > 0).
 */
int agile_gpu_probe(struct agile_gpu_info *out, unsigned int max,
		    unsigned int *nr);

/**
 * agile_gpu_available - whether there is a GPU that GPU EUs could use
 *
 * Thread safety: thread safe.
 *
 * Return: 1 if agile_gpu_probe finds a usable GPU, else 0.
 */
int agile_gpu_available(void);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_GPU_H */
