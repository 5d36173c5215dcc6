/* SPDX-License-Identifier: MIT */
/*
 * agile/retarget_warp.h - CUDA's warp primitives as exchanges through a
 * staging array, for the code tools/agile-retarget emits
 * (docs/retarget.md, "Warps")
 *
 * Included by <agile/retarget.h> (--emit=launch) and by both preludes of
 * the runtime's dialect (--emit=runtime): the CPU's embeds it, the
 * GPU's (NVRTC, hiprtc) includes it, where AGILE_LANE_FN makes these
 * __device__ functions.  The same code on both, so a kernel's warps give
 * the same bits on CPU and GPU EUs: a runtime group on GPU EUs is not a
 * native warp (64 lanes on AMD), and the staging array lives in the
 * block-shared memory there.
 *
 * Only generated code should include this.
 */
#ifndef AGILE_RETARGET_WARP_H
#define AGILE_RETARGET_WARP_H

#include <stdint.h>

#ifdef AGILE_LANE_FN
#define AGILE_WARP_FN static AGILE_LANE_FN inline __attribute__((unused))
#else
#define AGILE_WARP_FN static inline __attribute__((unused))
#endif

/* CUDA's warpSize, whatever the GPU's own warp is. */
#define AGILE_WARP_SIZE 32

/*
 * Warp primitives (agile-retarget's warp.c): thread t of a block of nt
 * threads is lane t % 32 of warp t / 32, so a last warp may be partial.
 * stage[] holds every thread's operand, stored before the barrier the
 * exchange became.  A shuffle reads its source lane's element; CUDA's
 * own value where the source is outside the width's segment (up, down,
 * xor), and here also where the source lane is past the block's end.
 * Votes count the lanes the warp has: a missing lane's bit is 0.
 */
AGILE_WARP_FN uint32_t agile_warp_activemask(uint32_t t, uint32_t nt)
{
	uint32_t lanes = nt - (t & ~31u);

	return lanes >= 32 ? 0xffffffffu : (1u << lanes) - 1;
}

/* The thread of @t's warp at @lane, or @t where there is none. */
AGILE_WARP_FN uint32_t agile_warp_lane(uint32_t t, uint32_t nt, uint32_t lane)
{
	uint32_t s = (t & ~31u) | lane;

	return lane < 32 && s < nt ? s : t;
}

AGILE_WARP_FN uint32_t agile_warp_idx(uint32_t t, uint32_t nt, int src,
				      int width)
{
	uint32_t w = (uint32_t)width, lane = t & 31u;

	return agile_warp_lane(t, nt,
			       (lane & ~(w - 1)) | ((uint32_t)src & (w - 1)));
}

AGILE_WARP_FN uint32_t agile_warp_up(uint32_t t, uint32_t nt,
				     unsigned int delta, int width)
{
	uint32_t lane = t & 31u;

	if (delta > (lane & ((uint32_t)width - 1)))
		return t;
	return agile_warp_lane(t, nt, lane - delta);
}

AGILE_WARP_FN uint32_t agile_warp_down(uint32_t t, uint32_t nt,
				       unsigned int delta, int width)
{
	uint32_t w = (uint32_t)width, lane = t & 31u;

	if (delta >= w - (lane & (w - 1)))
		return t;
	return agile_warp_lane(t, nt, lane + delta);
}

AGILE_WARP_FN uint32_t agile_warp_xor(uint32_t t, uint32_t nt, int lane_mask,
				      int width)
{
	uint32_t w = (uint32_t)width, lane = t & 31u;
	uint32_t src = lane ^ (uint32_t)lane_mask;

	/* an earlier segment may be read, a later one not */
	if (src >= (lane & ~(w - 1)) + w)
		return t;
	return agile_warp_lane(t, nt, src);
}

#define agile_warp_shfl(stage, t, nt, src, width) \
	((stage)[agile_warp_idx((t), (nt), (src), (width))])
#define agile_warp_shfl_up(stage, t, nt, delta, width) \
	((stage)[agile_warp_up((t), (nt), (delta), (width))])
#define agile_warp_shfl_down(stage, t, nt, delta, width) \
	((stage)[agile_warp_down((t), (nt), (delta), (width))])
#define agile_warp_shfl_xor(stage, t, nt, lane_mask, width) \
	((stage)[agile_warp_xor((t), (nt), (lane_mask), (width))])

AGILE_WARP_FN unsigned int agile_warp_ballot(const int *stage, uint32_t t,
					     uint32_t nt)
{
	uint32_t base = t & ~31u, bits = 0;

	for (uint32_t lane = 0; lane < 32 && base + lane < nt; lane++)
		if (stage[base + lane])
			bits |= 1u << lane;
	return bits;
}

AGILE_WARP_FN int agile_warp_any(const int *stage, uint32_t t, uint32_t nt)
{
	return agile_warp_ballot(stage, t, nt) != 0;
}

AGILE_WARP_FN int agile_warp_all(const int *stage, uint32_t t, uint32_t nt)
{
	return agile_warp_ballot(stage, t, nt) == agile_warp_activemask(t, nt);
}

#endif /* AGILE_RETARGET_WARP_H */
