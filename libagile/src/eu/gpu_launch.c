// SPDX-License-Identifier: MIT
/*
 * gpu_launch.c - GPU execution units: load the persistent kernel's code
 * object and launch it through the runtimes' module APIs, HIP
 * (libamdhip64) and the CUDA driver API (libcuda.so.1), both loaded with
 * dlopen so that one libagile runs with either, both or neither.
 *
 * No runtime header is included: the few calls used are declared here from
 * their documented signatures (hip_runtime_api.h of ROCm 5.2, cuda.h of
 * CUDA 12/13), and so are the constants.  Where a constant is an enum value
 * (device attributes) it is the value those headers give; the HIP ones are
 * in the CUDA-compatible block of hipDeviceAttribute_t, which ROCm keeps
 * stable.
 *
 * Steps of a start (each failure unwinds the ones before and says which
 * step failed, with the runtime's error code):
 *	1. the runtime library and its calls (once per process)
 *	2. the device: hipSetDevice(0) / cuInit, cuDeviceGet(0) and the
 *	   primary context; its SM/CU count and cooperative-launch attribute
 *	3. the code object: hipModuleLoad / cuModuleLoad, then both kernels
 *	   by name (extern "C" in persistent.cu); or a code image built at
 *	   run time (eu_impl.h): hipModuleLoadData / cuModuleLoadData
 *	4. co-residency: blocks per SM/CU at AGILE_MAX_LANES threads times the
 *	   SM/CU count must cover nr_eus, else -ENOSPC: an EU left out of the
 *	   first wave would never run, and its worker would wait for ever
 *	5. the doorbell and task-register areas registered mapped (see
 *	   docs/gpu.md for the flags), and their device addresses
 *	6. two non-blocking streams (the persistent kernel never ends while
 *	   the pool lives, so nothing may wait on the legacy default stream)
 *	7. the launch: cooperative where the module API offers it (CUDA's
 *	   cuLaunchCooperativeKernel; hipModuleLaunchCooperativeKernel when
 *	   the HIP runtime has it, ROCm 6), else hipModuleLaunchKernel with
 *	   step 4 as the guarantee.
 *
 * AGILE_NO_DLOPEN (the static build) compiles all of it out: a start
 * fails with -ENOTSUP.
 */
#define _GNU_SOURCE
#include <agile/error.h>
#include <agile/eu.h>

#include "env.h"
#include "eu/eu_impl.h"
#include "eu/gpu_impl.h"
#include "eu/gpu_runtime.h"
#include "private_file.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#ifndef AGILE_NO_DLOPEN
#include <dlfcn.h>
#endif

#define REASON(r, rlen, ...)                                \
	do {                                                \
		if ((r) && (rlen))                          \
			snprintf((r), (rlen), __VA_ARGS__); \
	} while (0)

/* ---- finding the code object ---- */

int agile__gpu_code_find(const char *file, char *path, size_t len, char *reason,
			 size_t rlen)
{
	static const struct agile__private_place place = {
		.what = "GPU code object",
		.env = "AGILE_GPU_CODE_DIR",
#ifdef AGILE_GPU_BUILD_DIR
		.build_dir = AGILE_GPU_BUILD_DIR,
#endif
		.hint = "make -C libagile gpu builds it",
	};

	return agile__private_find(&place, file, path, len, reason, rlen);
}

#ifndef AGILE_NO_DLOPEN

/* ---- the runtimes, as far as we use them ---- */

/* Their signatures, from hip_runtime_api.h; names in gpu_runtime.h. */
struct hip_api {
	int (*GetDeviceCount)(int *count);
	int (*SetDevice)(int device);
	int (*DeviceGetAttribute)(int *value, int attr, int device);
	int (*HostRegister)(void *host, size_t bytes, unsigned int flags);
	int (*HostUnregister)(void *host);
	int (*HostGetDevicePointer)(void **device, void *host,
				    unsigned int flags);
	int (*ModuleLoad)(void **module, const char *path);
	int (*ModuleUnload)(void *module);
	int (*ModuleGetFunction)(void **function, void *module,
				 const char *name);
	int (*ModuleOccupancyMaxActiveBlocksPerMultiprocessor)(
		int *blocks, void *function, int block_size, size_t dyn_shared);
	int (*ModuleLaunchKernel)(void *function, unsigned int gx,
				  unsigned int gy, unsigned int gz,
				  unsigned int bx, unsigned int by,
				  unsigned int bz, unsigned int shared,
				  void *stream, void **params, void **extra);
	/* Optional: ROCm 6 and later. */
	int (*ModuleLaunchCooperativeKernel)(void *function, unsigned int gx,
					     unsigned int gy, unsigned int gz,
					     unsigned int bx, unsigned int by,
					     unsigned int bz,
					     unsigned int shared, void *stream,
					     void **params);
	int (*StreamCreateWithFlags)(void **stream, unsigned int flags);
	int (*StreamSynchronize)(void *stream);
	int (*StreamDestroy)(void *stream);
	/* Liveness (gpu_runtime.h's issue 14 block). */
	int (*StreamQuery)(void *stream);
	const char *(*GetErrorString)(int err); /* optional */
	/* Code images (gpu_runtime.h's issue 15 block). */
	int (*ModuleLoadData)(void **module, const void *image);
};

/* From cuda.h, likewise. */
struct cuda_api {
	int (*Init)(unsigned int flags);
	int (*DeviceGetCount)(int *count);
	int (*DeviceGet)(int *device, int ordinal);
	int (*DeviceGetAttribute)(int *value, int attr, int device);
	int (*DevicePrimaryCtxRetain)(void **ctx, int device);
	int (*DevicePrimaryCtxRelease)(int device);
	int (*CtxSetCurrent)(void *ctx);
	int (*MemHostRegister)(void *host, size_t bytes, unsigned int flags);
	int (*MemHostUnregister)(void *host);
	int (*MemHostGetDevicePointer)(uint64_t *device, void *host,
				       unsigned int flags);
	int (*ModuleLoad)(void **module, const char *path);
	int (*ModuleUnload)(void *module);
	int (*ModuleGetFunction)(void **function, void *module,
				 const char *name);
	int (*OccupancyMaxActiveBlocksPerMultiprocessor)(int *blocks,
							 void *function,
							 int block_size,
							 size_t dyn_shared);
	int (*LaunchKernel)(void *function, unsigned int gx, unsigned int gy,
			    unsigned int gz, unsigned int bx, unsigned int by,
			    unsigned int bz, unsigned int shared, void *stream,
			    void **params, void **extra);
	int (*LaunchCooperativeKernel)(void *function, unsigned int gx,
				       unsigned int gy, unsigned int gz,
				       unsigned int bx, unsigned int by,
				       unsigned int bz, unsigned int shared,
				       void *stream, void **params);
	int (*StreamCreate)(void **stream, unsigned int flags);
	int (*StreamSynchronize)(void *stream);
	int (*StreamDestroy)(void *stream);
	/* Liveness (gpu_runtime.h's issue 14 block). */
	int (*StreamQuery)(void *stream);
	int (*GetErrorString)(int err, const char **str);
	/* Code images (gpu_runtime.h's issue 15 block). */
	int (*ModuleLoadData)(void **module, const void *image);
};

struct sym {
	const char *name;
	size_t offset; /* of the function pointer in the table */
	bool optional;
};

#define HIP_SYM(f) { "hip" #f, offsetof(struct hip_api, f), false },
#define HIP_OPT(f) { "hip" #f, offsetof(struct hip_api, f), true },
static const struct sym hip_syms[] = {
	AGILE_HIP_CALLS(HIP_SYM, HIP_OPT)
		AGILE_HIP_LIVENESS_CALLS(HIP_SYM, HIP_OPT)
			AGILE_HIP_CODE_CALLS(HIP_SYM){ NULL, 0, false }
};

#define CU_SYM(f, sym) { #sym, offsetof(struct cuda_api, f), false },
static const struct sym cuda_syms[] = {
	AGILE_CUDA_CALLS(CU_SYM) AGILE_CUDA_LIVENESS_CALLS(CU_SYM)
		AGILE_CUDA_CODE_CALLS(CU_SYM){ NULL, 0, false }
};

enum { API_HIP, API_CUDA, NR_APIS };
_Static_assert(API_HIP == AGILE__EU_GPU_HIP && API_CUDA == AGILE__EU_GPU_CUDA,
	       "agile__gpu_areas.image_api is an API_*");

struct api_lib {
	const char *name; /* "HIP", "CUDA" */
	const char *const *libs; /* gpu_runtime.h's soname family */
	const struct sym *syms;
	void *table;
	size_t table_size;
	const char *code_file;
	/* Written once under apis_once, read-only after. */
	bool loaded;
	char reason[160];
};

/*
 * Process-wide by design, like gpu.c's probe: a runtime, once loaded,
 * stays loaded (GPU runtimes do not survive dlclose), and its calls with
 * it.
 */
static struct hip_api hip;
static struct cuda_api cu;
static const char *const hip_libs[] = AGILE_HIP_LIB_NAMES;
static const char *const cuda_libs[] = AGILE_CUDA_LIB_NAMES;
static struct api_lib apis[NR_APIS] = {
	[API_HIP] = { .name = "HIP",
		      .libs = hip_libs,
		      .syms = hip_syms,
		      .table = &hip,
		      .table_size = sizeof(hip),
		      .code_file = AGILE_GPU_CODE_HIP },
	[API_CUDA] = { .name = "CUDA",
		       .libs = cuda_libs,
		       .syms = cuda_syms,
		       .table = &cu,
		       .table_size = sizeof(cu),
		       .code_file = AGILE_GPU_CODE_CUDA },
};
static pthread_once_t apis_once = PTHREAD_ONCE_INIT;

/* The same library gpu.c's probe found (agile__gpu_lib_open). */
static void api_load(struct api_lib *a)
{
	const char *rocm = getenv("ROCM_PATH");
	char rocm_lib[PATH_MAX] = "", loaded[PATH_MAX];
	const char *dirs[] = { rocm_lib, AGILE_HIP_LIB_DEFAULT_DIR, NULL };
	const struct sym *s;
	void *lib;

	if (rocm && *rocm)
		snprintf(rocm_lib, sizeof(rocm_lib), "%s/lib", rocm);
	lib = agile__gpu_lib_open(a->libs, a->table == &hip ? dirs : NULL,
				  loaded, sizeof(loaded));
	if (!lib) {
		snprintf(a->reason, sizeof(a->reason), "%s: %s not found",
			 a->name, a->libs[0]);
		return;
	}
	for (s = a->syms; s->name; s++) {
		void *fn = dlsym(lib, s->name);

		if (!fn && !s->optional)
			break;
		memcpy((char *)a->table + s->offset, &fn, sizeof(fn));
	}
	if (!s->name) {
		a->loaded = true;
		return;
	}
	snprintf(a->reason, sizeof(a->reason), "%s: %.100s lacks %s", a->name,
		 loaded, s->name);
	memset(a->table, 0, a->table_size);
}

static void apis_load(void)
{
	for (int i = 0; i < NR_APIS; i++)
		api_load(&apis[i]);
}

/* ---- a launched persistent kernel ---- */

/*
 * A buffer registered by agile__gpu_map.  It stays registered until the
 * kernel has ended (gpu_teardown): unregistering while the persistent
 * kernel runs blocks until every kernel of the device ends on ROCm 6,
 * which is never.  agile__gpu_unmap only marks it @unmapped.
 */
struct mapping {
	void *host;
	size_t bytes;
	uint64_t device;
	bool unmapped;
};

/* struct agile__gpu_eus.state: what the last stream query said. */
enum { GPU_RUNNING, GPU_ENDED, GPU_DEAD };

struct agile__gpu_eus {
	int api;
	int device; /* ordinal; CUdevice for CUDA */
	void *ctx; /* CUDA primary context */
	void *module;
	void *persistent, *run_once; /* the kernels */
	void *stream, *once_stream;
	bool doorbells_reg, task_regs_reg;
	struct agile__gpu_areas areas;
	struct agile_gpu_params params; /* device addresses */
	char name[32];
	/* User mappings (agile__gpu_map); the lock serialises their changes. */
	pthread_mutex_t lock;
	struct mapping *maps;
	size_t nr_maps, max_maps;
	/*
	 * GPU_RUNNING until a stream query says the persistent kernel ended
	 * or died; @error is written under @lock before the release store
	 * of another state, and read after an acquire load of it.
	 */
	_Atomic int state;
	char error[AGILE_EU_REASON_LEN];
	struct agile__gpu_eus *abandoned_next;
};

/*
 * GPU EUs whose kernel would not end by the stop's deadline: their
 * registrations, streams and module stay as they are (the kernel may
 * still use them) and the struct stays reachable here until the process
 * ends.  Global by necessity: nothing else owns them any more.
 */
static pthread_mutex_t abandoned_lock = PTHREAD_MUTEX_INITIALIZER;
static struct agile__gpu_eus *abandoned;

/*
 * The GPU EUs holding each runtime's device 0: one persistent kernel per
 * device and process.  A second one would not share the device's
 * capacity with the first's EUs but compete for it (on ROCm a second
 * cooperative launch queues behind the first for ever), and one kernel
 * cannot serve two pools' slots (they are different areas).  Claimed at
 * the start of a start, released by gpu_teardown; an abandoned kernel
 * keeps it.  Global because the device is.
 */
static pthread_mutex_t owners_lock = PTHREAD_MUTEX_INITIALIZER;
static struct agile__gpu_eus *owners[NR_APIS];

/* Claims @g's device for it; 0, or -EBUSY when another holds it. */
static int gpu_claim(struct agile__gpu_eus *g)
{
	int err = 0;

	pthread_mutex_lock(&owners_lock);
	if (owners[g->api])
		err = -EBUSY;
	else
		owners[g->api] = g;
	pthread_mutex_unlock(&owners_lock);
	return err;
}

static void gpu_release(struct agile__gpu_eus *g)
{
	pthread_mutex_lock(&owners_lock);
	if (owners[g->api] == g)
		owners[g->api] = NULL;
	pthread_mutex_unlock(&owners_lock);
}

/* Makes @g's device current on the calling thread; 0 or a runtime code. */
static int gpu_enter(const struct agile__gpu_eus *g)
{
	return g->api == API_HIP ? hip.SetDevice(g->device) :
				   cu.CtxSetCurrent(g->ctx);
}

/*
 * Registers @bytes at @host mapped for the device, and gets the address
 * the device uses for it.  HIP: Mapped | Portable, never
 * hipExtHostRegisterCoarseGrained (AGILE_HIP_REGISTER_COARSE_GRAINED):
 * registered memory is then fine-grained
 * (coherent while kernels run), which system-scope polling of a doorbell
 * needs.  CUDA: DEVICEMAP | PORTABLE.
 */
static int gpu_register(const struct agile__gpu_eus *g, void *host,
			size_t bytes, uint64_t *device, const char **step)
{
	void *dptr = NULL;
	int rc;

	if (g->api == API_HIP) {
		*step = "hipHostRegister";
		rc = hip.HostRegister(host, bytes,
				      AGILE_HIP_HOST_REGISTER_MAPPED |
					      AGILE_HIP_HOST_REGISTER_PORTABLE);
		if (rc)
			return rc;
		*step = "hipHostGetDevicePointer";
		rc = hip.HostGetDevicePointer(&dptr, host, 0);
		if (rc) {
			hip.HostUnregister(host);
			return rc;
		}
		*device = (uint64_t)(uintptr_t)dptr;
		return 0;
	}
	*step = "cuMemHostRegister";
	rc = cu.MemHostRegister(host, bytes,
				AGILE_CU_MEMHOSTREGISTER_DEVICEMAP |
					AGILE_CU_MEMHOSTREGISTER_PORTABLE);
	if (rc)
		return rc;
	*step = "cuMemHostGetDevicePointer";
	rc = cu.MemHostGetDevicePointer(device, host, 0);
	if (rc)
		cu.MemHostUnregister(host);
	return rc;
}

static void gpu_unregister(const struct agile__gpu_eus *g, void *host)
{
	if (g->api == API_HIP)
		hip.HostUnregister(host);
	else
		cu.MemHostUnregister(host);
}

static int gpu_sync(void *stream, int api)
{
	return api == API_HIP ? hip.StreamSynchronize(stream) :
				cu.StreamSynchronize(stream);
}

static void gpu_stream_destroy(void *stream, int api)
{
	if (!stream)
		return;
	if (api == API_HIP)
		hip.StreamDestroy(stream);
	else
		cu.StreamDestroy(stream);
}

/* Undoes whatever of a start was done; a launched kernel must have ended. */
static void gpu_teardown(struct agile__gpu_eus *g)
{
	gpu_enter(g);
	for (size_t i = 0; i < g->nr_maps; i++)
		gpu_unregister(g, g->maps[i].host);
	if (g->task_regs_reg)
		gpu_unregister(g, g->areas.task_regs);
	if (g->doorbells_reg)
		gpu_unregister(g, g->areas.doorbells);
	gpu_stream_destroy(g->once_stream, g->api);
	gpu_stream_destroy(g->stream, g->api);
	if (g->module) {
		if (g->api == API_HIP)
			hip.ModuleUnload(g->module);
		else
			cu.ModuleUnload(g->module);
	}
	if (g->api == API_CUDA && g->ctx)
		cu.DevicePrimaryCtxRelease(g->device);
	gpu_release(g);
	pthread_mutex_destroy(&g->lock);
	free(g->maps);
	free(g);
}

/* Step 2: the device, and whether it can hold the EUs at all. */
static int gpu_open_device(struct agile__gpu_eus *g, int *sms, int *coop,
			   int *watchdog, const char **step)
{
	int rc, count = 0;

	*sms = 0;
	*coop = 0;
	*watchdog = 0;
	if (g->api == API_HIP) {
		*step = "hipGetDeviceCount";
		rc = hip.GetDeviceCount(&count);
		if (rc || count <= 0)
			return rc ? rc : -1;
		g->device = 0;
		*step = "hipSetDevice";
		rc = hip.SetDevice(g->device);
		if (!rc) {
			*step = "hipDeviceGetAttribute";
			rc = hip.DeviceGetAttribute(
				sms, AGILE_HIP_ATTR_MULTIPROCESSOR_COUNT,
				g->device);
		}
		if (!rc)
			rc = hip.DeviceGetAttribute(
				coop, AGILE_HIP_ATTR_COOPERATIVE_LAUNCH,
				g->device);
		/* A runtime without the attribute: no limit known. */
		if (!rc && hip.DeviceGetAttribute(
				   watchdog, AGILE_HIP_ATTR_KERNEL_EXEC_TIMEOUT,
				   g->device))
			*watchdog = 0;
		return rc;
	}
	*step = "cuInit";
	rc = cu.Init(0);
	if (!rc) {
		*step = "cuDeviceGetCount";
		rc = cu.DeviceGetCount(&count);
		if (!rc && count <= 0)
			rc = -1;
	}
	if (!rc) {
		*step = "cuDeviceGet";
		rc = cu.DeviceGet(&g->device, 0);
	}
	if (!rc) {
		*step = "cuDevicePrimaryCtxRetain";
		rc = cu.DevicePrimaryCtxRetain(&g->ctx, g->device);
		if (rc)
			g->ctx = NULL;
	}
	if (!rc) {
		*step = "cuCtxSetCurrent";
		rc = cu.CtxSetCurrent(g->ctx);
	}
	if (!rc) {
		*step = "cuDeviceGetAttribute";
		rc = cu.DeviceGetAttribute(
			sms, AGILE_CU_ATTR_MULTIPROCESSOR_COUNT, g->device);
	}
	if (!rc)
		rc = cu.DeviceGetAttribute(
			coop, AGILE_CU_ATTR_COOPERATIVE_LAUNCH, g->device);
	if (!rc &&
	    cu.DeviceGetAttribute(watchdog, AGILE_CU_ATTR_KERNEL_EXEC_TIMEOUT,
				  g->device))
		*watchdog = 0;
	return rc;
}

/*
 * Step 3: the code object (the file @path, or the image @image built at
 * run time) and both kernels in it.
 */
static int gpu_load_module(struct agile__gpu_eus *g, const char *path,
			   const void *image, const char **step)
{
	int rc;

	if (g->api == API_HIP) {
		*step = image ? "hipModuleLoadData" : "hipModuleLoad";
		rc = image ? hip.ModuleLoadData(&g->module, image) :
			     hip.ModuleLoad(&g->module, path);
		if (rc) {
			g->module = NULL;
			return rc;
		}
		*step = "hipModuleGetFunction(" AGILE_GPU_FN_PERSISTENT ")";
		rc = hip.ModuleGetFunction(&g->persistent, g->module,
					   AGILE_GPU_FN_PERSISTENT);
		if (!rc) {
			*step = "hipModuleGetFunction(" AGILE_GPU_FN_RUN_ONCE
				")";
			rc = hip.ModuleGetFunction(&g->run_once, g->module,
						   AGILE_GPU_FN_RUN_ONCE);
		}
		return rc;
	}
	*step = image ? "cuModuleLoadData" : "cuModuleLoad";
	rc = image ? cu.ModuleLoadData(&g->module, image) :
		     cu.ModuleLoad(&g->module, path);
	if (rc) {
		g->module = NULL;
		return rc;
	}
	*step = "cuModuleGetFunction(" AGILE_GPU_FN_PERSISTENT ")";
	rc = cu.ModuleGetFunction(&g->persistent, g->module,
				  AGILE_GPU_FN_PERSISTENT);
	if (!rc) {
		*step = "cuModuleGetFunction(" AGILE_GPU_FN_RUN_ONCE ")";
		rc = cu.ModuleGetFunction(&g->run_once, g->module,
					  AGILE_GPU_FN_RUN_ONCE);
	}
	return rc;
}

static int gpu_occupancy(const struct agile__gpu_eus *g, int *per_sm)
{
	*per_sm = 0;
	if (g->api == API_HIP)
		return hip.ModuleOccupancyMaxActiveBlocksPerMultiprocessor(
			per_sm, g->persistent, AGILE_MAX_LANES, 0);
	return cu.OccupancyMaxActiveBlocksPerMultiprocessor(
		per_sm, g->persistent, AGILE_MAX_LANES, 0);
}

static int gpu_streams(struct agile__gpu_eus *g, const char **step)
{
	int rc;

	if (g->api == API_HIP) {
		*step = "hipStreamCreateWithFlags";
		rc = hip.StreamCreateWithFlags(&g->stream,
					       AGILE_HIP_STREAM_NON_BLOCKING);
		if (rc) {
			g->stream = NULL;
			return rc;
		}
		rc = hip.StreamCreateWithFlags(&g->once_stream,
					       AGILE_HIP_STREAM_NON_BLOCKING);
		if (rc)
			g->once_stream = NULL;
		return rc;
	}
	*step = "cuStreamCreate";
	rc = cu.StreamCreate(&g->stream, AGILE_CU_STREAM_NON_BLOCKING);
	if (rc) {
		g->stream = NULL;
		return rc;
	}
	rc = cu.StreamCreate(&g->once_stream, AGILE_CU_STREAM_NON_BLOCKING);
	if (rc)
		g->once_stream = NULL;
	return rc;
}

/* Step 7. */
static int gpu_launch(struct agile__gpu_eus *g, bool coop, const char **step)
{
	void *args[] = { &g->params };
	unsigned int grid = g->params.nr_eus, block = AGILE_MAX_LANES;

	if (g->api == API_HIP) {
		if (coop && hip.ModuleLaunchCooperativeKernel) {
			*step = "hipModuleLaunchCooperativeKernel";
			return hip.ModuleLaunchCooperativeKernel(
				g->persistent, grid, 1, 1, block, 1, 1, 0,
				g->stream, args);
		}
		*step = "hipModuleLaunchKernel";
		return hip.ModuleLaunchKernel(g->persistent, grid, 1, 1, block,
					      1, 1, 0, g->stream, args, NULL);
	}
	if (coop) {
		*step = "cuLaunchCooperativeKernel";
		return cu.LaunchCooperativeKernel(g->persistent, grid, 1, 1,
						  block, 1, 1, 0, g->stream,
						  args);
	}
	*step = "cuLaunchKernel";
	return cu.LaunchKernel(g->persistent, grid, 1, 1, block, 1, 1, 0,
			       g->stream, args, NULL);
}

/*
 * One runtime's whole start; 0 or a negative errno with @reason set, and
 * *@opened set once it got as far as a device.
 */
static int gpu_start_api(int api, const struct agile__gpu_areas *a,
			 struct agile__gpu_eus **out, char *reason, size_t rlen,
			 bool *opened)
{
	const struct api_lib *lib = &apis[api];
	struct agile__gpu_eus *g;
	char path[PATH_MAX];
	const char *step = "";
	int sms, coop, watchdog, per_sm, rc, err;
	uint64_t dptr;

	if (!lib->loaded) {
		REASON(reason, rlen, "%s", lib->reason);
		return -ENODEV;
	}
	if (a->image && a->image_api != (uint32_t)api) {
		REASON(reason, rlen, "%s: the pool's code image is for %s",
		       lib->name, apis[a->image_api].name);
		return -ENODEV;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->api = api;
	g->areas = *a;
	pthread_mutex_init(&g->lock, NULL);

	rc = gpu_open_device(g, &sms, &coop, &watchdog, &step);
	if (rc) {
		if (rc == -1)
			REASON(reason, rlen, "%s: %s reports no device",
			       lib->name, step);
		else
			REASON(reason, rlen, "%s: %s failed: error %d",
			       lib->name, step, rc);
		err = -ENODEV;
		goto fail;
	}
	snprintf(g->name, sizeof(g->name), "%s device %d", lib->name,
		 g->device);
	*opened = true;
	if (gpu_claim(g)) {
		REASON(reason, rlen,
		       "%s already runs the GPU EUs of another pool (one "
		       "persistent kernel per device and process: destroy "
		       "that pool first)",
		       g->name);
		err = -EBUSY;
		goto fail;
	}
	if (watchdog) {
		const char *w = getenv("AGILE_GPU_WATCHDOG");

		if (w && *w && strcmp(w, "ignore"))
			agile__env_invalid("AGILE_GPU_WATCHDOG", w,
					   "ignore; GPU EUs are not started on "
					   "a device with a run-time limit");
		if (!w || strcmp(w, "ignore")) {
			REASON(reason, rlen,
			       "%s has a kernel run-time limit "
			       "(KERNEL_EXEC_TIMEOUT: it drives a display?), "
			       "which would kill the persistent kernel; "
			       "AGILE_GPU_WATCHDOG=ignore starts it anyway",
			       g->name);
			err = -ENODEV;
			goto fail;
		}
		if (!getenv("AGILE_QUIET"))
			fprintf(stderr,
				"agile: %s has a kernel run-time limit "
				"(KERNEL_EXEC_TIMEOUT); GPU EUs started "
				"anyway (AGILE_GPU_WATCHDOG=ignore): the "
				"driver may kill them\n",
				g->name);
	}
	if (a->image) {
		snprintf(path, sizeof(path), "the pool's code image");
	} else {
		err = agile__gpu_code_find(lib->code_file, path, sizeof(path),
					   reason, rlen);
		if (err)
			goto fail;
	}
	rc = gpu_load_module(g, path, a->image, &step);
	if (rc) {
		REASON(reason, rlen, "%s: %s of %.160s failed: error %d",
		       lib->name, step, path, rc);
		err = -ENOENT;
		goto fail;
	}
	rc = gpu_occupancy(g, &per_sm);
	if (rc || sms <= 0) {
		REASON(reason, rlen,
		       "%s: occupancy of %s unknown (error %d, %d SM/CUs)",
		       lib->name, AGILE_GPU_FN_PERSISTENT, rc, sms);
		err = -EIO;
		goto fail;
	}
	/* Headroom: a share of what fits at once. */
	if ((uint64_t)a->nr_eus * 100 >
	    (uint64_t)per_sm * (uint64_t)sms * a->share) {
		REASON(reason, rlen,
		       "%s: %u EUs do not fit in %u%% of the device (%d "
		       "work-groups per SM/CU x %d SM/CUs at once; "
		       "AGILE_GPU_SHARE or agile_eu_pool_opts.gpu_share "
		       "sets the share)",
		       lib->name, a->nr_eus, a->share, per_sm, sms);
		err = -ENOSPC;
		goto fail;
	}

	rc = gpu_register(g, a->doorbells, a->doorbell_bytes, &dptr, &step);
	if (!rc) {
		g->doorbells_reg = true;
		g->params.doorbells = (struct agile_doorbell *)(uintptr_t)dptr;
		rc = gpu_register(g, a->task_regs, a->task_reg_bytes, &dptr,
				  &step);
	}
	if (rc) {
		REASON(reason, rlen, "%s: %s of the %s area failed: error %d",
		       lib->name, step,
		       g->doorbells_reg ? "task-register" : "doorbell", rc);
		err = -EIO;
		goto fail;
	}
	g->task_regs_reg = true;
	g->params.task_regs = (unsigned char *)(uintptr_t)dptr;
	g->params.task_reg_size = a->task_reg_size;
	g->params.nr_eus = a->nr_eus;
	memcpy(g->params.opcodes, a->opcodes, sizeof(g->params.opcodes));

	rc = gpu_streams(g, &step);
	if (!rc)
		rc = gpu_launch(g, coop != 0, &step);
	if (rc) {
		REASON(reason, rlen, "%s: %s failed: error %d", lib->name, step,
		       rc);
		err = -EIO;
		goto fail;
	}
	*out = g;
	return 0;
fail:
	gpu_teardown(g);
	return err;
}

int agile__gpu_eus_start(const struct agile__gpu_areas *a,
			 struct agile__gpu_eus **out, char *reason, size_t rlen)
{
	char first[AGILE_EU_REASON_LEN] = "";
	int err, first_err = -ENODEV;
	bool first_opened = false;

	if (!a || !out || !a->nr_eus || !a->doorbells || !a->task_regs ||
	    !a->share || a->share > 100 ||
	    (a->image && a->image_api >= NR_APIS))
		return -EINVAL;
	pthread_once(&apis_once, apis_load);
	/*
	 * HIP first, then CUDA.  The reason kept is that of the runtime that
	 * got furthest: one that opened a device over one that has none,
	 * else the first one that loaded.
	 */
	for (int api = 0; api < NR_APIS; api++) {
		char why[AGILE_EU_REASON_LEN];
		bool opened = false;

		err = gpu_start_api(api, a, out, why, sizeof(why), &opened);
		if (!err)
			return 0;
		if (apis[api].loaded &&
		    (!first[0] || (!first_opened && opened))) {
			snprintf(first, sizeof(first), "%s", why);
			first_err = err;
			first_opened = opened;
		}
	}
	if (first[0])
		REASON(reason, rlen, "%s", first);
	else
		REASON(reason, rlen, "%s; %s", apis[API_HIP].reason,
		       apis[API_CUDA].reason);
	return first_err;
}

/* The runtime's name for error @rc, or NULL. */
static const char *gpu_error_string(int api, int rc)
{
	const char *str = NULL;

	if (api == API_HIP)
		return hip.GetErrorString ? hip.GetErrorString(rc) : NULL;
	if (cu.GetErrorString(rc, &str))
		return NULL;
	return str;
}

int agile__gpu_eus_check(struct agile__gpu_eus *g)
{
	int state = atomic_load_explicit(&g->state, memory_order_acquire);
	const char *str;
	int rc;

	if (state != GPU_RUNNING)
		return state == GPU_DEAD ? -AGILE_E_GPU : 1;
	pthread_mutex_lock(&g->lock);
	state = atomic_load_explicit(&g->state, memory_order_relaxed);
	if (state == GPU_RUNNING) {
		rc = gpu_enter(g);
		if (!rc)
			rc = g->api == API_HIP ? hip.StreamQuery(g->stream) :
						 cu.StreamQuery(g->stream);
		if (rc == (g->api == API_HIP ? AGILE_HIP_ERROR_NOT_READY :
					       AGILE_CU_ERROR_NOT_READY)) {
			pthread_mutex_unlock(&g->lock);
			return 0;
		}
		if (!rc) {
			snprintf(g->error, sizeof(g->error),
				 "GPU EUs on %s: the persistent kernel ended",
				 g->name);
			state = GPU_ENDED;
		} else {
			str = gpu_error_string(g->api, rc);
			snprintf(g->error, sizeof(g->error),
				 "GPU EUs on %s: the persistent kernel died: "
				 "%s (error %d)",
				 g->name, str ? str : "no description", rc);
			state = GPU_DEAD;
			if (!getenv("AGILE_QUIET"))
				fprintf(stderr, "agile: %s\n", g->error);
		}
		atomic_store_explicit(&g->state, state, memory_order_release);
	}
	pthread_mutex_unlock(&g->lock);
	return state == GPU_DEAD ? -AGILE_E_GPU : 1;
}

int agile__gpu_eus_gone(const struct agile__gpu_eus *g)
{
	return atomic_load_explicit(&g->state, memory_order_acquire) !=
	       GPU_RUNNING;
}

const char *agile__gpu_eus_error(const struct agile__gpu_eus *g)
{
	return agile__gpu_eus_gone(g) ? g->error : "";
}

int agile__gpu_eus_stop(struct agile__gpu_eus *g, uint64_t timeout_ns)
{
	uint64_t waited = 0;
	int err;

	if (!g)
		return 0;
	/*
	 * Every work-group returns on DISCONNECT, and the kernel ends; a dead
	 * one has ended already.  Nothing is unregistered before the stream
	 * says so: that would wait for the kernel itself (ROCm 6).
	 */
	while (!(err = agile__gpu_eus_check(g)) && waited < timeout_ns) {
		struct timespec ms = { 0, 1000000 };

		nanosleep(&ms, NULL);
		waited += 1000000;
	}
	if (!err) {
		if (!getenv("AGILE_QUIET"))
			fprintf(stderr,
				"agile: GPU EUs on %s did not end; their "
				"kernel, streams and registrations are left "
				"in place until the process ends\n",
				g->name);
		pthread_mutex_lock(&abandoned_lock);
		g->abandoned_next = abandoned;
		abandoned = g;
		pthread_mutex_unlock(&abandoned_lock);
		return -ETIMEDOUT;
	}
	gpu_enter(g);
	gpu_sync(g->stream, g->api);
	gpu_teardown(g);
	return err < 0 ? err : 0;
}

const char *agile__gpu_eus_name(const struct agile__gpu_eus *g)
{
	return g ? g->name : "";
}

int agile__gpu_map(struct agile__gpu_eus *g, void *host, size_t bytes,
		   uint64_t *device)
{
	const char *step;
	int err = 0, rc;

	if (!g || !host || !bytes || !device)
		return -EINVAL;
	pthread_mutex_lock(&g->lock);
	for (size_t i = 0; i < g->nr_maps; i++) {
		struct mapping *m = &g->maps[i];

		if (m->host != host)
			continue;
		/* Unmapped, still registered: the same range maps again. */
		if (!m->unmapped)
			err = -EEXIST;
		else if (m->bytes != bytes)
			err = -EBUSY;
		else {
			m->unmapped = false;
			*device = m->device;
		}
		pthread_mutex_unlock(&g->lock);
		return err;
	}
	if (g->nr_maps == g->max_maps) {
		size_t max = g->max_maps ? 2 * g->max_maps : 8;
		struct mapping *m = realloc(g->maps, max * sizeof(*m));

		if (!m)
			err = -ENOMEM;
		else {
			g->maps = m;
			g->max_maps = max;
		}
	}
	if (!err) {
		rc = gpu_enter(g);
		if (!rc)
			rc = gpu_register(g, host, bytes, device, &step);
		if (rc)
			err = -EIO;
		else
			g->maps[g->nr_maps++] = (struct mapping){
				.host = host, .bytes = bytes, .device = *device
			};
	}
	pthread_mutex_unlock(&g->lock);
	return err;
}

int agile__gpu_unmap(struct agile__gpu_eus *g, void *host)
{
	int err = -ENOENT;

	if (!g || !host)
		return -EINVAL;
	pthread_mutex_lock(&g->lock);
	for (size_t i = 0; i < g->nr_maps; i++) {
		if (g->maps[i].host != host || g->maps[i].unmapped)
			continue;
		/* Unregistered by gpu_teardown, once the kernel has ended. */
		g->maps[i].unmapped = true;
		err = 0;
		break;
	}
	pthread_mutex_unlock(&g->lock);
	return err;
}

int agile__gpu_run_once(struct agile__gpu_eus *g, uint32_t slot)
{
	void *args[2];
	int rc;

	if (!g || slot >= g->params.nr_eus)
		return -EINVAL;
	if (agile__gpu_eus_gone(g))
		return -AGILE_E_GPU;
	args[0] = &g->params;
	args[1] = &slot;
	rc = gpu_enter(g);
	if (!rc)
		rc = g->api == API_HIP ?
			     hip.ModuleLaunchKernel(g->run_once, 1, 1, 1,
						    AGILE_MAX_LANES, 1, 1, 0,
						    g->once_stream, args,
						    NULL) :
			     cu.LaunchKernel(g->run_once, 1, 1, 1,
					     AGILE_MAX_LANES, 1, 1, 0,
					     g->once_stream, args, NULL);
	if (!rc)
		rc = gpu_sync(g->once_stream, g->api);
	/* A fault there is the context's: the persistent kernel died too. */
	if (rc && agile__gpu_eus_check(g) < 0)
		return -AGILE_E_GPU;
	return rc ? -EIO : 0;
}

#else /* AGILE_NO_DLOPEN */

int agile__gpu_eus_start(const struct agile__gpu_areas *a,
			 struct agile__gpu_eus **out, char *reason, size_t rlen)
{
	(void)a;
	(void)out;
	REASON(reason, rlen, "GPU runtimes cannot be loaded by a static build");
	return -ENOTSUP;
}

int agile__gpu_eus_stop(struct agile__gpu_eus *g, uint64_t timeout_ns)
{
	(void)g;
	(void)timeout_ns;
	return 0;
}

int agile__gpu_eus_check(struct agile__gpu_eus *g)
{
	(void)g;
	return 1;
}

int agile__gpu_eus_gone(const struct agile__gpu_eus *g)
{
	(void)g;
	return 1;
}

const char *agile__gpu_eus_error(const struct agile__gpu_eus *g)
{
	(void)g;
	return "";
}

const char *agile__gpu_eus_name(const struct agile__gpu_eus *g)
{
	(void)g;
	return "";
}

int agile__gpu_map(struct agile__gpu_eus *g, void *host, size_t bytes,
		   uint64_t *device)
{
	(void)g;
	(void)host;
	(void)bytes;
	(void)device;
	return -ENOTSUP;
}

int agile__gpu_unmap(struct agile__gpu_eus *g, void *host)
{
	(void)g;
	(void)host;
	return -ENOTSUP;
}

int agile__gpu_run_once(struct agile__gpu_eus *g, uint32_t slot)
{
	(void)g;
	(void)slot;
	return -ENOTSUP;
}

#endif /* AGILE_NO_DLOPEN */
