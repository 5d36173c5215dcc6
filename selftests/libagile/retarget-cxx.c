// SPDX-License-Identifier: MIT
/*
 * retarget-cxx - retarget/cxx.cu, kernels in the C++ subset CUDA code
 * uses (templates, namespaces, constexpr, static_assert, references:
 * docs/retarget.md, "C++"), lowered to C and translated by
 * agile-retarget, run through agile_launch against plain C
 * (retargetcxx.h), bit for bit: block_reduce<float, 64>, <int, 256> and
 * <double, 128> (NAME_ARGS: block_reduce_float_64_launch, ...), the
 * bitonic sort through swap_vals(T &, T &) for int and float, ops::smooth<2>
 * and <5> (ops_smooth_2_launch), tile_transpose (using namespace, a
 * constexpr function) and vec_dots (struct Vec3's member functions).
 */
#define _GNU_SOURCE
#include <agile/launch.h>
#include <stdlib.h>

#include "cxx-rt.h"
#include "retargetcxx.h"
#include "tap.h"

#define NB 37

static void test_reduce(struct agile_launch_pool *pool)
{
	float *fi = calloc(NB * 64, sizeof(float)),
	      *fo = calloc(NB, sizeof(float));
	int *ii = calloc(NB * 256, sizeof(int)), *io = calloc(NB, sizeof(int));
	double *di = calloc(NB * 128, sizeof(double)),
	       *dout = calloc(NB, sizeof(double));
	int err;

	if (!tap_ok(fi && fo && ii && io && di && dout, "inputs"))
		goto out;
	for (unsigned i = 0; i < NB * 256; i++) {
		if (i < NB * 64)
			fi[i] = cxx_in_f(i);
		if (i < NB * 128)
			di[i] = cxx_in_d(i);
		ii[i] = cxx_in_i(i);
	}
	err = block_reduce_float_64_launch(pool,
					   (struct agile_dim3){ NB, 1, 1 },
					   (struct agile_dim3){ 64, 1, 1 }, 0,
					   fi, fo);
	tap_ok(!err && !ref_cxx_reduce_f(fi, fo, NB, 64),
	       "block_reduce<float, 64>: each block's sum of squares (%d)",
	       err);
	err = block_reduce_int_256_launch(pool, (struct agile_dim3){ NB, 1, 1 },
					  (struct agile_dim3){ 256, 1, 1 }, 0,
					  ii, io);
	tap_ok(!err && !ref_cxx_reduce_i(ii, io, NB, 256),
	       "block_reduce<int, 256>: each block's sum of squares (%d)", err);
	err = block_reduce_double_128_launch(pool,
					     (struct agile_dim3){ NB, 1, 1 },
					     (struct agile_dim3){ 128, 1, 1 },
					     0, di, dout);
	tap_ok(!err && !ref_cxx_reduce_d(di, dout, NB, 128),
	       "block_reduce<double, 128>: each block's sum of squares (%d)",
	       err);
out:
	free(fi);
	free(fo);
	free(ii);
	free(io);
	free(di);
	free(dout);
}

static void test_bitonic(struct agile_launch_pool *pool)
{
	int *ik = calloc(NB * 64, sizeof(int)),
	    *iw = calloc(NB * 64, sizeof(int));
	float *fk = calloc(NB * 64, sizeof(float)),
	      *fw = calloc(NB * 64, sizeof(float));
	int err;

	if (!tap_ok(ik && iw && fk && fw, "keys"))
		goto out;
	for (unsigned i = 0; i < NB * 64; i++) {
		ik[i] = iw[i] = cxx_in_i(i * 7 + 3);
		fk[i] = fw[i] = cxx_in_f(i * 5 + 1) * 0.5f;
	}
	err = bitonic_int_launch(pool, (struct agile_dim3){ NB, 1, 1 },
				 (struct agile_dim3){ 64, 1, 1 }, 0, iw);
	tap_ok(!err && !ref_cxx_sorted(ik, iw, NB, sizeof(int), 1),
	       "bitonic<int>: each block's 64 keys sorted through swap_vals(T &, T &) (%d)",
	       err);
	err = bitonic_float_launch(pool, (struct agile_dim3){ NB, 1, 1 },
				   (struct agile_dim3){ 64, 1, 1 }, 0, fw);
	tap_ok(!err && !ref_cxx_sorted(fk, fw, NB, sizeof(float), 0),
	       "bitonic<float>: each block's 64 keys sorted (%d)", err);
out:
	free(ik);
	free(iw);
	free(fk);
	free(fw);
}

static void test_smooth(struct agile_launch_pool *pool, int n)
{
	float *in = calloc((size_t)n, sizeof(float)),
	      *out = calloc((size_t)n, sizeof(float));
	unsigned nb = ((unsigned)n + 127) / 128;
	int err;

	if (!tap_ok(in && out, "smooth's buffers"))
		goto out;
	for (int i = 0; i < n; i++)
		in[i] = cxx_in_f((unsigned)i) * 1.25f;
	err = ops_smooth_2_launch(pool, (struct agile_dim3){ nb, 1, 1 },
				  (struct agile_dim3){ 128, 1, 1 }, 0, in, out,
				  n);
	tap_ok(!err && !ref_cxx_smooth(in, out, n, 2),
	       "ops::smooth<2> over %d values (%d)", n, err);
	err = ops_smooth_5_launch(pool, (struct agile_dim3){ nb, 1, 1 },
				  (struct agile_dim3){ 128, 1, 1 }, 0, in, out,
				  n);
	tap_ok(!err && !ref_cxx_smooth(in, out, n, 5),
	       "ops::smooth<5> over %d values (%d)", n, err);
out:
	free(in);
	free(out);
}

static void test_transpose(struct agile_launch_pool *pool, int width)
{
	size_t n = (size_t)width * width;
	float *in = calloc(n, sizeof(float)), *out = calloc(n, sizeof(float));
	unsigned nb = (unsigned)width / 16;
	int err;

	if (!tap_ok(in && out, "the matrices"))
		goto out;
	for (size_t i = 0; i < n; i++)
		in[i] = cxx_in_f((unsigned)i);
	err = tile_transpose_launch(pool, (struct agile_dim3){ nb, nb, 1 },
				    (struct agile_dim3){ 16, 16, 1 }, 0, in,
				    out, width);
	tap_ok(!err && !ref_cxx_transpose(in, out, width),
	       "tile_transpose, %dx%d: tiles::TILE, using namespace, constexpr ceil_div (%d)",
	       width, width, err);
out:
	free(in);
	free(out);
}

static void test_vec_dots(struct agile_launch_pool *pool, int n)
{
	float *a = calloc(3 * (size_t)n, sizeof(float)),
	      *b = calloc(3 * (size_t)n, sizeof(float)),
	      *out = calloc((size_t)n, sizeof(float));
	int err;

	if (!tap_ok(a && b && out, "the vectors"))
		goto out;
	for (int i = 0; i < 3 * n; i++) {
		a[i] = cxx_in_f((unsigned)i);
		b[i] = cxx_in_f((unsigned)i * 3 + 1);
	}
	err = vec_dots_launch(
		pool, (struct agile_dim3){ ((unsigned)n + 63) / 64, 1, 1 },
		(struct agile_dim3){ 64, 1, 1 }, 0, (const Vec3 *)a,
		(const Vec3 *)b, out, n);
	tap_ok(!err && !ref_cxx_vec_dots(a, b, out, n),
	       "vec_dots over %d Vec3s: dot, scale, norm2 and the static half as free functions (%d)",
	       n, err);
out:
	free(a);
	free(b);
	free(out);
}

int main(void)
{
	struct agile_launch_pool *pool;
	int err = agile_launch_pool_create(4, &pool);

	tap_ok_call(err, "a pool of 4 threads");
	if (err)
		return tap_done();
	test_reduce(pool);
	test_bitonic(pool);
	test_smooth(pool, 1000);
	test_transpose(pool, 48);
	test_vec_dots(pool, 1000);
	test_reduce(NULL);
	agile_launch_pool_destroy(pool);
	return tap_done();
}
