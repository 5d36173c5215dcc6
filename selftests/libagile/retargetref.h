/* SPDX-License-Identifier: MIT */
/*
 * retargetref.h - what the retarget test kernels (selftests/libagile/retarget) compute,
 * in plain C: the references both ways of running them are checked
 * against (retarget-*: agile_launch; rt-retarget*: the runtime's EUs).
 */
#ifndef AGILE_RETARGETREF_H
#define AGILE_RETARGETREF_H

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define REF_TILE 32 /* transpose.cu's TILE */

/* matlist.cu: A[m] = A[m] x B[m] for @nr matrices of @dim x @dim. */
static inline void ref_matlist(float *a, const float *b, int nr, int dim)
{
	float out[32 * 32];

	for (int m = 0; m < nr; m++) {
		float *am = a + m * dim * dim;
		const float *bm = b + m * dim * dim;

		for (int r = 0; r < dim; r++)
			for (int c = 0; c < dim; c++) {
				float sum = 0.0f;

				for (int i = 0; i < dim; i++)
					sum += am[r * dim + i] *
					       bm[i * dim + c];
				out[r * dim + c] = sum;
			}
		memcpy(am, out, sizeof(float) * dim * dim);
	}
}

/* Relative error 1e-4 at most, element by element. */
static inline int ref_close(const float *x, const float *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fabsf(x[i] - y[i]) > 1e-4f * (1.0f + fabsf(y[i])))
			return 0;
	return 1;
}

/* transpose.cu: what each block does to its tile, @passes rounds. */
static inline void ref_smooth(const float *in, float *smooth, int n, int passes)
{
	enum { T = REF_TILE };

	for (int by = 0; by < n; by += T)
		for (int bx = 0; bx < n; bx += T) {
			float tile[T][T], next[T][T];

			for (int r = 0; r < T; r++)
				for (int c = 0; c < T; c++)
					tile[r][c] = by + r < n && bx + c < n ?
							     in[(by + r) * n +
								bx + c] :
							     0.0f;
			for (int p = 0; p < passes; p++) {
				for (int r = 0; r < T; r++)
					for (int c = 0; c < T; c++) {
						float v = tile[r][c];

						if (r > 0 && r < T - 1 &&
						    c > 0 && c < T - 1)
							v = 0.5f * v +
							    0.125f *
								    (tile[r - 1]
									 [c] +
								     tile[r + 1]
									 [c] +
								     tile[r][c -
									     1] +
								     tile[r][c +
									     1]);
						next[r][c] = v;
					}
				memcpy(tile, next, sizeof(tile));
			}
			for (int r = 0; r < T && by + r < n; r++)
				for (int c = 0; c < T && bx + c < n; c++)
					smooth[(by + r) * n + bx + c] =
						tile[r][c];
		}
}

/*
 * grid3d.cu: block @b of @nt threads writes out[4 b]: the sum (mode 0)
 * or the max (mode 1) of 2 t + b, then the rounds of the halving loop,
 * the mode, nt.
 */
static inline int ref_grid3d(const int *out, int nr_blocks, int nt, int mode)
{
	int rounds = 0, bad = 0;

	for (int w = nt; w > 0; w /= 2)
		rounds++;
	for (int b = 0; b < nr_blocks; b++) {
		int want = mode == 0 ? nt * (nt - 1) + nt * b :
				       2 * (nt - 1) + b;

		bad += out[4 * b] != want || out[4 * b + 1] != rounds ||
		       out[4 * b + 2] != mode || out[4 * b + 3] != nt;
	}
	return bad;
}

/* hipnames.hip after y = 3 x + y, x = y - x from x = i % 17, y = i % 5 - 2. */
static inline int ref_axpy_then_diff(const float *x, const float *y, int n)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		float xi = (float)(i % 17),
		      yi = 3.0f * xi + (float)(i % 5) - 2.0f;

		bad += y[i] != yi || x[i] != yi - xi;
	}
	return bad;
}

/* histogram.cu's input: element i of @n, spread over every bin. */
static inline void ref_histogram_input(unsigned int *in, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		in[i] = i * 2654435761u >> 7;
}

/* histogram.cu's mix(): @rounds steps of a linear congruential generator. */
static inline unsigned int ref_mix(unsigned int v, int rounds)
{
	for (int r = 0; r < rounds; r++)
		v = v * 1664525u + 1013904223u;
	return v >> 16;
}

/*
 * Bins of histogram.cu's counts of @in, each mixed by @mix_rounds of
 * ref_mix (0: not mixed): how many of @hist are wrong.
 */
static inline int ref_histogram(const unsigned int *in, unsigned int n,
				const unsigned int *hist, unsigned int nr_bins,
				int mix_rounds)
{
	unsigned int want[64] = { 0 };
	int bad = 0;

	for (unsigned int i = 0; i < n; i++)
		want[(mix_rounds ? ref_mix(in[i], mix_rounds) : in[i]) %
		     nr_bins]++;
	for (unsigned int b = 0; b < nr_bins; b++)
		bad += hist[b] != want[b];
	return bad;
}

/*
 * histogram.cu's list of the indexes of @in whose mix has bit 3 set, in
 * any order, @count of them: whether right.
 */
static inline int ref_histogram_list(const unsigned int *in, unsigned int n,
				     const unsigned int *list,
				     unsigned int count, int mix_rounds)
{
	unsigned char *seen = calloc(n, 1);
	unsigned int want = 0;
	int ok = seen != NULL;

	for (unsigned int i = 0; i < n; i++)
		want += (ref_mix(in[i], mix_rounds) & 8) != 0;
	ok = ok && count == want;
	for (unsigned int s = 0; ok && s < count; s++) {
		ok = list[s] < n && !seen[list[s]] &&
		     (ref_mix(in[list[s]], mix_rounds) & 8);
		if (ok)
			seen[list[s]] = 1;
	}
	free(seen);
	return ok;
}

#define REF_OPS_PER_THREAD 4 /* histogram.cu's OPS_PER_THREAD */
#define REF_OPS_FINAL 12 /* and OPS_FINAL */

/* Whether @v[0 .. nt) holds @from .. @from + nt - 1, each once. */
static inline int ref_permutation(const int *v, size_t stride, int nt, int from)
{
	unsigned char seen[1025] = { 0 };

	for (int t = 0; t < nt; t++) {
		int x = v[(size_t)t * stride] - from;

		if (x < 0 || x >= nt || seen[x])
			return 0;
		seen[x] = 1;
	}
	return 1;
}

/*
 * histogram.cu's shared_ops in @nr_blocks blocks of @nt threads (up to
 * 1024): the old values each atomic returned and the shared variables at
 * the end, whatever order the threads ran in.  Returns the blocks wrong.
 */
static inline int ref_shared_ops(const int *out, const float *fout,
				 int nr_blocks, int nt)
{
	int bad = 0;

	for (int b = 0; b < nr_blocks; b++) {
		const int *mine = out + (size_t)b * (nt * REF_OPS_PER_THREAD +
						     REF_OPS_FINAL);
		const int *fin = mine + nt * REF_OPS_PER_THREAD;
		int low = 1 << 30, high = -1, owners = 0, others = 0;
		unsigned int or32 = 0, xor32 = 0, or16 = 0;
		int exch[1025];

		for (int t = 0; t < nt; t++) {
			low = (t * 7 + 3) % nt < low ? (t * 7 + 3) % nt : low;
			high = (t * 5 + 1) % nt > high ? (t * 5 + 1) % nt :
							 high;
			or32 |= 1u << (t % 32);
			xor32 ^= 1u << (t % 32);
			or16 |= 1u << (t % 16);
			owners += mine[t * REF_OPS_PER_THREAD + 1] == -1;
			others += mine[t * REF_OPS_PER_THREAD + 1] == fin[9];
			exch[t] = mine[t * REF_OPS_PER_THREAD + 2];
		}
		exch[nt] = fin[10];
		bad += !ref_permutation(mine, REF_OPS_PER_THREAD, nt, 0) ||
		       fin[11] != nt ||
		       !ref_permutation(mine + 3, REF_OPS_PER_THREAD, nt, 0) ||
		       owners != 1 || others != nt - 1 || fin[9] < 0 ||
		       fin[9] >= nt ||
		       mine[fin[9] * REF_OPS_PER_THREAD + 1] != -1 ||
		       !ref_permutation(exch, 1, nt + 1, -1) ||
		       fin[0] != nt * (nt - 1) / 2 || fin[1] != -2 * nt ||
		       fin[2] != low || fin[3] != high || fin[4] != (int)or32 ||
		       fin[5] != (int)~or32 || fin[6] != (int)xor32 ||
		       fin[7] != (int)or16 || fin[8] != 3 * nt ||
		       fout[b] != 0.5f * (float)nt;
	}
	return bad;
}

/*
 * dynshared.cu: how many blocks of @out and @rounds (blocks of @block
 * threads, a power of two, over @n of @in) are not the tree sum of the
 * block's tile, in the kernel's order, and its rounds.
 */
static inline int ref_block_sum(const float *in, const float *out,
				const unsigned int *rounds, unsigned n,
				unsigned block)
{
	float tile[1024];
	int bad = 0;

	for (unsigned b = 0; b * block < n; b++) {
		unsigned nr = 0;

		for (unsigned t = 0; t < block; t++)
			tile[t] = b * block + t < n ? in[b * block + t] : 0.0f;
		for (unsigned s = block / 2; s > 0; s >>= 1, nr++)
			for (unsigned t = 0; t < s; t++)
				tile[t] += tile[t + s];
		bad += memcmp(&tile[0], &out[b], sizeof(float)) != 0 ||
		       rounds[b] != nr;
	}
	return bad;
}

/* scan.cu: how many of @out are not their block's running sum of @in. */
static inline int ref_block_scan(const float *in, const float *out, unsigned n,
				 unsigned block)
{
	int bad = 0;

	for (unsigned b = 0; b < n; b += block) {
		float sum = 0.0f;

		for (unsigned i = b; i < n && i < b + block; i++) {
			sum += in[i];
			bad += out[i] != sum;
		}
	}
	return bad;
}

/*
 * pointers.cu's forms: how many words of @out (@nr_blocks blocks of @nt
 * threads, REF_NR_FORMS slices of @nt words each) and of @count (5 words)
 * are not what its forms leave from @in (@nr_blocks * @nt words).
 */
#define REF_NR_FORMS 9

static inline int ref_pointer_forms(const unsigned int *in,
				    const unsigned int *out,
				    const unsigned int *count,
				    unsigned int nr_blocks, unsigned int nt)
{
	unsigned int sums[4] = { 0 };
	int bad = count[0] != nr_blocks * nt;

	for (unsigned int b = 0; b < nr_blocks; b++) {
		const unsigned int *src = in + b * nt;
		const unsigned int *o = out + b * nt * REF_NR_FORMS;

		for (unsigned int t = 0; t < nt; t++) {
			const unsigned int want[REF_NR_FORMS] = {
				src[t] + 2,  src[t] + 2,	  src[t] + 3,
				src[t] + 4,  src[t] ^ 0x5a5au,	  src[t] + 1,
				src[t] * 3u, src[nt - 1 - t] + 2, t,
			};

			for (unsigned int f = 0; f < REF_NR_FORMS; f++)
				bad += o[f * nt + t] != want[f];
			sums[t % 4] += src[t];
		}
	}
	for (int i = 0; i < 4; i++)
		bad += count[1 + i] != sums[i];
	return bad;
}

/*
 * The warp primitives (docs/retarget.md, "Warps"), simulated from CUDA's
 * definitions for 32-lane warps: thread t of a block is lane t % 32 of
 * warp t / 32; a source lane past the block's end gives the caller's own
 * value, a missing lane votes 0.
 */
#define REF_WARP 32 /* CUDA's warpSize */

enum ref_shfl { REF_IDX, REF_UP, REF_DOWN, REF_XOR };

/* The thread whose value thread @t of a block of @nt gets. */
static inline unsigned ref_warp_source(enum ref_shfl kind, unsigned t,
				       unsigned nt, int arg, int width)
{
	unsigned lane = t % REF_WARP, seg = lane / width * width, src = lane;

	switch (kind) {
	case REF_IDX:
		src = seg + (unsigned)(((arg % width) + width) % width);
		break;
	case REF_UP:
		if (lane - seg >= (unsigned)arg)
			src = lane - (unsigned)arg;
		break;
	case REF_DOWN:
		if (lane - seg + (unsigned)arg < (unsigned)width)
			src = lane + (unsigned)arg;
		break;
	case REF_XOR:
		if ((lane ^ (unsigned)arg) < seg + (unsigned)width)
			src = lane ^ (unsigned)arg;
		break;
	}
	src += t - lane;
	return src < nt ? src : t;
}

static inline void ref_warp_shfl(enum ref_shfl kind, const int *v, int *to,
				 unsigned nt, int arg, int width)
{
	for (unsigned t = 0; t < nt; t++)
		to[t] = v[ref_warp_source(kind, t, nt, arg, width)];
}

static inline unsigned ref_warp_ballot(const int *pred, unsigned t, unsigned nt)
{
	unsigned base = t - t % REF_WARP, bits = 0;

	for (unsigned l = 0; l < REF_WARP; l++)
		if (base + l < nt && pred[base + l])
			bits |= 1u << l;
	return bits;
}

/* warpreduce.cu's sum of block @block of @nt threads, warp by warp */
static inline int ref_warp_reduce_block(const int *in, unsigned n,
					unsigned block, unsigned nt)
{
	int v[1024], got[1024], sums[32] = { 0 };
	unsigned nr_warps = (nt + REF_WARP - 1) / REF_WARP;

	for (unsigned t = 0; t < nt; t++)
		v[t] = block * nt + t < n ? in[block * nt + t] : 0;
	for (int o = 16; o > 0; o >>= 1) {
		ref_warp_shfl(REF_DOWN, v, got, nt, o, REF_WARP);
		for (unsigned t = 0; t < nt; t++)
			v[t] += got[t];
	}
	for (unsigned t = 0; t < nt; t += REF_WARP)
		sums[t / REF_WARP] = v[t];
	for (unsigned t = 0; t < nt; t++)
		v[t] = t < nr_warps ? sums[t % REF_WARP] : 0;
	for (int o = 16; o > 0; o /= 2) {
		ref_warp_shfl(REF_DOWN, v, got, nt, o, REF_WARP);
		for (unsigned t = 0; t < nt; t++)
			v[t] += got[t];
	}
	return v[0];
}

/* warpvote.cu's eight words a thread, for one block */
static inline void ref_warp_vote_block(const int *in, unsigned n,
				       unsigned block, unsigned nt,
				       unsigned *ref)
{
	int x[1024], p[1024], best[1024], sum[1024], got[1024];
	int first[1024], below[1024], rotated[1024];
	unsigned ballot[1024], vote[1024];

	for (unsigned t = 0; t < nt; t++)
		x[t] = block * nt + t < n ? in[block * nt + t] : -1;
	for (unsigned t = 0; t < nt; t++)
		p[t] = x[t] > 0;
	for (unsigned t = 0; t < nt; t++)
		ballot[t] = ref_warp_ballot(p, t, nt);
	for (unsigned t = 0; t < nt; t++)
		p[t] = x[t] > 60;
	for (unsigned t = 0; t < nt; t++)
		vote[t] = ref_warp_ballot(p, t, nt) != 0;
	for (unsigned t = 0; t < nt; t++)
		p[t] = x[t] >= 0;
	for (unsigned t = 0; t < nt; t++) {
		unsigned lanes = nt - t / REF_WARP * REF_WARP;
		unsigned active = lanes >= REF_WARP ? ~0u : (1u << lanes) - 1;

		vote[t] |= (unsigned)(ref_warp_ballot(p, t, nt) == active) << 1;
	}
	memcpy(best, x, nt * sizeof(int));
	memcpy(sum, x, nt * sizeof(int));
	for (int m = 1; m < REF_WARP; m *= 2) {
		ref_warp_shfl(REF_XOR, best, got, nt, m, REF_WARP);
		for (unsigned t = 0; t < nt; t++)
			best[t] = got[t] > best[t] ? got[t] : best[t];
	}
	ref_warp_shfl(REF_IDX, x, first, nt, 0, REF_WARP);
	ref_warp_shfl(REF_UP, x, below, nt, 1, 8);
	for (unsigned t = 0; t < nt; t++)
		rotated[t] = x[ref_warp_source(REF_IDX, t, nt,
					       (int)(t & 15) + 17, 16)];
	for (int m = 16; m >= 1; m /= 2) {
		ref_warp_shfl(REF_XOR, sum, got, nt, m, REF_WARP);
		for (unsigned t = 0; t < nt; t++)
			sum[t] += got[t];
	}
	for (unsigned t = 0; t < nt; t++) {
		unsigned lanes = nt - t / REF_WARP * REF_WARP;
		unsigned *o = ref + 8 * t;

		o[0] = ballot[t];
		o[1] = vote[t];
		o[2] = lanes >= REF_WARP ? ~0u : (1u << lanes) - 1;
		o[3] = (unsigned)best[t];
		o[4] = (unsigned)first[t];
		o[5] = (unsigned)below[t];
		o[6] = (unsigned)rotated[t];
		o[7] = (unsigned)sum[t];
	}
}

/* warpvote.cu's input: some warps all positive, some not. */
static inline void ref_warp_vote_input(int *in, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		in[i] = (i / 64) % 3 ? (int)(i * 2654435761u % 64) :
				       (int)(i * 40503u % 100) - 20;
}

/* warpvote.cu's warp_xor: one word a thread of block @block. */
static inline void ref_warp_xor_block(const int *in, unsigned n, unsigned block,
				      unsigned nt, unsigned *ref)
{
	int x[1024];

	for (unsigned t = 0; t < nt; t++) {
		x[t] = block * nt + t < n ? in[block * nt + t] : -1;
		ref[t] = 0;
	}
	for (int width = 1; width <= REF_WARP; width *= 2)
		for (int mask = 1; mask < REF_WARP; mask++)
			for (unsigned t = 0; t < nt; t++)
				ref[t] = ref[t] * 31u +
					 (unsigned)x[ref_warp_source(
						 REF_XOR, t, nt, mask, width)];
}

#endif /* AGILE_RETARGETREF_H */
