/* SPDX-License-Identifier: MIT */
/*
 * agile/eu.h - execution units, CPU and GPU (SPEC §3, layer 2)
 *
 * An execution unit (EU) is the far end of one slot of a device context:
 * worker k posts a task into task register k and rings doorbell k, EU k
 * runs it and rings back (seed 002).  A GPU work-group is the real thing;
 * a CPU EU is a thread running the same persistent loop, process 600b:
 *
 *	612  wait until the doorbell is POSTED (spin, then sleep in the
 *	     kernel or on a futex: an idle EU costs no CPU)
 *	614  read the task register (acquire: pairs with the post's release)
 *	616  split the task into its nr_parts lane parts
 *	618- run every lane's part (600c): the kernel registered for the
 *	624  opcode, through the seed-004 lane loops (agile/kernels.h)
 *	646  one status bit per lane that succeeded; the first failure's
 *	     error code and lane
 *	626  release, so the results are visible before ...
 *	628  ... the doorbell goes back to IDLE (and a sleeping poster is woken)
 *
 * AGILE_OP_DISCONNECT ends the loop.  EU k always serves slot k.
 *
 * On the posting side (process 600a): agile_eu_task_reg gives the register
 * to fill in (opcode, nr_parts, args), agile_eu_submit posts it and
 * agile_eu_wait waits for the doorbell to come back and turns the status
 * word into 0 or the failed lane's error; agile_eu_call does both.
 *
 * Who owns the task register: the EU, from a submit until its doorbell is
 * IDLE again; the poster otherwise.  The poster may write the register
 * only while it owns it: after agile_eu_task_reg returned 0, or after
 * agile_eu_wait (or agile_eu_call) returned the task's outcome (0 or the
 * task's error; not -ETIMEDOUT, nor another error of the wait itself),
 * and until the next submit.  Every call here checks the slot
 * IDLE (an acquire load that pairs with the EU's release store of IDLE)
 * before it writes the register, so a call that returns -EBUSY has
 * changed nothing: the task in flight runs on undisturbed.
 *
 * GPU EUs: a pool asked for them (AGILE_EU_POOL_GPU, or AGILE_EU_POOL_AUTO)
 * looks for a usable GPU (agile/gpu.h) and launches the persistent kernel
 * (libagile/gpu/persistent.cu) there, one work-group per EU, polling the
 * same doorbells through host-registered pages: the posting side below is
 * unchanged.  The kernel comes from a code object `make -C libagile gpu`
 * builds, looked for in $AGILE_GPU_CODE_DIR if set (only there), else in
 * the build directory, else in "agile/" beside the installed library.  A
 * GPU EU runs the built-in kernels only (agile_kernels_register_builtins,
 * registered before the pool is created); any other opcode fails there
 * with -AGILE_E_OPCODE.  Pointers in a task's args must be ones the GPU
 * can use: agile_eu_pool_map gives them.
 *
 * Any step failing (no usable GPU, no code object, the runtime refusing to
 * register the pages or to launch, too many EUs to be resident at once)
 * makes the pool start CPU EUs instead and say so once per process on
 * stderr, "agile: no usable GPU (<why>); using CPU execution units" or
 * "agile: usable GPU found, but <why>; using CPU execution units"
 * (AGILE_QUIET=1 in the environment silences it).  agile_eu_pool_info
 * reports the kind started and the reason.  AGILE_EU_POOL_GPU_ONLY, or
 * AGILE_EU_POOL=gpu in the environment (for every pool that asks for GPU
 * EUs), turns the fallback into a failure of agile_eu_pool_create;
 * AGILE_EU_POOL=cpu makes such pools (AGILE_EU_POOL_GPU_ONLY ones
 * excepted) take CPU EUs without looking.
 * Pools asked for CPU EUs (flags 0) are not affected by either.
 *
 * Thread safety: create and destroy are not thread safe against other
 * calls on the pool.  Each EU takes one poster at a time (the worker that
 * owns it): its task register, submit, wait, call and disconnect must not
 * be used by two threads at once.  Different EUs are independent, and
 * agile_eu_stats may be called at any time.
 */
#ifndef AGILE_EU_H
#define AGILE_EU_H

#include <stddef.h>
#include <stdint.h>

#include <agile/dev.h>
#include <agile/kernels.h>

#ifdef __cplusplus
extern "C" {
#endif

struct agile_eu_pool;

/* agile_task_reg.error_lane when the EU refused the task as a whole. */
#define AGILE_EU_NO_LANE UINT32_MAX

#define AGILE_EU_IDLE_SPIN_NS_DEFAULT 50000ULL
#define AGILE_EU_WAIT_SPIN_NS_DEFAULT 50000ULL
/*
 * GPU EUs take at most this percentage of the work-groups the device can
 * hold at once (SM/CU count x the persistent kernel's occupancy), so that
 * other kernels, the library's own plain launches included, still find
 * room (docs/gpu.md, "Headroom").
 */
#define AGILE_EU_GPU_SHARE_DEFAULT 50

/**
 * struct agile_eu_pool_opts - how to start a pool (agile_eu_pool_opts_init)
 * @nr_eus:       EUs, serving slots 0 .. nr_eus - 1; 0: one per slot
 * @flags:        0 (CPU EUs), AGILE_EU_POOL_GPU or AGILE_EU_POOL_AUTO
 * @idle_spin_ns: an idle EU spins this long on its doorbell, then sleeps
 * @wait_spin_ns: agile_eu_wait spins this long, then sleeps
 * @stack_size:   EU thread stack in bytes; 0: the system default
 * @gpu_share:    GPU EUs: the most of the device's co-resident work-groups
 *                they may take, in percent (1-100); 0: $AGILE_GPU_SHARE
 *                if set, else AGILE_EU_GPU_SHARE_DEFAULT
 * @reserved32, @reserved: must be zero
 */
struct agile_eu_pool_opts {
	uint32_t nr_eus;
	uint32_t flags;
	uint64_t idle_spin_ns;
	uint64_t wait_spin_ns;
	size_t stack_size;
	uint32_t gpu_share;
	uint32_t reserved32;
	uint64_t reserved[3];
};

/* struct agile_eu_pool_opts.flags: at most one of these. */
#define AGILE_EU_POOL_GPU (1u << 0) /* GPU EUs wanted; CPU if none usable */
#define AGILE_EU_POOL_AUTO (1u << 1) /* GPU EUs if a GPU is usable, else CPU */
#define AGILE_EU_POOL_GPU_ONLY (1u << 2) /* GPU EUs, or create fails */
#define AGILE_EU_POOL_KINDS \
	(AGILE_EU_POOL_GPU | AGILE_EU_POOL_AUTO | AGILE_EU_POOL_GPU_ONLY)

/* struct agile_eu_pool_info.kind */
#define AGILE_EU_KIND_CPU 0
#define AGILE_EU_KIND_GPU 1

#define AGILE_EU_REASON_LEN 256

/**
 * struct agile_eu_pool_info - what a pool runs on, and why
 * @kind:     AGILE_EU_KIND_*: what the EUs are
 * @fallback: 1 when GPU EUs were asked for and CPU EUs were started
 * @reason:   with @fallback, why (what the GPU probe saw); GPU EUs whose
 *            kernel was found dead or ended (-AGILE_E_GPU): what
 *            happened, with the device's error; else ""
 */
struct agile_eu_pool_info {
	uint32_t kind;
	uint32_t fallback;
	char reason[AGILE_EU_REASON_LEN];
};

/**
 * struct agile_eu_stats - one EU's counters
 * @tasks:     tasks run (DISCONNECT not counted)
 * @failed:    of those, tasks that failed (a lane failed, or refused)
 * @lanes:     lane parts run
 * @connected: 1 while the EU's persistent loop runs, else 0
 * @reserved:  zero
 */
struct agile_eu_stats {
	uint64_t tasks;
	uint64_t failed;
	uint64_t lanes;
	uint32_t connected;
	uint32_t reserved;
};

/**
 * agile_eu_pool_opts_init - fill @opts with the defaults
 * @opts: the options
 *
 * One EU per slot, CPU EUs, AGILE_EU_IDLE_SPIN_NS_DEFAULT and
 * AGILE_EU_WAIT_SPIN_NS_DEFAULT.
 *
 * Thread safety: thread safe.
 *
 * Return: 0, or -EINVAL if @opts is NULL.
 */
int agile_eu_pool_opts_init(struct agile_eu_pool_opts *opts);

/**
 * agile_eu_pool_create - start one CPU EU thread per slot
 * @dev:     the device context; its slots' doorbells must be IDLE
 * @kernels: the opcode registry the EUs run kernels from
 * @opts:    NULL for the defaults
 * @out:     receives the pool
 *
 * @dev and @kernels must outlive the pool.  GPU EUs asked for in
 * @opts->flags fall back to CPU EUs as described at the top.
 *
 * Thread safety: thread safe, but no two pools may serve the same slots
 * of @dev at once.
 *
 * Return: 0, -EINVAL (bad arguments, unknown or several kind flags, more
 * EUs than slots, AGILE_EU_POOL set to something other than cpu, gpu or
 * auto, @gpu_share over 100, AGILE_GPU_SHARE not a number from 1 to 100),
 * -EBUSY (a doorbell is not IDLE), -ENOMEM or -EAGAIN (no thread).
 * GPU EUs required and not started: -ENODEV (no usable GPU or runtime, or
 * a kernel run-time limit), -ENOENT (no code object), -ENOSPC (the EUs do
 * not fit in their share of the GPU), -EBUSY (another pool's GPU EUs run
 * on the device: one persistent kernel per device and process), -EIO (the
 * runtime refused a step) or -ENOTSUP (a static build);
 * the reason goes to stderr unless AGILE_QUIET is set.
 */
int agile_eu_pool_create(struct agile_dev *dev, struct agile_kernels *kernels,
			 const struct agile_eu_pool_opts *opts,
			 struct agile_eu_pool **out);

/**
 * agile_eu_pool_destroy - DISCONNECT every EU, join the threads, free
 * @pool: the pool
 *
 * Thread safety: not thread safe against any other call on @pool (an
 * offload object using it included: destroy that first).
 *
 * GPU EUs: bounded.  A dead kernel's tasks in flight do not count
 * (nothing runs them); the work-groups get AGILE_GPU_STOP_TIMEOUT_MS
 * (default 10000) in all to take DISCONNECT and the kernel to end, and
 * only then is anything unregistered.  A kernel still running after that
 * is abandoned: the pool is freed, but the kernel, its streams and its
 * registrations stay until the process ends (unregistering under it
 * would hang), and so does the device's claim (docs/gpu.md).
 *
 * Return: 0, -EINVAL, -EBUSY (a task is still in flight on some EU:
 * wait for it first; nothing was changed), or -ETIMEDOUT (GPU EUs
 * abandoned as above; the pool is freed all the same).
 */
int agile_eu_pool_destroy(struct agile_eu_pool *pool);

/**
 * agile_eu_pool_nr_eus - how many EUs @pool has
 * @pool: the pool
 *
 * Thread safety: thread safe.
 *
 * Return: the count, or -EINVAL if @pool is NULL.
 */
int agile_eu_pool_nr_eus(const struct agile_eu_pool *pool);

/**
 * agile_eu_pool_info - what @pool's EUs are, and why
 * @pool: the pool
 * @info: receives the kind and the fallback reason
 *
 * Thread safety: thread safe.
 *
 * Return: 0 or -EINVAL (NULL pointers).
 */
int agile_eu_pool_info(const struct agile_eu_pool *pool,
		       struct agile_eu_pool_info *info);

/**
 * agile_eu_pool_kernels - the registry @pool's EUs run kernels from
 * @pool: the pool
 * @out:  receives the registry given to agile_eu_pool_create
 *
 * Thread safety: thread safe.
 *
 * Return: 0 or -EINVAL (NULL pointers).
 */
int agile_eu_pool_kernels(const struct agile_eu_pool *pool,
			  struct agile_kernels **out);

/**
 * agile_eu_task_reg - EU @eu's task register, to fill in before a submit
 * @pool:    the pool
 * @eu:      the EU, 0 .. nr_eus - 1
 * @reg:     receives the task register
 * @nr_args: receives how many argument words it holds (may be NULL); set
 *           on -EBUSY too
 *
 * Write opcode, nr_parts, flags and args; agile_eu_submit clears the
 * result fields.
 *
 * Thread safety: one poster per EU (see the top); other EUs' posters
 * may run at once.
 *
 * Return: 0, -EINVAL, or -EBUSY (a task is in flight: the EU owns the
 * register, which must not be written until a wait has seen the task
 * finish; *@reg is left alone).
 */
int agile_eu_task_reg(struct agile_eu_pool *pool, uint32_t eu,
		      struct agile_task_reg **reg, uint32_t *nr_args);

/**
 * agile_eu_submit - post the task in EU @eu's register (steps 602-606)
 * @pool: the pool
 * @eu:   the EU
 *
 * Thread safety: one poster per EU.
 *
 * Return: 0, -EINVAL, -ENOTCONN (the EU was disconnected), -EBUSY (the
 * previous task is not finished: nothing was written, it runs on) or
 * -AGILE_E_GPU (GPU EUs found dead by an earlier wait).
 */
int agile_eu_submit(struct agile_eu_pool *pool, uint32_t eu);

/**
 * agile_eu_wait - wait for EU @eu's task and read its outcome (608-610)
 * @pool:       the pool
 * @eu:         the EU
 * @timeout_ns: relative; AGILE_TIMEOUT_INFINITE waits for ever
 * @error_lane: receives the failed lane (AGILE_EU_NO_LANE when the EU
 *              refused the task), set only when a lane failed; may be NULL
 *
 * Thread safety: one poster per EU.
 *
 * Return: 0 (every lane's bit set), the failed lane's negative error
 * (-AGILE_E_OPCODE: no kernel for the opcode), -AGILE_E_STATUS (a bit is
 * missing without an error), -ETIMEDOUT (the task is still running: wait
 * again later), -AGILE_E_GPU (GPU EUs: the runtime says their kernel died
 * or ended, so the task will never finish; agile_eu_pool_info has the
 * device's error) or -EINVAL.  A wait on a GPU EU asks the runtime
 * (hipStreamQuery / cuStreamQuery) every 200 us it sleeps.
 */
int agile_eu_wait(struct agile_eu_pool *pool, uint32_t eu, uint64_t timeout_ns,
		  uint32_t *error_lane);

/**
 * agile_eu_call - agile_eu_submit, then agile_eu_wait
 * @pool:       the pool
 * @eu:         the EU
 * @timeout_ns: as agile_eu_wait's
 * @error_lane: as agile_eu_wait's
 *
 * Thread safety: one poster per EU.
 *
 * Return: agile_eu_submit's error, else agile_eu_wait's result.
 */
int agile_eu_call(struct agile_eu_pool *pool, uint32_t eu, uint64_t timeout_ns,
		  uint32_t *error_lane);

/**
 * agile_eu_run_inline - run a task register's task on the calling thread
 * @pool:       the pool whose registry has the kernel
 * @reg:        a task register of the device's task_reg_size bytes (it
 *              need not be one of the device's)
 * @error_lane: as agile_eu_wait's
 *
 * What a CPU EU does for one task, for callers that have no EU to give it
 * to (a worker that owns none); on the calling CPU even for a GPU pool, so
 * the args must be addresses the CPU can use.
 *
 * Thread safety: thread safe for distinct @reg.
 *
 * Return: as agile_eu_wait; -ENOMEM when the kernel's scratch memory
 * could not be allocated.
 */
int agile_eu_run_inline(struct agile_eu_pool *pool, struct agile_task_reg *reg,
			uint32_t *error_lane);

/**
 * agile_eu_disconnect - post AGILE_OP_DISCONNECT to EU @eu and join it
 * @pool:       the pool
 * @eu:         the EU
 * @timeout_ns: how long to wait for the EU to see it
 *
 * Thread safety: one poster per EU.
 *
 * Return: 0, -ENOTCONN (already disconnected), -EBUSY (a task is in
 * flight: nothing was written, it runs on and the EU stays connected),
 * -ETIMEDOUT (posted, not yet seen: agile_eu_pool_destroy will finish the
 * job) or -EINVAL.
 */
int agile_eu_disconnect(struct agile_eu_pool *pool, uint32_t eu,
			uint64_t timeout_ns);

/**
 * agile_eu_stats - EU @eu's counters into @stats
 * @pool:  the pool
 * @eu:    the EU
 * @stats: receives the counters
 *
 * A GPU EU's are counted by agile_eu_wait when it sees a task finished.
 *
 * Thread safety: thread safe, at any time (relaxed loads: a recent
 * snapshot).
 *
 * Return: 0 or -EINVAL (NULL pointers, @eu out of range).
 */
int agile_eu_stats(struct agile_eu_pool *pool, uint32_t eu,
		   struct agile_eu_stats *stats);

/**
 * agile_eu_pool_map - make @bytes at @addr usable by the pool's EUs
 * @pool:    the pool
 * @addr:    the memory
 * @bytes:   its size
 * @eu_addr: receives the address to put in a task's args for @addr
 *
 * GPU EUs: registers the memory with the runtime, mapped (docs/gpu.md
 * says with which flags), and gives the device's address for it, which
 * need not equal @addr.  Map each buffer (segments included) the tasks
 * point into before posting them; it stays mapped until
 * agile_eu_pool_unmap or the pool's destroy, and registered until the
 * pool's destroy (see agile_eu_pool_unmap).  CPU EUs: *@eu_addr = @addr.
 *
 * Thread safety: thread safe (GPU EUs: under the pool's map lock).
 *
 * Return: 0, -EINVAL, -EEXIST (@addr is mapped already), -EBUSY (GPU EUs:
 * @addr was unmapped with another size and is still registered), -ENOMEM
 * or -EIO (the runtime refused, e.g. @addr overlaps a registered range).
 */
int agile_eu_pool_map(struct agile_eu_pool *pool, void *addr, size_t bytes,
		      uint64_t *eu_addr);

/**
 * agile_eu_pool_unmap - undo agile_eu_pool_map
 * @pool: the pool
 * @addr: the @addr given to agile_eu_pool_map
 *
 * No task in flight may still use the memory.  GPU EUs: the mapping is
 * forgotten, but the memory stays registered with the runtime until the
 * pool's destroy has seen the persistent kernel end (unregistering while
 * it runs hangs on ROCm 6: docs/gpu.md, "What an application may not
 * do"), so it must stay allocated until then; mapping the same @addr and
 * size again gives the same address back.
 *
 * Thread safety: thread safe (GPU EUs: under the pool's map lock).
 *
 * Return: 0, -EINVAL (NULL pointers) or -ENOENT (GPU EUs: @addr is not
 * mapped); CPU EUs: always 0 for a non-NULL @addr.
 */
int agile_eu_pool_unmap(struct agile_eu_pool *pool, void *addr);

/**
 * agile_eu_pool_alloc - zeroed memory the pool's EUs can use, from its arena
 * @pool:    the pool
 * @bytes:   how much (rounded up to whole pages)
 * @host:    receives the memory, page-aligned
 * @eu_addr: receives the address to put in a task's args for *@host
 *
 * The memory comes from chunks of whole pages (256 at least) that the
 * pool maps for its EUs once, when it makes them (agile_eu_pool_map), and
 * keeps until its destroy; agile_eu_pool_free gives pages back to the
 * chunk for the next allocation, first fit.  On GPU EUs, where nothing
 * can be unregistered while the persistent kernel runs (see
 * agile_eu_pool_unmap), memory that comes and goes this way costs no new
 * registration once the arena is big enough, nor meets a freed range that
 * is still registered.  CPU EUs: the same arena, unmapped (*@eu_addr =
 * *@host).  Every allocation is invalid after agile_eu_pool_destroy, which
 * frees the chunks (a GPU kernel that would not end keeps them).
 *
 * Thread safety: thread safe (under the pool's arena lock).
 *
 * Return: 0, -EINVAL (NULL pointers, @bytes 0), -ENOMEM, or what
 * agile_eu_pool_map returned for a new chunk (-EIO: the runtime refused).
 */
int agile_eu_pool_alloc(struct agile_eu_pool *pool, size_t bytes, void **host,
			uint64_t *eu_addr);

/**
 * agile_eu_pool_free - give agile_eu_pool_alloc's memory back to the arena
 * @pool: the pool
 * @host: what agile_eu_pool_alloc gave, or NULL (nothing is done)
 *
 * No task in flight may still use the memory.  It stays mapped and
 * allocated (its chunk is the pool's) and is handed out again.
 *
 * Thread safety: thread safe (under the pool's arena lock).
 *
 * Return: 0, or -EINVAL (NULL @pool, @host not an allocation of @pool's).
 */
int agile_eu_pool_free(struct agile_eu_pool *pool, void *host);

/**
 * agile_eu_run_launch - run EU @eu's task with a plain kernel launch
 * @pool:       the pool
 * @eu:         the EU
 * @error_lane: as agile_eu_wait's
 *
 * GPU EUs only: the task in EU @eu's register (filled in as for
 * agile_eu_submit, not submitted) runs with one kernel launch of the same
 * GPU code on a stream of its own, then a stream synchronise - what the
 * doorbell path saves (agile-bench gpu measures the two).  The slot must
 * be IDLE.
 *
 * Thread safety: one poster per EU.
 *
 * Return: as agile_eu_wait, or -EOPNOTSUPP (CPU EUs), -EBUSY (a task is
 * posted on the slot), -EIO (the launch failed).
 */
int agile_eu_run_launch(struct agile_eu_pool *pool, uint32_t eu,
			uint32_t *error_lane);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_EU_H */
