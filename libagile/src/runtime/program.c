// SPDX-License-Identifier: MIT
/*
 * program.c - executables with description data and seed 003's load rule
 * (agile_rt_program_*): per device of a context, a binary for its exact
 * version, else the source compiled for it (cached), else a compatible
 * binary, else an error.  A CPU build goes into the context's registry
 * (agile__rt_cpu_load), a GPU build restarts the context's GPU pool on
 * the image (agile__eu_pool_create_code).  docs/runtime.md, "Executables
 * and compile on demand".
 */
#define _GNU_SOURCE
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/kernels.h>
#include <agile/runtime.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eu/eu_impl.h"
#include "kernels/kernels_body.h"
#include "runtime/compile.h"
#include "runtime_impl.h"

/* A binary of a program: the description, its own copy of the image. */
struct rt_bin {
	struct agile_rt_binary desc; /* desc.image == data */
	void *data;
};

/*
 * What a build compiles: the program's source, or what the translator
 * made of it (-x cuda, -x hip), with the compilers' options; or why the
 * translation failed (every device's compile step then fails with it).
 */
struct build_src {
	const char *text; /* NULL: nothing to compile */
	const char *options; /* the compilers' */
	int err; /* the translation's, when it failed */
	struct agile__rt_diag diag;
};

/* One device's outcome (the CPU's host build has its own). */
struct rt_outcome {
	struct agile_rt_build_info info;
	char *log;
};

struct agile_rt_program {
	struct rt_ctx *ctx;
	char *source;
	struct rt_bin *bins;
	uint32_t nr_bins, cap_bins;
	/* Under ctx->lock: 0 not built, 1 built, < 0 the build's error. */
	int built;
	struct rt_outcome host; /* the CPU build every kernel needs */
	struct rt_outcome dev[AGILE_RT_MAX_DEVICES]; /* by ctx->devs index */
	uint32_t nr_kernels;
	struct agile_rt_kernel *kernels[AGILE_USER_NR_MAX];
};

static void outcome_fail(struct rt_outcome *o, int status, const char *step,
			 const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void outcome_fail(struct rt_outcome *o, int status, const char *step,
			 const char *fmt, ...)
{
	va_list ap;

	o->info.branch = AGILE_RT_BUILD_FAILED;
	o->info.status = status;
	snprintf(o->info.step, sizeof(o->info.step), "%s", step);
	va_start(ap, fmt);
	vsnprintf(o->info.message, sizeof(o->info.message), fmt, ap);
	va_end(ap);
}

/* Keeps @diag's step and message (what failed last) and its log. */
static void outcome_diag(struct rt_outcome *o, const struct agile__rt_diag *d,
			 int err)
{
	snprintf(o->info.step, sizeof(o->info.step), "%s", d->step);
	snprintf(o->info.message, sizeof(o->info.message), "%.200s: %.50s",
		 d->message[0] ? d->message : "failed", agile_strerror(err));
	if (d->log) {
		free(o->log);
		o->log = strdup(d->log);
	}
}

/* Adds a copy of @b (its image too, NUL-terminated beyond @b->size). */
static int bin_add(struct agile_rt_program *p, const struct agile_rt_binary *b,
		   uint32_t origin)
{
	struct rt_bin *nb;

	if (p->nr_bins == p->cap_bins) {
		uint32_t cap = p->cap_bins ? 2 * p->cap_bins : 4;
		struct rt_bin *n = realloc(p->bins, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->bins = n;
		p->cap_bins = cap;
	}
	nb = &p->bins[p->nr_bins];
	memset(nb, 0, sizeof(*nb));
	nb->data = malloc(b->size + 1);
	if (!nb->data)
		return -ENOMEM;
	memcpy(nb->data, b->image, b->size);
	((char *)nb->data)[b->size] = '\0';
	nb->desc = *b;
	nb->desc.vendor[sizeof(nb->desc.vendor) - 1] = '\0';
	nb->desc.version[sizeof(nb->desc.version) - 1] = '\0';
	nb->desc.options[sizeof(nb->desc.options) - 1] = '\0';
	nb->desc.origin = origin;
	nb->desc.image = nb->data;
	p->nr_bins++;
	return 0;
}

/*
 * "sm_XY" / "compute_XY" -> XY (its last digit the minor), with *@ptx;
 * -1 for anything else (a suffixed "sm_90a" included: exact only).
 */
static int cuda_cc(const char *v, int *ptx)
{
	const char *d;
	char *end;
	long n;

	*ptx = !strncmp(v, "compute_", 8);
	if (!*ptx && strncmp(v, "sm_", 3))
		return -1;
	d = v + (*ptx ? 8 : 3);
	if (*d < '0' || *d > '9')
		return -1;
	n = strtol(d, &end, 10);
	return *end || n < 10 || n > 10000 ? -1 : (int)n;
}

/*
 * The compatibility rule: can a binary for @bin_version of @vendor run
 * on a device of @dev_version?  CPU and AMD: the same version.  NVIDIA:
 * a cubin sm_XY on sm_XZ with Z >= Y (same major); PTX compute_XY on any
 * sm_AB with AB >= XY (the driver compiles it).
 */
static bool version_runs(const char *vendor, const char *bin_version,
			 const char *dev_version)
{
	int bin, dev, bin_ptx, dev_ptx;

	if (!dev_version[0])
		return false;
	if (!strcmp(bin_version, dev_version))
		return true;
	if (strcmp(vendor, "nvidia"))
		return false;
	bin = cuda_cc(bin_version, &bin_ptx);
	dev = cuda_cc(dev_version, &dev_ptx);
	if (bin < 0 || dev < 0 || dev_ptx)
		return false;
	if (bin_ptx)
		return bin <= dev;
	return bin / 10 == dev / 10 && bin % 10 <= dev % 10;
}

static bool options_same(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

static bool bin_compatible(const struct rt_bin *b, uint32_t type,
			   const char *vendor, const char *version)
{
	return b->desc.type == type && !strcmp(b->desc.vendor, vendor) &&
	       version_runs(vendor, b->desc.version, version);
}

/* The index of the binary for exactly @version and @options, or -1. */
static int bin_exact(const struct agile_rt_program *p, uint32_t type,
		     const char *vendor, const char *version,
		     const char *options)
{
	for (uint32_t i = 0; i < p->nr_bins; i++) {
		const struct rt_bin *b = &p->bins[i];

		if (b->desc.type == type && !strcmp(b->desc.vendor, vendor) &&
		    version[0] && !strcmp(b->desc.version, version) &&
		    options_same(b->desc.options, options))
			return (int)i;
	}
	return -1;
}

/* ---- the CPU ---- */

/* A given CPU image into a temporary file for dlopen, loaded, removed. */
static int cpu_load_bin(struct agile_rt_program *p, uint32_t i,
			struct agile__rt_module **mod,
			struct agile__rt_diag *diag)
{
	struct agile__rt_image img = { .target = AGILE_RT_CPU };
	const char *tmp = getenv("TMPDIR");
	const struct rt_bin *b = &p->bins[i];
	ssize_t w;
	int fd, err;

	snprintf(img.path, sizeof(img.path), "%s/agile-binary-XXXXXX.so",
		 tmp && *tmp ? tmp : "/tmp");
	fd = mkstemps(img.path, 3);
	if (fd < 0) {
		err = -errno;
		snprintf(diag->step, sizeof(diag->step), "load");
		snprintf(diag->message, sizeof(diag->message),
			 "no temporary file for binary %u", i);
		return err;
	}
	w = write(fd, b->data, b->desc.size);
	close(fd);
	if (w != (ssize_t)b->desc.size) {
		unlink(img.path);
		snprintf(diag->step, sizeof(diag->step), "load");
		snprintf(diag->message, sizeof(diag->message),
			 "writing binary %u failed", i);
		return -EIO;
	}
	err = agile__rt_cpu_load(&img, p->ctx->reg, mod, diag);
	unlink(img.path); /* loaded (or not): the mapping stays */
	return err;
}

/* The CPU's version: the context's CPU device's, else the table's CPU. */
static void cpu_version(const struct rt_ctx *ctx, char *v, size_t len)
{
	struct agile_rt_device_info info;

	v[0] = '\0';
	for (uint32_t i = 0; i < ctx->nr_devs; i++)
		if (ctx->devs[i].type == AGILE_RT_DEVICE_CPU &&
		    !agile__rt_device_row(ctx->devs[i].id, &info)) {
			snprintf(v, len, "%s", info.version);
			return;
		}
	for (uint32_t id = 0; !agile__rt_device_row(id, &info); id++)
		if (info.type == AGILE_RT_DEVICE_CPU) {
			snprintf(v, len, "%s", info.version);
			return;
		}
}

/* Records a compiled image as a new binary of @p; its index in *@idx. */
static int bin_compiled(struct agile_rt_program *p,
			const struct agile__rt_image *img, uint32_t type,
			const char *vendor, const char *version,
			const char *options, uint32_t *idx)
{
	struct agile_rt_binary b = { .type = type,
				     .image = img->data,
				     .size = img->size };

	snprintf(b.vendor, sizeof(b.vendor), "%s", vendor);
	snprintf(b.version, sizeof(b.version), "%s", version);
	snprintf(b.options, sizeof(b.options), "%s", options ? options : "");
	*idx = p->nr_bins;
	return bin_add(p, &b, AGILE_RT_BINARY_COMPILED);
}

/*
 * The load rule for the host CPU: the module registered in the
 * context's registry into *@mod, the outcome into p->host.  0, -EEXIST
 * (a kernel name taken: no other binary helps), -ENOMEM or -ENOEXEC.
 */
static int cpu_rule(struct agile_rt_program *p, const char *options,
		    const struct build_src *bs, struct agile__rt_module **mod)
{
	struct rt_outcome *o = &p->host;
	struct agile__rt_diag diag = { 0 };
	struct agile__rt_image *img = NULL;
	int exact, err;
	uint32_t idx;

	o->info.type = AGILE_RT_DEVICE_CPU;
	cpu_version(p->ctx, o->info.version, sizeof(o->info.version));
	exact = bin_exact(p, AGILE_RT_DEVICE_CPU, "cpu", o->info.version,
			  options);
	if (exact >= 0) {
		err = cpu_load_bin(p, (uint32_t)exact, mod, &diag);
		if (!err) {
			o->info.branch = AGILE_RT_BUILD_EXACT;
			o->info.binary = (uint32_t)exact;
			goto out;
		}
		outcome_diag(o, &diag, err);
		if (err == -EEXIST || err == -ENOMEM)
			goto out;
		agile__rt_diag_clear(&diag);
	}
	if (p->source && !bs->text) {
		/* The translation failed: as a compiler refusing the source. */
		err = bs->err;
		outcome_diag(o, &bs->diag, err);
		if (err == -ENOMEM)
			goto out;
	} else if (p->source) {
		struct agile__rt_build b = { .target = AGILE_RT_CPU,
					     .options = bs->options };

		err = agile__rt_compile(bs->text, &b, &img, &diag);
		if (!err)
			err = agile__rt_cpu_load(img, p->ctx->reg, mod, &diag);
		if (!err)
			err = bin_compiled(p, img, AGILE_RT_DEVICE_CPU, "cpu",
					   o->info.version, options, &idx);
		if (!err) {
			o->info.branch = img->from_cache ?
						 AGILE_RT_BUILD_CACHE_HIT :
						 AGILE_RT_BUILD_COMPILED;
			o->info.binary = idx;
			free(o->log);
			o->log = diag.log ? strdup(diag.log) : NULL;
			goto out;
		}
		outcome_diag(o, &diag, err);
		if (err == -EEXIST || err == -ENOMEM)
			goto out;
		agile__rt_diag_clear(&diag);
	} else {
		snprintf(o->info.step, sizeof(o->info.step), "match");
		snprintf(o->info.message, sizeof(o->info.message),
			 "no binary for %s with these options, no source",
			 o->info.version);
	}
	/* The fallback: a compatible binary that loads. */
	for (uint32_t i = 0; i < p->nr_bins; i++) {
		if ((int)i == exact ||
		    p->bins[i].desc.origin == AGILE_RT_BINARY_COMPILED ||
		    !bin_compatible(&p->bins[i], AGILE_RT_DEVICE_CPU, "cpu",
				    o->info.version))
			continue;
		agile__rt_diag_clear(&diag);
		memset(&diag, 0, sizeof(diag));
		if (!cpu_load_bin(p, i, mod, &diag)) {
			o->info.branch = AGILE_RT_BUILD_FALLBACK;
			o->info.binary = i;
			err = 0;
			goto out;
		}
	}
	err = -ENOEXEC;
out:
	if (err && o->info.branch != AGILE_RT_BUILD_FAILED) {
		o->info.branch = AGILE_RT_BUILD_FAILED;
		o->info.status = err;
	}
	agile__rt_diag_clear(&diag);
	agile__rt_image_free(img);
	return err;
}

/* ---- a GPU with GPU EUs ---- */

/* Restarts @d's pool on binary @i's image (@names: the user kernels). */
static int gpu_load_bin(struct agile_rt_program *p, struct rt_dev *d,
			uint32_t api, const void *image, size_t size,
			const struct agile__rt_module *mod)
{
	struct agile__eu_gpu_code code = {
		.api = api,
		.image = image,
		.size = size,
		.nr_kernels = agile__rt_module_nr_kernels(mod),
		.names = agile__rt_module_names(mod),
	};

	return agile__rt_dev_restart(p->ctx, d, &code);
}

/*
 * The load rule for GPU device @d (index @di), whose EUs are GPU EUs:
 * its pool restarted on the chosen image.  0 or -ENOEXEC (the pool is
 * back on the built-in code then).
 */
static int gpu_rule(struct agile_rt_program *p, uint32_t di,
		    const char *options, const struct build_src *bs,
		    const struct agile__rt_module *mod)
{
	struct rt_dev *d = &p->ctx->devs[di];
	struct rt_outcome *o = &p->dev[di];
	struct agile__rt_diag diag = { 0 };
	struct agile__rt_image *img = NULL;
	struct agile_rt_device_info row;
	const char *vendor;
	uint32_t api, idx;
	int exact, err;

	err = agile__rt_device_row(d->id, &row);
	if (err) {
		outcome_fail(o, -ENOEXEC, "match", "device %u: no row", d->id);
		return -ENOEXEC;
	}
	vendor = !strcmp(row.vendor, "amd") ? "amd" : "nvidia";
	api = !strcmp(vendor, "amd") ? AGILE__EU_GPU_HIP : AGILE__EU_GPU_CUDA;
	snprintf(o->info.version, sizeof(o->info.version), "%s", row.version);
	exact = bin_exact(p, AGILE_RT_DEVICE_GPU, vendor, row.version, options);
	if (exact >= 0) {
		err = gpu_load_bin(p, d, api, p->bins[exact].data,
				   p->bins[exact].desc.size, mod);
		if (!err) {
			o->info.branch = AGILE_RT_BUILD_EXACT;
			o->info.binary = (uint32_t)exact;
			return 0;
		}
		snprintf(o->info.step, sizeof(o->info.step), "load");
		snprintf(o->info.message, sizeof(o->info.message),
			 "binary %d: the GPU EUs did not start on it: %s",
			 exact, agile_strerror(err));
	}
	if (p->source && row.version[0] && !bs->text) {
		outcome_diag(o, &bs->diag, bs->err);
	} else if (p->source && row.version[0]) {
		struct agile__rt_build b = {
			.target = api == AGILE__EU_GPU_HIP ? AGILE_RT_HIP :
							     AGILE_RT_CUDA,
			.arch = row.version,
			.options = bs->options,
			/* SASS for the device: no PTX JIT by the driver. */
			.flags = api == AGILE__EU_GPU_HIP ? 0 : AGILE_RT_CUBIN,
		};

		err = agile__rt_compile(bs->text, &b, &img, &diag);
		if (!err)
			err = bin_compiled(p, img, AGILE_RT_DEVICE_GPU, vendor,
					   row.version, options, &idx);
		if (err) {
			outcome_diag(o, &diag, err);
		} else {
			err = gpu_load_bin(p, d, api, img->data, img->size,
					   mod);
			if (!err) {
				o->info.branch =
					img->from_cache ?
						AGILE_RT_BUILD_CACHE_HIT :
						AGILE_RT_BUILD_COMPILED;
				o->info.binary = idx;
				free(o->log);
				o->log = diag.log ? strdup(diag.log) : NULL;
				goto out;
			}
			snprintf(o->info.step, sizeof(o->info.step), "load");
			snprintf(o->info.message, sizeof(o->info.message),
				 "the compiled image: the GPU EUs did not "
				 "start on it: %s",
				 agile_strerror(err));
		}
	} else if (!p->source) {
		snprintf(o->info.step, sizeof(o->info.step), "match");
		snprintf(o->info.message, sizeof(o->info.message),
			 "no binary for %s with these options, no source",
			 row.version[0] ? row.version : "this GPU");
	} else {
		snprintf(o->info.step, sizeof(o->info.step), "match");
		snprintf(
			o->info.message, sizeof(o->info.message),
			"the GPU's version is unknown: nothing to compile for");
	}
	for (uint32_t i = 0; i < p->nr_bins; i++) {
		if ((int)i == exact ||
		    p->bins[i].desc.origin == AGILE_RT_BINARY_COMPILED ||
		    !bin_compatible(&p->bins[i], AGILE_RT_DEVICE_GPU, vendor,
				    row.version))
			continue;
		if (!gpu_load_bin(p, d, api, p->bins[i].data,
				  p->bins[i].desc.size, mod)) {
			o->info.branch = AGILE_RT_BUILD_FALLBACK;
			o->info.binary = i;
			err = 0;
			goto out;
		}
	}
	err = -ENOEXEC;
	o->info.branch = AGILE_RT_BUILD_FAILED;
	o->info.status = err;
	/* Back to the built-in code (or CPU EUs), as the context made it. */
	if (d->restarted)
		agile__rt_dev_restart(p->ctx, d, NULL);
out:
	agile__rt_diag_clear(&diag);
	agile__rt_image_free(img);
	return err;
}

/* ---- the API ---- */

int agile_rt_program_create(agile_rt_ctx handle, const char *source,
			    const struct agile_rt_binary *binaries,
			    uint32_t nr_binaries, struct agile_rt_program **out)
{
	struct agile_rt_program *p;
	struct rt_ctx *ctx;
	int err = 0;

	if (!out || (!source && !nr_binaries) || (nr_binaries && !binaries))
		return -EINVAL;
	for (uint32_t i = 0; i < nr_binaries; i++)
		if ((binaries[i].type != AGILE_RT_DEVICE_CPU &&
		     binaries[i].type != AGILE_RT_DEVICE_GPU) ||
		    !binaries[i].image || !binaries[i].size)
			return -EINVAL;
	ctx = agile__rt_ctx_get(handle);
	if (!ctx)
		return -AGILE_E_INVALID_CONTEXT;
	p = calloc(1, sizeof(*p));
	if (!p) {
		agile__rt_ctx_put(ctx);
		return -ENOMEM;
	}
	p->ctx = ctx; /* the reference agile__rt_ctx_get took */
	if (source && !(p->source = strdup(source)))
		err = -ENOMEM;
	for (uint32_t i = 0; i < nr_binaries && !err; i++)
		err = bin_add(p, &binaries[i], AGILE_RT_BINARY_GIVEN);
	if (err) {
		agile_rt_program_release(p);
		return err;
	}
	*out = p;
	return 0;
}

/* Whether device @i of @ctx loads a GPU image (its EUs are GPU EUs). */
static bool runs_gpu_code(const struct rt_ctx *ctx, uint32_t i)
{
	return ctx->devs[i].type == AGILE_RT_DEVICE_GPU &&
	       ctx->devs[i].eu_kind == AGILE_EU_KIND_GPU;
}

/* The kernels of @mod as the queue runs them, in the context's list. */
static int kernels_publish(struct agile_rt_program *p,
			   const struct agile__rt_module *mod)
{
	struct rt_ctx *ctx = p->ctx;
	uint32_t n = agile__rt_module_nr_kernels(mod);

	for (uint32_t i = 0; i < n; i++) {
		struct agile_rt_kernel *k = calloc(1, sizeof(*k));

		if (!k)
			return -ENOMEM;
		k->ctx = ctx;
		snprintf(k->name, sizeof(k->name), "%s",
			 agile__rt_module_name(mod, i));
		/*
		 * Both types: CPU EUs run the CPU build; a GPU device's EUs
		 * run the image loaded on them (its opcode table filled from
		 * this registry), or are CPU EUs themselves.
		 */
		for (int t = 0; t < RT_NR_TYPES; t++) {
			k->on[t].reg = ctx->reg;
			k->on[t].opcode = agile__rt_module_opcode(mod, i);
		}
		k->next = ctx->kernels;
		ctx->kernels = k;
		p->kernels[p->nr_kernels++] = k;
	}
	return 0;
}

/*
 * -EBUSY, with each GPU device's outcome saying why, when GPU code cannot
 * go on @ctx's GPU pool now: something depends on the pool.  ctx->lock
 * held.
 */
static int gpu_busy(struct agile_rt_program *p)
{
	struct rt_ctx *ctx = p->ctx;
	int err = 0;

	for (uint32_t i = 0; i < ctx->nr_devs; i++)
		if (runs_gpu_code(ctx, i) &&
		    (ctx->queue || ctx->nr_buffers || ctx->gpu_program)) {
			outcome_fail(&p->dev[i], -EBUSY, "pool",
				     "the GPU pool cannot take this program's "
				     "image: %s",
				     ctx->gpu_program ?
					     "another program's runs there" :
					     "the context has a queue or "
					     "buffers");
			err = -EBUSY;
		}
	return err;
}

/*
 * The GPU devices' rules, the CPU devices' outcomes, the kernels: with
 * ctx->lock held, the CPU build (@err: its result) done.
 */
static int build_devices(struct agile_rt_program *p, const char *options,
			 const struct build_src *bs,
			 struct agile__rt_module *mod, int err)
{
	struct rt_ctx *ctx = p->ctx;
	struct rt_module *keep;
	int gpu_err;

	if (!err) {
		keep = calloc(1, sizeof(*keep));
		if (!keep) {
			/* Its kernels are registered: it stays loaded. */
			err = -ENOMEM;
		} else {
			keep->mod = mod;
			keep->next = ctx->modules;
			ctx->modules = keep;
		}
	}
	/* Again: a queue or buffers may have come while cc ran. */
	if (!err)
		err = gpu_busy(p);
	for (uint32_t i = 0; i < ctx->nr_devs; i++) {
		struct rt_outcome *o = &p->dev[i];

		if (runs_gpu_code(ctx, i)) {
			if (o->info.branch == AGILE_RT_BUILD_FAILED)
				continue;
			if (err) {
				outcome_fail(o, err, "cpu",
					     "no CPU build, which the GPU's "
					     "opcode table needs");
				continue;
			}
			gpu_err = gpu_rule(p, i, options, bs, mod);
			if (!gpu_err)
				ctx->gpu_program = true;
			else
				err = gpu_err;
			continue;
		}
		/* CPU EUs (a CPU, or a GPU whose pool fell back). */
		o->info.branch = p->host.info.branch;
		o->info.status = p->host.info.status;
		o->info.binary = p->host.info.binary;
		memcpy(o->info.version, p->host.info.version,
		       sizeof(o->info.version));
		memcpy(o->info.step, p->host.info.step, sizeof(o->info.step));
		memcpy(o->info.message, p->host.info.message,
		       sizeof(o->info.message));
		if (p->host.log)
			o->log = strdup(p->host.log);
	}
	if (!err)
		err = kernels_publish(p, mod);
	return err;
}

/*
 * @bs: what the build compiles, from @lang.  The translation needs no
 * lock: it touches nothing of the context.
 */
static int build_src_make(const struct agile_rt_program *p,
			  const struct agile__rt_lang *lang,
			  struct build_src *bs, char **dialect)
{
	memset(bs, 0, sizeof(*bs));
	*dialect = NULL;
	bs->options = lang->compile_options;
	if (!p->source || lang->lang == AGILE_RT_LANG_DIALECT) {
		bs->text = p->source;
		return 0;
	}
	bs->err = agile__rt_retarget(p->source, lang, dialect, &bs->diag);
	bs->text = *dialect;
	return bs->err == -ENOMEM ? -ENOMEM : 0;
}

int agile_rt_program_build(struct agile_rt_program *p, const char *options)
{
	struct agile__rt_module *mod = NULL;
	struct agile__rt_lang lang;
	struct build_src bs = { 0 };
	char *dialect = NULL;
	struct rt_ctx *ctx;
	int err;

	if (!p)
		return -EINVAL;
	if (options && strlen(options) >= AGILE_RT_OPTIONS_LEN)
		return -EINVAL;
	ctx = p->ctx;
	err = agile__rt_lang_parse(options, &lang, &bs.diag);
	if (err) {
		/* Bad options: each device's outcome says which. */
		pthread_mutex_lock(&ctx->lock);
		for (uint32_t i = 0; i < ctx->nr_devs && !p->built; i++)
			outcome_fail(&p->dev[i], err, bs.diag.step, "%s",
				     bs.diag.message);
		pthread_mutex_unlock(&ctx->lock);
		return err;
	}
	/* Builds on a context one at a time; compiles without ctx->lock. */
	pthread_mutex_lock(&ctx->build_lock);
	pthread_mutex_lock(&ctx->lock);
	err = p->built ? -EALREADY : 0;
	for (uint32_t i = 0; i < ctx->nr_devs && !err; i++) {
		/* Anew: an earlier try may have been refused (-EBUSY). */
		memset(&p->dev[i].info, 0, sizeof(p->dev[i].info));
		p->dev[i].info.device = ctx->devs[i].id;
		p->dev[i].info.type = ctx->devs[i].type;
	}
	/* GPU code replaces the pool: only with nothing depending on it. */
	if (!err)
		err = gpu_busy(p);
	pthread_mutex_unlock(&ctx->lock);
	if (!err)
		err = build_src_make(p, &lang, &bs, &dialect);
	if (err) {
		/* Nothing was loaded: a build may be tried again later. */
		pthread_mutex_unlock(&ctx->build_lock);
		agile__rt_lang_free(&lang);
		return err;
	}
	/* The CPU build: the registry and the cache are thread safe. */
	err = cpu_rule(p, options, &bs, &mod);
	pthread_mutex_lock(&ctx->lock);
	err = build_devices(p, options, &bs, mod, err);
	p->built = err ? err : 1;
	pthread_mutex_unlock(&ctx->lock);
	pthread_mutex_unlock(&ctx->build_lock);
	agile__rt_diag_clear(&bs.diag);
	free(dialect);
	agile__rt_lang_free(&lang);
	return err;
}

/* @device's index in the program's context, or -1. */
static int dev_index(const struct agile_rt_program *p, uint32_t device)
{
	for (uint32_t i = 0; i < p->ctx->nr_devs; i++)
		if (p->ctx->devs[i].id == device)
			return (int)i;
	return -1;
}

int agile_rt_program_build_info(struct agile_rt_program *p, uint32_t device,
				struct agile_rt_build_info *info)
{
	int i;

	if (!p || !info)
		return -EINVAL;
	i = dev_index(p, device);
	if (i < 0)
		return -ENODEV;
	*info = p->dev[i].info;
	info->device = device;
	return 0;
}

int agile_rt_program_build_log(struct agile_rt_program *p, uint32_t device,
			       const char **log)
{
	int i;

	if (!p || !log)
		return -EINVAL;
	i = dev_index(p, device);
	if (i < 0)
		return -ENODEV;
	*log = p->dev[i].log ? p->dev[i].log : "";
	return 0;
}

int agile_rt_program_binary_count(struct agile_rt_program *p, uint32_t *nr)
{
	if (!p || !nr)
		return -EINVAL;
	*nr = p->nr_bins;
	return 0;
}

int agile_rt_program_binary(struct agile_rt_program *p, uint32_t i,
			    struct agile_rt_binary *out)
{
	if (!p || !out)
		return -EINVAL;
	if (i >= p->nr_bins)
		return -ENOENT;
	*out = p->bins[i].desc;
	return 0;
}

int agile_rt_program_kernel(struct agile_rt_program *p, const char *name,
			    struct agile_rt_kernel **out)
{
	int built;

	if (!p || !name || !out)
		return -EINVAL;
	pthread_mutex_lock(&p->ctx->lock);
	built = p->built;
	pthread_mutex_unlock(&p->ctx->lock);
	if (built != 1)
		return -ENOEXEC;
	for (uint32_t i = 0; i < p->nr_kernels; i++)
		if (!strcmp(p->kernels[i]->name, name)) {
			*out = p->kernels[i];
			return 0;
		}
	return -ENOENT;
}

int agile_rt_program_release(struct agile_rt_program *p)
{
	if (!p)
		return -EINVAL;
	for (uint32_t i = 0; i < p->nr_bins; i++)
		free(p->bins[i].data);
	free(p->bins);
	for (uint32_t i = 0; i < AGILE_RT_MAX_DEVICES; i++)
		free(p->dev[i].log);
	free(p->host.log);
	free(p->source);
	agile__rt_ctx_put(p->ctx);
	free(p);
	return 0;
}
