// SPDX-License-Identifier: MIT
/*
 * coop.cu - cooperative groups as CUDA code writes them (docs/retarget.md,
 * "Cooperative groups"): a block sum by tiles of 32 (each tile sums its
 * values with shfl_down, its rank 0 writes the tile's sum to shared
 * memory, the block syncs, the first tile sums the tiles' sums), the tile
 * passed to a __device__ helper; the ranks and sizes of a block and of
 * tiles of 32 and 8, shuffles within tiles of 8 and votes of a tile of 32.
 */
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

/* The sum of @v over @tile, in its rank 0. */
__device__ int tile_sum(cg::thread_block_tile<32> tile, int v)
{
	for (int offset = tile.size() / 2; offset > 0; offset /= 2)
		v += tile.shfl_down(v, offset);
	return v;
}

/* out[b]: the sum of block b's values (blocks of whole tiles of 32). */
__global__ void coop_reduce(const int *in, int *out, unsigned int n)
{
	__shared__ int tile_sums[32];
	cg::thread_block block = cg::this_thread_block();
	cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
	unsigned int i =
		block.group_index().x * block.size() + block.thread_rank();
	int v = i < n ? in[i] : 0;

	v = tile_sum(tile, v);
	if (tile.thread_rank() == 0)
		tile_sums[tile.meta_group_rank()] = v;
	block.sync();
	v = block.thread_rank() < tile.meta_group_size() ?
		    tile_sums[tile.thread_rank()] :
		    0;
	int sum = tile_sum(tile, v);
	if (block.thread_rank() == 0)
		out[block.group_index().x] = sum;
}

/*
 * Eight words a thread: block and tile ranks and sizes, shuffles in tiles
 * of 8 and of 32, votes of a tile of 32 (predicate: in[i] odd).
 */
__global__ void coop_ranks(const int *in, unsigned int *out)
{
	cg::thread_block block = cg::this_thread_block();
	cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
	cg::thread_block_tile<8> eight = cg::tiled_partition<8>(block);
	unsigned int t = block.thread_rank();
	unsigned int i = blockIdx.x * block.size() + t;
	unsigned int *o = out + 8 * i;
	int v = in[i];
	int odd = v & 1;

	o[0] = block.thread_rank() + 1000 * block.size();
	o[1] = tile.thread_rank() + 100 * tile.meta_group_rank() +
	       10000 * tile.meta_group_size() + 1000000 * tile.size();
	o[2] = eight.thread_rank() + 100 * eight.meta_group_rank() +
	       10000 * eight.meta_group_size() + 1000000 * eight.size();
	o[3] = (unsigned int)eight.shfl(v, 3);
	o[4] = (unsigned int)eight.shfl_up(v, 2) +
	       (unsigned int)tile.shfl_xor(v, 5);
	o[5] = (unsigned int)eight.shfl_down(v, 1);
	o[6] = tile.ballot(odd);
	cg::sync(block);
	o[7] = (unsigned int)(tile.any(odd) + 2 * tile.all(odd));
	cooperative_groups::this_thread_block().sync();
	tile.sync();
}
