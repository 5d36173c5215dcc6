/* SPDX-License-Identifier: MIT */
/*
 * agile/runtime.h - the parallel runtime of seed 003 (SPEC §3, layer 8)
 *
 * An application asks for devices by what they can do, makes a context
 * on one or several of them (a logical device), allocates buffers in it,
 * and enqueues kernels on the context's queue.  Each enqueue returns an
 * event at once; an entry runs when its after-events and the entries that
 * produce or consume its buffers before it are done, the highest priority
 * first among the ready ones, on the EUs of the device its placement
 * picks at dispatch time: a GPU busy past its threshold sends work that
 * prefers it to the CPU instead (CPU fallback).  docs/runtime.md has the
 * model, an example, the placement policy and the mapping to seed 003.
 *
 *	devices    agile_rt_device_count/info, agile_rt_device_match
 *	contexts   agile_rt_ctx_create/retain/release (handles, refcounted)
 *	kernels    agile_rt_kernel_get/register (a registry opcode per device
 *	           type)
 *	programs   agile_rt_program_create/build/release, _build_info,
 *	           _build_log, _binary_count, _binary, _kernel: executables
 *	           with description data, seed 003's load rule, compile on
 *	           demand (docs/runtime.md, "Executables and compile on
 *	           demand")
 *	buffers    agile_rt_buffer_create/host/release
 *	queue      agile_rt_queue_create/destroy, agile_rt_enqueue
 *	events     agile_rt_event_status/wait/on_complete/release
 *	placement  agile_rt_stats, agile_rt_stats_print, agile_rt_place_opts
 *
 * Errors: every call returns 0 or a negative errno or -AGILE_E_*; a
 * context handle that is not a live context gives -AGILE_E_INVALID_CONTEXT.
 * Thread safety is stated per call.
 */
#ifndef AGILE_RUNTIME_H
#define AGILE_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <agile/error.h>
#include <agile/kernels.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- devices ---- */

/* struct agile_rt_device_info.type */
#define AGILE_RT_DEVICE_CPU 1
#define AGILE_RT_DEVICE_GPU 2

/* struct agile_rt_device_info.atomic_scope: the widest scope atomics reach. */
#define AGILE_RT_ATOMIC_DEVICE 1 /* within the device */
#define AGILE_RT_ATOMIC_SYSTEM 2 /* with the host and other devices */

#define AGILE_RT_MAX_DEVICES 16
#define AGILE_RT_NAME_LEN 64
#define AGILE_RT_EXT_LEN 256

/**
 * struct agile_rt_device_info - one row of the capability table
 * @id:            the device id, 0 .. nr - 1 (the CPU is 0)
 * @type:          AGILE_RT_DEVICE_*
 * @vendor:        "cpu" (the CPU's), "amd", "nvidia"
 * @name:          what the system calls it (CPU model, GPU runtime name)
 * @version:       the code version kernels are built for: the CPU's
 *                 machine ("x86_64"), "gfx90a", "sm_90"; "" unknown
 * @lanes:         threads the device runs at once (CPU: online cores;
 *                 GPU: units x AGILE_MAX_LANES; 0 unknown)
 * @units:         CPU: cores; GPU: compute units / SMs (0 unknown)
 * @memory:        bytes (CPU: sysinfo's total RAM; 0 unknown)
 * @fp64:          1 when doubles are supported
 * @atomic_scope:  AGILE_RT_ATOMIC_*
 * @coherent_host: 1 when the device sees host memory coherently
 * @usable:        1 when EUs can start there now (a GPU: its runtime
 *                 counts it; 0 rows still match and may fall back)
 * @extensions:    space-separated feature names ("agile.doorbell ...")
 */
struct agile_rt_device_info {
	uint32_t id;
	uint32_t type;
	char vendor[32];
	char name[AGILE_RT_NAME_LEN];
	char version[32];
	uint32_t lanes;
	uint32_t units;
	uint64_t memory;
	uint32_t fp64;
	uint32_t atomic_scope;
	uint32_t coherent_host;
	uint32_t usable;
	char extensions[AGILE_RT_EXT_LEN];
};

/**
 * agile_rt_device_count - how many rows the capability table has
 * @nr: receives the count (1 at least: the CPU)
 *
 * The table is built on the first call of any agile_rt_device_* (the CPU
 * from sysconf/sysinfo/uname, the GPUs from agile_gpu_probe and the KFD
 * topology) and kept for the process.
 *
 * Thread safety: thread safe.
 *
 * Return: 0 or -EINVAL (@nr NULL).
 */
int agile_rt_device_count(uint32_t *nr);

/**
 * agile_rt_device_info - row @id of the capability table
 * @id:   the device
 * @info: receives a copy
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL (@info NULL) or -ENODEV (no device @id).
 */
int agile_rt_device_info(uint32_t id, struct agile_rt_device_info *info);

/* struct agile_rt_req.key: which field is compared */
#define AGILE_RT_KEY_TYPE 1 /* value: AGILE_RT_DEVICE_* */
#define AGILE_RT_KEY_VENDOR 2 /* str */
#define AGILE_RT_KEY_NAME 3 /* str */
#define AGILE_RT_KEY_VERSION 4 /* str */
#define AGILE_RT_KEY_LANES 5 /* value */
#define AGILE_RT_KEY_UNITS 6 /* value */
#define AGILE_RT_KEY_MEMORY 7 /* value, bytes */
#define AGILE_RT_KEY_FP64 8 /* value 0/1 */
#define AGILE_RT_KEY_ATOMIC_SCOPE 9 /* value: AGILE_RT_ATOMIC_* */
#define AGILE_RT_KEY_COHERENT_HOST 10 /* value 0/1 */
#define AGILE_RT_KEY_USABLE 11 /* value 0/1 */
#define AGILE_RT_KEY_EXTENSION 12 /* str: one word of @extensions */

/* struct agile_rt_req.cmp: the device's field on the left */
#define AGILE_RT_CMP_EQ 1
#define AGILE_RT_CMP_NE 2
#define AGILE_RT_CMP_GE 3
#define AGILE_RT_CMP_LE 4
#define AGILE_RT_CMP_GT 5
#define AGILE_RT_CMP_LT 6
/* Strings: @str is a substring (VENDOR, NAME, VERSION); EXTENSION: a word. */
#define AGILE_RT_CMP_CONTAINS 7

/* struct agile_rt_req.flags */
#define AGILE_RT_REQ_MUST (1u << 0) /* scoring: a device missing it is out */

/**
 * struct agile_rt_req - one requirement
 * @key:      AGILE_RT_KEY_*
 * @cmp:      AGILE_RT_CMP_*; strings take EQ, NE and CONTAINS
 * @flags:    AGILE_RT_REQ_*
 * @weight:   scoring: what meeting it adds to a device's score (0 = 1)
 * @value:    the number compared with (numeric keys)
 * @str:      the string compared with (string keys)
 */
struct agile_rt_req {
	uint32_t key;
	uint32_t cmp;
	uint32_t flags;
	uint32_t weight;
	uint64_t value;
	const char *str;
};

/* agile_rt_device_match's @mode */
#define AGILE_RT_MATCH_ALL 0 /* every requirement met; by id */
#define AGILE_RT_MATCH_SCORE 1 /* best score first; see below */

/**
 * agile_rt_device_match - the devices that meet @reqs
 * @reqs:    the requirements (may be NULL when @nr_reqs is 0)
 * @nr_reqs: how many
 * @mode:    AGILE_RT_MATCH_ALL or AGILE_RT_MATCH_SCORE
 * @ids:     receives up to @max device ids
 * @max:     room in @ids
 * @nr:      receives how many devices matched (may exceed @max)
 *
 * ALL: the devices meeting every requirement, in id order.  SCORE: a
 * device's score is the sum of the weights of the requirements it meets;
 * a device that misses an AGILE_RT_REQ_MUST one, or scores 0 with
 * @nr_reqs > 0, is left out; the rest come best score first, then (ties)
 * GPUs before the CPU, then by id.  No match is not an error (*@nr = 0).
 *
 * Thread safety: thread safe.
 *
 * Return: 0, or -EINVAL (NULL pointers, an unknown key, cmp or mode, a
 * string key without @str, a string compared with GE/LE/GT/LT).
 */
int agile_rt_device_match(const struct agile_rt_req *reqs, uint32_t nr_reqs,
			  uint32_t mode, uint32_t *ids, uint32_t max,
			  uint32_t *nr);

/* ---- contexts ---- */

/*
 * A context handle: a slot index and that slot's generation, never a
 * pointer, so that a handle to a released context is recognised as such
 * (-AGILE_E_INVALID_CONTEXT) without touching freed memory.  0 is never a
 * valid handle.
 */
typedef uint64_t agile_rt_ctx;

#define AGILE_RT_MAX_CONTEXTS 64

/**
 * struct agile_rt_ctx_opts - what a context runs on (agile_rt_ctx_opts_init)
 * @devices:    device ids: the logical device (at least one; no repeats;
 *              at most one GPU)
 * @nr_devices: how many
 * @cpu_eus:    CPU EUs of a CPU device; 0: one per CPU this process may
 *              use (its affinity mask, capped by its cgroups' CPU quota,
 *              rounded up), at most AGILE_MAX_LANES
 * @gpu_eus:    GPU EUs of a GPU device; 0: 2
 * @flags:      must be zero
 * @reserved:   must be zero
 *
 * A GPU device's EUs are a pool asked for with AGILE_EU_POOL_GPU: where no
 * GPU EUs can start they are CPU EUs (the pool's fallback, agile/eu.h),
 * and agile_rt_stats says so.  GPU EUs run on their runtime's device 0
 * (agile/eu.h), one persistent kernel per process: a context names at
 * most one GPU.
 */
struct agile_rt_ctx_opts {
	const uint32_t *devices;
	uint32_t nr_devices;
	uint32_t cpu_eus;
	uint32_t gpu_eus;
	uint32_t flags;
	uint64_t reserved[2];
};

/**
 * agile_rt_ctx_opts_init - the defaults: device 0 (the CPU) alone
 * @opts: the options
 *
 * Thread safety: thread safe.
 *
 * Return: 0 or -EINVAL (@opts NULL).
 */
int agile_rt_ctx_opts_init(struct agile_rt_ctx_opts *opts);

/**
 * agile_rt_ctx_create - a context on the logical device @opts names
 * @opts: the devices and EU counts
 * @out:  receives the handle, with one reference
 *
 * Starts one doorbell context and one EU pool per device, with a kernel
 * registry holding the built-in kernels.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL (bad @opts, a device twice, two GPUs), -ENODEV (an
 * unknown device id),
 * -ENOSPC (AGILE_RT_MAX_CONTEXTS live), -ENOMEM, or what
 * agile_dev_open / agile_eu_pool_create returned.
 */
int agile_rt_ctx_create(const struct agile_rt_ctx_opts *opts,
			agile_rt_ctx *out);

/**
 * agile_rt_ctx_retain - take another reference to @ctx
 * @ctx: the context
 *
 * Thread safety: thread safe.
 *
 * Return: 0, or -AGILE_E_INVALID_CONTEXT (@ctx was released to zero, was
 * never created, or is garbage: nothing was touched).
 */
int agile_rt_ctx_retain(agile_rt_ctx ctx);

/**
 * agile_rt_ctx_release - drop a reference; the last one frees the context
 * @ctx: the context
 *
 * Buffers and the queue hold a reference each (as OpenCL's memory
 * objects and queues retain theirs), so the last release happens after
 * they are gone; it stops the EU pools, closes the doorbell contexts and
 * frees the kernels.  The handle is invalid from then on.  Releasing more
 * references than one took is a bug the table catches only once the
 * count has reached zero.
 *
 * Thread safety: thread safe: every call checks the handle and changes
 * the count under the context table's lock.
 *
 * Return: 0, or -AGILE_E_INVALID_CONTEXT (as agile_rt_ctx_retain: a
 * double release included).
 */
int agile_rt_ctx_release(agile_rt_ctx ctx);

/**
 * agile_rt_ctx_refs - @ctx's reference count (for tests and tools)
 * @ctx: the context
 * @refs: receives the count
 *
 * Thread safety: thread safe (a snapshot).
 *
 * Return: 0, -EINVAL (@refs NULL) or -AGILE_E_INVALID_CONTEXT.
 */
int agile_rt_ctx_refs(agile_rt_ctx ctx, uint32_t *refs);

/* ---- kernels ---- */

/*
 * A kernel of a context: per device type, the registry and opcode the
 * device's EUs run it from (a built-in kernel has both; a kernel
 * registered here has a CPU one only, so it never goes to a GPU).  Owned
 * by the context: valid until its last release.
 */
struct agile_rt_kernel;

/**
 * agile_rt_kernel_get - the kernel of @ctx registered under @name
 * @ctx:  the context
 * @name: e.g. AGILE_KERNEL_AXPY
 * @out:  receives the kernel
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL, -ENOENT (no such kernel), -ENOMEM or
 * -AGILE_E_INVALID_CONTEXT.
 */
int agile_rt_kernel_get(agile_rt_ctx ctx, const char *name,
			struct agile_rt_kernel **out);

/**
 * agile_rt_kernel_register - add a CPU kernel to @ctx and get it
 * @ctx:    the context
 * @kernel: as for agile_kernels_register (opcode 0: a free one)
 * @out:    receives the kernel
 *
 * Thread safety: thread safe.
 *
 * Return: 0, agile_kernels_register's errors, -ENOMEM or
 * -AGILE_E_INVALID_CONTEXT.
 */
int agile_rt_kernel_register(agile_rt_ctx ctx,
			     const struct agile_kernel *kernel,
			     struct agile_rt_kernel **out);

/* ---- programs: executables with description data (seed 003) ---- */

#define AGILE_RT_OPTIONS_LEN 256

/* struct agile_rt_binary.origin */
#define AGILE_RT_BINARY_GIVEN 0 /* given to agile_rt_program_create */
#define AGILE_RT_BINARY_COMPILED 1 /* made by agile_rt_program_build */

/**
 * struct agile_rt_binary - one executable and its description data
 * @type:    AGILE_RT_DEVICE_* it was built for
 * @vendor:  "cpu", "nvidia", "amd" (as struct agile_rt_device_info)
 * @version: what it runs on, in the device table's words: the CPU's
 *           machine ("x86_64"); NVIDIA "sm_XY" (a cubin: SASS) or
 *           "compute_XY" (PTX); AMD "gfxNNN"
 * @options: the compile options it was built with ("" none)
 * @origin:  AGILE_RT_BINARY_* (ignored by agile_rt_program_create)
 * @image:   the bytes: a CPU shared object of the dialect, a PTX text
 *           (with its NUL) or cubin of the persistent kernel with the
 *           user kernels, an AMDGPU code object
 * @size:    how many
 *
 * Every binary of a program, and its source, must hold the same user
 * kernels in the same order (one AGILE_USER_KERNELS list).
 */
struct agile_rt_binary {
	uint32_t type;
	uint32_t origin;
	char vendor[32];
	char version[32];
	char options[AGILE_RT_OPTIONS_LEN];
	const void *image;
	size_t size;
};

/* struct agile_rt_build_info.branch: what the load rule did */
#define AGILE_RT_BUILD_NONE 0 /* not built (yet) */
#define AGILE_RT_BUILD_EXACT 1 /* a binary for the device's version */
#define AGILE_RT_BUILD_COMPILED 2 /* compiled from the source now */
#define AGILE_RT_BUILD_CACHE_HIT 3 /* compiled before: from the disk cache */
#define AGILE_RT_BUILD_FALLBACK 4 /* the build failed: a compatible binary */
#define AGILE_RT_BUILD_FAILED 5 /* nothing to run: see @status */

/**
 * struct agile_rt_build_info - the load rule's outcome on one device
 * @device:  the device id
 * @type:    AGILE_RT_DEVICE_*
 * @branch:  AGILE_RT_BUILD_*
 * @status:  0, or why this device has no executable (as the build's)
 * @binary:  the index (agile_rt_program_binary) of the binary it runs
 *           (valid unless @branch is NONE or FAILED)
 * @version: the device's version the rule matched against
 * @step:    the step that failed last ("cc", "nvrtcCompileProgram",
 *           "dlopen", "load", "match"...), "" none; also set when a
 *           fallback was taken
 * @message: one line: what failed
 *
 * A device whose EUs are CPU EUs (a GPU whose pool fell back) runs the
 * CPU's executable: its row copies the CPU's.
 */
struct agile_rt_build_info {
	uint32_t device;
	uint32_t type;
	uint32_t branch;
	int32_t status;
	uint32_t binary;
	uint32_t reserved;
	char version[32];
	char step[64];
	char message[256];
};

struct agile_rt_program;

/**
 * agile_rt_program_create - an executable of @ctx from source and binaries
 * @ctx:         the context
 * @source:      user kernels in the dialect (docs/runtime.md), or CUDA or
 *               HIP source to be built with "-x cuda" or "-x hip"
 *               (agile_rt_program_build); or NULL
 * @binaries:    prebuilt executables with their description data (copied,
 *               images included); may be NULL when @nr_binaries is 0
 * @nr_binaries: how many
 * @out:         receives the program, with one reference
 *
 * Nothing is loaded or compiled yet: agile_rt_program_build does that.
 * The program holds a reference to @ctx.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL (no source and no binary, NULL pointers, a binary of
 * an unknown type or without an image), -ENOMEM, or
 * -AGILE_E_INVALID_CONTEXT.
 */
int agile_rt_program_create(agile_rt_ctx ctx, const char *source,
			    const struct agile_rt_binary *binaries,
			    uint32_t nr_binaries,
			    struct agile_rt_program **out);

/**
 * agile_rt_program_build - apply the load rule on each device of the context
 * @prog:    the program
 * @options: compile options for an online build (e.g. "-DN=4"; NULL: none)
 *
 * With "-x cuda" (or "-x hip") in @options the source is CUDA (HIP): each
 * __global__ function a kernel of that name.  It is first translated
 * into the dialect, in-process, by agile-retarget's translator
 * (libagile-retarget.so, loaded on demand from $AGILE_RETARGET_DIR, else
 * the build folder, else agile/ beside the library), which also takes
 * --lane-threads=N and --dynamic-shared=BYTES from @options (and -D, -U,
 * -I, which the compilers get too); the translated text then builds for
 * every device as a dialect source does, and is what the cache keys on.
 * A translation that fails (the translator refuses the source, or is not
 * installed) fails each device's compile step: step "retarget", the
 * message its first diagnostic ("user-kernels.cu:LINE:COL: error: ...")
 * or where the library was looked for, agile_rt_program_build_log all of
 * them; a compatible binary is still taken (FALLBACK).
 *
 * The load rule, per device (and for the host CPU in any case: every
 * kernel is also registered from its CPU build, which CPU EUs, the CPU
 * fallback and the GPU's opcode table use): take the binaries compatible
 * with the device (same type and vendor, a version it runs: the CPU and
 * AMD the same version; NVIDIA sm_XY on sm_XZ with Z >= Y, compute_XY
 * (PTX) on any sm_AB >= XY); one whose version is the device's exact one
 * and whose options are @options is used (EXACT).  Otherwise the source
 * is compiled for the device (cc; NVRTC to a cubin for its sm_XY; hiprtc
 * for its gfx), through the disk cache (COMPILED or CACHE_HIT), and the
 * product is added to the program's binaries with new description data
 * (origin AGILE_RT_BINARY_COMPILED).  If that build or its load fails,
 * the first compatible binary that loads is used (FALLBACK).  With
 * neither, the device FAILED.  agile_rt_program_build_info tells which
 * per device, agile_rt_program_build_log has the compiler's log.
 *
 * No device's build fuses a * b + c into one multiply-add unless @options
 * has -ffp-contract=fast (or =on; NVRTC gets it as --fmad=true), so an
 * entry gives the same bits on CPU and GPU EUs by default.
 *
 * A GPU device with GPU EUs loads its executable by restarting the
 * context's GPU pool on it (the persistent kernel with the user kernels
 * in its opcode switch): one code image per pool, so only one program
 * per context can have GPU code, and only before the context's queue
 * and buffers exist (the pool's EUs are the runners', its arena holds
 * the buffers).  The built-in kernels still run from that image.
 *
 * Thread safety: thread safe; serialised with other builds, queue and
 * buffer creation on the context (its lock is held throughout).
 *
 * Return: 0 when every device has an executable; -EINVAL (@options too
 * long, -x other than cuda or hip, --lane-threads or --dynamic-shared
 * without -x: each device's build info says which); -EALREADY (built
 * before); -ENOEXEC (a device has none: no exact match, the build
 * failed or there is no source, and no compatible binary loads); -EBUSY
 * (GPU code, and the context has a queue, buffers, or another program's
 * GPU image); -EEXIST (a kernel name the context already has); -ENOMEM;
 * -AGILE_E_INVALID_CONTEXT.  On failure no kernel of @prog is usable;
 * only after -EBUSY found before anything was loaded (a queue, buffers
 * or another GPU image already there) may the build be tried again.
 */
int agile_rt_program_build(struct agile_rt_program *prog, const char *options);

/**
 * agile_rt_program_build_info - what the load rule did on @device
 * @prog:   the program
 * @device: a device id of the program's context
 * @info:   receives it
 *
 * Thread safety: thread safe after agile_rt_program_build returned.
 *
 * Return: 0, -EINVAL, or -ENODEV (@device is not one of the context's).
 */
int agile_rt_program_build_info(struct agile_rt_program *prog, uint32_t device,
				struct agile_rt_build_info *info);

/**
 * agile_rt_program_build_log - the compiler's log of @device's last build
 * @prog:   the program
 * @device: a device id of the program's context
 * @log:    receives the log ("" when no compiler ran; valid until the
 *          program is released)
 *
 * Thread safety: thread safe after agile_rt_program_build returned.
 *
 * Return: 0, -EINVAL or -ENODEV.
 */
int agile_rt_program_build_log(struct agile_rt_program *prog, uint32_t device,
			       const char **log);

/**
 * agile_rt_program_binary_count - how many binaries @prog has
 * @prog: the program
 * @nr:   receives the count: those given, then those the build compiled
 *
 * Thread safety: thread safe after agile_rt_program_build returned.
 *
 * Return: 0 or -EINVAL.
 */
int agile_rt_program_binary_count(struct agile_rt_program *prog, uint32_t *nr);

/**
 * agile_rt_program_binary - binary @i of @prog, with its description data
 * @prog: the program
 * @i:    0 .. count - 1
 * @out:  receives it; @out->image stays valid until the program is
 *        released (an application may save it and give it back to a
 *        later agile_rt_program_create)
 *
 * Thread safety: thread safe after agile_rt_program_build returned.
 *
 * Return: 0, -EINVAL, or -ENOENT (no binary @i).
 */
int agile_rt_program_binary(struct agile_rt_program *prog, uint32_t i,
			    struct agile_rt_binary *out);

/**
 * agile_rt_program_kernel - @prog's kernel @name, for agile_rt_enqueue
 * @prog: the program, built
 * @name: a name of its AGILE_USER_KERNELS list
 * @out:  receives the kernel (owned by the context; valid after the
 *        program's release, until the context's last release)
 *
 * The kernel runs on CPU EUs (its CPU build) and, where the program's
 * GPU image runs on the context's GPU EUs, on those.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL, -ENOEXEC (not built, or the build failed) or
 * -ENOENT (no such kernel).
 */
int agile_rt_program_kernel(struct agile_rt_program *prog, const char *name,
			    struct agile_rt_kernel **out);

/**
 * agile_rt_program_release - free @prog and drop its context reference
 * @prog: the program
 *
 * Its kernels stay with the context (registries never forget a kernel).
 *
 * Thread safety: not thread safe against other calls on @prog.
 *
 * Return: 0 or -EINVAL.
 */
int agile_rt_program_release(struct agile_rt_program *prog);

/* ---- buffers (the seed's memory objects) ---- */

struct agile_rt_buffer;

/**
 * agile_rt_buffer_create - zeroed memory every EU of @ctx can address
 * @ctx:   the context
 * @bytes: the size (> 0)
 * @out:   receives the buffer, with one reference
 *
 * From the arena (agile_eu_pool_alloc) of the context's GPU pool when it
 * has one, else of its CPU pool: shared with the host, which reads and
 * writes it through agile_rt_buffer_host.  Enqueued entries name buffers
 * in their arguments (struct agile_rt_arg); the runtime puts in the address
 * of the EU the entry runs on.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL, -ENOMEM, agile_eu_pool_alloc's errors, or
 * -AGILE_E_INVALID_CONTEXT.
 */
int agile_rt_buffer_create(agile_rt_ctx ctx, size_t bytes,
			   struct agile_rt_buffer **out);

/**
 * agile_rt_buffer_host - where the host reads and writes @buf
 * @buf:   the buffer
 * @host:  receives the address
 * @bytes: receives the size (may be NULL)
 *
 * Read results after the event of the last entry writing @buf completed
 * (agile_rt_event_wait gives the ordering: an acquire that pairs with the
 * runner's release when it completed the event).
 *
 * Thread safety: thread safe.
 *
 * Return: 0 or -EINVAL.
 */
int agile_rt_buffer_host(struct agile_rt_buffer *buf, void **host,
			 size_t *bytes);

/**
 * agile_rt_buffer_release - drop the application's reference
 * @buf: the buffer
 *
 * Entries still queued keep it alive until they complete; the last
 * reference gives the memory back to the arena and drops the buffer's
 * context reference.
 *
 * Thread safety: thread safe.
 *
 * Return: 0 or -EINVAL.
 */
int agile_rt_buffer_release(struct agile_rt_buffer *buf);

/* ---- events ---- */

struct agile_rt_event;

/* agile_rt_event_status's positive result: the entry has not finished. */
#define AGILE_RT_PENDING 1

/**
 * agile_rt_event_status - what became of @ev's entry
 * @ev: the event
 *
 * Thread safety: thread safe (an acquire load pairing with the runner's
 * release store of the status).
 *
 * Return: AGILE_RT_PENDING, 0 (ran, every group succeeded), the first
 * failed group's error, -AGILE_E_DEPENDENCY (not run: an event it waited
 * for failed, or it was failed at its enqueue's end: see agile_rt_enqueue),
 * or -EINVAL.
 */
int agile_rt_event_status(struct agile_rt_event *ev);

/**
 * agile_rt_event_wait - wait until @ev's entry has finished
 * @ev:         the event
 * @timeout_ns: relative; AGILE_TIMEOUT_INFINITE waits for ever
 *
 * Thread safety: thread safe; any number of waiters.
 *
 * Return: the entry's status as agile_rt_event_status (never
 * AGILE_RT_PENDING), -ETIMEDOUT, or -EINVAL.
 */
int agile_rt_event_wait(struct agile_rt_event *ev, uint64_t timeout_ns);

/**
 * agile_rt_event_fn - a completion callback
 * @ev:     the event (a reference is held for the call)
 * @status: its final status, as agile_rt_event_status
 * @arg:    the callback's argument
 *
 * Runs on the thread that completes the event (a runner of the queue), or
 * in agile_rt_event_on_complete when the event is already complete; no
 * runtime lock is held, so it may call the runtime, enqueue included, but
 * it should be short: the runner takes no work meanwhile.
 */
typedef void (*agile_rt_event_fn)(struct agile_rt_event *ev, int status,
				  void *arg);

/**
 * agile_rt_event_on_complete - call @fn(@ev, status, @arg) once @ev is done
 * @ev:  the event
 * @fn:  the callback
 * @arg: its argument
 *
 * Callbacks run in the order they were added.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
int agile_rt_event_on_complete(struct agile_rt_event *ev, agile_rt_event_fn fn,
			       void *arg);

/**
 * agile_rt_event_retain - take another reference to @ev
 * @ev: the event
 *
 * Thread safety: thread safe.
 *
 * Return: 0 or -EINVAL.
 */
int agile_rt_event_retain(struct agile_rt_event *ev);

/**
 * agile_rt_event_release - drop a reference; the last one frees @ev
 * @ev: the event
 *
 * An event's entry holds its own reference until it finished, so an
 * application may release its reference right after enqueueing.
 *
 * Thread safety: thread safe.
 *
 * Return: 0 or -EINVAL.
 */
int agile_rt_event_release(struct agile_rt_event *ev);

/* ---- the queue ---- */

/* struct agile_rt_arg.kind */
#define AGILE_RT_ARG_VALUE 0 /* @value as it is */
#define AGILE_RT_ARG_BUFFER 1 /* @buf's EU address + @value (bytes) */
#define AGILE_RT_ARG_GROUP 2 /* the group's flat index, 0 .. nr_groups - 1 */
#define AGILE_RT_ARG_GROUP_ID 3 /* the group's (x, y, z): AGILE_RT_DIM3_WORD */
#define AGILE_RT_ARG_NR_GROUPS 4 /* the groups (x, y, z): AGILE_RT_DIM3_WORD */
#define AGILE_RT_ARG_GROUP_SIZE 5 /* a group's threads (x, y, z): the same */
#define AGILE_RT_ARG_LOCAL 6 /* the group's local memory (@local_bytes) */

#ifndef AGILE_RT_DIM3_WORD
/* gridDim or blockDim as one word: x 32 bits, y and z 16 each. */
#define AGILE_RT_DIM3_WORD(x, y, z) \
	((uint64_t)(x) | (uint64_t)(y) << 32 | (uint64_t)(z) << 48)
/* A float parameter's word: its bits. */
static inline uint64_t agile_rt_float_word(float f)
{
	union {
		float f;
		uint32_t u;
	} c;

	c.f = f;
	return c.u;
}
#endif

/*
 * The limits of an entry's shape (docs/runtime.md, "Groups"): a group
 * has at most AGILE_RT_MAX_GROUP_THREADS threads, x and y at most that,
 * z at most AGILE_RT_MAX_GROUP_Z; GPU EUs run groups of at most
 * AGILE_MAX_LANES threads and no local memory yet.  Groups: x 1 ..
 * UINT32_MAX, y and z 1 .. AGILE_RT_MAX_GROUPS_YZ.  Local memory: at most
 * AGILE_RT_MAX_LOCAL bytes a group, with the kernel's block-shared memory.
 */
#define AGILE_RT_MAX_GROUP_THREADS 1024
#define AGILE_RT_MAX_GROUP_Z 64
#define AGILE_RT_MAX_GROUPS_YZ 65535
#define AGILE_RT_MAX_LOCAL (1024 * 1024)

/* struct agile_rt_arg.access, for buffers: the entry's read and write sets */
#define AGILE_RT_READ (1u << 0)
#define AGILE_RT_WRITE (1u << 1)

/**
 * struct agile_rt_arg - one argument word of an entry
 * @kind:   AGILE_RT_ARG_*
 * @access: buffers: AGILE_RT_READ and/or AGILE_RT_WRITE (one at least)
 * @value:  a value, or a byte offset into @buf
 * @buf:    the buffer (AGILE_RT_ARG_BUFFER)
 */
struct agile_rt_arg {
	uint32_t kind;
	uint32_t access;
	uint64_t value;
	struct agile_rt_buffer *buf;
};

#define AGILE_RT_MAX_ARGS 12
#define AGILE_RT_MAX_AFTER 16

/* struct agile_rt_entry.place: where the entry may run */
#define AGILE_RT_PLACE_ANY 0 /* the least loaded device that has the kernel */
#define AGILE_RT_PLACE_CPU 1 /* CPU EUs only */
#define AGILE_RT_PLACE_GPU 2 /* GPU EUs; CPU EUs when the GPU is busy */
#define AGILE_RT_PLACE_GPU_ONLY 3 /* GPU EUs, waiting for them */

/**
 * struct agile_rt_entry - what agile_rt_enqueue queues
 * @kernel:    the kernel (of the queue's context)
 * @threads:   a group's threads in x (its lanes: lane = x + y X + z X Y)
 * @groups:    groups in x, 1 ..; each group runs wholly on one EU
 * @priority:  higher runs first among ready entries; ties in enqueue order
 * @place:     AGILE_RT_PLACE_*
 * @nr_args:   argument words, 0 .. AGILE_RT_MAX_ARGS
 * @args:      the words; word i is the task's args[i]
 * @nr_after:  explicit dependencies, 0 .. AGILE_RT_MAX_AFTER
 * @after:     events to wait for (of any queue)
 * @threads_y: a group's threads in y; 0 means 1
 * @threads_z: in z; 0 means 1
 * @groups_y:  groups in y; 0 means 1
 * @groups_z:  groups in z; 0 means 1
 * @local_bytes: local memory of each group (AGILE_RT_ARG_LOCAL), not
 *             initialised, 64-byte aligned; 0 for none
 * @reserved:  must be zero
 *
 * The limits: AGILE_RT_MAX_* above.  Zeroed fields past @after give the
 * 1-D entry of earlier versions.
 */
struct agile_rt_entry {
	struct agile_rt_kernel *kernel;
	uint32_t threads;
	uint32_t groups;
	int32_t priority;
	uint32_t place;
	uint32_t nr_args;
	uint32_t nr_after;
	const struct agile_rt_arg *args;
	struct agile_rt_event *const *after;
	uint32_t threads_y, threads_z;
	uint32_t groups_y, groups_z;
	uint32_t local_bytes;
	uint32_t reserved;
};

struct agile_rt_queue;

/**
 * struct agile_rt_place_opts - placement thresholds (agile_rt_place_opts_init)
 * @gpu_busy_pct: the GPU counts as busy when this percentage of its EUs'
 *                doorbells are not IDLE (1 .. 100; default 100: all)
 * @cpu_busy_pct: the CPU likewise, for AGILE_RT_PLACE_ANY (default 100)
 * @reserved:     must be zero
 *
 * $AGILE_RT_GPU_BUSY_PCT and $AGILE_RT_CPU_BUSY_PCT override the defaults.
 */
struct agile_rt_place_opts {
	uint32_t gpu_busy_pct;
	uint32_t cpu_busy_pct;
	uint64_t reserved[2];
};

/**
 * agile_rt_place_opts_init - the default thresholds
 * @opts: the options
 *
 * Thread safety: thread safe.
 *
 * Return: 0, or -EINVAL (@opts NULL, or an environment override that is
 * not a number from 1 to 100).
 */
int agile_rt_place_opts_init(struct agile_rt_place_opts *opts);

/**
 * agile_rt_queue_create - the queue of @ctx, with one runner per EU
 * @ctx:   the context
 * @place: thresholds; NULL for agile_rt_place_opts_init's
 * @out:   receives the queue
 *
 * One queue per context at a time.  Each of the context's EUs gets a
 * runner thread, the EU's only poster: it takes the best ready group it
 * may run, posts it and waits for it.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL, -EBUSY (the context has a queue), -ENOMEM, -EAGAIN
 * (no thread), or -AGILE_E_INVALID_CONTEXT.
 */
int agile_rt_queue_create(agile_rt_ctx ctx,
			  const struct agile_rt_place_opts *place,
			  struct agile_rt_queue **out);

/**
 * agile_rt_queue_destroy - finish every entry, stop the runners, free
 * @q: the queue
 *
 * Nothing is lost: destroy refuses new entries (-ESHUTDOWN), then waits
 * until every entry enqueued has finished (run, failed, or failed by a
 * dependency), every event completed and every callback returned, then
 * joins the runners and drops the queue's context reference.  An entry
 * waiting for an event of another queue keeps destroy waiting until that
 * event completes.  Events stay valid until released.
 *
 * Thread safety: not thread safe against other calls on @q, enqueues
 * included (a completion callback of @q's events gets -ESHUTDOWN from an
 * enqueue on @q during destroy).
 *
 * Return: 0 or -EINVAL.
 */
int agile_rt_queue_destroy(struct agile_rt_queue *q);

/**
 * agile_rt_enqueue - queue @entry; returns at once
 * @q:     the queue
 * @entry: the entry (copied)
 * @event: receives the entry's event, with one reference for the caller
 *         (may be NULL: then the entry holds the only one)
 *
 * Dependencies: every event in @entry->after, and by data flow, for each
 * buffer argument: an entry reading it waits for the last entry enqueued
 * before it that writes it (read after write); an entry writing it waits
 * for that writer and for every entry reading it since (write after
 * write, write after read).  An entry whose after-event failed, or that
 * reads a buffer whose last writer failed, fails with -AGILE_E_DEPENDENCY
 * without running, and so do its dependents; write after read and write
 * after write by an entry that does not read the buffer only order (it
 * overwrites the failed data and runs).
 *
 * Group g of the entry runs its threads as the kernel's lanes (x
 * fastest), on one EU, with args as @entry->args: buffer words turned
 * into that device's addresses, AGILE_RT_ARG_GROUP words set to g (x
 * fastest: g = x + y gx + z gx gy), AGILE_RT_ARG_GROUP_ID to (x, y, z),
 * AGILE_RT_ARG_NR_GROUPS and AGILE_RT_ARG_GROUP_SIZE to the entry's
 * shapes, AGILE_RT_ARG_LOCAL to the group's local memory.  A CPU device's
 * runners take groups in ranges (a loop each, no post), a GPU device's
 * one task at a time.  An entry a GPU EU cannot run (more than
 * AGILE_MAX_LANES threads, local memory) runs on CPU EUs whatever its
 * @place, except AGILE_RT_PLACE_GPU_ONLY (-E2BIG).  The entry fails with
 * the first failed group's error (the others still run).
 *
 * Thread safety: thread safe (under the queue's lock).
 *
 * Return: 0, -EINVAL (bad entry: a kernel of another context, a zero or
 * out-of-range shape, a buffer of another context, a buffer without
 * access bits, reserved not zero), -E2BIG (a shape or local memory over
 * its limit: agile_rt_error_message names it), -ENODEV (no device of
 * the context can run it as placed), -ESHUTDOWN (the queue is being
 * destroyed) or -ENOMEM.
 */
int agile_rt_enqueue(struct agile_rt_queue *q,
		     const struct agile_rt_entry *entry,
		     struct agile_rt_event **event);

/**
 * agile_rt_error_message - why the calling thread's last refused enqueue
 * was refused
 *
 * One line naming the field and the limit ("threads 32 x 64 = 2048 over
 * AGILE_RT_MAX_GROUP_THREADS (1024)"), set by agile_rt_enqueue when it
 * returns -EINVAL, -E2BIG or -ENODEV; "" before any.
 *
 * Thread safety: thread safe (a thread-local buffer, valid until the
 * thread's next enqueue).
 *
 * Return: the message, never NULL.
 */
const char *agile_rt_error_message(void);

/* ---- load, placement, statistics ---- */

/**
 * struct agile_rt_device_stats - one device of a context, as placement sees it
 * @device:      the device id
 * @type:        AGILE_RT_DEVICE_*
 * @eu_kind:     AGILE_EU_KIND_* of its pool (a GPU device whose pool fell
 *               back to CPU EUs says CPU)
 * @nr_eus:      EUs
 * @busy:        EUs whose doorbell is not IDLE now
 * @tasks:       tasks its EUs ran (agile_eu_stats)
 * @failed:      of those, failed
 * @groups:      groups the runtime placed here
 * @fallback_in: groups meant for the GPU that ran here (CPU devices)
 */
struct agile_rt_device_stats {
	uint32_t device;
	uint32_t type;
	uint32_t eu_kind;
	uint32_t nr_eus;
	uint32_t busy;
	uint32_t reserved;
	uint64_t tasks;
	uint64_t failed;
	uint64_t groups;
	uint64_t fallback_in;
};

/**
 * struct agile_rt_stats - a queue's counters and its devices' load
 * @enqueued:     entries enqueued
 * @completed:    entries finished (any status)
 * @failed:       of those, failed while running
 * @dep_failed:   failed by a dependency, not run
 * @pending:      entries not finished now
 * @cpu_fallback: groups meant for the GPU (AGILE_RT_PLACE_GPU) that ran
 *                on CPU EUs because the GPU was busy
 * @gpu_busy_pct, @cpu_busy_pct: the thresholds in force
 * @nr_devices:   rows of @devices used
 * @devices:      per device of the context
 */
struct agile_rt_stats {
	uint64_t enqueued;
	uint64_t completed;
	uint64_t failed;
	uint64_t dep_failed;
	uint64_t pending;
	uint64_t cpu_fallback;
	uint32_t gpu_busy_pct;
	uint32_t cpu_busy_pct;
	uint32_t nr_devices;
	uint32_t reserved;
	struct agile_rt_device_stats devices[AGILE_RT_MAX_DEVICES];
};

/**
 * agile_rt_stats - @q's counters and its devices' current load
 * @q:     the queue
 * @stats: receives them
 *
 * Thread safety: thread safe (a snapshot).
 *
 * Return: 0 or -EINVAL.
 */
int agile_rt_stats(struct agile_rt_queue *q, struct agile_rt_stats *stats);

/**
 * agile_rt_stats_print - agile_rt_stats as a small table, agilectl style
 * @q: the queue
 * @f: where to write it
 *
 * One line of totals, then one line per device: id, type, EU kind, EUs,
 * busy, tasks, failed, groups, fallback groups.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL, -ENOMEM or -EIO (writing failed).
 */
int agile_rt_stats_print(struct agile_rt_queue *q, FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_RUNTIME_H */
