// SPDX-License-Identifier: MIT
/*
 * retarget_ocl.c - agile-bench retarget's OpenCL baseline: the same
 * kernels in OpenCL C (one work-group per block, local memory for shared,
 * barrier() for __syncthreads(), OpenCL 1.2's atomic_inc and atomic_add
 * for atomics), run by the first OpenCL platform with a
 * CPU device (PoCL on Debian: pocl-opencl-icd) through the ICD loader.
 * The buffers wrap the benchmark's own arrays (CL_MEM_USE_HOST_PTR), so a
 * run moves no data, as the other contenders move none.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "retarget.h"

static const char program_source[] =
	"#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
	"#define TILE 32\n"
	"#define TILE_ROWS 8\n"
	"__kernel void small_mm_list(__global float *A_list,\n"
	"			    __global const float *B_list, const int size)\n"
	"{\n"
	"	int matrix_start = get_group_id(0) * size * size;\n"
	"	int col = matrix_start + get_local_id(0);\n"
	"	int row = matrix_start + get_local_id(1) * size;\n"
	"	float sum = 0.0f;\n"
	"	for (int i = 0; i < size; i++)\n"
	"		sum += A_list[row + i] * B_list[col + i * size];\n"
	"	barrier(CLK_GLOBAL_MEM_FENCE);\n"
	"	A_list[matrix_start + get_local_id(1) * size + get_local_id(0)] = sum;\n"
	"}\n"
	"__kernel void block_sum(__global const float *in, __global float *out,\n"
	"			unsigned int n, __global ulong *total,\n"
	"			__local float *partial)\n"
	"{\n"
	"	unsigned int tid = get_local_id(0);\n"
	"	unsigned int i = get_group_id(0) * get_local_size(0) + tid;\n"
	"	partial[tid] = i < n ? in[i] : 0.0f;\n"
	"	barrier(CLK_LOCAL_MEM_FENCE);\n"
	"	for (unsigned int s = get_local_size(0) / 2; s > 0; s >>= 1) {\n"
	"		if (tid < s)\n"
	"			partial[tid] += partial[tid + s];\n"
	"		barrier(CLK_LOCAL_MEM_FENCE);\n"
	"	}\n"
	"	if (tid != 0)\n"
	"		return;\n"
	"	out[get_group_id(0)] = partial[0];\n"
	"	atom_add(total, (ulong)partial[0]);\n"
	"}\n"
	"__kernel void transpose_smooth(__global const float *in,\n"
	"			       __global float *out, __global float *smooth,\n"
	"			       int n, int passes)\n"
	"{\n"
	"	__local float tile[TILE][TILE + 1];\n"
	"	__local float next[TILE][TILE + 1];\n"
	"	int lx = get_local_id(0), ly = get_local_id(1);\n"
	"	int x = get_group_id(0) * TILE + lx;\n"
	"	int y = get_group_id(1) * TILE + ly;\n"
	"	for (int j = 0; j < TILE; j += TILE_ROWS)\n"
	"		tile[ly + j][lx] = x < n && y + j < n ? in[(y + j) * n + x] : 0.0f;\n"
	"	barrier(CLK_LOCAL_MEM_FENCE);\n"
	"	x = get_group_id(1) * TILE + lx;\n"
	"	y = get_group_id(0) * TILE + ly;\n"
	"	for (int j = 0; j < TILE; j += TILE_ROWS)\n"
	"		if (x < n && y + j < n)\n"
	"			out[(y + j) * n + x] = tile[lx][ly + j];\n"
	"	for (int p = 0; p < passes; p++) {\n"
	"		for (int j = 0; j < TILE; j += TILE_ROWS) {\n"
	"			int r = ly + j, c = lx;\n"
	"			float v = tile[r][c];\n"
	"			if (r > 0 && r < TILE - 1 && c > 0 && c < TILE - 1)\n"
	"				v = 0.5f * v + 0.125f * (tile[r - 1][c] +\n"
	"					tile[r + 1][c] + tile[r][c - 1] + tile[r][c + 1]);\n"
	"			next[r][c] = v;\n"
	"		}\n"
	"		barrier(CLK_LOCAL_MEM_FENCE);\n"
	"		for (int j = 0; j < TILE; j += TILE_ROWS)\n"
	"			tile[ly + j][lx] = next[ly + j][lx];\n"
	"		barrier(CLK_LOCAL_MEM_FENCE);\n"
	"	}\n"
	"	x = get_group_id(0) * TILE + lx;\n"
	"	y = get_group_id(1) * TILE + ly;\n"
	"	for (int j = 0; j < TILE; j += TILE_ROWS)\n"
	"		if (x < n && y + j < n)\n"
	"			smooth[(y + j) * n + x] = tile[ly + j][lx];\n"
	"}\n"
	"#define NR_BINS 64\n"
	"__kernel void shared_histogram(__global const uint *in, uint n,\n"
	"			       uint per_block, __global uint *hist)\n"
	"{\n"
	"	__local uint local_hist[NR_BINS];\n"
	"	uint tid = get_local_id(0), nt = get_local_size(0);\n"
	"	uint first = get_group_id(0) * per_block;\n"
	"	for (uint b = tid; b < NR_BINS; b += nt)\n"
	"		local_hist[b] = 0;\n"
	"	barrier(CLK_LOCAL_MEM_FENCE);\n"
	"	for (uint i = first + tid; i < first + per_block && i < n; i += nt)\n"
	"		atomic_inc(&local_hist[in[i] % NR_BINS]);\n"
	"	barrier(CLK_LOCAL_MEM_FENCE);\n"
	"	for (uint b = tid; b < NR_BINS; b += nt)\n"
	"		atomic_add(&hist[b], local_hist[b]);\n"
	"}\n"
	"__kernel void block_scan(__global const float *in, __global float *out,\n"
	"			 uint n, __local float *buf)\n"
	"{\n"
	"	uint tid = get_local_id(0), i = get_global_id(0);\n"
	"	buf[tid] = i < n ? in[i] : 0.0f;\n"
	"	barrier(CLK_LOCAL_MEM_FENCE);\n"
	"	for (uint offset = 1; offset < get_local_size(0); offset <<= 1) {\n"
	"		float add = tid >= offset ? buf[tid - offset] : 0.0f;\n"
	"		barrier(CLK_LOCAL_MEM_FENCE);\n"
	"		buf[tid] += add;\n"
	"		barrier(CLK_LOCAL_MEM_FENCE);\n"
	"	}\n"
	"	if (i < n)\n"
	"		out[i] = buf[tid];\n"
	"}\n";

#define OCL_HIST_LOCAL 1024

enum {
	BUF_MM_A,
	BUF_MM_B,
	BUF_RED_IN,
	BUF_RED_OUT,
	BUF_RED_TOTAL,
	BUF_TR_IN,
	BUF_TR_OUT,
	BUF_TR_SMOOTH,
	BUF_HIST_IN,
	BUF_HIST_OUT,
	BUF_SCAN_IN,
	BUF_SCAN_OUT,
	NR_BUFS
};

struct rt_ocl {
	struct rt_work *w;
	cl_context ctx;
	cl_command_queue queue;
	cl_program program;
	cl_kernel mm, red, tr, hist, scan;
	cl_mem buf[NR_BUFS];
	char device[128];
};

static int fail(char *why, size_t len, const char *what, cl_int err)
{
	snprintf(why, len, "%s (OpenCL error %d)", what, (int)err);
	return -ENODEV;
}

/* The first CPU device of any platform. */
static int find_cpu(cl_device_id *dev, char *why, size_t len)
{
	cl_platform_id platforms[8];
	cl_uint nr = 0;
	cl_int err = clGetPlatformIDs(8, platforms, &nr);

	if (err != CL_SUCCESS || !nr)
		return fail(why, len,
			    "no OpenCL platform (install pocl-opencl-icd)",
			    err);
	for (cl_uint p = 0; p < nr && p < 8; p++) {
		cl_uint nr_dev = 0;

		if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_CPU, 1, dev,
				   &nr_dev) == CL_SUCCESS &&
		    nr_dev)
			return 0;
	}
	return fail(why, len, "no OpenCL CPU device", CL_DEVICE_NOT_FOUND);
}

static cl_mem wrap(struct rt_ocl *o, void *host, size_t bytes, cl_int *err)
{
	return clCreateBuffer(o->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
			      bytes, host, err);
}

static int make_buffers(struct rt_ocl *o)
{
	struct rt_work *w = o->w;
	size_t mm = (size_t)w->mm_count * w->mm_dim * w->mm_dim * sizeof(float);
	size_t tr = (size_t)w->tr_n * w->tr_n * sizeof(float);
	unsigned nr_blocks = (w->red_n + w->red_block - 1) / w->red_block;
	struct {
		void *host;
		size_t bytes;
	} bufs[NR_BUFS] = {
		[BUF_MM_A] = { w->mm_a, mm },
		[BUF_MM_B] = { w->mm_b, mm },
		[BUF_RED_IN] = { w->red_in, w->red_n * sizeof(float) },
		[BUF_RED_OUT] = { w->red_out, nr_blocks * sizeof(float) },
		[BUF_RED_TOTAL] = { &w->red_total, sizeof(w->red_total) },
		[BUF_TR_IN] = { w->tr_in, tr },
		[BUF_TR_OUT] = { w->tr_out, tr },
		[BUF_TR_SMOOTH] = { w->tr_smooth, tr },
		[BUF_HIST_IN] = { w->hist_in, w->hist_n * sizeof(unsigned) },
		[BUF_HIST_OUT] = { w->hist_out, sizeof(w->hist_out) },
		[BUF_SCAN_IN] = { w->scan_in, w->scan_n * sizeof(float) },
		[BUF_SCAN_OUT] = { w->scan_out, w->scan_n * sizeof(float) },
	};
	cl_int err = CL_SUCCESS;

	for (int i = 0; i < NR_BUFS && err == CL_SUCCESS; i++)
		o->buf[i] = wrap(o, bufs[i].host, bufs[i].bytes, &err);
	return err;
}

static cl_int set_args(struct rt_ocl *o)
{
	struct rt_work *w = o->w;
	cl_int err = 0;

	err |= clSetKernelArg(o->mm, 0, sizeof(cl_mem), &o->buf[BUF_MM_A]);
	err |= clSetKernelArg(o->mm, 1, sizeof(cl_mem), &o->buf[BUF_MM_B]);
	err |= clSetKernelArg(o->mm, 2, sizeof(int), &w->mm_dim);
	err |= clSetKernelArg(o->red, 0, sizeof(cl_mem), &o->buf[BUF_RED_IN]);
	err |= clSetKernelArg(o->red, 1, sizeof(cl_mem), &o->buf[BUF_RED_OUT]);
	err |= clSetKernelArg(o->red, 2, sizeof(unsigned), &w->red_n);
	err |= clSetKernelArg(o->red, 3, sizeof(cl_mem),
			      &o->buf[BUF_RED_TOTAL]);
	err |= clSetKernelArg(o->red, 4, w->red_block * sizeof(float), NULL);
	err |= clSetKernelArg(o->tr, 0, sizeof(cl_mem), &o->buf[BUF_TR_IN]);
	err |= clSetKernelArg(o->tr, 1, sizeof(cl_mem), &o->buf[BUF_TR_OUT]);
	err |= clSetKernelArg(o->tr, 2, sizeof(cl_mem), &o->buf[BUF_TR_SMOOTH]);
	err |= clSetKernelArg(o->tr, 3, sizeof(int), &w->tr_n);
	err |= clSetKernelArg(o->tr, 4, sizeof(int), &w->tr_passes);
	err |= clSetKernelArg(o->hist, 0, sizeof(cl_mem), &o->buf[BUF_HIST_IN]);
	err |= clSetKernelArg(o->hist, 1, sizeof(unsigned), &w->hist_n);
	err |= clSetKernelArg(o->hist, 2, sizeof(unsigned), &w->hist_per_block);
	err |= clSetKernelArg(o->hist, 3, sizeof(cl_mem),
			      &o->buf[BUF_HIST_OUT]);
	err |= clSetKernelArg(o->scan, 0, sizeof(cl_mem), &o->buf[BUF_SCAN_IN]);
	err |= clSetKernelArg(o->scan, 1, sizeof(cl_mem),
			      &o->buf[BUF_SCAN_OUT]);
	err |= clSetKernelArg(o->scan, 2, sizeof(unsigned), &w->scan_n);
	err |= clSetKernelArg(o->scan, 3, w->scan_block * sizeof(float), NULL);
	return err;
}

int rt_ocl_open(struct rt_work *w, struct rt_ocl **out, char *why, size_t len)
{
	const char *src = program_source;
	struct rt_ocl *o = calloc(1, sizeof(*o));
	cl_device_id dev;
	cl_int err;
	int ret;

	if (!o)
		return -ENOMEM;
	o->w = w;
	ret = find_cpu(&dev, why, len);
	if (ret)
		goto out;
	clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(o->device) - 1, o->device,
			NULL);
	ret = -ENODEV;
	o->ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
	if (!o->ctx) {
		fail(why, len, "clCreateContext", err);
		goto out;
	}
	o->queue = clCreateCommandQueue(o->ctx, dev, 0, &err);
	if (!o->queue) {
		fail(why, len, "clCreateCommandQueue", err);
		goto out;
	}
	o->program = clCreateProgramWithSource(o->ctx, 1, &src, NULL, &err);
	if (!o->program ||
	    (err = clBuildProgram(o->program, 1, &dev, "", NULL, NULL))) {
		fail(why, len, "building the OpenCL kernels", err);
		goto out;
	}
	o->mm = clCreateKernel(o->program, "small_mm_list", &err);
	if (o->mm)
		o->red = clCreateKernel(o->program, "block_sum", &err);
	if (o->red)
		o->tr = clCreateKernel(o->program, "transpose_smooth", &err);
	if (o->tr)
		o->hist = clCreateKernel(o->program, "shared_histogram", &err);
	if (o->hist)
		o->scan = clCreateKernel(o->program, "block_scan", &err);
	if (!o->scan || (err = make_buffers(o)) || (err = set_args(o))) {
		fail(why, len, "the OpenCL kernels' buffers and arguments",
		     err);
		goto out;
	}
	*out = o;
	return 0;
out:
	rt_ocl_close(o);
	return ret;
}

void rt_ocl_close(struct rt_ocl *o)
{
	if (!o)
		return;
	for (int i = 0; i < NR_BUFS; i++)
		if (o->buf[i])
			clReleaseMemObject(o->buf[i]);
	if (o->scan)
		clReleaseKernel(o->scan);
	if (o->hist)
		clReleaseKernel(o->hist);
	if (o->tr)
		clReleaseKernel(o->tr);
	if (o->red)
		clReleaseKernel(o->red);
	if (o->mm)
		clReleaseKernel(o->mm);
	if (o->program)
		clReleaseProgram(o->program);
	if (o->queue)
		clReleaseCommandQueue(o->queue);
	if (o->ctx)
		clReleaseContext(o->ctx);
	free(o);
}

const char *rt_ocl_device(const struct rt_ocl *o)
{
	return o->device;
}

/* Enqueue @k over @global/@local, then make @bufs' host memory current. */
static int run(struct rt_ocl *o, cl_kernel k, const size_t *global,
	       const size_t *local, const int *bufs, int nr_bufs)
{
	cl_int err = clEnqueueNDRangeKernel(o->queue, k, 2, NULL, global, local,
					    0, NULL, NULL);

	/* Map and unmap: the host's view of a USE_HOST_PTR buffer. */
	for (int i = 0; i < nr_bufs && err == CL_SUCCESS; i++) {
		size_t bytes;
		void *p;

		clGetMemObjectInfo(o->buf[bufs[i]], CL_MEM_SIZE, sizeof(bytes),
				   &bytes, NULL);
		p = clEnqueueMapBuffer(o->queue, o->buf[bufs[i]], CL_TRUE,
				       CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0,
				       NULL, NULL, &err);
		if (p)
			err = clEnqueueUnmapMemObject(o->queue, o->buf[bufs[i]],
						      p, 0, NULL, NULL);
	}
	if (err == CL_SUCCESS)
		err = clFinish(o->queue);
	return err == CL_SUCCESS ? 0 : -EIO;
}

int rt_ocl_matlist(struct rt_ocl *o)
{
	const size_t dim = (size_t)o->w->mm_dim;
	const size_t global[2] = { dim * (size_t)o->w->mm_count, dim };
	const size_t local[2] = { dim, dim };
	const int bufs[] = { BUF_MM_A };

	return run(o, o->mm, global, local, bufs, 1);
}

int rt_ocl_reduce(struct rt_ocl *o)
{
	const size_t block = o->w->red_block;
	const size_t nr_blocks = (o->w->red_n + block - 1) / block;
	const size_t global[2] = { nr_blocks * block, 1 };
	const size_t local[2] = { block, 1 };
	const int bufs[] = { BUF_RED_OUT, BUF_RED_TOTAL };

	return run(o, o->red, global, local, bufs, 2);
}

int rt_ocl_transpose(struct rt_ocl *o)
{
	const size_t tiles = (size_t)(o->w->tr_n + RT_TILE - 1) / RT_TILE;
	const size_t global[2] = { tiles * RT_TILE, tiles * RT_TILE_ROWS };
	const size_t local[2] = { RT_TILE, RT_TILE_ROWS };
	const int bufs[] = { BUF_TR_OUT, BUF_TR_SMOOTH };

	return run(o, o->tr, global, local, bufs, 2);
}

int rt_ocl_histogram(struct rt_ocl *o)
{
	const struct rt_work *w = o->w;
	const size_t nr_groups =
		(w->hist_n + w->hist_per_block - 1) / w->hist_per_block;
	/*
	 * PoCL's best work-group size here: 16 to 1024 were within 15% on
	 * the 2-core machine of docs/retarget.md, 1024 the fastest; the
	 * work (per_block elements a group) is the same at any size.
	 */
	const size_t global[2] = { nr_groups * OCL_HIST_LOCAL, 1 };
	const size_t local[2] = { OCL_HIST_LOCAL, 1 };
	const int bufs[] = { BUF_HIST_OUT };
	cl_int err;

	/* the counts start at zero: hist_out is the buffer's host memory */
	err = clEnqueueWriteBuffer(o->queue, o->buf[BUF_HIST_OUT], CL_TRUE, 0,
				   sizeof(w->hist_out), w->hist_out, 0, NULL,
				   NULL);
	if (err != CL_SUCCESS)
		return -EIO;
	return run(o, o->hist, global, local, bufs, 1);
}

int rt_ocl_scan(struct rt_ocl *o)
{
	const size_t block = o->w->scan_block;
	const size_t global[2] = { (o->w->scan_n + block - 1) / block * block,
				   1 };
	const size_t local[2] = { block, 1 };
	const int bufs[] = { BUF_SCAN_OUT };

	return run(o, o->scan, global, local, bufs, 1);
}
