/* SPDX-License-Identifier: MIT */
/*
 * devbarref.h - what retarget/devbar.cu (__device__ functions holding
 * barriers, inlined) and retarget/coop.cu (cooperative groups) compute,
 * in plain C, in the order their threads add: what retarget-devbar,
 * retarget-coop (agile_launch) and rt-retarget (the runtime's CPU EUs)
 * check them against, bit for bit.
 */
#ifndef AGILE_DEVBARREF_H
#define AGILE_DEVBARREF_H

#include <stdlib.h>

/* devbar_sum's tree of one block (@block a power of two, at most 1024). */
static inline float ref_devbar_tree(const float *in, unsigned n, unsigned b,
				    unsigned block, int square)
{
	float sh[1024];

	for (unsigned t = 0; t < block; t++) {
		unsigned i = b * block + t;
		float v = i < n ? in[i] : 0.0f;

		sh[t] = square ? v * v : v;
	}
	for (unsigned s = block / 2; s > 0; s >>= 1)
		for (unsigned t = 0; t < s; t++)
			sh[t] += sh[t + s];
	return sh[0];
}

/* devbar_sum's 2 outputs a block: the number wrong. */
static inline int ref_devbar_sum(const float *in, const float *out, unsigned n,
				 unsigned block)
{
	unsigned nr_blocks = (n + block - 1) / block;
	int bad = 0;

	for (unsigned b = 0; b < nr_blocks; b++) {
		bad += out[2 * b] != ref_devbar_tree(in, n, b, block, 0);
		bad += out[2 * b + 1] != ref_devbar_tree(in, n, b, block, 1);
	}
	return bad;
}

/* devbar_rotate: @out is @in rotated left by @rounds in each block. */
static inline int ref_devbar_rotate(const float *in, const float *out,
				    unsigned nr_blocks, unsigned block,
				    int rounds)
{
	int bad = 0;

	for (unsigned b = 0; b < nr_blocks; b++)
		for (unsigned t = 0; t < block; t++)
			bad += out[b * block + t] !=
			       in[b * block + (t + (unsigned)rounds) % block];
	return bad;
}

/* devbar_warp: out[w] is the sum of warp w's 32 values. */
static inline int ref_devbar_warp(const int *in, const int *out, unsigned n)
{
	int bad = 0;

	for (unsigned w = 0; w < n / 32; w++) {
		int sum = 0;

		for (unsigned l = 0; l < 32; l++)
			sum += in[w * 32 + l];
		bad += out[w] != sum;
	}
	return bad;
}

/* coop_reduce: out[b] is block b's sum of in[i < n]. */
static inline int ref_coop_reduce(const int *in, const int *out, unsigned n,
				  unsigned block)
{
	unsigned nr_blocks = (n + block - 1) / block;
	int bad = 0;

	for (unsigned b = 0; b < nr_blocks; b++) {
		int sum = 0;

		for (unsigned t = 0; t < block && b * block + t < n; t++)
			sum += in[b * block + t];
		bad += out[b] != sum;
	}
	return bad;
}

/*
 * coop_ranks's eight words a thread, blocks of @block threads (whole warps
 * of 32), @nr_blocks of them: the number wrong.
 */
static inline int ref_coop_ranks(const int *in, const unsigned *out,
				 unsigned nr_blocks, unsigned block)
{
	int bad = 0;

	for (unsigned b = 0; b < nr_blocks; b++)
		for (unsigned t = 0; t < block; t++) {
			unsigned i = b * block + t, w = i - t % 32, ballot = 0;
			const unsigned *o = out + 8 * (size_t)i;
			unsigned up = t % 8 >= 2 ? (unsigned)in[i - 2] :
						   (unsigned)in[i];
			unsigned down = t % 8 + 1 < 8 ? (unsigned)in[i + 1] :
							(unsigned)in[i];

			for (unsigned l = 0; l < 32; l++)
				ballot |= ((unsigned)in[w + l] & 1u) << l;
			bad += o[0] != t + 1000 * block;
			bad += o[1] != t % 32 + 100 * (t / 32) +
					       10000 * ((block + 31) / 32) +
					       1000000 * 32;
			bad += o[2] != t % 8 + 100 * (t / 8) +
					       10000 * ((block + 7) / 8) +
					       1000000 * 8;
			bad += o[3] != (unsigned)in[i - t % 8 + 3];
			bad += o[4] != up + (unsigned)in[b * block + (t ^ 5)];
			bad += o[5] != down;
			bad += o[6] != ballot;
			bad += o[7] != (ballot != 0) + 2u * (ballot == ~0u);
		}
	return bad;
}

/* Inputs with full mantissas: a sum in another order differs. */
static inline void ref_devbar_input(float *in, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		in[i] = (float)(i * 2654435761u % 1000) / 7.0f - 50.0f;
}

#endif /* AGILE_DEVBARREF_H */
