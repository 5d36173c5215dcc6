/* SPDX-License-Identifier: MIT */
/*
 * compile.h - executables compiled on demand (seed 003): the runtime
 * layer's internal interface to its compilers and their disk cache (not
 * exported; the public executable API, agile_rt_program_* of
 * agile/runtime.h in program.c, is built on it).
 *
 * One user kernel source (the dialect of docs/runtime.md: phases
 * separated by barriers, listed in AGILE_USER_KERNELS) builds for three
 * targets:
 *
 *	CPU   the system C compiler (cc -O3 -march=native -fPIC -shared)
 *	      makes a shared object; agile__rt_cpu_load dlopens it and
 *	      registers its kernels, with each phase's loop over lanes
 *	      (dialect 3), into an agile_kernels registry, where CPU EUs run
 *	      them as any other kernel
 *	CUDA  NVRTC compiles the persistent EU kernel (libagile/gpu/
 *	      persistent.cu) with the user kernels in its opcode switch, to
 *	      PTX for a compute_XY (cubin for sm_XY where asked)
 *	HIP   hiprtc likewise, to a code object for a gfxNNN
 *
 * A GPU image goes to GPU EUs through agile__eu_pool_create_code
 * (src/eu/eu_impl.h) together with the names of its user kernels, which
 * the same source's CPU build registered: the registry's opcodes are the
 * ones the GPU's opcode table is filled with.
 *
 * Every build is looked up in, and stored to, the disk cache first
 * (cache.c).  Errors name the step that failed in a struct agile__rt_diag,
 * with the compiler's log.
 *
 * Thread safety: every call is thread safe; the compilers are loaded once
 * per process (pthread_once) and each build uses its own program object.
 */
#ifndef AGILE_RUNTIME_COMPILE_H
#define AGILE_RUNTIME_COMPILE_H

#include <stddef.h>
#include <stdint.h>

#include <agile/kernels.h>

/* Bumped whenever the dialect's preludes change: part of every cache key. */
#define AGILE_RT_DIALECT_VERSION 3
/*
 * Most block-shared memory of a user kernel on GPU EUs: the persistent
 * kernel's static __shared__ buffer, under the 48 KiB every CUDA device
 * gives without opting in, beside the persistent kernel's own.
 */
#define AGILE_RT_GPU_SHARED_MAX (47 * 1024)

enum agile__rt_target {
	AGILE_RT_CPU, /* cc: a shared object */
	AGILE_RT_CUDA, /* NVRTC: PTX (or a cubin) */
	AGILE_RT_HIP, /* hiprtc: an AMDGPU code object (ELF) */
};

/* struct agile__rt_build.flags */
#define AGILE_RT_NO_CACHE (1u << 0) /* compile, and do not store */
#define AGILE_RT_CUBIN (1u << 1) /* CUDA: a cubin for sm_XY, not PTX */

/**
 * struct agile__rt_build - what to build
 * @target:  AGILE_RT_*
 * @arch:    CUDA "sm_90" (PTX is made for compute_90), HIP "gfx90a";
 *           NULL for the CPU
 * @options: extra compiler options, separated by spaces (may be NULL):
 *           e.g. "-DN=4"; part of the cache key
 * @flags:   AGILE_RT_*
 */
struct agile__rt_build {
	enum agile__rt_target target;
	const char *arch;
	const char *options;
	uint32_t flags;
};

#define AGILE_RT_STEP_LEN 64
#define AGILE_RT_MESSAGE_LEN 256

/**
 * struct agile__rt_diag - why a build or a load failed
 * @step:    the step, e.g. "nvrtcCompileProgram", "cc", "dlopen", "cache"
 * @message: one line: what failed and the error
 * @log:     the compiler's log (malloc'd, NUL-terminated, maybe ""), also
 *           kept after a success (warnings); NULL when no compiler ran
 *
 * Zero it before use; agile__rt_diag_clear frees @log.
 */
struct agile__rt_diag {
	char step[AGILE_RT_STEP_LEN];
	char message[AGILE_RT_MESSAGE_LEN];
	char *log;
};

void agile__rt_diag_clear(struct agile__rt_diag *diag);

/**
 * struct agile__rt_image - a build's product
 * @target:     as built
 * @arch:       as built ("" for the CPU)
 * @data, @size: the bytes: the shared object, the PTX (its text and the
 *              NUL) or cubin, the code object
 * @path:       the cache file holding them ("" when not stored)
 * @from_cache: 1 when found in the cache, 0 when compiled now
 * @temp:       1 when @path is a temporary file (a CPU image not stored
 *              in the cache), which agile__rt_image_free removes
 * @key:        the cache key, 32 hex digits
 */
struct agile__rt_image {
	enum agile__rt_target target;
	char arch[32];
	void *data;
	size_t size;
	char path[4096];
	int from_cache;
	int temp;
	char key[33];
};

/**
 * agile__rt_compile - build @source for @build's target, through the cache
 * @source: the user kernels (docs/runtime.md), NUL-terminated
 * @build:  target, architecture, options
 * @out:    receives the image (agile__rt_image_free)
 * @diag:   receives the failed step and the log (may be NULL)
 *
 * Return: 0; -EINVAL (bad arguments, an architecture the target does not
 * take); -ENOENT (the compiler is not installed: @diag says which names
 * and folders were tried); -EIO (the compiler ran and refused @source:
 * @diag->log has why); -ENOMEM; or the cache's errno when the image could
 * be neither read nor written (a build that cannot be stored is still
 * returned: the cache is an optimisation).
 */
int agile__rt_compile(const char *source, const struct agile__rt_build *build,
		      struct agile__rt_image **out,
		      struct agile__rt_diag *diag);

void agile__rt_image_free(struct agile__rt_image *image);

/*
 * agile__rt_compiler_count - how many times this process ran a compiler
 * of @target (a cache hit runs none): for tests and statistics.
 */
uint64_t agile__rt_compiler_count(enum agile__rt_target target);

/*
 * agile__rt_compiler_id - the compiler of @target as it goes into the
 * cache key, e.g. "nvrtc 13.0" or "cc: gcc (Debian 12.2.0-14) 12.2.0",
 * into @id (@len bytes).  0, or -ENOENT (@diag says why).
 */
int agile__rt_compiler_id(enum agile__rt_target target, char *id, size_t len,
			  struct agile__rt_diag *diag);

/* ---- the CPU build, loaded and registered ---- */

/*
 * struct agile__rt_user_kernel - one entry of a CPU image's table
 * agile_user_kernels (ended by a NULL @name), as the dialect's CPU
 * epilogue writes it (compile_dialect.c declares the same layout in the
 * prelude); with the uint32_t agile_user_dialect beside it.
 */
struct agile__rt_user_extra {
	uint32_t shared_size, reserved; /* sizeof the shared type */
	agile_next_fn next; /* NULL: the phases in order */
	const void *phases; /* the kernel's phases (a check by the compiler) */
};

struct agile__rt_user_kernel {
	const char *name;
	const agile_phase_fn *phases;
	uint32_t nr_phases, state_size, max_lanes, reserved;
	/* dialect 2: AGILE_USER_EXTRAS' entry, or zero (never NULL) */
	const struct agile__rt_user_extra *extra;
	/*
	 * dialect 3: per phase, its loop over lanes (never NULL): an array
	 * of kernels_impl.h's agile__lanes_fn
	 */
	const void *lanes;
};
#define AGILE_RT_TABLE_SYMBOL "agile_user_kernels"
#define AGILE_RT_DIALECT_SYMBOL "agile_user_dialect"

struct agile__rt_module;

/**
 * agile__rt_cpu_load - dlopen a CPU image, register its kernels
 * @image: an AGILE_RT_CPU image (its @path: a file dlopen can take)
 * @reg:   the registry
 * @out:   receives the module
 * @diag:  "dlopen", "dialect" (not a module of this dialect version) or
 *         "register" and why (may be NULL)
 *
 * Each kernel of the source's AGILE_USER_KERNELS, in its order, is
 * registered under its name at the first free opcode.  The module must
 * outlive the registry (registries never unregister a kernel): unload it
 * after agile_kernels_destroy.
 *
 * Return: 0, -EINVAL, -ENOENT (dlopen failed), -EPROTO (no kernel table,
 * another dialect version, or more than AGILE_USER_NR_MAX kernels), or
 * agile_kernels_register's error (-EEXIST: a name is taken; those
 * registered before it stay).
 */
int agile__rt_cpu_load(const struct agile__rt_image *image,
		       struct agile_kernels *reg, struct agile__rt_module **out,
		       struct agile__rt_diag *diag);

/* How many user kernels @mod has, and kernel @i's name and opcode. */
uint32_t agile__rt_module_nr_kernels(const struct agile__rt_module *mod);
const char *agile__rt_module_name(const struct agile__rt_module *mod,
				  uint32_t i);
uint32_t agile__rt_module_opcode(const struct agile__rt_module *mod,
				 uint32_t i);
/* The names in order, for agile__eu_pool_create_code. */
const char *const *agile__rt_module_names(const struct agile__rt_module *mod);

/* dlclose and free; the registry that took its kernels must be gone. */
void agile__rt_module_unload(struct agile__rt_module *mod);

/* ---- CUDA and HIP source (retarget.c) ---- */

#define AGILE_RT_LANG_DIALECT 0 /* the runtime's dialect itself */
#define AGILE_RT_LANG_CUDA 1 /* "-x cuda": translated first */
#define AGILE_RT_LANG_HIP 2 /* "-x hip": the same, named .hip */
#define AGILE_RT_LANG_MAX_ARGS 32

/**
 * struct agile__rt_lang - a build's options, split
 * @lang:            AGILE_RT_LANG_*
 * @args:            the translator's words (--lane-threads=N,
 *                   --dynamic-shared=BYTES, -D, -U, -I), into @words
 * @nr_args:         how many
 * @compile_options: the compilers' options: all but -x and the
 *                   translator's own, in their order (-D, -U, -I stay)
 * @words:           the options' copy @args point into
 */
struct agile__rt_lang {
	int lang;
	const char *args[AGILE_RT_LANG_MAX_ARGS];
	int nr_args;
	char *compile_options;
	char *words;
};

/*
 * agile__rt_lang_parse - split a build's @options (may be NULL): 0, or
 * -EINVAL (-x other than cuda or hip, a translator option without -x,
 * too many words; @diag says which) or -ENOMEM.  agile__rt_lang_free
 * after a success.
 */
int agile__rt_lang_parse(const char *options, struct agile__rt_lang *lang,
			 struct agile__rt_diag *diag);
void agile__rt_lang_free(struct agile__rt_lang *lang);

/*
 * agile__rt_retarget - @source (CUDA or HIP, as @lang says) translated
 * into the dialect by libagile-retarget.so, loaded on demand (the first
 * call; it stays loaded): $AGILE_RETARGET_DIR if set (only there), else
 * the build folder compiled in, else agile/ beside libagile
 * (private_file.h).  0 with the text in *@dialect (malloc'd); -ENOENT
 * (the library is not there, or does not load: @diag's message and log
 * say where it looked), -EPROTO (another ABI), -EIO (the translator
 * refused the source or its options: @diag's log has its diagnostics,
 * "user-kernels.cu:LINE:COL: error: ...", the message the first),
 * -ENOTSUP (the static build), -ENOMEM.  Step "retarget".  Thread safe.
 */
int agile__rt_retarget(const char *source, const struct agile__rt_lang *lang,
		       char **dialect, struct agile__rt_diag *diag);

#endif /* AGILE_RUNTIME_COMPILE_H */
