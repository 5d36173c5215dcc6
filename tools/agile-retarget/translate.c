// SPDX-License-Identifier: MIT
/*
 * translate.c - what the tool and the library (lib.c) share: an opened
 * source's kernels cut into regions, analysed and emitted, --emit=launch
 * or --emit=runtime; and the checks of the runtime's options.
 */
#include <stdlib.h>

#include "retarget.h"

int runtime_opt(char opt, const char *value, struct runtime_opts *rt, FILE *err)
{
	char *end;
	unsigned long v = strtoul(value, &end, 0);

	if (*end || !*value || (opt == 'l' ? !v || v > 1024 : v > 47 * 1024)) {
		fprintf(err, "agile-retarget: --%s=%s: %s\n",
			opt == 'l' ? "lane-threads" : "dynamic-shared", value,
			opt == 'l' ? "1 to 1024 threads" : "0 to 48128 bytes");
		return -1;
	}
	if (opt == 'l')
		rt->lane_threads = (unsigned)v;
	else
		rt->dynamic_shared = (unsigned)v;
	return 0;
}

int translate_analyse(struct source *src, struct translation *t)
{
	int rc = 0;

	t->src = src;
	t->nr = 0;
	t->kernels = NULL;
	if (src->errors) /* refused as it was parsed (inline.c) */
		return 1;
	func_variance(src);
	t->kernels = calloc(src->nr_funcs + 1, sizeof(*t->kernels));
	if (!t->kernels)
		return 2;
	for (unsigned f = 0; f < src->nr_funcs; f++) {
		struct kernel *k = &t->kernels[t->nr];

		if (!src->funcs[f].kernel)
			continue;
		t->nr++;
		if (kernel_build(k, src, &src->funcs[f]) || kernel_analyse(k))
			rc = 1;
	}
	if (!t->nr) {
		fprintf(source_err(src),
			"%s: error: no __global__ function in it\n", src->path);
		rc = 1;
	}
	return rc;
}

int translate_emit(struct translation *t, bool runtime,
		   const struct runtime_opts *rt, FILE *c_out, FILE *h_out,
		   const char *h_name)
{
	if (runtime)
		return emit_runtime_file(t->src, t->kernels, t->nr, rt, c_out,
					 h_out, h_name) ?
			       1 :
			       0;
	return emit_file(t->src, t->kernels, t->nr, c_out, h_out, h_name) ? 1 :
									    0;
}

void translate_free(struct translation *t)
{
	for (unsigned i = 0; t->kernels && i < t->nr; i++)
		kernel_free(&t->kernels[i]);
	free(t->kernels);
	t->kernels = NULL;
}
