/* SPDX-License-Identifier: MIT */
/*
 * kernels_impl.h - what the layers above ask of the kernels layer beyond
 * agile/kernels.h (not exported).
 */
#ifndef AGILE_KERNELS_IMPL_H
#define AGILE_KERNELS_IMPL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "kernels/kernels_body.h"

/*
 * agile__kernels_builtin_opcodes - the opcode each built-in kernel
 * (AGILE_COMMON_*) has in @reg, 0 where it is not registered (or a
 * kernel of the same name is not the library's).  Thread safe: reads the
 * registry as execution units do.
 */
struct agile_kernels;
void agile__kernels_builtin_opcodes(const struct agile_kernels *reg,
				    uint32_t opcodes[AGILE_COMMON_NR]);

/* The most lanes of one group the CPU runs (agile__kernels_run_group). */
#define AGILE__GROUP_MAX_LANES 1024

/*
 * agile__lanes_fn - one phase compiled with its loop over lanes: runs the
 * phase for lanes @lo .. @hi - 1 of a group of @nr_lanes, lane l's state
 * at @states + l * @stride, and stores each lane's return value in
 * @rc[l - @lo]; returns the OR of them (0: every lane succeeded).  The
 * loop lives in the kernel's own object, so the compiler inlines the
 * phase into it and vectorises across lanes (the runtime's dialect makes
 * one per phase, compile_dialect.c).  @args must hold
 * AGILE__LANES_ARGS words: the function copies them all.
 */
#define AGILE__LANES_ARGS 12
typedef int32_t (*agile__lanes_fn)(uint32_t lo, uint32_t hi, uint32_t nr_lanes,
				   const __u64 *args, void *states,
				   size_t stride, void *shared, int32_t *rc);

/*
 * agile__kernels_register_lanes - agile_kernels_register, with @lanes
 * (NULL, or one per phase, each NULL or the phase's lanes function).
 */
struct agile_kernel;
int agile__kernels_register_lanes(struct agile_kernels *reg,
				  const struct agile_kernel *kernel,
				  const agile__lanes_fn *lanes,
				  uint32_t *opcode);

/*
 * The next three take a kernel of a registry (agile_kernels_lookup or
 * _find), never a caller's struct.
 *
 * agile__kernels_max_group - the most lanes a group of @k may have on the
 * CPU: its max_lanes as registered, or AGILE__GROUP_MAX_LANES when that
 * was 0 (the GPU's EUs still take AGILE_MAX_LANES).
 */
uint32_t agile__kernels_max_group(const struct agile_kernel *k);
const agile__lanes_fn *agile__kernels_lanes(const struct agile_kernel *k);

/* Bytes of @nr_lanes lanes' states (64-byte aligned), before the shared. */
size_t agile__kernels_states_size(const struct agile_kernel *k,
				  uint32_t nr_lanes);

/*
 * struct agile__group_result - how a group ended
 * @error:      0, or the first failed lane's error (phase by phase, lane
 *              by lane)
 * @error_lane: that lane
 * @status:     lanes 0 .. 63: bit i set when lane i completed
 */
struct agile__group_result {
	int32_t error;
	uint32_t error_lane;
	uint64_t status;
};

/*
 * agile__kernels_run_group - one group of @k (a registry's) of @nr_lanes
 * lanes, 1 .. agile__kernels_max_group(@k), on the calling thread, with
 * its lanes functions where it has them.  @args: @nr_args words (fewer
 * than AGILE__LANES_ARGS are copied, zero-padded, for the lanes
 * functions); @states: the lanes' states (agile__kernels_states_size
 * bytes, 16-byte aligned); @shared: its block-shared memory.  Returns 0
 * (the lanes' outcome in @res) or -EINVAL (too many lanes: nothing ran).
 */
int agile__kernels_run_group(const struct agile_kernel *k, uint32_t nr_lanes,
			     const __u64 *args, uint32_t nr_args, void *states,
			     void *shared, struct agile__group_result *res);

/*
 * Groups handed out in guided ranges (grid.c): a taker claims what is
 * left divided by AGILE__RANGE_SHARE times the takers, at least one, so
 * ranges shrink as the grid runs out and the takers end together.
 */
#define AGILE__RANGE_SHARE 2

/* agile__range_size - the range a taker claims with @left groups left. */
uint64_t agile__range_size(uint64_t left, uint32_t takers);

/*
 * struct agile__ranges - a grid's groups claimed without a lock: @next
 * (a CAS per range) is the only field written once initialised.
 */
struct agile__ranges {
	_Atomic uint64_t next;
	uint64_t total;
	uint32_t takers;
};

void agile__ranges_init(struct agile__ranges *r, uint64_t total,
			uint32_t takers);

/*
 * agile__ranges_take - claim the next range: its size (0: none left) and
 * its first group in *@first.  Thread safe.
 */
uint64_t agile__ranges_take(struct agile__ranges *r, uint64_t *first);

/* agile__group_id - group @g's (x, y, z) in @grid, x fastest. */
void agile__group_id(const uint32_t grid[3], uint64_t g, uint32_t id[3]);

#endif /* AGILE_KERNELS_IMPL_H */
