/* SPDX-License-Identifier: MIT */
/*
 * eu_impl.h - what the layers above ask of the EU layer beyond agile/eu.h
 * (not exported): GPU EUs that run a code image compiled at run time
 * (src/runtime/compile.h, docs/runtime.md) instead of the
 * built-in code object.
 */
#ifndef AGILE_EU_IMPL_H
#define AGILE_EU_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <agile/eu.h>

/* struct agile__eu_gpu_code.api */
#define AGILE__EU_GPU_HIP 0 /* a code object for hipModuleLoadData */
#define AGILE__EU_GPU_CUDA 1 /* PTX or a cubin for cuModuleLoadData */

/**
 * struct agile__eu_gpu_code - a persistent kernel built at run time
 * @api:        AGILE__EU_GPU_*: the runtime that loads @image
 * @image:      the code (libagile/gpu/persistent.cu with user kernels);
 *              must stay valid until the pool's create returns (the
 *              runtime copies it when loading)
 * @size:       its bytes
 * @nr_kernels: the user kernels compiled into it, 0 .. AGILE_USER_NR_MAX
 * @names:      their names in the image's order (user kernel i is
 *              names[i]); each must be registered in the pool's
 *              registry, whose opcode the GPU then runs it for
 *
 * Those kernels' CPU build is what the registry holds, so that CPU EUs,
 * agile_eu_run_inline and a CPU fallback run the same kernels.
 */
struct agile__eu_gpu_code {
	uint32_t api;
	const void *image;
	size_t size;
	uint32_t nr_kernels;
	const char *const *names;
};

/*
 * agile__eu_pool_create_code - agile_eu_pool_create, where GPU EUs (asked
 * for by @opts->flags as usual) load @code instead of the built-in code
 * object.  The probe's check of the built-in code's targets is skipped
 * (the image was built for its own target); the start says why GPU EUs
 * could not run it: the image is for the other runtime (-ENODEV), the
 * runtime refused it (-ENOENT, "hipModuleLoadData ... failed"), or a
 * user kernel is not registered (-ENOENT).  @code NULL: exactly
 * agile_eu_pool_create.  -EINVAL: a bad @code.
 */
int agile__eu_pool_create_code(struct agile_dev *dev,
			       struct agile_kernels *kernels,
			       const struct agile_eu_pool_opts *opts,
			       const struct agile__eu_gpu_code *code,
			       struct agile_eu_pool **out);

#endif /* AGILE_EU_IMPL_H */
