// SPDX-License-Identifier: MIT
/*
 * retarget-corpus - the corpus (retarget/corpus/<f>.cu, docs/retarget.md
 * "Corpus"): sixteen kernels written as the CUDA samples and Rodinia
 * write them, translated by agile-retarget --emit=launch at build time
 * and run through agile_launch on a pool of 3 threads (and without one),
 * a few grid and block shapes each (1-D, 2-D and 3-D blocks, sizes not a
 * multiple of 32 where the kernel allows them), bit for bit against the
 * plain C of corpusref.h (corpuscases.h).  Beside them conv.cu's row
 * convolution with its filter in __constant__ memory, set through the
 * symbol as cudaMemcpyToSymbol would (rt-corpus passes it in the
 * program's globals' buffer).
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "corpus-conv-rt.h"
#include "corpus-grid-rt.h"
#include "corpus-reduce-rt.h"
#include "corpus-sort-rt.h"
#include "tap.h"

#define CR_MAX_ALLOCS 16
#define KERNEL_LEN ((int)(sizeof(c_Kernel) / sizeof(c_Kernel[0])))

struct crun {
	const char *where;
	struct agile_launch_pool *pool;
	void *mem[CR_MAX_ALLOCS];
	int nr_mem;
};

static void *cr_alloc(struct crun *r, size_t bytes)
{
	void *p;

	if (r->nr_mem == CR_MAX_ALLOCS)
		return NULL;
	/* float4's alignment: 16 */
	p = aligned_alloc(16, (bytes + 15) / 16 * 16);
	if (p) {
		memset(p, 0, bytes);
		r->mem[r->nr_mem++] = p;
	}
	return p;
}

static void cr_free_all(struct crun *r)
{
	while (r->nr_mem)
		free(r->mem[--r->nr_mem]);
}

#define CR_LAUNCH(r, k, grid, block, ...) \
	k##_launch((r)->pool, grid, block, 0, __VA_ARGS__)
#define CR_P(p) (p)
#define CR_I(v) (v)
#define CR_F(f) (f)

#include "corpuscases.h"

static void cr_conv(struct crun *r, int w, int h, int block)
{
	float *src = CR_NEW(r, float, w *h), *dst = CR_NEW(r, float, w *h);
	float *want = calloc(w * h, sizeof(float)), filter[KERNEL_LEN];
	uint32_t x = 43u * w;
	int err = -ENOMEM, bad = -1;

	if (src && dst && want) {
		for (int i = 0; i < w * h; i++)
			src[i] = cref_float(&x);
		for (int k = 0; k < KERNEL_LEN; k++)
			filter[k] = cref_float(&x);
		/* cudaMemcpyToSymbol(c_Kernel, filter, sizeof(filter)) */
		memcpy(c_Kernel, filter, sizeof(filter));
		err = CR_LAUNCH(r, convolution_rows,
				CR_DIM(CR_BLOCKS(w, block), h, 1),
				CR_DIM(block, 1, 1), CR_P(dst), CR_P(src),
				CR_I(w), CR_I(h));
		cref_conv_rows(src, want, w, h, filter, KERNEL_LEN / 2);
		bad = cref_diff(dst, want, w * h, sizeof(float));
	}
	CR_OK(r, !bad, err,
	      "convolution_rows: %d x %d, a %d-tap __constant__ filter, blocks of %d: %d differ",
	      w, h, KERNEL_LEN, block, bad);
	free(want);
	cr_free_all(r);
}

int main(void)
{
	struct crun r = { .where = "a pool of 3" },
		    one = { .where = "no pool" };
	int err = agile_launch_pool_create(3, &r.pool);

	tap_ok_call(err, "a pool of 3 threads");
	if (err)
		return tap_done();
	cr_run_reduce(&r);
	cr_run_sort(&r);
	cr_run_grid(&r);
	cr_conv(&r, 300, 5, 128);
	cr_conv(&r, 64, 3, 64);
	cr_conv(&r, 50, 2, 37);
	/* the caller's thread alone */
	cr_reduce_warp(&one, 64, 1000);
	cr_bitonic(&one, 64, 2, 1);
	cr_stencil3d(&one, 9, 8, 7, 4, 4, 2);
	agile_launch_pool_destroy(r.pool);
	return tap_done();
}
