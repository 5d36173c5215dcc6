// SPDX-License-Identifier: MIT
/* cxx-refused.cu - C++ that agile-retarget refuses (retarget-refused). */
#include <cuda_runtime.h>

struct Vec3 {
	float x, y, z;
	__device__ virtual float dot(const Vec3 &o) const
	{
		return x * o.x + y * o.y + z * o.z;
	}
};

struct Base {
	float v;
};
struct Derived : Base {
	float w;
};

__device__ float operator*(const Derived &a, const Derived &b)
{
	return a.w * b.w;
}

__global__ void uses_cxx(float *out, const Vec3 *v)
{
	auto twice = [](float a) { return 2.0f * a; };
	float *tmp = new float[4];

	out[threadIdx.x] =
		twice(v[threadIdx.x].dot(v[0])) + (decltype(v->x))threadIdx.x;
	delete[] tmp;
}

/* Two functions of one name (C has one a name), a default member initialiser. */
__device__ float sq(float a)
{
	return a * a;
}
__device__ int sq(int a)
{
	return a * a;
}

struct Tile {
	int rows = 8;
	unsigned bits : 3;
};

__device__ float blend(float a, float w = 0.5f)
{
	return a * w;
}
