/* SPDX-License-Identifier: MIT */
/*
 * agile/kernels.h - kernels and their opcode registry (SPEC §3, layer 3)
 *
 * A kernel is what an execution unit runs for one opcode.  It is written
 * once, GPU style, as phases separated by barriers (seed 004): every lane
 * of the task runs phase 0, all of them reach the barrier, every lane runs
 * phase 1, and so on.  A phase is a plain C function of
 *
 *	lane      this lane's index, 0 .. nr_lanes - 1 (threadIdx.x)
 *	nr_lanes  the lanes running the task: its nr_parts (blockDim.x)
 *	args      the task's argument words (agile_task_reg.args)
 *	state     this lane's values that live across a barrier: a struct of
 *	          the kernel's choosing, state_size bytes
 *	shared    block-shared memory, shared_size bytes, one per task
 *
 * returning 0, or a negative errno that fails the lane.  Phases call no
 * library function and keep nothing in static storage, so the same source
 * compiles for GPU lanes (AGILE_LANE_FN marks them __device__ there) and
 * for CPU lanes.
 *
 * On a CPU execution unit the seed-004 transformation runs a kernel: a lane
 * loop wraps each phase (phase p runs for lane 0, 1, ... before phase p+1
 * starts for any lane, which is what the barrier promises), the values a
 * lane keeps across barriers live in an array of per-lane states indexed
 * by lane id (the "promoted" variables), and the block-shared memory is
 * one array per task.  Values used within one phase stay locals of the
 * phase function, as they would stay registers on a GPU.
 *
 * Barriers in thread-uniform loops or branches (MCUDA's deep fission) are
 * what @next is for: it runs once per task between phases, like the
 * convergent code around a GPU barrier (no lane loop), and picks the next
 * phase, so a loop with a barrier inside becomes a jump back.
 *
 * A failed lane runs no further phase; the others go on.  The task
 * succeeds when every lane completed every phase.
 *
 * Thread safety: the registry takes registrations from any thread, and
 * lookups from any thread at any time, without locks (execution units look
 * up every task).  Kernels are never removed before the registry is
 * destroyed.
 */
#ifndef AGILE_KERNELS_H
#define AGILE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <agile/uapi.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__CUDACC__) || defined(__HIPCC__)
#define AGILE_LANE_FN __device__
#else
#define AGILE_LANE_FN
#endif

struct agile_kernels;

/* Opcodes of registered kernels: AGILE_OP_USER_BASE .. + AGILE_KERNELS_MAX - 1. */
#define AGILE_KERNELS_MAX 256
/* Longest kernel name, terminating NUL included. */
#define AGILE_KERNEL_NAME_MAX 32
#define AGILE_KERNEL_MAX_PHASES 64
/* Largest per-lane state and block-shared memory of a kernel. */
#define AGILE_KERNEL_MAX_STATE 4096
#define AGILE_KERNEL_MAX_SHARED (64 * 1024)
/* agile_kernel.next: no further phase, the task is done. */
#define AGILE_KERNEL_DONE UINT32_MAX

/**
 * agile_phase_fn - one phase of a kernel, run for one lane
 * @lane:     this lane's index, 0 .. @nr_lanes - 1
 * @nr_lanes: the lanes running the task (its nr_parts)
 * @args:     the task's argument words
 * @state:    this lane's state, the kernel's state_size bytes
 * @shared:   the task's block-shared memory, shared_size bytes
 *
 * Return: 0, or a negative errno (the lane fails).
 */
typedef int (*agile_phase_fn)(uint32_t lane, uint32_t nr_lanes,
			      const __u64 *args, void *state, void *shared);

/**
 * agile_next_fn - convergent code between phases, run once per task
 * @done:     the phase that just finished on every lane that has not failed
 * @nr_lanes: the lanes running the task
 * @args:     the task's argument words
 * @shared:   the task's block-shared memory
 *
 * Return: the next phase, or AGILE_KERNEL_DONE.
 */
typedef uint32_t (*agile_next_fn)(uint32_t done, uint32_t nr_lanes,
				  const __u64 *args, void *shared);

/**
 * struct agile_kernel - a kernel as it is registered
 * @name:        unique, 1 .. AGILE_KERNEL_NAME_MAX - 1 characters (copied)
 * @opcode:      unique, AGILE_OP_USER_BASE ..; 0 picks a free one
 * @nr_phases:   1 .. AGILE_KERNEL_MAX_PHASES
 * @phases:      the phase functions (the array is copied)
 * @next:        NULL: phases run in order, 0 .. nr_phases - 1; else called
 *               after each phase to choose the next one
 * @state_size:  bytes of one lane's state (0 .. AGILE_KERNEL_MAX_STATE)
 * @shared_size: bytes of block-shared memory (0 .. AGILE_KERNEL_MAX_SHARED)
 * @max_lanes:   most lanes (nr_parts) a task may ask for, 1 ..
 *               AGILE_MAX_LANES; 0 means AGILE_MAX_LANES
 * @reserved:    must be zero
 *
 * Each lane's state is 16-byte aligned, the shared memory 64-byte aligned;
 * neither is initialised, as on a GPU: a phase writes what later phases
 * read.
 */
struct agile_kernel {
	const char *name;
	uint32_t opcode;
	uint32_t nr_phases;
	const agile_phase_fn *phases;
	agile_next_fn next;
	uint32_t state_size;
	uint32_t shared_size;
	uint32_t max_lanes;
	uint32_t reserved;
};

/**
 * struct agile_lane_result - how the lanes of one task ended
 * @status:     bit i set when lane i completed every phase
 * @error:      0, or the error of the first lane that failed (in the
 *              order the lanes ran: phase by phase, lane by lane)
 * @error_lane: the lane that returned @error
 */
struct agile_lane_result {
	uint64_t status;
	int32_t error;
	uint32_t error_lane;
};

/**
 * agile_kernels_create - an empty registry
 * @out: receives the registry
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL (@out NULL) or -ENOMEM.
 */
int agile_kernels_create(struct agile_kernels **out);

/**
 * agile_kernels_destroy - free the registry and every kernel in it
 * @reg: the registry
 *
 * Nothing may use the registry any more (execution units included).
 *
 * Thread safety: not thread safe against any other call on @reg, nor
 * against EU pools that run kernels from it (destroy those first).
 *
 * Return: 0 or -EINVAL (@reg NULL).
 */
int agile_kernels_destroy(struct agile_kernels *reg);

/**
 * agile_kernels_register - add a kernel
 * @reg:    the registry
 * @kernel: the kernel's descriptor (copied, with its name and phases)
 * @opcode: receives the kernel's opcode (may be NULL)
 *
 * The kernel can be looked up as soon as this returns.
 *
 * Thread safety: thread safe (registrations are serialised by a lock;
 * lookups run concurrently without it).
 *
 * Return: 0, -EINVAL (a bad descriptor; an opcode outside the range),
 * -EEXIST (the name or the opcode is taken), -ENOSPC (no free opcode
 * left) or -ENOMEM.
 */
int agile_kernels_register(struct agile_kernels *reg,
			   const struct agile_kernel *kernel, uint32_t *opcode);

/**
 * agile_kernels_lookup - the kernel registered for @opcode
 * @reg:    the registry
 * @opcode: the opcode
 * @out:    receives the kernel; valid until the registry is destroyed
 *
 * Thread safety: thread safe, no locks (an acquire load that pairs with
 * the registration's release store).
 *
 * Return: 0, -EINVAL (NULL pointers), or -AGILE_E_OPCODE (nothing
 * registered there).
 */
int agile_kernels_lookup(const struct agile_kernels *reg, uint32_t opcode,
			 const struct agile_kernel **out);

/**
 * agile_kernels_find - the kernel registered under @name
 * @reg:  the registry
 * @name: the kernel's name
 * @out:  receives the kernel; valid until the registry is destroyed
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL (NULL pointers) or -ENOENT (no kernel of that name).
 */
int agile_kernels_find(const struct agile_kernels *reg, const char *name,
		       const struct agile_kernel **out);

/**
 * agile_kernels_scratch_size - bytes agile_kernels_run needs for @nr_lanes
 * @kernel:   the kernel
 * @nr_lanes: the task's lanes
 *
 * The lanes' state array and the shared memory.
 *
 * Thread safety: thread safe (reads @kernel only).
 *
 * Return: the size in bytes, or 0 if @kernel is NULL.
 */
size_t agile_kernels_scratch_size(const struct agile_kernel *kernel,
				  uint32_t nr_lanes);

/**
 * agile_kernels_run - run one task of @kernel on the calling CPU thread
 * @kernel:   the kernel
 * @nr_lanes: the task's nr_parts, 1 .. the kernel's max_lanes (0 there
 *            means AGILE_MAX_LANES: @kernel need not be registered)
 * @args:     the task's argument words
 * @scratch:  agile_kernels_scratch_size(kernel, nr_lanes) bytes, 64-byte
 *            aligned: the lanes' states and the shared memory
 * @res:      receives which lanes completed and the first failure
 *
 * The seed-004 transformation: a lane loop around each phase.
 *
 * Thread safety: thread safe for distinct @scratch (and @res); @kernel is
 * only read.
 *
 * Return: 0 when the task ran (lane failures are in @res, not here), or
 * -EINVAL (bad arguments: nothing ran).
 */
int agile_kernels_run(const struct agile_kernel *kernel, uint32_t nr_lanes,
		      const __u64 *args, void *scratch,
		      struct agile_lane_result *res);

/*
 * The built-in kernels: phase functions of libagile/src/kernels/kernels_body.h,
 * which GPU execution units run too (a GPU EU on the built-in code object
 * runs no other kernel: any other opcode fails there with -AGILE_E_OPCODE;
 * one on a code image compiled at run time also runs that image's user
 * kernels, docs/runtime.md).  Registered under these
 * names by agile_kernels_register_builtins:
 *
 *  AGILE_KERNEL_AXPY: y = a x + y over doubles.  args: a (the double's
 *	bits), x, y, n.  Any number of lanes; lane l does its block of
 *	[0, n).
 *  AGILE_KERNEL_MATLIST_MUL: A[i] = A[i] B, dim x dim row-major doubles,
 *	A holding matrices one after another.  args: A, B, i, dim.
 *	nr_parts must be dim * dim (one lane per element).
 *
 * Pointers in args are addresses the EU can use: for GPU EUs the ones
 * agile_eu_pool_map returns (agile/eu.h).
 */
#define AGILE_KERNEL_AXPY "agile.axpy"
#define AGILE_KERNEL_MATLIST_MUL "agile.matlist-mul"

/**
 * agile_kernels_register_builtins - register the built-in kernels
 * @reg: the registry
 *
 * Each at the first free opcode (agile_kernels_find gives it).  Calling it
 * again is harmless.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, -EINVAL (@reg NULL), -EEXIST (a kernel of the same name that
 * is not the built-in one), -ENOSPC or -ENOMEM (then the ones before may
 * be registered).
 */
int agile_kernels_register_builtins(struct agile_kernels *reg);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_KERNELS_H */
