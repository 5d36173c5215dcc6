// SPDX-License-Identifier: MIT
/*
 * compile_rtc.c - the GPU targets: NVRTC (CUDA) and hiprtc (HIP) compile
 * the persistent EU kernel (libagile/gpu/persistent.cu, embedded by
 * compile_sources.c) with the user's kernels in its opcode switch, from
 * memory: the user's kernels are the in-memory header "agile_user.h"
 * (the dialect's GPU prelude, the source, the epilogue), and
 * -DAGILE_GPU_RTC -DAGILE_GPU_USER_KERNELS make persistent.cu include it.
 *
 * Neither compiler is linked: each is dlopen'ed once per process, by
 * soname family newest first, in ld.so's path and then in the vendor's
 * folders (NVRTC: $CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/
 * lib64; hiprtc: $ROCM_PATH/lib, /opt/rocm/lib).  A library counts only if
 * it exports every call used: ROCm 5 has hiprtc inside libamdhip64, ROCm 6
 * in libhiprtc, and a stand-in libamdhip64 may have none.
 *
 * Products: CUDA, PTX for compute_XY (sm_XY asked; the driver JIT-compiles
 * it, cuModuleLoadData), or a cubin for sm_XY with AGILE_RT_CUBIN; HIP, a
 * code object (ELF) for gfxNNN (hipModuleLoadData).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef AGILE_NO_DLOPEN
#include <dlfcn.h>
#endif

#include "runtime/compile_impl.h"

#ifndef AGILE_NO_DLOPEN

/* The calls, from nvrtc.h and hiprtc.h (same shapes); 0 is success. */
struct rtc_api {
	int (*Version)(int *major, int *minor);
	int (*CreateProgram)(void **prog, const char *src, const char *name,
			     int nr_headers, const char *const *headers,
			     const char *const *include_names);
	int (*CompileProgram)(void *prog, int nr_options,
			      const char *const *options);
	int (*GetProgramLogSize)(void *prog, size_t *size);
	int (*GetProgramLog)(void *prog, char *log);
	int (*GetCodeSize)(void *prog, size_t *size); /* PTX or code object */
	int (*GetCode)(void *prog, char *code);
	int (*GetCubinSize)(void *prog, size_t *size); /* NVRTC only */
	int (*GetCubin)(void *prog, char *code);
	int (*DestroyProgram)(void **prog);
	const char *(*GetErrorString)(int result);
};

struct rtc_sym {
	const char *name;
	size_t offset;
	bool optional;
};

#define SYM(field, name)                                     \
	{                                                    \
		name, offsetof(struct rtc_api, field), false \
	}
#define OPT(field, name)                                    \
	{                                                   \
		name, offsetof(struct rtc_api, field), true \
	}
static const struct rtc_sym nvrtc_syms[] = {
	SYM(Version, "nvrtcVersion"),
	SYM(CreateProgram, "nvrtcCreateProgram"),
	SYM(CompileProgram, "nvrtcCompileProgram"),
	SYM(GetProgramLogSize, "nvrtcGetProgramLogSize"),
	SYM(GetProgramLog, "nvrtcGetProgramLog"),
	SYM(GetCodeSize, "nvrtcGetPTXSize"),
	SYM(GetCode, "nvrtcGetPTX"),
	OPT(GetCubinSize, "nvrtcGetCUBINSize"),
	OPT(GetCubin, "nvrtcGetCUBIN"),
	SYM(DestroyProgram, "nvrtcDestroyProgram"),
	SYM(GetErrorString, "nvrtcGetErrorString"),
	{ NULL, 0, false },
};
static const struct rtc_sym hiprtc_syms[] = {
	SYM(Version, "hiprtcVersion"),
	SYM(CreateProgram, "hiprtcCreateProgram"),
	SYM(CompileProgram, "hiprtcCompileProgram"),
	SYM(GetProgramLogSize, "hiprtcGetProgramLogSize"),
	SYM(GetProgramLog, "hiprtcGetProgramLog"),
	SYM(GetCodeSize, "hiprtcGetCodeSize"),
	SYM(GetCode, "hiprtcGetCode"),
	SYM(DestroyProgram, "hiprtcDestroyProgram"),
	SYM(GetErrorString, "hiprtcGetErrorString"),
	{ NULL, 0, false },
};

static const char *const nvrtc_names[] = { "libnvrtc.so.13", "libnvrtc.so.12",
					   "libnvrtc.so.11.2", "libnvrtc.so",
					   NULL };
static const char *const hiprtc_names[] = {
	"libhiprtc.so.7",   "libhiprtc.so.6",
	"libhiprtc.so",	    "libamdhip64.so.7",
	"libamdhip64.so.6", "libamdhip64.so.5",
	"libamdhip64.so",   NULL
};

/*
 * One per vendor, loaded once (rtc_once) and read-only after: compilers
 * stay loaded for the process's life, as the GPU runtimes do.
 */
struct rtc {
	const char *vendor; /* "NVRTC", "hiprtc" */
	const char *const *names;
	const struct rtc_sym *syms;
	const char *env[2]; /* toolkit folders' variables */
	const char *dir; /* the vendor's default folder */
	const char *subdir; /* its libraries under $VAR */
	struct rtc_api api;
	bool loaded;
	char path[PATH_MAX]; /* the library that answered */
	char id[128]; /* "NVRTC 13.0 (libnvrtc.so.13)" */
	char reason[AGILE_RT_MESSAGE_LEN];
};

static struct rtc rtcs[2] = {
	{ .vendor = "NVRTC",
	  .names = nvrtc_names,
	  .syms = nvrtc_syms,
	  .env = { "CUDA_HOME", "CUDA_PATH" },
	  .dir = "/usr/local/cuda/lib64",
	  .subdir = "lib64" },
	{ .vendor = "hiprtc",
	  .names = hiprtc_names,
	  .syms = hiprtc_syms,
	  .env = { "ROCM_PATH", NULL },
	  .dir = "/opt/rocm/lib",
	  .subdir = "lib" },
};
static pthread_once_t rtc_once[2] = { PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT };

/* @lib if it exports every required call (then @r's table is filled). */
static bool rtc_take(struct rtc *r, void *lib)
{
	struct rtc_api api = { 0 };

	for (const struct rtc_sym *s = r->syms; s->name; s++) {
		void *fn = dlsym(lib, s->name);

		if (!fn && !s->optional)
			return false;
		memcpy((char *)&api + s->offset, &fn, sizeof(fn));
	}
	r->api = api;
	return true;
}

static bool rtc_try(struct rtc *r, const char *file)
{
	void *lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return false;
	if (!rtc_take(r, lib)) {
		dlclose(lib);
		return false;
	}
	snprintf(r->path, sizeof(r->path), "%s", file);
	return true;
}

static void rtc_load(struct rtc *r)
{
	char dirs[3][PATH_MAX / 2], file[PATH_MAX];
	int nr_dirs = 0, major = 0, minor = 0;

	for (int i = 0; i < 2; i++) {
		const char *v = r->env[i] ? getenv(r->env[i]) : NULL;

		if (v && *v)
			snprintf(dirs[nr_dirs++], sizeof(dirs[0]), "%s/%s", v,
				 r->subdir);
	}
	snprintf(dirs[nr_dirs++], sizeof(dirs[0]), "%s", r->dir);

	for (const char *const *n = r->names; *n && !r->loaded; n++)
		r->loaded = rtc_try(r, *n);
	for (int d = 0; d < nr_dirs && !r->loaded; d++)
		for (const char *const *n = r->names; *n && !r->loaded; n++) {
			snprintf(file, sizeof(file), "%.2000s/%.100s", dirs[d],
				 *n);
			r->loaded = rtc_try(r, file);
		}
	if (!r->loaded) {
		snprintf(r->reason, sizeof(r->reason),
			 "%s not found: no %s (or another of its names) "
			 "exporting it in ld.so's path or in %.60s%s%.60s",
			 r->vendor, r->names[0], dirs[0],
			 nr_dirs > 1 ? ", " : "", nr_dirs > 1 ? dirs[1] : "");
		return;
	}
	r->api.Version(&major, &minor);
	snprintf(r->id, sizeof(r->id), "%s %d.%d (%.80s)", r->vendor, major,
		 minor, r->path);
}

static void nvrtc_load(void)
{
	rtc_load(&rtcs[0]);
}

static void hiprtc_load(void)
{
	rtc_load(&rtcs[1]);
}

static struct rtc *rtc_get(enum agile__rt_target target,
			   struct agile__rt_diag *diag, int *err)
{
	int i = target == AGILE_RT_CUDA ? 0 : 1;

	pthread_once(&rtc_once[i], i ? hiprtc_load : nvrtc_load);
	*err = 0;
	if (!rtcs[i].loaded)
		*err = agile__rt_fail(diag, -ENOENT, "dlopen", "%s",
				      rtcs[i].reason);
	return &rtcs[i];
}

int agile__rt_rtc_id(enum agile__rt_target target, char *id, size_t len,
		     struct agile__rt_diag *diag)
{
	int err;
	struct rtc *r = rtc_get(target, diag, &err);

	if (!err)
		snprintf(id, len, "%s", r->id);
	return err;
}

#define MAX_OPTIONS 48

/*
 * The options' portable spelling of contraction, -ffp-contract=, as
 * NVRTC's --fmad= (which takes no -ffp-contract); other words as they are.
 */
static const char *fmad_of(const char *tok)
{
	if (!strcmp(tok, "-ffp-contract=fast") ||
	    !strcmp(tok, "-ffp-contract=on"))
		return "--fmad=true";
	if (!strcmp(tok, "-ffp-contract=off"))
		return "--fmad=false";
	return tok;
}

/* The compiler's options: ours, then the user's (split at spaces). */
static int rtc_options(const struct rtc *r, enum agile__rt_target target,
		       const char *arch, uint32_t flags, char *user,
		       const char **opts, char (*bufs)[PATH_MAX])
{
	int n = 0;

	opts[n++] = "-DAGILE_GPU_RTC";
	opts[n++] = "-DAGILE_GPU_USER_KERNELS";
	opts[n++] = "-std=c++17";
	if (target == AGILE_RT_CUDA) {
		/* PTX of compute_XY, or SASS of sm_XY. */
		snprintf(bufs[0], PATH_MAX, "--gpu-architecture=%s%s",
			 flags & AGILE_RT_CUBIN ? "sm_" : "compute_", arch + 3);
		opts[n++] = bufs[0];
		/*
		 * libcu++'s <cuda/atomic>: in the toolkit beside the library
		 * (CUDA 13 keeps it under include/cccl).
		 */
		snprintf(bufs[1], PATH_MAX, "-I%.*s/../include/cccl",
			 (int)(strrchr(r->path, '/') ?
				       strrchr(r->path, '/') - r->path :
				       0),
			 r->path);
		snprintf(bufs[2], PATH_MAX, "-I%.*s/../include",
			 (int)(strrchr(r->path, '/') ?
				       strrchr(r->path, '/') - r->path :
				       0),
			 r->path);
		if (strchr(r->path, '/')) {
			opts[n++] = bufs[1];
			opts[n++] = bufs[2];
		}
		opts[n++] = "-I/usr/local/cuda/include/cccl";
		opts[n++] = "-I/usr/local/cuda/include";
		/* linux/agile.h's inline helpers have no __device__. */
		opts[n++] = "-default-device";
	} else {
		snprintf(bufs[0], PATH_MAX, "--offload-arch=%s", arch);
		opts[n++] = bufs[0];
		opts[n++] = "-O2";
	}
	opts[n++] = agile__rt_fp_contract(target);
	for (char *save = NULL, *tok = strtok_r(user, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save)) {
		if (n == MAX_OPTIONS)
			return -E2BIG;
		opts[n++] = target == AGILE_RT_CUDA ? fmad_of(tok) : tok;
	}
	return n;
}

/* The program's log into @diag (warnings after a success too). */
static void rtc_log(const struct rtc *r, void *prog,
		    struct agile__rt_diag *diag)
{
	size_t size = 0;
	char *log;

	if (r->api.GetProgramLogSize(prog, &size) || !size)
		return;
	log = malloc(size + 1);
	if (!log)
		return;
	if (!r->api.GetProgramLog(prog, log)) {
		log[size] = '\0';
		agile__rt_set_log(diag, log, strlen(log));
	}
	free(log);
}

int agile__rt_rtc_build(enum agile__rt_target target, const char *arch,
			const char *user_header, const char *options,
			uint32_t flags, void **data, size_t *size,
			struct agile__rt_diag *diag)
{
	const struct agile__rt_header *hdrs = agile__rt_gpu_headers(target);
	const char *names[16], *texts[16], *opts[MAX_OPTIONS];
	char bufs[3][PATH_MAX];
	char *user = strdup(options ? options : ""), *code = NULL;
	const char *step;
	bool cubin = target == AGILE_RT_CUDA && flags & AGILE_RT_CUBIN;
	void *prog = NULL;
	int nr_hdrs = 0, nr_opts, rc, err;
	struct rtc *r = rtc_get(target, diag, &err);

	if (err || !user) {
		free(user);
		return err ? err :
			     agile__rt_fail(diag, -ENOMEM, "options",
					    "no memory");
	}
	if (!hdrs) {
		free(user);
		return agile__rt_fail(diag, -ENOMEM, "sources",
				      "the embedded GPU headers could not be "
				      "prepared (compile_sources.c)");
	}
	if (cubin && !r->api.GetCubin) {
		free(user);
		return agile__rt_fail(diag, -ENOTSUP, "nvrtcGetCUBIN",
				      "%s has no nvrtcGetCUBIN", r->id);
	}
	names[nr_hdrs] = "agile_user.h";
	texts[nr_hdrs++] = user_header;
	for (; hdrs->name && nr_hdrs < 16; hdrs++, nr_hdrs++) {
		names[nr_hdrs] = hdrs->name;
		texts[nr_hdrs] = hdrs->text;
	}
	nr_opts = rtc_options(r, target, arch, flags, user, opts, bufs);
	if (nr_opts < 0) {
		free(user);
		return agile__rt_fail(diag, nr_opts, "options",
				      "too many options");
	}

	step = target == AGILE_RT_CUDA ? "nvrtcCreateProgram" :
					 "hiprtcCreateProgram";
	rc = r->api.CreateProgram(&prog, agile__rt_persistent_cu,
				  "persistent.cu", nr_hdrs, texts, names);
	if (rc) {
		prog = NULL;
		goto failed;
	}
	step = target == AGILE_RT_CUDA ? "nvrtcCompileProgram" :
					 "hiprtcCompileProgram";
	agile__rt_count_compile(target);
	rc = r->api.CompileProgram(prog, nr_opts, opts);
	rtc_log(r, prog, diag);
	if (rc)
		goto failed;
	step = cubin		       ? "nvrtcGetCUBIN" :
	       target == AGILE_RT_CUDA ? "nvrtcGetPTX" :
					 "hiprtcGetCode";
	rc = cubin ? r->api.GetCubinSize(prog, size) :
		     r->api.GetCodeSize(prog, size);
	if (!rc && (code = malloc(*size ? *size : 1)) != NULL)
		rc = cubin ? r->api.GetCubin(prog, code) :
			     r->api.GetCode(prog, code);
	if (rc || !code)
		goto failed;
	r->api.DestroyProgram(&prog);
	free(user);
	*data = code;
	return 0;

failed:
	err = agile__rt_fail(diag, code || rc ? -EIO : -ENOMEM, step,
			     "%s: %s failed: %s (%d)%s", r->id, step,
			     rc ? r->api.GetErrorString(rc) : "no memory", rc,
			     diag && diag->log ? ": see the log" : "");
	free(code);
	if (prog)
		r->api.DestroyProgram(&prog);
	free(user);
	return err;
}

#else /* AGILE_NO_DLOPEN */

int agile__rt_rtc_id(enum agile__rt_target target, char *id, size_t len,
		     struct agile__rt_diag *diag)
{
	(void)target;
	(void)id;
	(void)len;
	return agile__rt_fail(diag, -ENOTSUP, "dlopen",
			      "a static build loads no runtime compiler");
}

int agile__rt_rtc_build(enum agile__rt_target target, const char *arch,
			const char *user_header, const char *options,
			uint32_t flags, void **data, size_t *size,
			struct agile__rt_diag *diag)
{
	(void)target;
	(void)arch;
	(void)user_header;
	(void)options;
	(void)flags;
	(void)data;
	(void)size;
	return agile__rt_fail(diag, -ENOTSUP, "dlopen",
			      "a static build loads no runtime compiler");
}

#endif /* AGILE_NO_DLOPEN */
