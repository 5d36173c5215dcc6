// SPDX-License-Identifier: MIT
/*
 * builtins.c - what agile-retarget knows of CUDA's vector constructors
 * and math and bit intrinsics (issue 31): which calls are pure, so that
 * a region calling them may still run once per block or loop over fewer
 * dimensions (variance.c).  <agile/retarget.h> and
 * <agile/retarget_types.h> give their C meanings; cuda_prelude.h
 * declares them for the parser.
 */
#include <string.h>

#include "retarget.h"

static const char *const pure_intrinsics[] = {
	"__popc",     "__popcll",  "__clz",	"__clzll",   "__ffs",
	"__ffsll",    "__brev",	   "__brevll",	"__umulhi",  "__mulhi",
	"__umul64hi", "__mul64hi", "__mul24",	"__umul24",  "__saturatef",
	"__logf",     "__sinf",	   "__cosf",	"__tanf",    "__powf",
	"__log2f",    "__log10f",  "__fadd_rn", "__fmul_rn", "__fmaf_rn",
	"__ldg",      NULL,
};

bool builtin_pure(const char *name)
{
	/* make_float4 and the other vector constructors */
	if (!strncmp(name, "make_", 5))
		return true;
	for (const char *const *p = pure_intrinsics; *p; p++)
		if (!strcmp(name, *p))
			return true;
	return false;
}
