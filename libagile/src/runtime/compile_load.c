// SPDX-License-Identifier: MIT
/*
 * compile_load.c - a CPU image into a registry: dlopen the shared object,
 * check its dialect version, register every kernel of its table
 * (agile_user_kernels, in AGILE_USER_KERNELS order) at the first free
 * opcode, with its phases' lanes loops (agile__lanes_fn).  CPU EUs then run them as any registered kernel; GPU EUs find
 * the same kernels' opcodes by name (agile__eu_pool_create_code).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifndef AGILE_NO_DLOPEN
#include <dlfcn.h>
#endif

#include "kernels/kernels_body.h"
#include "kernels/kernels_impl.h"
#include "runtime/compile_impl.h"

struct agile__rt_module {
	void *handle;
	uint32_t nr_kernels;
	const char *names[AGILE_USER_NR_MAX + 1]; /* NULL-terminated */
	uint32_t opcodes[AGILE_USER_NR_MAX];
};

#ifndef AGILE_NO_DLOPEN

/* The table's kernels, checked: -EPROTO with @diag set when it is bad. */
static int table_check(const struct agile__rt_user_kernel *t,
		       struct agile__rt_diag *diag, uint32_t *nr)
{
	uint32_t n = 0;

	for (; t[n].name; n++) {
		if (n == AGILE_USER_NR_MAX)
			return agile__rt_fail(diag, -EPROTO, "dialect",
					      "more than %d kernels in one "
					      "source",
					      AGILE_USER_NR_MAX);
		if (!t[n].nr_phases || t[n].nr_phases > AGILE_KERNEL_MAX_PHASES)
			return agile__rt_fail(diag, -EPROTO, "dialect",
					      "kernel %.40s has %u phases",
					      t[n].name, t[n].nr_phases);
		if (!t[n].lanes)
			return agile__rt_fail(diag, -EPROTO, "dialect",
					      "kernel %.40s has no lanes "
					      "functions",
					      t[n].name);
		if (!t[n].extra ||
		    t[n].extra->shared_size > AGILE_KERNEL_MAX_SHARED)
			return agile__rt_fail(
				diag, -EPROTO, "dialect", "kernel %.40s: %s",
				t[n].name,
				t[n].extra ?
					"more block-shared memory than AGILE_KERNEL_MAX_SHARED" :
					"no extras entry");
	}
	if (!n)
		return agile__rt_fail(diag, -EPROTO, "dialect",
				      "AGILE_USER_KERNELS lists no kernel");
	*nr = n;
	return 0;
}

int agile__rt_cpu_load(const struct agile__rt_image *img,
		       struct agile_kernels *reg, struct agile__rt_module **out,
		       struct agile__rt_diag *diag)
{
	const struct agile__rt_user_kernel *table;
	const uint32_t *dialect;
	struct agile__rt_module *mod;
	int err;

	if (!img || img->target != AGILE_RT_CPU || !img->path[0] || !reg ||
	    !out)
		return agile__rt_fail(diag, -EINVAL, "arguments",
				      "not a CPU image with a file");
	mod = calloc(1, sizeof(*mod));
	if (!mod)
		return agile__rt_fail(diag, -ENOMEM, "dlopen", "no memory");
	mod->handle = dlopen(img->path, RTLD_NOW | RTLD_LOCAL);
	if (!mod->handle) {
		err = agile__rt_fail(diag, -ENOENT, "dlopen", "%.200s",
				     dlerror());
		free(mod);
		return err;
	}
	table = dlsym(mod->handle, AGILE_RT_TABLE_SYMBOL);
	dialect = dlsym(mod->handle, AGILE_RT_DIALECT_SYMBOL);
	if (!table || !dialect || *dialect != AGILE_RT_DIALECT_VERSION) {
		err = agile__rt_fail(diag, -EPROTO, "dialect",
				     "%.150s is not a kernel module of "
				     "dialect %d",
				     img->path, AGILE_RT_DIALECT_VERSION);
		goto fail;
	}
	err = table_check(table, diag, &mod->nr_kernels);
	if (err)
		goto fail;
	for (uint32_t i = 0; i < mod->nr_kernels; i++) {
		struct agile_kernel k = {
			.name = table[i].name,
			.nr_phases = table[i].nr_phases,
			.phases = table[i].phases,
			.state_size = table[i].state_size,
			.max_lanes = table[i].max_lanes,
			.shared_size = table[i].extra->shared_size,
			.next = table[i].extra->next,
		};

		const agile__lanes_fn *lanes = table[i].lanes;

		err = agile__kernels_register_lanes(reg, &k, lanes,
						    &mod->opcodes[i]);
		if (err) {
			agile__rt_fail(diag, err, "register",
				       "kernel %.40s: %s", k.name,
				       strerror(-err));
			goto fail;
		}
		mod->names[i] = table[i].name;
	}
	*out = mod;
	return 0;
fail:
	/*
	 * Kernels registered before the failure point into the object:
	 * it stays loaded (a registry never forgets a kernel).
	 */
	if (!mod->names[0])
		dlclose(mod->handle);
	free(mod);
	return err;
}

void agile__rt_module_unload(struct agile__rt_module *mod)
{
	if (!mod)
		return;
	dlclose(mod->handle);
	free(mod);
}

#else /* AGILE_NO_DLOPEN: the static build loads nothing */

int agile__rt_cpu_load(const struct agile__rt_image *img,
		       struct agile_kernels *reg, struct agile__rt_module **out,
		       struct agile__rt_diag *diag)
{
	(void)img;
	(void)reg;
	(void)out;
	return agile__rt_fail(diag, -ENOTSUP, "dlopen",
			      "a static build loads no shared object");
}

void agile__rt_module_unload(struct agile__rt_module *mod)
{
	free(mod);
}

#endif /* AGILE_NO_DLOPEN */

uint32_t agile__rt_module_nr_kernels(const struct agile__rt_module *mod)
{
	return mod ? mod->nr_kernels : 0;
}

const char *agile__rt_module_name(const struct agile__rt_module *mod,
				  uint32_t i)
{
	return mod && i < mod->nr_kernels ? mod->names[i] : NULL;
}

uint32_t agile__rt_module_opcode(const struct agile__rt_module *mod, uint32_t i)
{
	return mod && i < mod->nr_kernels ? mod->opcodes[i] : 0;
}

const char *const *agile__rt_module_names(const struct agile__rt_module *mod)
{
	return mod ? mod->names : NULL;
}
