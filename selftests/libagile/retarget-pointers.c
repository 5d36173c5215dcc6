// SPDX-License-Identifier: MIT
/*
 * retarget-pointers - retarget/pointers.cu (issue 31): writes through
 * kernel parameters and pointer locals in every form, which assign no
 * pointer and so must be translated: the histogram idiom
 * atomicAdd(&bins[b], 1u), and forms' *local = , *(p + i) = , helpers
 * given &p[i] and p + i, a cast of &p[i], ++p[i], a pointer local moved
 * and carried across a barrier, atomics on &p[i] and p.  Run through
 * agile_launch on a pool of 3 threads, blocks of 1 to 1024 threads,
 * against plain C word for word.
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <stdlib.h>

#include "pointers-rt.h"
#include "retargetref.h"
#include "tap.h"

static void test_hist256(struct agile_launch_pool *pool, unsigned block,
			 unsigned n)
{
	unsigned char *in = malloc(n);
	unsigned bins[256] = { 0 }, want[256] = { 0 };
	int bad = 0, err;

	for (unsigned i = 0; i < n; i++) {
		in[i] = (unsigned char)(i * 2654435761u >> 13);
		want[in[i]]++;
	}
	err = hist256_launch(
		pool, (struct agile_dim3){ (n + block - 1) / block, 1, 1 },
		(struct agile_dim3){ block, 1, 1 }, 0, in, n, bins);
	for (int b = 0; b < 256; b++)
		bad += bins[b] != want[b];
	tap_ok(!err && !bad,
	       "hist256: atomicAdd(&bins[b], 1u), %u bytes in blocks of %u threads (%d of 256 bins wrong, %d)",
	       n, block, bad, err);
	free(in);
}

static void test_forms(struct agile_launch_pool *pool, unsigned nr_blocks,
		       unsigned block)
{
	unsigned n = nr_blocks * block;
	unsigned *in = malloc(n * sizeof(unsigned));
	unsigned *out = calloc((size_t)n * REF_NR_FORMS, sizeof(unsigned));
	unsigned count[5] = { 0 };
	int bad, err;

	for (unsigned i = 0; i < n; i++)
		in[i] = i * 2654435761u;
	err = forms_launch(pool, (struct agile_dim3){ nr_blocks, 1, 1 },
			   (struct agile_dim3){ block, 1, 1 }, 0, in, out,
			   count);
	bad = ref_pointer_forms(in, out, count, nr_blocks, block);
	tap_ok(!err && !bad,
	       "forms: %u blocks of %u threads, every form of write through a pointer (%d words wrong, %d)",
	       nr_blocks, block, bad, err);
	free(in);
	free(out);
}

int main(void)
{
	struct agile_launch_pool *pool;
	int err = agile_launch_pool_create(3, &pool);

	tap_ok_call(err, "a pool of 3 threads");
	if (err)
		return tap_done();
	test_hist256(pool, 256, 100003);
	test_hist256(pool, 1, 1000);
	test_hist256(NULL, 1024, 5000);
	test_forms(pool, 7, 1);
	test_forms(pool, 5, 32);
	test_forms(pool, 9, 256);
	test_forms(pool, 3, 1024);
	test_forms(NULL, 2, 100);
	agile_launch_pool_destroy(pool);
	return tap_done();
}
