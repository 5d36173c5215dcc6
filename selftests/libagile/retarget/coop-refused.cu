// SPDX-License-Identifier: MIT
/* coop-refused.cu - cooperative groups agile-retarget does not map */
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

__global__ void coop_refused(int *out)
{
	cg::thread_block block = cg::this_thread_block();
	cg::thread_block_tile<16> sixteen = cg::tiled_partition<16>(block);
	cg::thread_group dynamic = cg::tiled_partition(block, 16);
	cg::thread_block *p = &block;

	cg::this_grid().sync();
	out[threadIdx.x] = sixteen.ballot(out[threadIdx.x] > 0);
	out[threadIdx.x] += cg::coalesced_threads().size();
	(void)p;
	(void)dynamic;
}
