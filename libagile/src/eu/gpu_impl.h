/* SPDX-License-Identifier: MIT */
/*
 * gpu_impl.h - what the EU pool asks gpu.c and gpu_launch.c (not exported).
 */
#ifndef AGILE_GPU_IMPL_H
#define AGILE_GPU_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "../../gpu/agile_gpu.h"
#include "kernels/kernels_impl.h"

_Static_assert(AGILE_GPU_NR_COMMON == AGILE_COMMON_NR,
	       "agile_gpu_params.opcodes must cover every built-in kernel");

/*
 * agile__gpu_status - 1 if a usable GPU is found, else 0; either way a
 * one-line account of what the probe saw into @reason (@len bytes, always
 * terminated).  Thread safe.
 */
int agile__gpu_status(char *reason, size_t len);

/*
 * agile__gpu_arch - the ISA of device 0 of @vendor's runtime (where GPU
 * EUs run), as the probe read it: "sm_90" (CUDA's compute capability),
 * "gfx90a" (HIP, from the KFD topology), into @arch (@len bytes).  0, or
 * -ENODEV (no usable device of @vendor, or its ISA unknown: @arch "").
 * Thread safe.
 */
int agile__gpu_arch(uint32_t vendor, char *arch, size_t len);

/*
 * The code objects `make -C libagile gpu` builds (libagile/Makefile), one
 * per runtime, each holding both kernels of libagile/gpu/persistent.cu for
 * every target it was built for.
 */
#define AGILE_GPU_CODE_HIP "agile-gpu-hip.co"
#define AGILE_GPU_CODE_CUDA "agile-gpu-cuda.fatbin"
/* The kernels in them (extern "C", so found by these names). */
#define AGILE_GPU_FN_PERSISTENT "agile_gpu_persistent"
#define AGILE_GPU_FN_RUN_ONCE "agile_gpu_run_once"

/*
 * agile__gpu_code_find - where code object @file is
 *
 * Looked for, in this order: $AGILE_GPU_CODE_DIR when it is set and not
 * empty (and nowhere else then), the build directory compiled in
 * (AGILE_GPU_BUILD_DIR, build/libagile/gpu), and "agile/" beside the
 * library (or program) this code is linked into, e.g.
 * /usr/local/lib/agile/.  Returns 0 with the path in @path, or -ENOENT
 * with where it looked in @reason (@rlen bytes; either buffer always
 * terminated).  Thread safe.
 */
int agile__gpu_code_find(const char *file, char *path, size_t len, char *reason,
			 size_t rlen);

/**
 * struct agile__gpu_areas - what a GPU pool hands the launcher
 * @doorbells, @doorbell_bytes: the doorbell area (page aligned, whole pages)
 * @task_regs, @task_reg_bytes: the task-register area (likewise)
 * @task_reg_size: bytes per task register
 * @nr_eus:        work-groups to launch, serving slots 0 .. nr_eus - 1
 * @share:         the most of the device's co-resident work-groups the
 *                 EUs may take, in percent (1-100)
 * @opcodes:       the registry opcode of each common kernel, then of each
 *                 user kernel of @image (AGILE_COMMON_NR + i), 0 if absent
 * @image, @image_size: a code image built at run time (eu_impl.h) to load
 *                 with hipModuleLoadData / cuModuleLoadData instead of
 *                 the built-in code object; NULL for the built-in one
 * @image_api:     AGILE__EU_GPU_HIP or _CUDA: the only runtime tried
 */
struct agile__gpu_areas {
	void *doorbells;
	size_t doorbell_bytes;
	void *task_regs;
	size_t task_reg_bytes;
	uint32_t task_reg_size;
	uint32_t nr_eus;
	uint32_t share;
	uint32_t opcodes[AGILE_GPU_NR_KERNELS];
	const void *image;
	size_t image_size;
	uint32_t image_api;
};

struct agile__gpu_eus;

/*
 * agile__gpu_eus_start - launch the persistent kernel on the first usable
 * GPU (HIP first, then CUDA), one work-group of AGILE_MAX_LANES lanes per
 * EU, after registering both areas with the runtime.  Returns 0, or a
 * negative errno with the precise reason in @reason (-ENODEV no runtime
 * or device, or a kernel run-time limit; -ENOENT no code object; -ENOSPC
 * the EUs do not fit in @areas->share of the device; -EBUSY GPU EUs of
 * another pool hold the device; -EIO the runtime refused a step;
 * -ENOTSUP a static build); a failure leaves nothing registered or
 * loaded.
 */
int agile__gpu_eus_start(const struct agile__gpu_areas *areas,
			 struct agile__gpu_eus **out, char *reason,
			 size_t rlen);

/*
 * agile__gpu_eus_stop - after every EU took DISCONNECT (or the kernel
 * died): wait up to @timeout_ns for the stream to say the kernel ended,
 * then unregister everything and unload the code object.  Returns 0,
 * -AGILE_E_GPU (the kernel had died; all the same freed), or -ETIMEDOUT:
 * the kernel still runs, and @g is abandoned as it is (nothing
 * unregistered, which would wait for the kernel), kept until the process
 * ends.  @g is not to be used again either way.
 */
int agile__gpu_eus_stop(struct agile__gpu_eus *g, uint64_t timeout_ns);

/*
 * agile__gpu_eus_check - liveness: asks the runtime about the persistent
 * kernel's stream (hipStreamQuery / cuStreamQuery) unless an earlier
 * query found it gone.  0: it runs; 1: it ended (every work-group took
 * DISCONNECT, or it returned early); -AGILE_E_GPU: it died, and
 * agile__gpu_eus_error has the device's error.  Thread safe.
 */
int agile__gpu_eus_check(struct agile__gpu_eus *g);

/* Nonzero once a check found the kernel ended or dead; asks nothing. */
int agile__gpu_eus_gone(const struct agile__gpu_eus *g);

/* Once gone: what happened, with the device's error string; else "". */
const char *agile__gpu_eus_error(const struct agile__gpu_eus *g);

/* The runtime and device serving, e.g. "HIP device 0". */
const char *agile__gpu_eus_name(const struct agile__gpu_eus *g);

/*
 * agile__gpu_map / agile__gpu_unmap - register host memory the tasks'
 * arguments point into, and the address the GPU uses for it.  0, -EINVAL,
 * -EEXIST (already mapped), -EBUSY (unmapped but still registered, with
 * another size), -ENOENT (unmap: not mapped), -ENOMEM, -EIO.  Unmap
 * unregisters nothing: registrations last until agile__gpu_eus_stop has
 * seen the kernel end (docs/gpu.md, "What an application may not do").
 * Thread safe.
 */
int agile__gpu_map(struct agile__gpu_eus *g, void *host, size_t bytes,
		   uint64_t *device);
int agile__gpu_unmap(struct agile__gpu_eus *g, void *host);

/*
 * agile__gpu_run_once - run slot @slot's task register with one plain
 * kernel launch of the same code on a second stream, and synchronise.
 * The slot must be IDLE.  0 (the task ran: its outcome is in the
 * register), or -EIO.  One caller per slot at a time.
 */
int agile__gpu_run_once(struct agile__gpu_eus *g, uint32_t slot);

#endif /* AGILE_GPU_IMPL_H */
