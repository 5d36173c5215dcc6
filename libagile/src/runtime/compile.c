// SPDX-License-Identifier: MIT
/*
 * compile.c - agile__rt_compile: the cache key, the cache, the compiler.
 *
 * The key is FNV-1a-128 (cache.c) over, each as a length-prefixed field:
 * the dialect version, the target, the architecture, the options, the
 * flags that change the product (AGILE_RT_CUBIN), the compiler's identity
 * and version (agile__rt_compiler_id), the contraction default
 * (agile__rt_fp_contract), the user's source, for the CPU
 * the compiler flags before the options (agile__rt_cc_flags) and the
 * host's instruction set (agile__rt_cc_isa: -march=native), and for the
 * GPU targets the persistent kernel's embedded sources
 * (compile_sources.c).  Anything that changes the bytes a build makes
 * changes the key.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/compile_impl.h"

/*
 * Compiler runs per target, for agile__rt_compiler_count: process-wide
 * statistics, relaxed atomics.
 */
static _Atomic uint64_t compiles[AGILE_RT_HIP + 1];

void agile__rt_count_compile(enum agile__rt_target target)
{
	atomic_fetch_add_explicit(&compiles[target], 1, memory_order_relaxed);
}

uint64_t agile__rt_compiler_count(enum agile__rt_target target)
{
	if ((unsigned int)target > AGILE_RT_HIP)
		return 0;
	return atomic_load_explicit(&compiles[target], memory_order_relaxed);
}

void agile__rt_diag_clear(struct agile__rt_diag *diag)
{
	if (!diag)
		return;
	free(diag->log);
	memset(diag, 0, sizeof(*diag));
}

int agile__rt_fail(struct agile__rt_diag *diag, int err, const char *step,
		   const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return err;
	snprintf(diag->step, sizeof(diag->step), "%s", step);
	va_start(ap, fmt);
	vsnprintf(diag->message, sizeof(diag->message), fmt, ap);
	va_end(ap);
	return err;
}

void agile__rt_set_log(struct agile__rt_diag *diag, const char *log, size_t len)
{
	char *copy;

	if (!diag)
		return;
	copy = malloc(len + 1);
	if (!copy)
		return;
	memcpy(copy, log, len);
	copy[len] = '\0';
	free(diag->log);
	diag->log = copy;
}

int agile__rt_compiler_id(enum agile__rt_target target, char *id, size_t len,
			  struct agile__rt_diag *diag)
{
	if (!id || !len)
		return -EINVAL;
	if (target == AGILE_RT_CPU)
		return agile__rt_cc_id(id, len, diag);
	return agile__rt_rtc_id(target, id, len, diag);
}

static const char *const extensions[] = {
	[AGILE_RT_CPU] = "so",
	[AGILE_RT_CUDA] = "ptx",
	[AGILE_RT_HIP] = "co",
};

/* An architecture the target takes: none for the CPU, sm_NN, gfxNNN. */
static bool arch_ok(const struct agile__rt_build *b)
{
	const char *a = b->arch;

	if (b->target == AGILE_RT_CPU)
		return !a || !*a;
	if (!a || strlen(a) >= sizeof(((struct agile__rt_image *)0)->arch) ||
	    strspn(a, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(a))
		return false;
	if (b->target == AGILE_RT_CUDA)
		return !strncmp(a, "sm_", 3) && a[3];
	return !strncmp(a, "gfx", 3) && a[3];
}

const char *agile__rt_fp_contract(enum agile__rt_target target)
{
	return target == AGILE_RT_CUDA ? AGILE_RT_FMAD_OFF :
					 AGILE_RT_FP_CONTRACT_OFF;
}

/* For the CPU, the flags before the options and the host's ISA. */
struct cpu_build {
	char flags[512];
	char isa[48];
};

static void make_key(const char *source, const struct agile__rt_build *b,
		     const char *compiler, const struct cpu_build *cpu,
		     char key[33])
{
	struct agile__rt_hash h;
	uint32_t v = AGILE_RT_DIALECT_VERSION, t = (uint32_t)b->target;
	uint32_t product = b->flags & AGILE_RT_CUBIN;

	agile__rt_hash_init(&h);
	agile__rt_hash_field(&h, &v, sizeof(v));
	agile__rt_hash_field(&h, &t, sizeof(t));
	agile__rt_hash_string(&h, b->arch);
	agile__rt_hash_string(&h, b->options);
	agile__rt_hash_field(&h, &product, sizeof(product));
	agile__rt_hash_string(&h, compiler);
	agile__rt_hash_string(&h, agile__rt_fp_contract(b->target));
	agile__rt_hash_string(&h, source);
	if (b->target == AGILE_RT_CPU) {
		agile__rt_hash_string(&h, cpu->flags);
		agile__rt_hash_string(&h, cpu->isa);
	} else {
		agile__rt_gpu_sources_hash(&h, b->target);
	}
	agile__rt_hash_hex(&h, key);
}

/* Runs the compiler: the unit for the target, then the build. */
static int build(const char *source, const struct agile__rt_build *b,
		 const struct cpu_build *cpu, void **data, size_t *size,
		 struct agile__rt_diag *diag)
{
	char *unit;
	int err;

	unit = b->target == AGILE_RT_CPU ? agile__rt_dialect_cpu(source) :
					   agile__rt_dialect_gpu(source);
	if (!unit)
		return agile__rt_fail(diag, -ENOMEM, "dialect", "no memory");
	if (b->target == AGILE_RT_CPU)
		err = agile__rt_cc_build(unit, cpu->flags, b->options, data,
					 size, diag);
	else
		err = agile__rt_rtc_build(b->target, b->arch, unit, b->options,
					  b->flags, data, size, diag);
	free(unit);
	return err;
}

/*
 * A CPU image must be a file for dlopen: when it is not stored in the
 * cache (AGILE_RT_NO_CACHE, or the cache refused it), a temporary one.
 */
static int cpu_temp_file(struct agile__rt_image *img)
{
	const char *tmpdir = getenv("TMPDIR");
	int fd, n;
	ssize_t w;

	n = snprintf(img->path, sizeof(img->path), "%s/agile-kernel-XXXXXX.so",
		     tmpdir && *tmpdir ? tmpdir : "/tmp");
	if (n < 0 || (size_t)n >= sizeof(img->path))
		return -ENAMETOOLONG;
	fd = mkstemps(img->path, 3);
	if (fd < 0)
		return -errno;
	w = write(fd, img->data, img->size);
	close(fd);
	if (w != (ssize_t)img->size) {
		unlink(img->path);
		return -EIO;
	}
	return 0;
}

int agile__rt_compile(const char *source, const struct agile__rt_build *b,
		      struct agile__rt_image **out, struct agile__rt_diag *diag)
{
	char compiler[256], dir[PATH_MAX - 64];
	struct cpu_build cpu = { .flags = "" };
	struct agile__rt_image *img;
	bool cache = true;
	int err, lock = -1;

	if (!source || !b || !out || (unsigned int)b->target > AGILE_RT_HIP)
		return agile__rt_fail(diag, -EINVAL, "arguments",
				      "bad arguments");
	if (!arch_ok(b))
		return agile__rt_fail(
			diag, -EINVAL, "arguments",
			"architecture \"%.32s\" is not one "
			"the %s target takes",
			b->arch ? b->arch : "",
			b->target == AGILE_RT_CPU  ? "CPU" :
			b->target == AGILE_RT_CUDA ? "CUDA (sm_NN)" :
						     "HIP (gfxNNN)");
	err = agile__rt_compiler_id(b->target, compiler, sizeof(compiler),
				    diag);
	if (err)
		return err;
	img = calloc(1, sizeof(*img));
	if (!img)
		return agile__rt_fail(diag, -ENOMEM, "arguments", "no memory");
	img->target = b->target;
	snprintf(img->arch, sizeof(img->arch), "%s", b->arch ? b->arch : "");
	if (b->target == AGILE_RT_CPU) {
		agile__rt_cc_flags(cpu.flags, sizeof(cpu.flags));
		/* An ISA not known: not cached, never another machine's. */
		if (agile__rt_cc_isa(cpu.isa, sizeof(cpu.isa)))
			cache = false;
	}
	make_key(source, b, compiler, &cpu, img->key);

	if (!cache || b->flags & AGILE_RT_NO_CACHE ||
	    agile__rt_cache_dir(dir, sizeof(dir), NULL))
		cache = false;
	if (cache) {
		err = agile__rt_cache_get(dir, img->key, extensions[b->target],
					  &img->data, &img->size, img->path,
					  sizeof(img->path));
		if (err) {
			/* Whoever holds the lock builds; then we find it. */
			lock = agile__rt_cache_lock(dir, img->key);
			err = agile__rt_cache_get(dir, img->key,
						  extensions[b->target],
						  &img->data, &img->size,
						  img->path, sizeof(img->path));
		}
		if (!err) {
			agile__rt_cache_unlock(lock);
			img->from_cache = 1;
			*out = img;
			return 0;
		}
		/* -ENOENT: not there; -EBADMSG: corrupt, rebuilt below. */
	}
	img->path[0] = '\0';
	err = build(source, b, &cpu, &img->data, &img->size, diag);
	if (!err && cache &&
	    agile__rt_cache_put(dir, img->key, extensions[b->target], img->data,
				img->size, img->path, sizeof(img->path)))
		img->path[0] = '\0';
	agile__rt_cache_unlock(lock);
	if (!err && !img->path[0] && b->target == AGILE_RT_CPU) {
		err = cpu_temp_file(img);
		if (err)
			agile__rt_fail(diag, err, "cache",
				       "no file for the shared object: %s",
				       strerror(-err));
		else
			img->temp = 1;
	}
	if (err) {
		agile__rt_image_free(img);
		return err;
	}
	*out = img;
	return 0;
}

void agile__rt_image_free(struct agile__rt_image *img)
{
	if (!img)
		return;
	if (img->temp)
		unlink(img->path);
	free(img->data);
	free(img);
}
