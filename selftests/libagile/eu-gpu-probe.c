// SPDX-License-Identifier: MIT
/*
 * eu-gpu-probe - finding GPUs and falling back to CPU EUs: the probe's
 * argument checks, and its answer against what the machine has, looked
 * up here without libdrm or the runtimes: the PCI bus ids of the AMD and
 * NVIDIA devices behind /dev/dri's nodes (sysfs) are exactly its DRM
 * entries, and every other entry is a device a runtime counts; its usable
 * GPUs of a vendor are never more than the driver lists
 * (/proc/driver/nvidia/gpus, the GPU nodes of /sys/class/kfd), and as
 * many when the vendor's runtime loaded for them (unless
 * *_VISIBLE_DEVICES hides some).  A pool asked for GPU EUs
 * (AGILE_EU_POOL_GPU, AGILE_EU_POOL_AUTO) starts CPU EUs (on a machine
 * with a usable GPU, through AGILE_EU_POOL=cpu), records why, and says so
 * on stderr once per process, not at all with AGILE_QUIET=1.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/gpu.h>
#include <agile/kernels.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "tap.h"

#define MAX_GPUS 16

/* The first line of @path as an unsigned number (0x... too); -1 if none. */
static long read_number(const char *path)
{
	char buf[64];
	FILE *f = fopen(path, "r");
	long v = -1;

	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 0);
	fclose(f);
	return v;
}

/*
 * The PCI bus ids of the AMD and NVIDIA devices that have a node in
 * /dev/dri, each once, into @ids (room for MAX_GPUS); returns how many.
 */
static int drm_bus_ids(char ids[][AGILE_GPU_BUS_ID_LEN])
{
	DIR *d = opendir("/dev/dri");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < MAX_GPUS) {
		char node[300], link[300], real[PATH_MAX], vendor[PATH_MAX + 8];
		const char *bus;
		struct stat st;
		long v;
		int i;

		if (strncmp(e->d_name, "card", 4) &&
		    strncmp(e->d_name, "renderD", 7))
			continue;
		snprintf(node, sizeof(node), "/dev/dri/%s", e->d_name);
		if (stat(node, &st) || !S_ISCHR(st.st_mode))
			continue;
		snprintf(link, sizeof(link), "/sys/dev/char/%u:%u/device",
			 major(st.st_rdev), minor(st.st_rdev));
		if (!realpath(link, real))
			continue;
		snprintf(vendor, sizeof(vendor), "%s/vendor", real);
		v = read_number(vendor);
		if (v != AGILE_GPU_VENDOR_AMD && v != AGILE_GPU_VENDOR_NVIDIA)
			continue;
		bus = strrchr(real, '/') + 1;
		for (i = 0; i < n && strcmp(ids[i], bus); i++)
			;
		if (i == n && strlen(bus) < AGILE_GPU_BUS_ID_LEN)
			strcpy(ids[n++], bus);
	}
	closedir(d);
	return n;
}

/* Entries of directory @path whose names pass @keep; 0 if none or absent. */
static int count_entries(const char *path,
			 int (*keep)(const char *dir, const char *name))
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.' && (!keep || keep(path, e->d_name));
	closedir(d);
	return n;
}

/* A KFD topology node that is a GPU (a CPU node's gpu_id is 0). */
static int kfd_gpu(const char *dir, const char *name)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%s/gpu_id", dir, name);
	return read_number(path) > 0;
}

/*
 * What the probe says of one vendor against what its driver lists: never
 * more usable than listed, and with the vendor's runtime loaded for them
 * as many (at most, when @visible_env hides some).
 */
static void check_usable(const struct agile_gpu_info *info, unsigned int nr,
			 uint32_t vendor, const char *name, int listed,
			 const char *visible_env)
{
	int usable = 0, runtime = 0;
	bool hidden = getenv(visible_env) != NULL;

	for (unsigned int i = 0; i < nr && i < MAX_GPUS; i++) {
		if (info[i].vendor != vendor)
			continue;
		usable += !!(info[i].flags & AGILE_GPU_USABLE);
		runtime |= !!(info[i].flags & AGILE_GPU_RUNTIME);
	}
	tap_ok(usable <= listed && (!runtime || hidden || usable == listed),
	       "%s: %d usable, the driver lists %d%s", name, usable, listed,
	       !runtime ? " (no runtime for them)" :
	       hidden	? " (some may be hidden)" :
			  "");
}

/* The probe's DRM entries are the machine's AMD/NVIDIA DRM devices. */
static void test_drm_entries(const struct agile_gpu_info *info, unsigned int nr)
{
	char want[MAX_GPUS][AGILE_GPU_BUS_ID_LEN];
	int nr_want = drm_bus_ids(want), nr_drm = 0, missing = 0, stray = 0;

	for (unsigned int i = 0; i < nr; i++) {
		int found = 0;

		/* Not a DRM device: then one a runtime counts, usable. */
		if (!(info[i].flags & AGILE_GPU_DRM)) {
			stray += !(info[i].flags & AGILE_GPU_USABLE);
			continue;
		}
		nr_drm++;
		for (int k = 0; k < nr_want; k++)
			found |= !strcmp(want[k], info[i].pci_bus_id);
		missing += !found;
	}
#ifdef AGILE_NO_DRM
	tap_ok(!nr_drm, "no libdrm in this build: no DRM entries (%d)", nr_drm);
#else
	tap_ok(nr_drm == nr_want && !missing,
	       "DRM entries: %d, the bus ids of the %d AMD/NVIDIA devices "
	       "behind /dev/dri",
	       nr_drm, nr_want);
#endif
	tap_ok(!stray,
	       "every other entry is a device a runtime counts (%d are not)",
	       stray);
}

static void test_probe(int *usable)
{
	struct agile_gpu_info info[MAX_GPUS];
	unsigned int nr = 12345, nr0 = 0;
	int err;

	tap_ok(agile_gpu_probe(info, MAX_GPUS, NULL) == -EINVAL &&
		       agile_gpu_probe(NULL, 1, &nr) == -EINVAL,
	       "probe: NULL count, or NULL array with room: -EINVAL");
	err = agile_gpu_probe(NULL, 0, &nr0);
	tap_ok(!err, "probe with no array counts only: %u GPUs", nr0);
	err = agile_gpu_probe(info, MAX_GPUS, &nr);
	tap_ok(!err && nr == nr0, "probe: %s, %u GPUs", agile_strerror(err),
	       nr);
	*usable = 0;
	for (unsigned int i = 0; !err && i < nr && i < MAX_GPUS; i++) {
		tap_diag("gpu %u: vendor 0x%04x %s bus %s flags 0x%x", i,
			 info[i].vendor, info[i].name,
			 info[i].pci_bus_id[0] ? info[i].pci_bus_id : "-",
			 info[i].flags);
		*usable |= !!(info[i].flags & AGILE_GPU_USABLE);
	}
	tap_ok(agile_gpu_available() == *usable,
	       "agile_gpu_available agrees with the probe: %d", *usable);
	if (err || nr > MAX_GPUS)
		return;
	test_drm_entries(info, nr);
	check_usable(info, nr, AGILE_GPU_VENDOR_NVIDIA, "NVIDIA",
		     count_entries("/proc/driver/nvidia/gpus", NULL),
		     "CUDA_VISIBLE_DEVICES");
	check_usable(info, nr, AGILE_GPU_VENDOR_AMD, "AMD",
		     count_entries("/sys/class/kfd/kfd/topology/nodes",
				   kfd_gpu),
		     getenv("HIP_VISIBLE_DEVICES") ? "HIP_VISIBLE_DEVICES" :
						     "ROCR_VISIBLE_DEVICES");
}

/* Runs create on a pool with @flags, stderr into a pipe; returns stderr. */
static int create_captured(struct agile_dev *dev, struct agile_kernels *reg,
			   uint32_t flags, struct agile_eu_pool **pool,
			   char *text, size_t len)
{
	struct agile_eu_pool_opts o;
	int fds[2], saved, err;
	ssize_t n;

	agile_eu_pool_opts_init(&o);
	o.nr_eus = 1;
	o.flags = flags;
	if (pipe2(fds, O_NONBLOCK))
		return -errno;
	fflush(stderr);
	saved = dup(2);
	dup2(fds[1], 2);
	err = agile_eu_pool_create(dev, reg, &o, pool);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fds[1]);
	n = read(fds[0], text, len - 1);
	text[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	return err;
}

static void test_fallback(struct agile_dev *dev, struct agile_kernels *reg)
{
	struct agile_eu_pool_info info;
	struct agile_eu_pool_opts o;
	struct agile_eu_pool *pool;
	char text[1024];
	int err;

	agile_eu_pool_opts_init(&o);
	o.flags = AGILE_EU_POOL_GPU | AGILE_EU_POOL_AUTO;
	tap_ok(agile_eu_pool_create(dev, reg, &o, &pool) == -EINVAL,
	       "GPU and AUTO together: -EINVAL");
	o.flags = 1u << 7;
	tap_ok(agile_eu_pool_create(dev, reg, &o, &pool) == -EINVAL,
	       "an unknown flag: -EINVAL");

	/* Plain CPU pool: no fallback, nothing said. */
	err = create_captured(dev, reg, 0, &pool, text, sizeof(text));
	tap_ok(!err && !agile_eu_pool_info(pool, &info) &&
		       info.kind == AGILE_EU_KIND_CPU && !info.fallback &&
		       !info.reason[0] && !text[0],
	       "a CPU pool: CPU EUs, no fallback, nothing on stderr");
	agile_eu_pool_destroy(pool);
	tap_ok(agile_eu_pool_info(NULL, &info) == -EINVAL,
	       "pool info of NULL: -EINVAL");

	setenv("AGILE_QUIET", "1", 1);
	err = create_captured(dev, reg, AGILE_EU_POOL_GPU, &pool, text,
			      sizeof(text));
	tap_ok(!err && !agile_eu_pool_info(pool, &info) &&
		       info.kind == AGILE_EU_KIND_CPU && info.fallback &&
		       info.reason[0] && !text[0],
	       "GPU asked for, AGILE_QUIET=1: CPU EUs, reason recorded, "
	       "nothing on stderr");
	tap_diag("reason: %s", info.reason);
	agile_eu_pool_destroy(pool);
	unsetenv("AGILE_QUIET");

	err = create_captured(dev, reg, AGILE_EU_POOL_AUTO, &pool, text,
			      sizeof(text));
	tap_ok(!err && !agile_eu_pool_info(pool, &info) &&
		       info.kind == AGILE_EU_KIND_CPU && info.fallback &&
		       strstr(text, "agile: ") &&
		       strstr(text, "using CPU execution units") &&
		       strstr(text, info.reason) && !strchr(text, '\n')[1],
	       "AUTO: CPU EUs, one line on stderr naming the reason");
	text[strcspn(text, "\n")] = '\0';
	tap_diag("stderr: %s", text);
	agile_eu_pool_destroy(pool);

	err = create_captured(dev, reg, AGILE_EU_POOL_GPU, &pool, text,
			      sizeof(text));
	tap_ok(!err && !agile_eu_pool_info(pool, &info) && info.fallback &&
		       !text[0],
	       "a second fallback in the process: nothing said again");
	agile_eu_pool_destroy(pool);
}

int main(void)
{
	struct agile_kernels *reg;
	struct agile_dev_opts o;
	struct agile_dev *dev;
	int usable, err;

	test_probe(&usable);
	if (usable) {
		/* The fallback is what is tested below: ask for it. */
		tap_diag(
			"a usable GPU: the fallback through AGILE_EU_POOL=cpu");
		setenv("AGILE_EU_POOL", "cpu", 1);
	}

	agile_kernels_create(&reg);
	agile_dev_opts_init(&o);
	o.nr_slots = 2;
	err = agile_dev_open(&o, &dev);
	if (!tap_ok(!err, "open a context: %s", agile_strerror(err)))
		return tap_done();
	test_fallback(dev, reg);
	tap_ok(agile_dev_close(dev) == 0 && agile_kernels_destroy(reg) == 0,
	       "close the context, free the registry");
	return tap_done();
}
