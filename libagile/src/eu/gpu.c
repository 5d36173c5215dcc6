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
#define REASON_LEN 160

struct runtime {
	const char *api; /* "HIP", "CUDA" */
	const char *libs[4]; /* tried in order, NULL-terminated */
	uint32_t vendor;
	const char *vendor_name;
	/* Written once under runtimes_once, read-only after. */
	const char *loaded; /* the library that answered, or NULL */
	int nr_devices; /* devices it can use; 0 when none/absent */
	char reason[REASON_LEN]; /* why nr_devices is 0, or "" */
};

/*
 * Process-wide by design: a runtime loaded once stays loaded (GPU
 * runtimes do not survive dlclose), so its answer is cached beside it.
 */
static struct runtime runtimes[NR_VENDORS] = {
	{ .api = "HIP",
	  .libs = { "libamdhip64.so.5", "libamdhip64.so", NULL },
	  .vendor = AGILE_GPU_VENDOR_AMD,
	  .vendor_name = "amd" },
	{ .api = "CUDA",
	  .libs = { "libcudart.so.13", "libcudart.so", "libcuda.so.1", NULL },
	  .vendor = AGILE_GPU_VENDOR_NVIDIA,
	  .vendor_name = "nvidia" },
};
static pthread_once_t runtimes_once = PTHREAD_ONCE_INIT;

#ifndef AGILE_NO_DLOPEN
typedef int (*count_fn)(int *count);
typedef int (*cu_init_fn)(unsigned int flags);

/*
 * Asks one loaded library for its device count: 0 and *count, or the
 * runtime's own (positive) error code; -ENOENT when it lacks the call.
 */
static int runtime_count(struct runtime *rt, void *lib, const char *name,
			 int *count)
{
	count_fn get_count;
	int err;

	if (!strcmp(rt->api, "HIP")) {
		get_count = (count_fn)dlsym(lib, "hipGetDeviceCount");
	} else if (!strcmp(name, "libcuda.so.1")) {
		cu_init_fn cu_init = (cu_init_fn)dlsym(lib, "cuInit");

		get_count = (count_fn)dlsym(lib, "cuDeviceGetCount");
		if (!cu_init || !get_count)
			return -ENOENT;
		err = cu_init(0);
		if (err)
			return err;
	} else {
		get_count = (count_fn)dlsym(lib, "cudaGetDeviceCount");
	}
	if (!get_count)
		return -ENOENT;
	*count = 0;
	return get_count(count);
}

static void runtime_probe(struct runtime *rt)
{
	for (int i = 0; rt->libs[i]; i++) {
		void *lib = dlopen(rt->libs[i], RTLD_NOW | RTLD_LOCAL);
		int count = 0, err;

		if (!lib)
			continue;
		err = runtime_count(rt, lib, rt->libs[i], &count);
		if (err == -ENOENT) {
			dlclose(lib); /* nothing of it was run */
			continue;
		}
		rt->loaded = rt->libs[i];
		if (err)
			snprintf(rt->reason, sizeof(rt->reason),
				 "%s: %s reports error %d", rt->api,
				 rt->libs[i], err);
		else if (count <= 0)
			snprintf(rt->reason, sizeof(rt->reason),
				 "%s: %s reports no device", rt->api,
				 rt->libs[i]);
		else
			rt->nr_devices = count;
		return;
	}
	snprintf(rt->reason, sizeof(rt->reason), "%s: %s%s%s not found",
		 rt->api, rt->libs[0], rt->libs[1] ? ", " : "",
		 rt->libs[1] ? rt->libs[1] : "");
}
#else
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
		if (rt->loaded)
			info->flags |= AGILE_GPU_RUNTIME;
		if ((int)index < rt->nr_devices)
			info->flags |= AGILE_GPU_USABLE;
		if (bus_id) {
			info->flags |= AGILE_GPU_DRM;
			snprintf(info->pci_bus_id, sizeof(info->pci_bus_id),
				 "%s", bus_id);
		}
		snprintf(info->name, sizeof(info->name), "%s%s%s",
			 rt->vendor_name, rt->loaded ? " " : "",
			 rt->loaded ? rt->loaded : "");
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
		snprintf(reason, len, "usable GPU found");
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
