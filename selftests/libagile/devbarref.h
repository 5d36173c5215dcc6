/* SPDX-License-Identifier: MIT */
/*
 * devbarref.h - what retarget/devbar.cu (__device__ functions holding
 * barriers, inlined) computes, in plain C, in the order its threads add:
 * what retarget-devbar (agile_launch) and rt-retarget (the runtime's CPU
 * EUs) check it against, bit for bit.
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

/* Inputs with full mantissas: a sum in another order differs. */
static inline void ref_devbar_input(float *in, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		in[i] = (float)(i * 2654435761u % 1000) / 7.0f - 50.0f;
}

#endif /* AGILE_DEVBARREF_H */
