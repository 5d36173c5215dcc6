/* SPDX-License-Identifier: MIT */
/*
 * agile/retarget_types.h - CUDA's vector types in C (float2, float3,
 * float4, int2 .. int4, uint2 .. uint4, uchar4, double2) and their make_
 * constructors, for the code tools/agile-retarget emits and for the host
 * code that calls it: a translated kernel taking a float4 * is called
 * with one (docs/retarget.md).  <agile/retarget.h> includes it.
 *
 * The sizes and alignments are CUDA's, so a buffer laid out for the GPU
 * reads the same here: float4, int4, uint4 and double2 16 bytes,
 * 16-aligned (what the GPU's 128-bit loads need); the two-element ones
 * 8-aligned (double2 16); the three-element ones 4-aligned, 12 bytes;
 * uchar4 4 bytes, 4-aligned.
 */
#ifndef AGILE_RETARGET_TYPES_H
#define AGILE_RETARGET_TYPES_H

#define AGILE_RT_VEC2(type, name, align)                                       \
	typedef struct __attribute__((aligned(align))) name {                  \
		type x, y;                                                     \
	} name;                                                                \
	static inline __attribute__((unused)) name make_##name(type x, type y) \
	{                                                                      \
		name v = { x, y };                                             \
		return v;                                                      \
	}
#define AGILE_RT_VEC3(type, name)                \
	typedef struct name {                    \
		type x, y, z;                    \
	} name;                                  \
	static inline __attribute__((unused))    \
	name make_##name(type x, type y, type z) \
	{                                        \
		name v = { x, y, z };            \
		return v;                        \
	}
#define AGILE_RT_VEC4(type, name, align)                      \
	typedef struct __attribute__((aligned(align))) name { \
		type x, y, z, w;                              \
	} name;                                               \
	static inline __attribute__((unused))                 \
	name make_##name(type x, type y, type z, type w)      \
	{                                                     \
		name v = { x, y, z, w };                      \
		return v;                                     \
	}

AGILE_RT_VEC2(float, float2, 8)
AGILE_RT_VEC3(float, float3)
AGILE_RT_VEC4(float, float4, 16)
AGILE_RT_VEC2(int, int2, 8)
AGILE_RT_VEC3(int, int3)
AGILE_RT_VEC4(int, int4, 16)
AGILE_RT_VEC2(unsigned int, uint2, 8)
AGILE_RT_VEC3(unsigned int, uint3)
AGILE_RT_VEC4(unsigned int, uint4, 16)
AGILE_RT_VEC4(unsigned char, uchar4, 4)
AGILE_RT_VEC2(double, double2, 16)

#endif /* AGILE_RETARGET_TYPES_H */
