// SPDX-License-Identifier: MIT
/*
 * gpu.c - finding GPUs: libdrm for what the kernel drives, the HIP and
 * CUDA runtimes (dlopen) for what can run work.
 *
 * The runtimes are probed once per process (pthread_once) and never
 * unloaded; libdrm is asked on every call, so it sees hot-plugged
 * devices.  AGILE_NO_DRM compiles libdrm out, AGILE_NO_DLOPEN the
 * runtimes (the static build: the guests have no shared libraries).
 */
#define _GNU_SOURCE
#include <agile/gpu.h>

#include "eu/gpu_impl.h"
#include "eu/gpu_runtime.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef AGILE_NO_DLOPEN
#include <dlfcn.h>
#endif
#ifndef AGILE_NO_DRM
#include <xf86drm.h>
#endif

#define NR_VENDORS 2
#define REASON_LEN 256
#define LOADED_LEN 192

struct runtime {
	const char *api; /* "HIP", "CUDA" */
	uint32_t vendor;
	const char *vendor_name;
	const char *targets_file; /* beside the code object */
	/* Written once under runtimes_once, read-only after. */
	char loaded[LOADED_LEN]; /* the library that answered, or "" */
	int nr_devices; /* devices it can use; 0 when none/absent */
	char arch[32]; /* device 0's ISA ("sm_90", "gfx90a"), "" unknown */
	char reason[REASON_LEN]; /* why nr_devices is 0, or what it found */
};

/*
 * Process-wide by design: a runtime loaded once stays loaded (GPU
 * runtimes do not survive dlclose), so its answer is cached beside it.
 */
static struct runtime runtimes[NR_VENDORS] = {
	{ .api = "HIP",
	  .vendor = AGILE_GPU_VENDOR_AMD,
	  .vendor_name = "amd",
	  .targets_file = AGILE_GPU_TARGETS_HIP },
	{ .api = "CUDA",
	  .vendor = AGILE_GPU_VENDOR_NVIDIA,
	  .vendor_name = "nvidia",
	  .targets_file = AGILE_GPU_TARGETS_CUDA },
};
static pthread_once_t runtimes_once = PTHREAD_ONCE_INIT;

/* The number after @prefix in @word ("sm_86" -> 86), or -1. */
static int arch_number(const char *word, size_t len, const char *prefix)
{
	size_t plen = strlen(prefix);
	int v = 0;

	if (len <= plen || strncmp(word, prefix, plen))
		return -1;
	for (size_t i = plen; i < len; i++) {
		if (word[i] < '0' || word[i] > '9')
			return -1;
		v = v * 10 + (word[i] - '0');
	}
	return v;
}

int agile__gpu_arch_covered(const char *arch, const char *targets)
{
	int dev = arch_number(arch, strlen(arch), "sm_");
	const char *t = targets;

	while (*t) {
		size_t len = strcspn(t, " \t\n"), name_len = strcspn(t, ":");
		int sass = arch_number(t, len, "sm_");
		int ptx = arch_number(t, len, "compute_");

		if (name_len > len)
			name_len = len;
		if (len && dev < 0 && name_len == strlen(arch) &&
		    !strncmp(t, arch, name_len))
			return 1;
		if (dev >= 0 && sass >= 0 && sass / 10 == dev / 10 &&
		    sass % 10 <= dev % 10)
			return 1;
		if (dev >= 0 && ptx >= 0 && ptx <= dev)
			return 1;
		t += len;
		t += strspn(t, " \t\n");
	}
	return 0;
}

void agile__gpu_gfx_name(unsigned int version, char *name, size_t len)
{
	snprintf(name, len, "gfx%u%x%x", version / 10000,
		 (version / 100) % 100 & 0xf, version % 100 & 0xf);
}

#ifndef AGILE_NO_DLOPEN
/*
 * The targets line written beside @rt's code object into @line, or -ENOENT
 * when there is none (no code object: the start says so, not the probe).
 */
static int runtime_targets(const struct runtime *rt, char *line, size_t len)
{
	char path[4096], why[8];
	FILE *f;

	if (agile__gpu_code_find(rt->targets_file, path, sizeof(path), why,
				 sizeof(why)))
		return -ENOENT;
	f = fopen(path, "r");
	if (!f)
		return -ENOENT;
	if (!fgets(line, (int)len, f))
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	return 0;
}

/*
 * Whether the code built for @rt covers @arch; if not, says so in @rt's
 * reason and makes its devices unusable.
 */
static void runtime_check_arch(struct runtime *rt, const char *loaded,
			       const char *arch)
{
	char targets[256];

	if (runtime_targets(rt, targets, sizeof(targets)) ||
	    agile__gpu_arch_covered(arch, targets))
		return;
	snprintf(rt->reason, sizeof(rt->reason),
		 "%s: %.80s: no code object for %s (%s has %.96s)", rt->api,
		 loaded, arch, rt->targets_file, targets);
	rt->nr_devices = 0;
}

void *agile__gpu_lib_open(const char *const *names, const char *const *dirs,
			  char *loaded, size_t len)
{
	void *lib;

	for (int i = 0; names[i]; i++) {
		lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
		if (lib) {
			snprintf(loaded, len, "%s", names[i]);
			return lib;
		}
	}
	for (int i = 0; names[i]; i++) {
		lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (lib) {
			snprintf(loaded, len, "%s", names[i]);
			return lib;
		}
		for (int d = 0; dirs && dirs[d]; d++) {
			char path[4096];

			if (!*dirs[d])
				continue;
			snprintf(path, sizeof(path), "%s/%s", dirs[d],
				 names[i]);
			lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
			if (lib) {
				snprintf(loaded, len, "%s", path);
				return lib;
			}
		}
	}
	loaded[0] = '\0';
	return NULL;
}

typedef int (*count_fn)(int *count);
typedef int (*init_fn)(unsigned int flags);
typedef int (*version_fn)(int *version);
typedef int (*cu_get_fn)(int *device, int ordinal);
typedef int (*cu_attr_fn)(int *value, int attr, int device);

/* The first AMD GPU node's ISA from the KFD topology, or "" (none). */
static void kfd_arch(char *arch, size_t len)
{
	arch[0] = '\0';
	for (int node = 0; node < 64 && !arch[0]; node++) {
		char path[96], line[128];
		unsigned int version;
		FILE *f;

		snprintf(path, sizeof(path),
			 "/sys/class/kfd/kfd/topology/nodes/%d/properties",
			 node);
		f = fopen(path, "r");
		if (!f)
			break;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "gfx_target_version %u", &version) ==
				    1 &&
			    version)
				agile__gpu_gfx_name(version, arch, len);
		fclose(f);
	}
}

/*
 * HIP: the library, hipInit (where it has it), the driver's version,
 * the device count, then the ISA of device 0 against the code object.
 */
static void hip_probe(struct runtime *rt)
{
	static const char *const names[] = AGILE_HIP_LIB_NAMES;
	const char *rocm = getenv("ROCM_PATH");
	char rocm_lib[4096] = "", arch[32];
	const char *dirs[] = { rocm_lib, AGILE_HIP_LIB_DEFAULT_DIR, NULL };
	int count = 0, version = 0, err;
	version_fn get_version;
	count_fn get_count;
	init_fn init;
	char loaded[LOADED_LEN];
	void *lib;

	if (rocm && *rocm)
		snprintf(rocm_lib, sizeof(rocm_lib), "%s/lib", rocm);
	lib = agile__gpu_lib_open(names, dirs, loaded, sizeof(loaded));
	if (!lib) {
		snprintf(rt->reason, sizeof(rt->reason),
			 "HIP: libamdhip64.so.7/.6/.5 or libamdhip64.so not "
			 "found (ld.so path, $ROCM_PATH/lib, %s)",
			 AGILE_HIP_LIB_DEFAULT_DIR);
		return;
	}
	memcpy(rt->loaded, loaded, sizeof(loaded));
	init = (init_fn)dlsym(lib, "hipInit");
	get_version = (version_fn)dlsym(lib, "hipDriverGetVersion");
	get_count = (count_fn)dlsym(lib, "hipGetDeviceCount");
	if (init && (err = init(0))) {
		snprintf(rt->reason, sizeof(rt->reason),
			 "HIP: %.100s: hipInit failed: error %d", loaded, err);
		return;
	}
	if (get_version && get_version(&version))
		version = 0;
	if (!get_count) {
		snprintf(rt->reason, sizeof(rt->reason),
			 "HIP: %.100s lacks hipGetDeviceCount", loaded);
		return;
	}
	err = get_count(&count);
	if (err) {
		snprintf(rt->reason, sizeof(rt->reason),
			 "HIP: %.100s (driver %d): hipGetDeviceCount failed: "
			 "error %d",
			 loaded, version, err);
		return;
	}
	if (count <= 0) {
		snprintf(rt->reason, sizeof(rt->reason),
			 "HIP: %.100s (driver %d): hipGetDeviceCount reports "
			 "no device",
			 loaded, version);
		return;
	}
	rt->nr_devices = count;
	kfd_arch(arch, sizeof(arch));
	snprintf(rt->arch, sizeof(rt->arch), "%s", arch);
	snprintf(rt->reason, sizeof(rt->reason),
		 "HIP: %.100s, driver %d, %d device%s%s%s", loaded, version,
		 count, count == 1 ? "" : "s", arch[0] ? ", device 0 " : "",
		 arch);
	if (arch[0])
		runtime_check_arch(rt, loaded, arch);
}

/*
 * CUDA, by the driver API: libcuda, cuInit, the driver's version, the
 * device count, then device 0's compute capability against the code
 * object (SASS, or PTX the driver compiles for a newer GPU).
 */
static void cuda_probe(struct runtime *rt)
{
	static const char *const names[] = AGILE_CUDA_LIB_NAMES;
	int count = 0, version = 0, major = 0, minor = 0, device = 0, err;
	const char *step;
	char arch[32], driver[32] = "";
	version_fn get_version;
	count_fn get_count;
	cu_attr_fn get_attr;
	cu_get_fn get_device;
	init_fn init;
	char loaded[LOADED_LEN];
	void *lib;

	lib = agile__gpu_lib_open(names, NULL, loaded, sizeof(loaded));
	if (!lib) {
		snprintf(rt->reason, sizeof(rt->reason),
			 "CUDA: libcuda.so.1 or libcuda.so (the NVIDIA "
			 "driver's library) not found");
		return;
	}
	memcpy(rt->loaded, loaded, sizeof(loaded));
	init = (init_fn)dlsym(lib, "cuInit");
	get_version = (version_fn)dlsym(lib, "cuDriverGetVersion");
	get_count = (count_fn)dlsym(lib, "cuDeviceGetCount");
	get_device = (cu_get_fn)dlsym(lib, "cuDeviceGet");
	get_attr = (cu_attr_fn)dlsym(lib, "cuDeviceGetAttribute");
	step = !init	    ? "cuInit" :
	       !get_version ? "cuDriverGetVersion" :
	       !get_count   ? "cuDeviceGetCount" :
	       !get_device  ? "cuDeviceGet" :
	       !get_attr    ? "cuDeviceGetAttribute" :
			      NULL;
	if (step) {
		snprintf(rt->reason, sizeof(rt->reason),
			 "CUDA: %.100s lacks %s", loaded, step);
		return;
	}
	step = "cuInit";
	err = init(0);
	if (!err) {
		step = "cuDriverGetVersion";
		err = get_version(&version);
	}
	if (!err) {
		step = "cuDeviceGetCount";
		err = get_count(&count);
	}
	if (!err && count > 0) {
		step = "cuDeviceGet(0)";
		err = get_device(&device, 0);
	}
	if (!err && count > 0) {
		step = "cuDeviceGetAttribute(compute capability)";
		err = get_attr(&major, AGILE_CU_ATTR_COMPUTE_MAJOR, device);
		if (!err)
			err = get_attr(&minor, AGILE_CU_ATTR_COMPUTE_MINOR,
				       device);
	}
	if (version)
		snprintf(driver, sizeof(driver), " (driver %d.%d)",
			 version / 1000, version % 1000 / 10);
	if (err) {
		snprintf(rt->reason, sizeof(rt->reason),
			 "CUDA: %.100s%s: %s failed: error %d", loaded, driver,
			 step, err);
		return;
	}
	if (count <= 0) {
		snprintf(rt->reason, sizeof(rt->reason),
			 "CUDA: %.100s%s: cuDeviceGetCount reports no device",
			 loaded, driver);
		return;
	}
	rt->nr_devices = count;
	snprintf(arch, sizeof(arch), "sm_%d%d", major, minor);
	snprintf(rt->arch, sizeof(rt->arch), "%s", arch);
	snprintf(rt->reason, sizeof(rt->reason),
		 "CUDA: %.100s, driver %d.%d, %d device%s, device 0 %s", loaded,
		 version / 1000, version % 1000 / 10, count,
		 count == 1 ? "" : "s", arch);
	runtime_check_arch(rt, loaded, arch);
}

static void runtime_probe(struct runtime *rt)
{
	if (rt->vendor == AGILE_GPU_VENDOR_AMD)
		hip_probe(rt);
	else
		cuda_probe(rt);
}
#else
void *agile__gpu_lib_open(const char *const *names, const char *const *dirs,
			  char *loaded, size_t len)
{
	(void)names;
	(void)dirs;
	if (len)
		loaded[0] = '\0';
	return NULL;
}

static void runtime_probe(struct runtime *rt)
{
	snprintf(rt->reason, sizeof(rt->reason),
		 "%s: runtimes cannot be loaded by a static build", rt->api);
}
#endif

static void runtimes_probe(void)
{
	for (int v = 0; v < NR_VENDORS; v++)
		runtime_probe(&runtimes[v]);
}

/* Adds one entry; always counts it, stores it only while there is room. */
static void add_entry(struct agile_gpu_info *out, unsigned int max,
		      unsigned int *nr, const struct runtime *rt,
		      unsigned int index, const char *bus_id)
{
	struct agile_gpu_info *info;

	if (*nr < max) {
		info = &out[*nr];
		memset(info, 0, sizeof(*info));
		info->vendor = rt->vendor;
		info->index = index;
		if (rt->loaded[0])
			info->flags |= AGILE_GPU_RUNTIME;
		if ((int)index < rt->nr_devices)
			info->flags |= AGILE_GPU_USABLE;
		if (bus_id) {
			info->flags |= AGILE_GPU_DRM;
			snprintf(info->pci_bus_id, sizeof(info->pci_bus_id),
				 "%s", bus_id);
		}
		snprintf(info->name, sizeof(info->name), "%s%s%.50s",
			 rt->vendor_name, rt->loaded[0] ? " " : "", rt->loaded);
	}
	(*nr)++;
}

/* The DRM devices of @rt's vendor as entries; returns how many. */
static unsigned int drm_entries(struct agile_gpu_info *out, unsigned int max,
				unsigned int *nr, const struct runtime *rt)
{
	unsigned int found = 0;
#ifndef AGILE_NO_DRM
	drmDevicePtr *devices;
	int nr_devices;

	nr_devices = drmGetDevices2(0, NULL, 0);
	if (nr_devices <= 0)
		return 0;
	devices = calloc((size_t)nr_devices, sizeof(*devices));
	if (!devices)
		return 0;
	nr_devices = drmGetDevices2(0, devices, nr_devices);
	for (int i = 0; i < nr_devices; i++) {
		drmDevicePtr d = devices[i];
		char bus_id[AGILE_GPU_BUS_ID_LEN];

		if (d->bustype != DRM_BUS_PCI || !d->deviceinfo.pci ||
		    !d->businfo.pci ||
		    d->deviceinfo.pci->vendor_id != rt->vendor)
			continue;
		snprintf(bus_id, sizeof(bus_id), "%04x:%02x:%02x.%u",
			 d->businfo.pci->domain & 0xffff,
			 d->businfo.pci->bus & 0xff, d->businfo.pci->dev & 0xff,
			 d->businfo.pci->func & 0x7);
		add_entry(out, max, nr, rt, found++, bus_id);
	}
	if (nr_devices > 0)
		drmFreeDevices(devices, nr_devices);
	free(devices);
#else
	(void)out;
	(void)max;
	(void)nr;
	(void)rt;
#endif
	return found;
}

int agile_gpu_probe(struct agile_gpu_info *out, unsigned int max,
		    unsigned int *nr)
{
	if (!nr || (!out && max))
		return -EINVAL;
	pthread_once(&runtimes_once, runtimes_probe);
	*nr = 0;
	for (int v = 0; v < NR_VENDORS; v++) {
		const struct runtime *rt = &runtimes[v];
		unsigned int i = drm_entries(out, max, nr, rt);

		/* Devices the runtime sees that libdrm did not list. */
		for (; (int)i < rt->nr_devices; i++)
			add_entry(out, max, nr, rt, i, NULL);
	}
	return 0;
}

int agile_gpu_available(void)
{
	return agile__gpu_status(NULL, 0);
}

int agile__gpu_arch(uint32_t vendor, char *arch, size_t len)
{
	if (!arch || !len)
		return -EINVAL;
	arch[0] = '\0';
	pthread_once(&runtimes_once, runtimes_probe);
	for (int v = 0; v < NR_VENDORS; v++)
		if (runtimes[v].vendor == vendor &&
		    runtimes[v].nr_devices > 0 && runtimes[v].arch[0]) {
			snprintf(arch, len, "%s", runtimes[v].arch);
			return 0;
		}
	return -ENODEV;
}

int agile__gpu_status(char *reason, size_t len)
{
	unsigned int nr_drm = 0, nr = 0;
	struct agile_gpu_info info;
	bool usable = false;
	int off;

	pthread_once(&runtimes_once, runtimes_probe);
	for (int v = 0; v < NR_VENDORS; v++) {
		usable |= runtimes[v].nr_devices > 0;
		nr = 0;
		nr_drm += drm_entries(&info, 0, &nr, &runtimes[v]);
	}
	if (!reason || !len)
		return usable;
	if (usable) {
		off = snprintf(reason, len, "usable GPU found");
		for (int v = 0; v < NR_VENDORS && off >= 0 && (size_t)off < len;
		     v++)
			off += snprintf(reason + off, len - (size_t)off, "; %s",
					runtimes[v].reason);
		return 1;
	}
#ifndef AGILE_NO_DRM
	off = snprintf(reason, len, "libdrm: %u AMD/NVIDIA GPU%s", nr_drm,
		       nr_drm == 1 ? "" : "s");
#else
	(void)nr_drm;
	off = snprintf(reason, len, "libdrm: not in this build");
#endif
	for (int v = 0; v < NR_VENDORS && off >= 0 && (size_t)off < len; v++)
		off += snprintf(reason + off, len - (size_t)off, "; %s",
				runtimes[v].reason);
	return 0;
}
