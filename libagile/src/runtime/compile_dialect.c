// SPDX-License-Identifier: MIT
/*
 * compile_dialect.c - the source dialect of user kernels (dialect
 * AGILE_RT_DIALECT_VERSION, docs/runtime.md): what the compiler
 * puts before and after the user's source for each target.
 *
 * The user writes phases with AGILE_PHASE(fn) { ... } (a function of lane,
 * nr_lanes, args, state, shared, returning 0 or a negative errno, as
 * agile/kernels.h's agile_phase_fn) and lists the kernels once:
 *
 *	#define AGILE_USER_KERNELS(K) \
 *		K(name, state_type, max_lanes, phase0, phase1, ...)
 *
 * The epilogue expands that list per target: on the CPU into the table
 * agile_user_kernels (struct agile__rt_user_kernel) that compile_load.c
 * registers, with (dialect 3) each phase's loop over a group's lanes,
 * which the compiler inlines the phase into and vectorises; on the GPU into the user half of the persistent kernel's
 * opcode switch (agile_user_nr_phases, agile_user_phase, the lanes' state
 * union and AGILE_USER_MAX_LANES, which persistent.cu and kernels_body.h
 * read).  Both expand the same list, so kernel i is the same kernel on
 * both sides.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/agile.h>

#include "kernels/kernels_body.h"
#include "kernels/kernels_impl.h"
#include "runtime/compile_impl.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/*
 * The texts below are C source laid out as it will read: clang-format
 * would reflow them.
 */
/* clang-format off */

/*
 * Both targets: the phase and control signatures, the "no state" type,
 * the counter, (dialect 2) the argument helpers and the CUDA-style
 * dims agile-retarget's --emit=runtime code uses, and (dialect 3)
 * agile_rt_local_id.
 */
#define COMMON_PRELUDE                                                       \
	"typedef unsigned long long agile_u64;\n"                            \
	"struct agile_no_state { char unused; };\n"                          \
	"#define AGILE_PHASE(fn) static AGILE_LANE_FN int fn(\\\n"           \
	"\tuint32_t lane __attribute__((unused)),\\\n"                      \
	"\tuint32_t nr_lanes __attribute__((unused)),\\\n"                  \
	"\tconst agile_u64 *args __attribute__((unused)),\\\n"              \
	"\tvoid *state __attribute__((unused)),\\\n"                        \
	"\tvoid *shared __attribute__((unused)))\n"                         \
	"#define AGILE_NEXT(fn) static AGILE_LANE_FN uint32_t fn(\\\n"       \
	"\tuint32_t done __attribute__((unused)),\\\n"                      \
	"\tuint32_t nr_lanes __attribute__((unused)),\\\n"                  \
	"\tconst agile_u64 *args __attribute__((unused)),\\\n"              \
	"\tvoid *shared __attribute__((unused)))\n"                         \
	"#define AGILE_NEXT_DONE 0xffffffffu\n"                              \
	"struct agile_rt_dim3 { uint32_t x, y, z; };\n"                      \
	"struct agile_rt_thread {\n"                                         \
	"\tstruct agile_rt_dim3 idx, block_idx, block_dim, grid_dim;\n"      \
	"};\n"                                                               \
	"static AGILE_LANE_FN inline __attribute__((unused)) struct agile_rt_dim3\n" \
	"agile_rt_dim3_of(agile_u64 w)\n"                                    \
	"{\n"                                                                \
	"\tstruct agile_rt_dim3 d;\n"                                       \
	"\td.x = (uint32_t)(w & 0xffffffffu);\n"                            \
	"\td.y = (uint32_t)(w >> 32 & 0xffffu);\n"                          \
	"\td.z = (uint32_t)(w >> 48);\n"                                    \
	"\treturn d;\n"                                                     \
	"}\n"                                                                \
	"static AGILE_LANE_FN inline __attribute__((unused)) struct agile_rt_thread\n" \
	"agile_rt_thread_of(struct agile_rt_dim3 idx, struct agile_rt_dim3 bi,\n" \
	"\tstruct agile_rt_dim3 bd, struct agile_rt_dim3 gd)\n"             \
	"{\n"                                                                \
	"\tstruct agile_rt_thread t;\n"                                     \
	"\tt.idx = idx;\n"                                                  \
	"\tt.block_idx = bi;\n"                                             \
	"\tt.block_dim = bd;\n"                                             \
	"\tt.grid_dim = gd;\n"                                              \
	"\treturn t;\n"                                                     \
	"}\n"                                                                \
	"static AGILE_LANE_FN inline __attribute__((unused)) float\n"        \
	"agile_arg_float(agile_u64 w)\n"                                     \
	"{\n"                                                                \
	"\tunion { uint32_t u; float f; } c;\n"                             \
	"\tc.u = (uint32_t)w;\n"                                            \
	"\treturn c.f;\n"                                                   \
	"}\n"                                                                \
	"static AGILE_LANE_FN inline __attribute__((unused)) double\n"       \
	"agile_arg_double(agile_u64 w)\n"                                    \
	"{\n"                                                                \
	"\tunion { agile_u64 u; double d; } c;\n"                           \
	"\tc.u = w;\n"                                                      \
	"\treturn c.d;\n"                                                   \
	"}\n"                                                                \
	"static AGILE_LANE_FN inline __attribute__((unused)) struct agile_rt_dim3\n" \
	"agile_rt_local_id(uint32_t lane, agile_u64 size_word)\n"           \
	"{\n"                                                                \
	"\tstruct agile_rt_dim3 s = agile_rt_dim3_of(size_word), d;\n"      \
	"\td.x = lane % s.x;\n"                                             \
	"\td.y = lane / s.x % s.y;\n"                                       \
	"\td.z = lane / (s.x * s.y);\n"                                     \
	"\treturn d;\n"                                                     \
	"}\n"                                                                \
	"#define AGILE_RT_DIALECT " STR(AGILE_RT_DIALECT_VERSION) "\n"      \
	"#line 1 \"user-kernels\"\n"

/*
 * The user's list is required, and is checked the same way on both; the
 * list of extras (dialect 2: block-shared memory and the control
 * function) is optional.
 */
#define COMMON_EPILOGUE                                                      \
	"\n#ifndef AGILE_USER_KERNELS\n"                                     \
	"#error \"define AGILE_USER_KERNELS(K): the kernels of this source\"\n" \
	"#endif\n"                                                           \
	"#ifndef AGILE_USER_EXTRAS\n"                                        \
	"#define AGILE_USER_EXTRAS(X)\n"                                     \
	"#endif\n"                                                           \
	"#define AGILE__CAT_(a, b) a##b\n"                                   \
	"#define AGILE__CAT(a, b) AGILE__CAT_(a, b)\n"                       \
	"#define AGILE__NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, \\\n" \
	"\t_11, _12, _13, _14, _15, _16, n, ...) n\n"                        \
	"#define AGILE__NARGS(...) AGILE__NARGS_(__VA_ARGS__, 16, 15, 14, \\\n" \
	"\t13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)\n"

/*
 * Dialect 3, the CPU's lanes functions (kernels_impl.h's agile__lanes_fn):
 * per kernel and phase, the phase's loop over a range of lanes, in this
 * translation unit so that the compiler inlines the (static) phase into
 * it and vectorises across lanes.  The pointers are restrict: the lanes'
 * states, the block-shared memory, the argument words and the return
 * codes are four separate objects the runtime owns.  The argument words
 * are copied into a local array first: a load from it cannot fault, so
 * the compiler may hoist a phase's loads of them out of its branches
 * (gcc 12 does not vectorise `if (i < n) y[i] = a * x[i] + y[i]` with a
 * from args[] otherwise: a masked load of a uniform word).  It returns
 * the OR of the lanes' return codes: 0 spares the caller a scan.  A kernel of n
 * phases gets agile__lf<k>_<name> for k = n .. 1 (phase n - k), listed in
 * phase order in agile__lanes_<name>[].
 */
#define CPU_LF(k, km1)                                                       \
	"#define AGILE__LF" #k "(id, f, ...) AGILE__LANES(id, " #k ", f) \\\n" \
	"\tAGILE__LF" #km1 "(id, __VA_ARGS__)\n"
#define CPU_LA(k, km1)                                                       \
	"#define AGILE__LA" #k "(id, f, ...) agile__lf" #k "_##id, \\\n"     \
	"\tAGILE__LA" #km1 "(id, __VA_ARGS__)\n"
#define CPU_LANES                                                            \
	"#define AGILE__LANES(id, k, f) \\\n"                               \
	"static int32_t agile__lf##k##_##id(uint32_t lo, uint32_t hi, \\\n" \
	"\tuint32_t nr_lanes, const agile_u64 *__restrict args, \\\n"      \
	"\tvoid *__restrict states, size_t stride, \\\n"                   \
	"\tvoid *__restrict shared, int32_t *__restrict rc) \\\n"          \
	"{ \\\n"                                                             \
	"\tunsigned char *st = (unsigned char *)states; \\\n"              \
	"\tagile_u64 a[AGILE__LANES_ARGS]; \\\n"                           \
	"\tint32_t any = 0; \\\n"                                          \
	"\tfor (int w = 0; w < AGILE__LANES_ARGS; w++) \\\n"               \
	"\t\ta[w] = args[w]; \\\n"                                        \
	"\tfor (uint32_t l = lo; l < hi; l++) { \\\n"                       \
	"\t\tint32_t r = f(l, nr_lanes, a, st ? st + l * stride : NULL, \\\n" \
	"\t\t\t\t  shared); \\\n"                                       \
	"\t\trc[l - lo] = r; \\\n"                                         \
	"\t\tany |= r; \\\n"                                               \
	"\t} \\\n"                                                          \
	"\treturn any; \\\n"                                                \
	"}\n"                                                                \
	"#define AGILE__LF1(id, f) AGILE__LANES(id, 1, f)\n"                 \
	CPU_LF(2, 1) CPU_LF(3, 2) CPU_LF(4, 3) CPU_LF(5, 4) CPU_LF(6, 5)     \
	CPU_LF(7, 6) CPU_LF(8, 7) CPU_LF(9, 8) CPU_LF(10, 9) CPU_LF(11, 10)  \
	CPU_LF(12, 11) CPU_LF(13, 12) CPU_LF(14, 13) CPU_LF(15, 14)          \
	CPU_LF(16, 15)                                                       \
	"#define AGILE__LA1(id, f) agile__lf1_##id\n"                        \
	CPU_LA(2, 1) CPU_LA(3, 2) CPU_LA(4, 3) CPU_LA(5, 4) CPU_LA(6, 5)     \
	CPU_LA(7, 6) CPU_LA(8, 7) CPU_LA(9, 8) CPU_LA(10, 9) CPU_LA(11, 10)  \
	CPU_LA(12, 11) CPU_LA(13, 12) CPU_LA(14, 13) CPU_LA(15, 14)          \
	CPU_LA(16, 15)                                                       \
	"#define AGILE__CPU_LANES(id, type, max_lanes, ...) \\\n"           \
	"\tAGILE__CAT(AGILE__LF, AGILE__NARGS(__VA_ARGS__))(id, __VA_ARGS__) \\\n" \
	"\tstatic const agile_user_lanes_fn agile__lanes_##id[] = { \\\n"  \
	"\t\tAGILE__CAT(AGILE__LA, AGILE__NARGS(__VA_ARGS__))(id, \\\n"   \
	"\t\t\t\t\t\t\t      __VA_ARGS__) };\n"                                 \
	"AGILE_USER_KERNELS(AGILE__CPU_LANES)\n"

static const char cpu_prelude[] =
	"/* agile user kernels: CPU prelude */\n"
	"#include <errno.h>\n"
	"#include <stddef.h>\n"
	"#include <stdint.h>\n"
	"#define AGILE_RT_CPU 1\n"
	"#define AGILE_LANE_FN\n"
	"#define AGILE_MAX_LANES " STR(AGILE_MAX_LANES) "\n"
	"#define AGILE_IN_ORDER 0\n"
	"typedef int (*agile_user_phase_fn)(uint32_t, uint32_t,\n"
	"\tconst unsigned long long *, void *, void *);\n"
	"typedef uint32_t (*agile_user_next_fn)(uint32_t, uint32_t,\n"
	"\tconst unsigned long long *, void *);\n"
	"struct agile__rt_user_extra {\n"
	"\tuint32_t shared_size, reserved;\n"
	"\tagile_user_next_fn next;\n"
	"\tconst void *phases;\n"
	"};\n"
	"#define AGILE__LANES_ARGS " STR(AGILE__LANES_ARGS) "\n"
	"typedef int32_t (*agile_user_lanes_fn)(uint32_t, uint32_t, uint32_t,\n"
	"\tconst unsigned long long *, void *, size_t, void *, int32_t *);\n"
	"struct agile__rt_user_kernel {\n"
	"\tconst char *name;\n"
	"\tconst agile_user_phase_fn *phases;\n"
	"\tuint32_t nr_phases, state_size, max_lanes, reserved;\n"
	"\tconst struct agile__rt_user_extra *extra;\n"
	"\tconst agile_user_lanes_fn *lanes;\n"
	"};\n"
	/*
	 * CUDA's device built-ins in C (vector types, atomics, fences,
	 * min, max, ...), as on the GPU where they are native:
	 * <agile/retarget_types.h>, <agile/retarget_warp.h>, then
	 * <agile/retarget.h> without its launch half.
	 */
	"#define AGILE_RETARGET_BUILTINS_ONLY 1\n"
	"#line 1 \"agile/retarget_types.h\"\n";

/* Between the embedded <agile/retarget_types.h> and <agile/retarget_warp.h>. */
static const char cpu_types_tail[] = "#line 1 \"agile/retarget_warp.h\"\n";

/* Between the embedded <agile/retarget_warp.h> and <agile/retarget.h>. */
static const char cpu_prelude_retarget[] = "#line 1 \"agile/retarget.h\"\n";

/* After the embedded <agile/retarget.h>. */
static const char cpu_prelude_tail[] = "\n" COMMON_PRELUDE;

static const char cpu_epilogue[] =
	COMMON_EPILOGUE
	"#define AGILE__CPU_PHASES(id, type, max_lanes, ...) \\\n"
	"\tstatic const agile_user_phase_fn agile__phases_##id[] = {\\\n"
	"\t\t__VA_ARGS__ };\n"
	"AGILE_USER_KERNELS(AGILE__CPU_PHASES)\n"
	/*
	 * Every kernel's extras: zero (no shared memory, phases in order)
	 * by a tentative definition, which an AGILE_USER_EXTRAS entry then
	 * defines; an entry that names no kernel finds no agile__phases_.
	 */
	"#define AGILE__CPU_XT(id, type, max_lanes, ...) \\\n"
	"\tstatic const struct agile__rt_user_extra agile__extra_##id;\n"
	"AGILE_USER_KERNELS(AGILE__CPU_XT)\n"
	"#define AGILE__CPU_XD(id, type, next) \\\n"
	"\tstatic const struct agile__rt_user_extra agile__extra_##id = {\\\n"
	"\t\t(uint32_t)sizeof(type), 0, next, agile__phases_##id };\n"
	"AGILE_USER_EXTRAS(AGILE__CPU_XD)\n"
	CPU_LANES
	"#define AGILE__CPU_DESC(id, type, max_lanes, ...) \\\n"
	"\t{ #id, agile__phases_##id, \\\n"
	"\t  (uint32_t)(sizeof(agile__phases_##id) / \\\n"
	"\t\t     sizeof(agile__phases_##id[0])), \\\n"
	"\t  (uint32_t)sizeof(type), (uint32_t)(max_lanes), 0, \\\n"
	"\t  &agile__extra_##id, agile__lanes_##id },\n"
	"__attribute__((visibility(\"default\")))\n"
	"const struct agile__rt_user_kernel agile_user_kernels[] = {\n"
	"\tAGILE_USER_KERNELS(AGILE__CPU_DESC) { 0, 0, 0, 0, 0, 0, 0, 0 }\n"
	"};\n"
	"__attribute__((visibility(\"default\")))\n"
	"const uint32_t agile_user_dialect = AGILE_RT_DIALECT;\n";

/*
 * The GPU's: included by persistent.cu after agile_gpu.h (so AGILE_LANE_FN
 * is __device__ and the fixed-width types are there) and before
 * kernels_body.h.
 */
static const char gpu_prelude[] =
	"/* agile user kernels: GPU prelude */\n"
	"#pragma once\n"
	"#include <errno.h>\n"
	"#include <stddef.h>\n"
	"#include <stdint.h>\n"
	"#define AGILE_RT_GPU 1\n"
	"#ifndef AGILE_LANE_FN\n"
	"#define AGILE_LANE_FN __device__\n"
	"#endif\n"
	"#define AGILE_IN_ORDER agile__in_order\n"
	"#define AGILE__NEXT_IN_ORDER 0xfffffffeu\n"
	/*
	 * agile-retarget's spelling of an atomic on __shared__ memory, a
	 * plain operation on the CPU (<agile/retarget.h>): here the GPU's
	 * own atomic, as the lanes of a block run at once.
	 */
	"#define agile_shared_atomicAdd atomicAdd\n"
	"#define agile_shared_atomicSub atomicSub\n"
	"#define agile_shared_atomicExch atomicExch\n"
	"#define agile_shared_atomicMin atomicMin\n"
	"#define agile_shared_atomicMax atomicMax\n"
	"#define agile_shared_atomicInc atomicInc\n"
	"#define agile_shared_atomicDec atomicDec\n"
	"#define agile_shared_atomicAnd atomicAnd\n"
	"#define agile_shared_atomicOr atomicOr\n"
	"#define agile_shared_atomicXor atomicXor\n"
	"#define agile_shared_atomicCAS atomicCAS\n"
	/*
	 * agile-retarget's warp primitives: the CPU's helpers, on the
	 * block-shared staging arrays, for the same bits on both.
	 */
	"#include <agile/retarget_warp.h>\n"
	COMMON_PRELUDE
	"#line 1 \"agile-dialect\"\n"
	"AGILE_NEXT(agile__in_order)\n"
	"{\n"
	"\treturn AGILE__NEXT_IN_ORDER;\n"
	"}\n"
	"#line 1 \"user-kernels\"\n";

static const char gpu_epilogue[] =
	COMMON_EPILOGUE
	"#define AGILE__ID(id, type, ml, ...) AGILE__UID_##id,\n"
	"enum { AGILE_USER_KERNELS(AGILE__ID) AGILE_USER_NR };\n"
	"static_assert(AGILE_USER_NR <= " STR(AGILE_USER_NR_MAX) ",\n"
	"\t      \"at most " STR(AGILE_USER_NR_MAX) " user kernels\");\n"
	"#define AGILE__ST(id, type, ml, ...) type id;\n"
	"union agile_user_state {\n"
	"\tstruct agile_no_state agile__none;\n"
	"\tAGILE_USER_KERNELS(AGILE__ST)\n"
	"};\n"
	"#define AGILE__NP(id, type, ml, ...) \\\n"
	"\tcase AGILE__UID_##id: return AGILE__NARGS(__VA_ARGS__);\n"
	"static __device__ uint32_t agile_user_nr_phases(uint32_t i)\n"
	"{\n"
	"\tswitch (i) {\n"
	"\tAGILE_USER_KERNELS(AGILE__NP)\n"
	"\tdefault: return 0;\n"
	"\t}\n"
	"}\n"
	"#define AGILE__ML(id, type, ml, ...) \\\n"
	"\tcase AGILE__UID_##id: return (ml) ? (uint32_t)(ml) : \\\n"
	"\t\t(uint32_t)AGILE_MAX_LANES;\n"
	"static __device__ uint32_t agile_user_max_lanes(uint32_t i)\n"
	"{\n"
	"\tswitch (i) {\n"
	"\tAGILE_USER_KERNELS(AGILE__ML)\n"
	"\tdefault: return 0;\n"
	"\t}\n"
	"}\n"
	"#define AGILE_USER_MAX_LANES(i) agile_user_max_lanes(i)\n"
	/* Phase n of a kernel: a switch, no indirect call on the GPU. */
	"#define AGILE__C(n, f) \\\n"
	"\tcase n: return f(lane, nr_lanes, args, state, shared);\n"
	"#define AGILE__CS1(n, f) AGILE__C(n, f)\n"
	"#define AGILE__CS2(n, f, ...) AGILE__C(n, f) AGILE__CS1(n + 1, __VA_ARGS__)\n"
	"#define AGILE__CS3(n, f, ...) AGILE__C(n, f) AGILE__CS2(n + 1, __VA_ARGS__)\n"
	"#define AGILE__CS4(n, f, ...) AGILE__C(n, f) AGILE__CS3(n + 1, __VA_ARGS__)\n"
	"#define AGILE__CS5(n, f, ...) AGILE__C(n, f) AGILE__CS4(n + 1, __VA_ARGS__)\n"
	"#define AGILE__CS6(n, f, ...) AGILE__C(n, f) AGILE__CS5(n + 1, __VA_ARGS__)\n"
	"#define AGILE__CS7(n, f, ...) AGILE__C(n, f) AGILE__CS6(n + 1, __VA_ARGS__)\n"
	"#define AGILE__CS8(n, f, ...) AGILE__C(n, f) AGILE__CS7(n + 1, __VA_ARGS__)\n"
	"#define AGILE__CS9(n, f, ...) AGILE__C(n, f) AGILE__CS8(n + 1, __VA_ARGS__)\n"
	"#define AGILE__CS10(n, f, ...) AGILE__C(n, f) AGILE__CS9(n + 1, __VA_ARGS__)\n"
	"#define AGILE__CS11(n, f, ...) AGILE__C(n, f) AGILE__CS10(n + 1, __VA_ARGS__)\n"
	"#define AGILE__CS12(n, f, ...) AGILE__C(n, f) AGILE__CS11(n + 1, __VA_ARGS__)\n"
	"#define AGILE__CS13(n, f, ...) AGILE__C(n, f) AGILE__CS12(n + 1, __VA_ARGS__)\n"
	"#define AGILE__CS14(n, f, ...) AGILE__C(n, f) AGILE__CS13(n + 1, __VA_ARGS__)\n"
	"#define AGILE__CS15(n, f, ...) AGILE__C(n, f) AGILE__CS14(n + 1, __VA_ARGS__)\n"
	"#define AGILE__CS16(n, f, ...) AGILE__C(n, f) AGILE__CS15(n + 1, __VA_ARGS__)\n"	"#define AGILE__CASES(...) \\\n"
	"\tAGILE__CAT(AGILE__CS, AGILE__NARGS(__VA_ARGS__))(0, __VA_ARGS__)\n"
	"#define AGILE__PH(id, type, ml, ...) \\\n"
	"\tcase AGILE__UID_##id: \\\n"
	"\t\tswitch (phase) { AGILE__CASES(__VA_ARGS__) } \\\n"
	"\t\tbreak;\n"
	"static __device__ int agile_user_phase(uint32_t i, uint32_t phase,\n"
	"\tuint32_t lane, uint32_t nr_lanes, const agile_u64 *args,\n"
	"\tvoid *state, void *shared)\n"
	"{\n"
	"\tswitch (i) {\n"
	"\tAGILE_USER_KERNELS(AGILE__PH)\n"
	"\tdefault: break;\n"
	"\t}\n"
	"\treturn -EINVAL;\n"
	"}\n"
	/*
	 * Dialect 2: the block-shared memory (one buffer, the largest
	 * kernel's, persistent.cu's __shared__) and the control functions.
	 */
	"#define AGILE__SHU(id, type, next) type id;\n"
	"union agile_user_shared {\n"
	"\tchar agile__none;\n"
	"\tAGILE_USER_EXTRAS(AGILE__SHU)\n"
	"};\n"
	"static_assert(sizeof(union agile_user_shared) <= " STR(AGILE_RT_GPU_SHARED_MAX) ",\n"
	"\t      \"at most " STR(AGILE_RT_GPU_SHARED_MAX) " bytes of block-shared memory on the GPU\");\n"
	"#define AGILE__HN(id, type, next) case AGILE__UID_##id: return true;\n"
	"static __device__ bool agile_user_has_next(uint32_t i)\n"
	"{\n"
	"\tswitch (i) {\n"
	"\tAGILE_USER_EXTRAS(AGILE__HN)\n"
	"\tdefault: return false;\n"
	"\t}\n"
	"}\n"
	"#define AGILE__NX(id, type, next) \\\n"
	"\tcase AGILE__UID_##id: return next(done, nr_lanes, args, shared);\n"
	"static __device__ uint32_t agile_user_next(uint32_t i, uint32_t done,\n"
	"\tuint32_t nr_lanes, const agile_u64 *args, void *shared)\n"
	"{\n"
	"\tswitch (i) {\n"
	"\tAGILE_USER_EXTRAS(AGILE__NX)\n"
	"\tdefault: return AGILE__NEXT_IN_ORDER;\n"
	"\t}\n"
	"}\n";

/* clang-format on */

/*
 * The @nr strings of @parts one after the other, each ending its last
 * line (a newline added where it has none: a source without a final
 * newline), malloc'd; NULL without memory.
 */
static char *join(const char *const *parts, unsigned nr)
{
	size_t len = 1, at = 0;
	char *s;

	for (unsigned i = 0; i < nr; i++)
		len += strlen(parts[i]) + 1;
	s = malloc(len);
	if (!s)
		return NULL;
	for (unsigned i = 0; i < nr; i++) {
		size_t n = strlen(parts[i]);

		memcpy(s + at, parts[i], n);
		at += n;
		if (!n || parts[i][n - 1] != '\n')
			s[at++] = '\n';
	}
	s[at] = '\0';
	return s;
}

char *agile__rt_dialect_cpu(const char *source)
{
	const char *parts[] = {
		cpu_prelude,	      agile__rt_src_retarget_types_h,
		cpu_types_tail,	      agile__rt_src_retarget_warp_h,
		cpu_prelude_retarget, agile__rt_src_retarget_h,
		cpu_prelude_tail,     source,
		cpu_epilogue
	};

	return join(parts, sizeof(parts) / sizeof(parts[0]));
}

char *agile__rt_dialect_gpu(const char *source)
{
	const char *parts[] = { gpu_prelude, source, gpu_epilogue };

	return join(parts, 3);
}
