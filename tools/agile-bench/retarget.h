/* SPDX-License-Identifier: MIT */
/*
 * retarget.h - agile-bench retarget's workloads, shared by its
 * contenders: the kernels of selftests/libagile/retarget/ .cu files translated
 * by agile-retarget and run through agile_launch (retarget.c), the same
 * kernels in OpenCL C on PoCL (retarget_ocl.c) and hand-written OpenMP or
 * serial C (retarget_omp.c).
 */
#ifndef AGILE_BENCH_RETARGET_H
#define AGILE_BENCH_RETARGET_H

#include <stddef.h>

#define RT_TILE 32
#define RT_TILE_ROWS 8
#define RT_HIST_BINS 64 /* histogram.cu's NR_BINS */

struct rt_work {
	/* matlist: A[m] = A[m] x B[m], count matrices of dim x dim */
	int mm_count, mm_dim;
	float *mm_a, *mm_b;
	/* reduce: out[b] = sum of in's block b (red_block elements), total */
	unsigned red_n, red_block;
	float *red_in, *red_out;
	unsigned long long red_total;
	/* transpose: out = in^T; smooth = each tile after tr_passes rounds */
	int tr_n, tr_passes;
	float *tr_in, *tr_out, *tr_smooth;
	/* histogram: hist_out = counts of hist_in % RT_HIST_BINS */
	unsigned hist_n, hist_block, hist_per_block;
	unsigned *hist_in, hist_out[RT_HIST_BINS];
	/* scan: scan_out = each scan_block elements' inclusive running sums */
	unsigned scan_n, scan_block;
	float *scan_in, *scan_out;
};

void rt_omp_matlist(struct rt_work *w, int threads);
void rt_omp_reduce(struct rt_work *w, int threads);
void rt_omp_transpose(struct rt_work *w, int threads);
void rt_serial_histogram(struct rt_work *w);
void rt_serial_scan(struct rt_work *w);

struct rt_ocl;
/* 0, or -ENODEV with @why set (no OpenCL platform, a build failure, ...). */
int rt_ocl_open(struct rt_work *w, struct rt_ocl **out, char *why, size_t len);
void rt_ocl_close(struct rt_ocl *ocl);
/* The device's name, for the notes. */
const char *rt_ocl_device(const struct rt_ocl *ocl);
/* Run one kernel and wait; its results are in @w's arrays after it. */
int rt_ocl_matlist(struct rt_ocl *ocl);
int rt_ocl_reduce(struct rt_ocl *ocl);
int rt_ocl_transpose(struct rt_ocl *ocl);
int rt_ocl_histogram(struct rt_ocl *ocl);
int rt_ocl_scan(struct rt_ocl *ocl);

#endif /* AGILE_BENCH_RETARGET_H */
