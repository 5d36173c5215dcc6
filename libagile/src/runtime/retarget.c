// SPDX-License-Identifier: MIT
/*
 * retarget.c - CUDA and HIP source for the runtime (docs/runtime.md,
 * "CUDA and HIP source"): a program built with "-x cuda" or "-x hip" has
 * its source translated into the dialect by agile-retarget's translator,
 * libagile-retarget.so, loaded on demand (dlopen), so libagile needs no
 * libclang; then the dialect builds for every device as any other.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef AGILE_NO_DLOPEN
#include <dlfcn.h>
#endif

#include "private_file.h"
#include "runtime/compile_impl.h"
#include "runtime/retarget_lib.h"

void agile__rt_lang_free(struct agile__rt_lang *lang)
{
	free(lang->words);
	free(lang->compile_options);
	memset(lang, 0, sizeof(*lang));
}

/* Whether @w is one of the translator's own options (not the compilers'). */
static bool translator_only(const char *w)
{
	return !strncmp(w, "--lane-threads=", 15) ||
	       !strncmp(w, "--dynamic-shared=", 17);
}

int agile__rt_lang_parse(const char *options, struct agile__rt_lang *lang,
			 struct agile__rt_diag *diag)
{
	size_t len = options ? strlen(options) : 0, used = 0;
	char *save = NULL, *w;
	bool has_own = false;

	memset(lang, 0, sizeof(*lang));
	lang->words = strdup(options ? options : "");
	lang->compile_options = malloc(len + 1);
	if (!lang->words || !lang->compile_options) {
		agile__rt_lang_free(lang);
		return agile__rt_fail(diag, -ENOMEM, "options", "no memory");
	}
	lang->compile_options[0] = '\0';
	for (w = strtok_r(lang->words, " \t", &save); w;
	     w = strtok_r(NULL, " \t", &save)) {
		const char *x = NULL;

		if (!strcmp(w, "-x")) {
			x = strtok_r(NULL, " \t", &save);
			if (!x)
				x = "";
		} else if (!strncmp(w, "-x", 2)) {
			x = w + 2;
		}
		if (x) {
			if (strcmp(x, "cuda") && strcmp(x, "hip")) {
				/* The message first: @x is in lang->words. */
				agile__rt_fail(
					diag, -EINVAL, "options",
					"-x %.32s: the source's language "
					"is cuda or hip (none: the "
					"dialect)",
					x);
				agile__rt_lang_free(lang);
				return -EINVAL;
			}
			lang->lang = !strcmp(x, "cuda") ? AGILE_RT_LANG_CUDA :
							  AGILE_RT_LANG_HIP;
			continue;
		}
		if (translator_only(w) || !strncmp(w, "-D", 2) ||
		    !strncmp(w, "-U", 2) || !strncmp(w, "-I", 2)) {
			if (lang->nr_args == AGILE_RT_LANG_MAX_ARGS) {
				agile__rt_lang_free(lang);
				return agile__rt_fail(diag, -EINVAL, "options",
						      "too many options");
			}
			lang->args[lang->nr_args++] = w;
			has_own |= translator_only(w);
			if (translator_only(w))
				continue;
		}
		/* The compilers' options, in their order. */
		used += (size_t)sprintf(lang->compile_options + used, "%s%s",
					used ? " " : "", w);
	}
	if (has_own && !lang->lang) {
		agile__rt_lang_free(lang);
		return agile__rt_fail(diag, -EINVAL, "options",
				      "--lane-threads and --dynamic-shared "
				      "are options of -x cuda or -x hip");
	}
	return 0;
}

#ifndef AGILE_NO_DLOPEN
/*
 * The translator, loaded once per process and never unloaded (libclang
 * is in it): a failure is not kept, so a later build looks again.
 */
static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static agile_retarget_fn *lib_translate;

static int lib_load(agile_retarget_fn **fn, struct agile__rt_diag *diag)
{
	static const struct agile__private_place place = {
		.what = "the CUDA translator",
		.env = "AGILE_RETARGET_DIR",
#ifdef AGILE_RETARGET_BUILD_DIR
		.build_dir = AGILE_RETARGET_BUILD_DIR,
#endif
		.hint = "make -C tools/agile-retarget builds it; it needs "
			"libclang",
	};
	char path[4096], reason[2 * 4096 + 256];
	const int *abi;
	void *lib;
	int err = 0;

	pthread_mutex_lock(&lib_lock);
	if (lib_translate)
		goto out;
	err = agile__private_find(&place, AGILE_RETARGET_LIB, path,
				  sizeof(path), reason, sizeof(reason));
	if (err) {
		agile__rt_set_log(diag, reason, strlen(reason));
		err = agile__rt_fail(diag, err, "retarget", "%s", reason);
		goto out;
	}
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *why = dlerror();

		agile__rt_set_log(diag, why ? why : "", why ? strlen(why) : 0);
		err = agile__rt_fail(diag, -ENOENT, "retarget",
				     "%.120s: dlopen failed: %.120s", path,
				     why ? why : "");
		goto out;
	}
	abi = dlsym(lib, AGILE_RETARGET_ABI_SYMBOL);
	lib_translate =
		(agile_retarget_fn *)dlsym(lib, AGILE_RETARGET_FN_SYMBOL);
	if (!abi || *abi != AGILE_RETARGET_ABI || !lib_translate) {
		lib_translate = NULL;
		dlclose(lib);
		err = agile__rt_fail(diag, -EPROTO, "retarget",
				     "%.160s: not the translator of ABI %d",
				     path, AGILE_RETARGET_ABI);
	}
out:
	*fn = lib_translate;
	pthread_mutex_unlock(&lib_lock);
	return err;
}
#endif

int agile__rt_retarget(const char *source, const struct agile__rt_lang *lang,
		       char **dialect, struct agile__rt_diag *diag)
{
#ifdef AGILE_NO_DLOPEN
	(void)source;
	(void)lang;
	*dialect = NULL;
	return agile__rt_fail(diag, -ENOTSUP, "retarget",
			      "the static build loads no translator");
#else
	const char *name = lang->lang == AGILE_RT_LANG_HIP ?
				   "user-kernels.hip" :
				   "user-kernels.cu";
	agile_retarget_fn *fn;
	char *diags = NULL;
	int err, rc;

	*dialect = NULL;
	err = lib_load(&fn, diag);
	if (err)
		return err;
	rc = fn(name, source, strlen(source), lang->nr_args, lang->args,
		dialect, &diags);
	if (rc == -ENOMEM)
		return agile__rt_fail(diag, -ENOMEM, "retarget", "no memory");
	if (diags)
		agile__rt_set_log(diag, diags, strlen(diags));
	if (rc) {
		/* The first diagnostic is the message; the log has them all. */
		size_t n = diags ? strcspn(diags, "\n") : 0;

		err = agile__rt_fail(diag, -EIO, "retarget",
				     "the translation was refused: %.*s",
				     (int)(n > 200 ? 200 : n),
				     diags ? diags : "");
		free(*dialect);
		*dialect = NULL;
	}
	free(diags);
	return err;
#endif
}
