// SPDX-License-Identifier: MIT
/*
 * retarget-constant - retarget/constant.cu (issue 31): __constant__ and
 * __device__ variables through agile_launch.  The host sets the filter
 * (memcpy into taps, what cudaMemcpyToSymbol does on a GPU) and its
 * length (nr_taps = ...) through the symbols constant-rt.h declares,
 * reads the __device__ counter the threads bumped, and changes the
 * filter between two launches: each launch sees the values set before
 * it.  Against plain C, bit for bit.
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <stdlib.h>
#include <string.h>

#include "constant-rt.h"
#include "tap.h"

/* conv1d in plain C, the same order of operations. */
static int conv_wrong(const float *in, const float *out, int n,
		      const float *filter, int nr, float b)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		float sum = b;

		for (int k = 0; k < nr; k++) {
			int j = i + k - nr / 2;

			if (j >= 0 && j < n)
				sum += filter[k] * in[j];
		}
		bad += memcmp(&sum, &out[i], sizeof(sum)) != 0;
	}
	return bad;
}

static void test_conv(struct agile_launch_pool *pool, int n, unsigned block,
		      int nr)
{
	float *in = calloc(n, sizeof(float)), *out = calloc(n, sizeof(float));
	float filter[15];
	unsigned int blocks = (n + block - 1) / block;
	int err, bad;

	if (!tap_ok(in && out, "conv1d: memory for %d values", n)) {
		free(in);
		free(out);
		return;
	}

	for (int k = 0; k < nr; k++)
		filter[k] = (float)(k + 1) / (float)(nr * 3) - 0.125f * (k & 1);
	for (int i = 0; i < n; i++)
		in[i] = (float)((i * 37) % 101) / 7.0f - 5.0f;
	/* cudaMemcpyToSymbol(taps, filter, ...), cudaMemcpyToSymbol(nr_taps, ...) */
	memcpy(taps, filter, nr * sizeof(float));
	nr_taps = nr;
	calls = 0;
	err = conv1d_launch(pool, (struct agile_dim3){ blocks, 1, 1 },
			    (struct agile_dim3){ block, 1, 1 }, 0, in, out, n);
	bad = conv_wrong(in, out, n, filter, nr, bias);
	tap_ok(!err && !bad,
	       "conv1d: %d taps set from the host in __constant__ memory, %d values in blocks of %u threads (%d wrong, %d)",
	       nr, n, block, bad, err);
	tap_ok(calls == blocks * block,
	       "conv1d: the __device__ counter every thread bumped reads %u on the host (%u)",
	       calls, blocks * block);
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
	tap_ok(bias == 0.25f,
	       "a __device__ variable's initialiser is the symbol's (%g)",
	       bias);
	test_conv(pool, 10000, 256, 5);
	test_conv(pool, 777, 64, 15);
	bias = -1.5f;
	test_conv(NULL, 100, 7, 1);
	agile_launch_pool_destroy(pool);
	return tap_done();
}
