// SPDX-License-Identifier: MIT
/*
 * persistent.cu - GPU execution units: the persistent loop of seed 002
 * (processes 600b and 600c) as one kernel, compiled by hipcc -x hip for AMD
 * and by nvcc for NVIDIA through agile_gpu.h.
 *
 * One work-group per EU: work-group k serves slot k (doorbell k, task
 * register k).  Lane 0 is the primary: it polls the doorbell with relaxed
 * system-scope loads (uncached, no cache maintenance per poll), and once it
 * sees POSTED issues the one system-scope acquire fence of the task, reads
 * the task, decides, and copies the arguments into work-group shared
 * memory; the barrier releases the secondaries; each lane below nr_parts
 * runs its part of every phase (lanes at or above nr_parts idle) on the
 * shared copy of the arguments, with the work-group barrier between phases
 * - the same phase functions the CPU EUs run (kernels_body.h).  Lanes
 * record success and the first failure in work-group shared memory; the
 * primary copies them into the task register, issues the one system-scope
 * release fence of the task and stores IDLE.
 *
 * The completion bits and the first-failure CAS are done on shared-memory
 * copies rather than on the task register itself: the register lives in
 * host memory, where device atomics need PCIe atomics (which not every
 * platform has); the primary's plain stores followed by the fence and the
 * store of IDLE publish the same values.  The arguments are staged for the
 * same reason the bits are gathered: the register is across the bus, and
 * lanes times phases reads of it would each be a PCIe round trip.
 */
#include "agile_gpu.h"
/*
 * Compiled at run time with user kernels (src/runtime/compile_rtc.c):
 * agile_user.h is the runtime's in-memory header, the user's source between
 * the dialect's GPU prelude and epilogue (docs/runtime.md).  It
 * defines AGILE_USER_MAX_LANES before kernels_body.h reads it.
 */
#ifdef AGILE_GPU_USER_KERNELS
#include "agile_user.h"
#endif
#include "kernels/kernels_body.h"

#include <agile/error.h>

#include <errno.h>

static_assert(AGILE_GPU_NR_COMMON == AGILE_COMMON_NR,
	      "agile_gpu_params.opcodes must cover every common kernel");
static_assert(AGILE_GPU_NR_USER == AGILE_USER_NR_MAX,
	      "agile_gpu_params.opcodes must cover every user kernel");
/*
 * Checked by hipcc and nvcc: NVRTC's copy of linux/agile.h gives the
 * register a fixed args array (src/runtime/compile_sources.c), so its
 * sizeof is not the register's header.
 */
#ifndef AGILE_GPU_RTC
static_assert(sizeof(struct agile_task_reg) +
			      AGILE_COMMON_NR_ARGS * sizeof(__u64) <=
		      AGILE_TASK_REG_MIN_SIZE,
	      "the staged arguments must fit the smallest task register");
#endif

/*
 * The argument words lane 0 stages: the common kernels read 4; an image
 * with user kernels stages the runtime's 12 (AGILE_RT_MAX_ARGS of
 * agile/runtime.h, whose task registers have room for them).
 */
#ifdef AGILE_GPU_USER_KERNELS
#define STAGED_ARGS 12
#else
#define STAGED_ARGS AGILE_COMMON_NR_ARGS
#endif

/*
 * What lane 0 decides for one task (kernels_body.h: agile_task_decide) and
 * reads of it, which the lanes share: work-group shared memory, one per
 * kernel instance.  next_phase and nr_failed: a user kernel's control
 * function (dialect 2), run by lane 0 between phases.
 */
struct task_shared {
	__u64 args[STAGED_ARGS];
	uint32_t quit, kernel, parts, error_lane;
	int error;
	uint32_t next_phase, nr_failed;
	unsigned long long status;
};

/*
 * The register's first 64 bytes: the head, then args[0 .. 3].  Checked by
 * hipcc and nvcc (the runtime compilers' copy of the register has the same
 * offsets, with a fixed args array: src/runtime/compile_sources.c).
 */
#ifndef AGILE_GPU_RTC
static_assert(sizeof(struct agile_task_reg) == 32 &&
		      AGILE_COMMON_NR_ARGS == 4 &&
		      AGILE_TASK_REG_MIN_SIZE == 64,
	      "task_decide reads the head and 4 arguments as 4 x 16 bytes");
#endif

static __device__ uint64_t words64(uint32_t lo, uint32_t hi)
{
	return (uint64_t)hi << 32 | lo;
}

/*
 * Steps 614-618 on lane 0, after the acquire (or the launch): the only
 * reads of the task register, the arguments included.  The register is
 * in host memory, a bus round trip per dependent load: its first 64 bytes
 * (task_reg_size is a power of two of at least 64, so they are aligned)
 * come in four independent 16-byte loads, all in flight at once, instead
 * of the opcode first and the arguments after the decision.
 */
static __device__ void task_decide(const struct agile_gpu_params &p,
				   const struct agile_task_reg *reg,
				   struct task_shared *s)
{
	const uint4 *raw = (const uint4 *)reg;
	const uint4 h = raw[0], a01 = raw[2], a23 = raw[3];
	struct agile_task_decision d;

	agile_task_decide_op(p.opcodes, agile_gpu_nr_lanes(), h.x, h.y, &d);
	s->quit = d.quit;
	s->kernel = d.kernel;
	s->parts = d.parts;
	s->error = d.error;
	s->error_lane = d.error_lane;
	s->status = 0;
	s->args[0] = words64(a01.x, a01.y);
	s->args[1] = words64(a01.z, a01.w);
	s->args[2] = words64(a23.x, a23.y);
	s->args[3] = words64(a23.z, a23.w);
	s->nr_failed = 0;
#ifdef AGILE_GPU_USER_KERNELS
	/* The runtime's registers hold 12 words and more (256 bytes). */
	for (uint32_t i = 0; i < (STAGED_ARGS - 4) / 2; i++) {
		const uint4 a = p.task_reg_size >= 128 ? raw[4 + i] :
							 make_uint4(0, 0, 0, 0);

		s->args[4 + 2 * i] = words64(a.x, a.y);
		s->args[5 + 2 * i] = words64(a.z, a.w);
	}
#endif
}

/* One lane's state across barriers, for whichever kernel runs. */
union lane_state {
	union agile_common_state common;
#ifdef AGILE_GPU_USER_KERNELS
	union agile_user_state user;
#endif
};

/* The opcode switch over common kernels, then user kernels. */
static __device__ uint32_t kernel_nr_phases(uint32_t kernel)
{
#ifdef AGILE_GPU_USER_KERNELS
	if (kernel >= AGILE_COMMON_NR)
		return agile_user_nr_phases(kernel - AGILE_COMMON_NR);
#endif
	return agile_common_nr_phases(kernel);
}

static __device__ int kernel_phase(uint32_t kernel, uint32_t phase,
				   uint32_t lane, uint32_t parts,
				   const __u64 *args, union lane_state *state,
				   void *user_shared)
{
#ifdef AGILE_GPU_USER_KERNELS
	if (kernel >= AGILE_COMMON_NR)
		return agile_user_phase(kernel - AGILE_COMMON_NR, phase, lane,
					parts, args, &state->user, user_shared);
#else
	(void)user_shared;
#endif
	return agile_common_phase(kernel, phase, lane, parts, args,
				  &state->common, nullptr);
}

/*
 * Steps 622-624 and 646 on every lane, after task_decide and a barrier:
 * each lane its part, phase by phase, then lane 0 copies the outcome into
 * the task register.  The caller's release fence and store of IDLE (or the
 * kernel's end) publish it.  No kernel (DISCONNECT, or a refused task)
 * runs no phase and leaves status 0 and the decision's error.
 */
#ifdef AGILE_GPU_USER_KERNELS
/*
 * Dialect 2: the phase after @phase of a user kernel with a control
 * function, run once by lane 0 after the barrier that ended @phase and
 * handed to every lane through @s and a second barrier (kernels.c's
 * agile_kernels_run does the same on CPU EUs).  Every lane failed: done.
 * Phases in order (no control function: no barrier either): @phase + 1,
 * or AGILE_KERNEL_DONE after the last.
 */
static __device__ uint32_t user_next(struct task_shared *s, uint32_t lane,
				     uint32_t phase, uint32_t nr_phases,
				     void *user_shared)
{
	const uint32_t kernel = s->kernel;
	const uint32_t in_order = phase + 1 < nr_phases ? phase + 1 :
							  AGILE_KERNEL_DONE;
	uint32_t next;

	if (kernel < AGILE_COMMON_NR || kernel == AGILE_TASK_NO_KERNEL ||
	    !agile_user_has_next(kernel - AGILE_COMMON_NR))
		return in_order;
	if (lane == 0)
		s->next_phase =
			s->nr_failed >= s->parts ?
				AGILE_KERNEL_DONE :
				agile_user_next(kernel - AGILE_COMMON_NR, phase,
						s->parts, s->args, user_shared);
	agile_gpu_barrier();
	/* Lane 0 writes it again only after the next phase's barrier. */
	next = s->next_phase;
	return next == AGILE__NEXT_IN_ORDER ? in_order : next;
}
#endif

static __device__ void task_run(struct agile_task_reg *reg,
				struct task_shared *s, uint32_t lane,
				void *user_shared)
{
	union lane_state state;
	const uint32_t kernel = s->kernel, parts = s->parts;
	const uint32_t nr_phases =
		kernel == AGILE_TASK_NO_KERNEL ? 0 : kernel_nr_phases(kernel);
	bool live = lane < parts;

	for (uint32_t phase = 0; phase < nr_phases;) {
		if (live) {
			int err = kernel_phase(kernel, phase, lane, parts,
					       s->args, &state, user_shared);

			if (err) {
				/* A positive code breaks the contract. */
				if (err > 0)
					err = -EPROTO;
				live = false;
				/* The first failure wins. */
				if (atomicCAS(&s->error, 0, err) == 0)
					s->error_lane = lane;
				atomicAdd(&s->nr_failed, 1u);
			}
		}
		/* The barrier between phases (and after the last). */
		agile_gpu_barrier();
#ifdef AGILE_GPU_USER_KERNELS
		phase = user_next(s, lane, phase, nr_phases, user_shared);
		if (phase != AGILE_KERNEL_DONE && phase >= nr_phases) {
			/* A bad jump fails every lane still running. */
			if (live && atomicCAS(&s->error, 0, -EINVAL) == 0)
				s->error_lane = lane;
			live = false;
		}
#else
		phase++;
#endif
	}

	/* Step 646: one completion bit per lane that succeeded. */
	if (live)
		atomicOr(&s->status, 1ULL << lane);
	agile_gpu_barrier();

	if (lane == 0) {
		reg->status = s->status;
		reg->error = s->error;
		reg->error_lane = s->error ? s->error_lane : 0;
	}
}

static __device__ struct agile_task_reg *
task_reg_of(const struct agile_gpu_params &p, uint32_t slot)
{
	return (struct agile_task_reg *)(p.task_regs +
					 (size_t)slot * p.task_reg_size);
}

/*
 * The persistent loop.  extern "C": the host finds it by this name in the
 * code object (hipModuleGetFunction / cuModuleGetFunction).
 */
/*
 * The block-shared memory of user kernels (dialect 2): one buffer the
 * size of the largest kernel's; the common kernels have none.
 */
#ifdef AGILE_GPU_USER_KERNELS
#define USER_SHARED_DECLARE __shared__ union agile_user_shared user_shared
#define USER_SHARED (&user_shared)
#else
#define USER_SHARED_DECLARE
#define USER_SHARED nullptr
#endif

extern "C" __global__ void __launch_bounds__(AGILE_MAX_LANES)
agile_gpu_persistent(struct agile_gpu_params p)
{
	__shared__ struct task_shared s;
	USER_SHARED_DECLARE;
	const uint32_t lane = agile_gpu_lane();
	const uint32_t eu = agile_gpu_group();
	struct agile_doorbell *db = &p.doorbells[eu];
	struct agile_task_reg *reg = task_reg_of(p, eu);

	for (;;) {
		bool quit;

		if (lane == 0) {
			uint32_t round = 0;

			/*
			 * Step 612.  Relaxed polls, then one acquire fence,
			 * system scope: the fence pairs with the poster's
			 * release store of POSTED (agile_dev_post), so the
			 * task register is ours until we store IDLE.
			 */
			while (agile_gpu_load_relaxed_sys(&db->value) !=
			       AGILE_DOORBELL_POSTED)
				agile_gpu_backoff(round < 64 ? round++ : round);
			agile_gpu_fence_acquire_sys();
			task_decide(p, reg, &s);
		}
		/* Step 620: release the secondaries. */
		agile_gpu_barrier();
		/*
		 * Read before task_run's last barrier: after it lane 0 may
		 * publish, and then rewrite s for the next task.
		 */
		quit = s.quit;

		task_run(reg, &s, lane, USER_SHARED);

		if (lane == 0) {
			/*
			 * Steps 626-628: one release fence, system scope,
			 * then IDLE: pairs with the poster's acquire load of
			 * IDLE (agile_eu_wait).  It orders every lane's
			 * stores before the doorbell, the others' through
			 * task_run's last barrier.
			 */
			agile_gpu_fence_release_sys();
			agile_gpu_store_relaxed_sys(&db->value,
						    AGILE_DOORBELL_IDLE);
		}
		if (quit)
			return;
		/*
		 * The secondaries read nothing of s after task_run's last
		 * barrier: lane 0 may rewrite it while they wait at step 620.
		 */
	}
}

/*
 * One task, one launch: what a plain kernel launch of the same work does
 * (agile_eu_run_launch, the baseline agile-bench gpu measures the doorbell
 * against).  Runs slot @slot's task register; no doorbell is touched, and
 * DISCONNECT does nothing.  The kernel's end, seen by the host's stream
 * synchronise, publishes the results.
 */
extern "C" __global__ void __launch_bounds__(AGILE_MAX_LANES)
agile_gpu_run_once(struct agile_gpu_params p, uint32_t slot)
{
	__shared__ struct task_shared s;
	USER_SHARED_DECLARE;
	const uint32_t lane = agile_gpu_lane();
	struct agile_task_reg *reg = task_reg_of(p, slot);

	if (lane == 0)
		task_decide(p, reg, &s);
	agile_gpu_barrier();
	task_run(reg, &s, lane, USER_SHARED);
}

#ifndef AGILE_GPU_RTC
extern "C" int agile_gpu_launch(const struct agile_gpu_params *params,
				uint32_t nr_lanes, void *stream)
{
	struct agile_gpu_params p;
	void *args[] = { &p };
	int dev, sms = 0, coop = 0, per_sm = 0;

	if (!params || !params->doorbells || !params->task_regs ||
	    !params->nr_eus || !nr_lanes || nr_lanes > AGILE_MAX_LANES ||
	    params->task_reg_size < AGILE_TASK_REG_MIN_SIZE ||
	    params->task_reg_size > AGILE_TASK_REG_MAX_SIZE)
		return -EINVAL;
	p = *params;

	if (agile_gpu_get_device(&dev) != agile_gpu_success ||
	    agile_gpu_dev_attr(&sms, AGILE_GPU_ATTR_SMS, dev) !=
		    agile_gpu_success ||
	    agile_gpu_dev_attr(&coop, AGILE_GPU_ATTR_COOP, dev) !=
		    agile_gpu_success ||
	    !coop || sms <= 0)
		return -ENODEV;
	/* Every EU resident at once, or the ones left out never run. */
	if (agile_gpu_occupancy(&per_sm, agile_gpu_persistent, (int)nr_lanes,
				0) != agile_gpu_success)
		return -ENODEV;
	if ((uint64_t)params->nr_eus > (uint64_t)per_sm * (uint64_t)sms)
		return -ENOSPC;

	if (agile_gpu_launch_coop((const void *)agile_gpu_persistent,
				  dim3(params->nr_eus), dim3(nr_lanes), args, 0,
				  (agile_gpu_stream_t)stream) !=
	    agile_gpu_success)
		return -EIO;
	return 0;
}
#endif /* !AGILE_GPU_RTC */
