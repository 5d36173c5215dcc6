// SPDX-License-Identifier: MIT
/*
 * compile_sources.c - what NVRTC and hiprtc compile besides the user's
 * kernels: the persistent kernel's source and its headers, embedded in
 * the library when it is built (the assembler's .incbin of the files
 * under AGILE_SOURCE_ROOT, which libagile/Makefile sets; LIB_HDRS makes
 * the object depend on them), so an installed library needs no source
 * tree.  The runtime compilers see no file system header: these, and
 * stand-ins for the few C headers they include, are handed over in memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/compile_impl.h"

#ifndef AGILE_SOURCE_ROOT
#error "AGILE_SOURCE_ROOT: the source tree the GPU sources are embedded from"
#endif

/* One file as a NUL-terminated array named @sym. */
#define EMBED(sym, file)                                       \
	__asm__(".pushsection .rodata\n"                       \
		".global " #sym "\n"                           \
		".hidden " #sym "\n"                           \
		".type " #sym ", @object\n" #sym ":\n"         \
		".incbin \"" AGILE_SOURCE_ROOT "/" file "\"\n" \
		".byte 0\n"                                    \
		".size " #sym ", . - " #sym "\n"               \
		".popsection\n");                              \
	extern const char sym[]

EMBED(agile__rt_persistent_cu, "libagile/gpu/persistent.cu");
EMBED(agile__rt_src_agile_gpu_h, "libagile/gpu/agile_gpu.h");
EMBED(agile__rt_src_kernels_body_h, "libagile/src/kernels/kernels_body.h");
EMBED(agile__rt_src_error_h, "libagile/include/agile/error.h");
EMBED(agile__rt_src_kernels_h, "libagile/include/agile/kernels.h");
EMBED(agile__rt_src_linux_agile_h, "uapi/linux/agile.h");
EMBED(agile__rt_src_retarget_h, "libagile/include/agile/retarget.h");
EMBED(agile__rt_src_retarget_types_h,
      "libagile/include/agile/retarget_types.h");
EMBED(agile__rt_src_retarget_warp_h, "libagile/include/agile/retarget_warp.h");

/*
 * Stand-ins for the C headers.  hiprtc declares the fixed-width types
 * itself (uint64_t as unsigned long long) and clang's stdint.h would
 * clash with it, so HIP's stdint.h adds only what may be missing; NVRTC
 * has none, and libcu++'s <cuda/std/cstdint> declares them globally.
 */
static const char stdint_h_hip[] =
	"#pragma once\n"
	"typedef __INTPTR_TYPE__ intptr_t;\n"
	"typedef __UINTPTR_TYPE__ uintptr_t;\n"
	"#ifndef UINT32_MAX\n"
	"#define UINT32_MAX 4294967295u\n"
	"#endif\n"
	"#ifndef UINT64_MAX\n"
	"#define UINT64_MAX 18446744073709551615ull\n"
	"#endif\n";
static const char stdint_h_cuda[] = "#pragma once\n"
				    "#include <cuda/std/cstdint>\n";
/* size_t is the compilers' own. */
static const char stddef_h[] = "#pragma once\n";
static const char linux_types_h[] = "#pragma once\n"
				    "typedef unsigned char __u8;\n"
				    "typedef unsigned short __u16;\n"
				    "typedef unsigned int __u32;\n"
				    "typedef unsigned long long __u64;\n"
				    "typedef signed char __s8;\n"
				    "typedef short __s16;\n"
				    "typedef int __s32;\n"
				    "typedef long long __s64;\n";
/* linux/agile.h defines its ioctl numbers with these, and uses none. */
static const char linux_ioctl_h[] = "#pragma once\n";

/* errno.h with this system's numbers. */
#define ERRNO(e)      \
	{             \
#e, e \
	}
static const struct {
	const char *name;
	int value;
} errnos[] = {
	ERRNO(EPERM),	  ERRNO(ENOENT),    ERRNO(EIO),	   ERRNO(ENOMEM),
	ERRNO(EFAULT),	  ERRNO(EBUSY),	    ERRNO(EINVAL), ERRNO(ENODEV),
	ERRNO(ENOSPC),	  ERRNO(EDOM),	    ERRNO(ERANGE), ERRNO(EPROTO),
	ERRNO(EOVERFLOW), ERRNO(ECANCELED),
};

/*
 * NVRTC takes no flexible array member (nor a zero-length one): its copy
 * of linux/agile.h gives struct agile_task_reg's args the largest
 * register's words instead.  The offsets are the same; only sizeof
 * differs, which the device code does not use (persistent.cu's assertion
 * of it is for hipcc and nvcc only).
 */
#define FLEX_ARGS "__u64 args[];"
#define FIXED_ARGS "__u64 args[(AGILE_TASK_REG_MAX_SIZE - 32) / 8];"

/* Both tables, made once (sources_once) and read-only after. */
static char errno_h[512];
static char *linux_agile_h_cuda;
static struct agile__rt_header headers[2][13];
static pthread_once_t sources_once = PTHREAD_ONCE_INIT;

static void errno_make(void)
{
	size_t off =
		(size_t)snprintf(errno_h, sizeof(errno_h), "#pragma once\n");

	for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
		off += (size_t)snprintf(errno_h + off, sizeof(errno_h) - off,
					"#define %s %d\n", errnos[i].name,
					errnos[i].value);
}

/* linux/agile.h with FIXED_ARGS for FLEX_ARGS; NULL if it has none. */
static char *agile_h_fixed(void)
{
	const char *src = agile__rt_src_linux_agile_h;
	const char *at = strstr(src, FLEX_ARGS);
	size_t head, len = strlen(src);
	char *s;

	if (!at || strstr(at + 1, FLEX_ARGS))
		return NULL;
	s = malloc(len + sizeof(FIXED_ARGS));
	if (!s)
		return NULL;
	head = (size_t)(at - src);
	memcpy(s, src, head);
	strcpy(s + head, FIXED_ARGS);
	strcat(s + head, at + strlen(FLEX_ARGS));
	return s;
}

static void sources_make(void)
{
	errno_make();
	/* Kept for the process's life, as the tables that point to it. */
	linux_agile_h_cuda = agile_h_fixed();
	for (int v = 0; v < 2; v++) {
		const char *uapi = v ? linux_agile_h_cuda :
				       agile__rt_src_linux_agile_h;
		/* The ABI under both names: kernels.h's, agile_gpu.h's */
		const struct agile__rt_header t[] = {
			{ "agile_gpu.h", agile__rt_src_agile_gpu_h },
			{ "kernels/kernels_body.h",
			  agile__rt_src_kernels_body_h },
			{ "agile/error.h", agile__rt_src_error_h },
			{ "agile/kernels.h", agile__rt_src_kernels_h },
			{ "linux/types.h", linux_types_h },
			{ "linux/ioctl.h", linux_ioctl_h },
			{ "stddef.h", stddef_h },
			{ "errno.h", errno_h },
			{ "stdint.h", v ? stdint_h_cuda : stdint_h_hip },
			{ "agile/uapi.h", uapi },
			{ "linux/agile.h", uapi },
			/* the warp primitives' helpers, the GPU prelude's */
			{ "agile/retarget_warp.h",
			  agile__rt_src_retarget_warp_h },
			{ NULL, NULL },
		};

		_Static_assert(sizeof(t) <= sizeof(headers[0]), "headers[]");
		memcpy(headers[v], t, sizeof(t));
	}
}

const struct agile__rt_header *agile__rt_gpu_headers(enum agile__rt_target t)
{
	pthread_once(&sources_once, sources_make);
	if (t == AGILE_RT_CUDA && !linux_agile_h_cuda)
		return NULL; /* linux/agile.h changed: see FLEX_ARGS */
	return headers[t == AGILE_RT_CUDA];
}

void agile__rt_gpu_sources_hash(struct agile__rt_hash *hash,
				enum agile__rt_target t)
{
	const struct agile__rt_header *h = agile__rt_gpu_headers(t);

	agile__rt_hash_string(hash, agile__rt_persistent_cu);
	for (; h && h->name; h++) {
		agile__rt_hash_string(hash, h->name);
		agile__rt_hash_string(hash, h->text);
	}
}
