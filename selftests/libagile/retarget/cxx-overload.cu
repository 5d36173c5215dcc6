// SPDX-License-Identifier: MIT
/*
 * cxx-overload.cu - overloaded function templates, which agile-retarget
 * refuses (retarget-refused): their instantiations would share a name.
 */
template <typename T> __device__ T load(T x)
{
	return x;
}

template <typename T> __device__ T load(T *p)
{
	return *p;
}

__global__ void use_both(float *out)
{
	out[threadIdx.x] = load(out[0]) + load(out);
}
