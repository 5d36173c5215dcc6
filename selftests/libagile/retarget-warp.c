// SPDX-License-Identifier: MIT
/*
 * retarget-warp - warp-level primitives, translated by agile-retarget and
 * run through agile_launch: retarget/warpreduce.cu (a two-level
 * __shfl_down_sync block sum) and retarget/warpvote.cu (__ballot_sync,
 * __any_sync, __all_sync, __activemask, __shfl_xor_sync butterflies,
 * __shfl_sync with and past a width, __shfl_up_sync with a width,
 * __syncwarp), for blocks of 32, 64, 256 and 1024 threads and of 80 and
 * 200 (a partial last warp), each checked bit for bit against a
 * simulation of the block's warps in plain C written from CUDA's
 * definitions (docs/retarget.md, "Warps": a source lane past the block's
 * end gives the caller's own value; a missing lane votes 0).  For whole
 * warps the block sum is also the plain sum of its elements.
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "warpreduce-rt.h"
#include "warpvote-rt.h"

#define WARP 32

enum shfl { IDX, UP, DOWN, XOR };

/* The thread whose value thread @t of a block of @nt gets. */
static unsigned ref_source(enum shfl kind, unsigned t, unsigned nt, int arg,
			   int width)
{
	unsigned lane = t % WARP, seg = lane / width * width, src = lane;

	switch (kind) {
	case IDX:
		src = seg + (unsigned)(((arg % width) + width) % width);
		break;
	case UP:
		if (lane - seg >= (unsigned)arg)
			src = lane - (unsigned)arg;
		break;
	case DOWN:
		if (lane - seg + (unsigned)arg < (unsigned)width)
			src = lane + (unsigned)arg;
		break;
	case XOR:
		if ((lane ^ (unsigned)arg) < seg + (unsigned)width)
			src = lane ^ (unsigned)arg;
		break;
	}
	src += t - lane;
	return src < nt ? src : t;
}

static void ref_shfl(enum shfl kind, const int *v, int *to, unsigned nt,
		     int arg, int width)
{
	for (unsigned t = 0; t < nt; t++)
		to[t] = v[ref_source(kind, t, nt, arg, width)];
}

static unsigned ref_ballot(const int *pred, unsigned t, unsigned nt)
{
	unsigned base = t - t % WARP, bits = 0;

	for (unsigned l = 0; l < WARP; l++)
		if (base + l < nt && pred[base + l])
			bits |= 1u << l;
	return bits;
}

/* warpreduce.cu's block sums, warp by warp */
static int ref_reduce_block(const int *in, unsigned n, unsigned block,
			    unsigned nt)
{
	int v[1024], got[1024], sums[32] = { 0 };
	unsigned nr_warps = (nt + WARP - 1) / WARP;

	for (unsigned t = 0; t < nt; t++)
		v[t] = block * nt + t < n ? in[block * nt + t] : 0;
	for (int o = 16; o > 0; o >>= 1) {
		ref_shfl(DOWN, v, got, nt, o, WARP);
		for (unsigned t = 0; t < nt; t++)
			v[t] += got[t];
	}
	for (unsigned t = 0; t < nt; t += WARP)
		sums[t / WARP] = v[t];
	for (unsigned t = 0; t < nt; t++)
		v[t] = t < nr_warps ? sums[t % WARP] : 0;
	for (int o = 16; o > 0; o /= 2) {
		ref_shfl(DOWN, v, got, nt, o, WARP);
		for (unsigned t = 0; t < nt; t++)
			v[t] += got[t];
	}
	return v[0];
}

static void test_reduce(struct agile_launch_pool *pool, unsigned block,
			unsigned n)
{
	unsigned nr_blocks = (n + block - 1) / block;
	int *in = calloc(n, sizeof(int)), *out = calloc(nr_blocks, sizeof(int));
	int bad = 0, plain_bad = 0, err;

	for (unsigned i = 0; i < n; i++)
		in[i] = (int)(i * 2654435761u % 1000) - 300;
	err = warp_reduce_launch(pool, (struct agile_dim3){ nr_blocks, 1, 1 },
				 (struct agile_dim3){ block, 1, 1 }, 0, in, out,
				 n);
	for (unsigned b = 0; b < nr_blocks; b++) {
		int sum = 0;

		bad += out[b] != ref_reduce_block(in, n, b, block);
		for (unsigned i = b * block; i < n && i < (b + 1) * block; i++)
			sum += in[i];
		plain_bad += out[b] != sum;
	}
	tap_ok(!err && !bad,
	       "warpreduce, blocks of %u, %u elements: every block's sum as the warps make it (%d wrong, %d)",
	       block, n, bad, err);
	if (block % WARP == 0)
		tap_ok(!plain_bad,
		       "warpreduce, blocks of %u: whole warps, so the plain sum (%d wrong)",
		       block, plain_bad);
	free(in);
	free(out);
}

/* warpvote.cu's eight words a thread, for one block */
static void ref_vote_block(const int *in, unsigned n, unsigned block,
			   unsigned nt, unsigned *ref)
{
	int x[1024], p[1024], best[1024], sum[1024], got[1024];
	int first[1024], below[1024], rotated[1024];
	unsigned ballot[1024], vote[1024];

	for (unsigned t = 0; t < nt; t++)
		x[t] = block * nt + t < n ? in[block * nt + t] : -1;
	for (unsigned t = 0; t < nt; t++)
		p[t] = x[t] > 0;
	for (unsigned t = 0; t < nt; t++)
		ballot[t] = ref_ballot(p, t, nt);
	for (unsigned t = 0; t < nt; t++)
		p[t] = x[t] > 60;
	for (unsigned t = 0; t < nt; t++)
		vote[t] = ref_ballot(p, t, nt) != 0;
	for (unsigned t = 0; t < nt; t++)
		p[t] = x[t] >= 0;
	for (unsigned t = 0; t < nt; t++) {
		unsigned lanes = nt - t / WARP * WARP;
		unsigned active = lanes >= WARP ? ~0u : (1u << lanes) - 1;

		vote[t] |= (unsigned)(ref_ballot(p, t, nt) == active) << 1;
	}
	memcpy(best, x, nt * sizeof(int));
	memcpy(sum, x, nt * sizeof(int));
	for (int m = 1; m < WARP; m *= 2) {
		ref_shfl(XOR, best, got, nt, m, WARP);
		for (unsigned t = 0; t < nt; t++)
			best[t] = got[t] > best[t] ? got[t] : best[t];
	}
	ref_shfl(IDX, x, first, nt, 0, WARP);
	ref_shfl(UP, x, below, nt, 1, 8);
	for (unsigned t = 0; t < nt; t++)
		rotated[t] = x[ref_source(IDX, t, nt, (int)(t & 15) + 17, 16)];
	for (int m = 16; m >= 1; m /= 2) {
		ref_shfl(XOR, sum, got, nt, m, WARP);
		for (unsigned t = 0; t < nt; t++)
			sum[t] += got[t];
	}
	for (unsigned t = 0; t < nt; t++) {
		unsigned lanes = nt - t / WARP * WARP;
		unsigned *o = ref + 8 * t;

		o[0] = ballot[t];
		o[1] = vote[t];
		o[2] = lanes >= WARP ? ~0u : (1u << lanes) - 1;
		o[3] = (unsigned)best[t];
		o[4] = (unsigned)first[t];
		o[5] = (unsigned)below[t];
		o[6] = (unsigned)rotated[t];
		o[7] = (unsigned)sum[t];
	}
}

static void test_vote(struct agile_launch_pool *pool, unsigned block,
		      unsigned n)
{
	unsigned nr_blocks = (n + block - 1) / block;
	int *in = calloc(n, sizeof(int));
	unsigned *out = calloc(8 * (size_t)n, sizeof(unsigned));
	unsigned *ref = calloc(8 * (size_t)block, sizeof(unsigned));
	int bad = 0, err;

	/* some warps all positive, some with a zero or negative value */
	for (unsigned i = 0; i < n; i++)
		in[i] = (i / 64) % 3 ? (int)(i * 2654435761u % 64) :
				       (int)(i * 40503u % 100) - 20;
	err = warp_vote_launch(pool, (struct agile_dim3){ nr_blocks, 1, 1 },
			       (struct agile_dim3){ block, 1, 1 }, 0, in, out,
			       n);
	for (unsigned b = 0; b < nr_blocks; b++) {
		ref_vote_block(in, n, b, block, ref);
		for (unsigned t = 0; t < block && b * block + t < n; t++)
			bad += memcmp(out + 8 * (size_t)(b * block + t),
				      ref + 8 * (size_t)t,
				      8 * sizeof(unsigned)) != 0;
	}
	tap_ok(!err && !bad,
	       "warpvote, blocks of %u, %u elements: votes and shuffles of every thread (%d threads wrong, %d)",
	       block, n, bad, err);
	free(in);
	free(out);
	free(ref);
}

int main(void)
{
	static const unsigned blocks[] = { 32, 64, 256, 1024, 80, 200 };
	struct agile_launch_pool *pool;
	int err = agile_launch_pool_create(3, &pool);

	tap_ok_call(err, "a pool of 3 threads");
	if (err)
		return tap_done();
	for (unsigned i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		test_reduce(pool, blocks[i], 20 * blocks[i] - 7);
		test_vote(pool, blocks[i], 5 * blocks[i] - 3);
	}
	test_reduce(NULL, 128, 1000);
	agile_launch_pool_destroy(pool);
	return tap_done();
}
