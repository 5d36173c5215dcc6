// SPDX-License-Identifier: MIT
/*
 * cxx.cu - kernels in the C++ subset CUDA code uses (docs/retarget.md,
 * "C++"), which agile-retarget lowers to C: templates on types and
 * integers (explicit instantiations, calls with explicit and deduced
 * arguments, a static_assert on a parameter), namespaces (qualified
 * names, an alias, using namespace, a kernel in one), auto, constexpr
 * variables and a constexpr function, references (swap by reference in
 * a bitonic sort, a const reference), a struct with member functions.
 */
#ifdef __HIPCC__
#include <hip/hip_runtime.h>
#endif

namespace tiles
{
constexpr int TILE = 16;
const unsigned SORT_N = 64; // const at namespace scope: a constant too
constexpr float SCALE = 0.25f;
} // namespace tiles

namespace tl = tiles;

static_assert(tl::TILE *tl::TILE <= 1024, "a tile is one block");

__host__ __device__ constexpr int ceil_div(int a, int b)
{
	return (a + b - 1) / b;
}

/* A struct with member functions: const, not, calling each other, static. */
struct Vec3 {
	float x, y, z;

	__device__ float dot(const Vec3 &o) const
	{
		return x * o.x + y * o.y + z * o.z;
	}
	__device__ void scale(float s)
	{
		x *= s;
		y *= s;
		this->z *= s;
	}
	__device__ float norm2() const
	{
		return dot(*this);
	}
	__device__ static float half(float v)
	{
		return v * 0.5f;
	}
};

template <typename T> __device__ void swap_vals(T &a, T &b)
{
	T t = a;
	a = b;
	b = t;
}

template <typename T> __device__ T square(const T &x)
{
	return x * x;
}

/* Each block's sum of squares, BS threads a block. */
template <typename T, unsigned BS>
__global__ void block_reduce(const T *in, T *out)
{
	static_assert(BS % 32 == 0, "whole warps");
	__shared__ T part[BS];
	unsigned tid = threadIdx.x;

	part[tid] = square<T>(in[blockIdx.x * BS + tid]);
	__syncthreads();
	for (unsigned s = BS / 2; s > 0; s >>= 1) {
		if (tid < s)
			part[tid] += part[tid + s];
		__syncthreads();
	}
	if (tid == 0)
		out[blockIdx.x] = part[0];
}

template __global__ void block_reduce<float, 64>(const float *, float *);
template __global__ void block_reduce<int, 256>(const int *, int *);
template __global__ void block_reduce<double, 128>(const double *, double *);

/* Each block sorts its tiles::SORT_N keys, one thread a key. */
template <typename T> __global__ void bitonic(T *keys)
{
	__shared__ T s[tiles::SORT_N];
	unsigned t = threadIdx.x;
	T *base = reinterpret_cast<T *>(keys) + blockIdx.x * tiles::SORT_N;

	s[t] = base[t];
	__syncthreads();
	for (unsigned k = 2; k <= tiles::SORT_N; k <<= 1) {
		for (unsigned j = k >> 1; j > 0; j >>= 1) {
			unsigned p = t ^ j;

			if (p > t) {
				int up = (t & k) == 0;

				if ((s[t] > s[p]) == up)
					swap_vals(s[t], s[p]);
			}
			__syncthreads();
		}
	}
	base[t] = s[t];
}

template __global__ void bitonic<int>(int *);
template __global__ void bitonic<float>(float *);

template <int R> __device__ float window_sum(const float *x, int i)
{
	auto acc = 0.0f;

	for (int d = -R; d <= R; d++)
		acc += x[i + d];
	return acc;
}

namespace ops
{
/* out[i]: the mean of in[i - R .. i + R], scaled; 0 at the edges. */
template <int R> __global__ void smooth(const float *in, float *out, int n)
{
	int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);

	if (i >= n)
		return;
	out[i] = i >= R && i < n - R ?
			 window_sum<R>(in, i) / (2 * R + 1) * tl::SCALE :
			 0.0f;
}
} // namespace ops

template __global__ void ops::smooth<2>(const float *, float *, int);
template __global__ void ops::smooth<5>(const float *, float *, int);

using namespace tiles;

/* A TILE x TILE tile of in, transposed through __shared__ memory. */
__global__ void tile_transpose(const float *in, float *out, int width)
{
	__shared__ float tile[TILE][TILE + 1];
	const auto nb = ceil_div(width, TILE);
	int x = blockIdx.x * TILE + threadIdx.x;
	int y = blockIdx.y * TILE + threadIdx.y;

	tile[threadIdx.y][threadIdx.x] = in[y * width + x];
	__syncthreads();
	x = blockIdx.y * TILE + threadIdx.x;
	y = blockIdx.x * TILE + threadIdx.y;
	out[y * width + x] =
		tile[threadIdx.x][threadIdx.y] * SCALE + static_cast<float>(nb);
}

/* out[i] = (2 a[i]) . b[i] + |2 a[i]|^2 + a[i].x / 2 */
__global__ void vec_dots(const Vec3 *a, const Vec3 *b, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	Vec3 v = a[i];
	v.scale(2.0f);
	out[i] = v.dot(b[i]) + v.norm2() + Vec3::half(a[i].x);
}
