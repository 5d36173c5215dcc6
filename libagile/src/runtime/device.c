// SPDX-License-Identifier: MIT
/*
 * device.c - the capability table (one row per device that can host EUs)
 * and requirement matching, all-must-match or by score.
 */
#define _GNU_SOURCE
#include <agile/gpu.h>
#include <agile/runtime.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "eu/gpu_impl.h"
#include "runtime_impl.h"

/*
 * The process's table: built on first use, replaced only by the test hook.
 * Global because the devices are the machine's, as agile_gpu_probe's
 * answer is the process's.  @table_lock guards all three.
 */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct agile_rt_device_info table[AGILE_RT_MAX_DEVICES];
static uint32_t table_nr;
static bool table_built;

static const char cpu_extensions[] =
	"agile.doorbell agile.builtins agile.user-kernels agile.fp64";
static const char gpu_extensions[] = "agile.doorbell agile.builtins agile.fp64";

/* The value of "@key : value" in /proc/cpuinfo into @out, or leaves it. */
static void cpuinfo_field(const char *key, char *out, size_t len)
{
	char line[512];
	FILE *f = fopen("/proc/cpuinfo", "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!colon || strncmp(line, key, strlen(key)))
			continue;
		colon += 1 + strspn(colon + 1, " \t");
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(out, len, "%s", colon);
		break;
	}
	fclose(f);
}

static void cpu_row(struct agile_rt_device_info *d)
{
	struct utsname u;
	struct sysinfo si;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	memset(d, 0, sizeof(*d));
	d->type = AGILE_RT_DEVICE_CPU;
	snprintf(d->vendor, sizeof(d->vendor), "cpu");
	cpuinfo_field("vendor_id", d->vendor, sizeof(d->vendor));
	if (!uname(&u))
		snprintf(d->version, sizeof(d->version), "%.31s", u.machine);
	snprintf(d->name, sizeof(d->name), "%s", d->version);
	cpuinfo_field("model name", d->name, sizeof(d->name));
	d->units = cores > 0 ? (uint32_t)cores : 1;
	d->lanes = d->units;
	if (!sysinfo(&si))
		d->memory = (uint64_t)si.totalram * si.mem_unit;
	d->fp64 = 1;
	d->atomic_scope = AGILE_RT_ATOMIC_SYSTEM;
	d->coherent_host = 1;
	d->usable = 1;
	snprintf(d->extensions, sizeof(d->extensions), "%s", cpu_extensions);
}

/* A number from sysfs file @path's "@key value" line; 0 if none. */
static uint64_t sysfs_key(const char *path, const char *key)
{
	char line[256];
	unsigned long long v = 0;
	size_t klen = strlen(key);
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ' ') {
			v = strtoull(line + klen + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/*
 * AMD GPU @nth (counting the KFD topology's GPU nodes, which have a
 * gfx_target_version, in node order): its ISA, compute units and local
 * memory.  What it cannot find stays unknown ("" or 0).
 */
static void kfd_fill(unsigned int nth, struct agile_rt_device_info *d)
{
	const char *base = "/sys/class/kfd/kfd/topology/nodes";
	char path[256];
	unsigned int seen = 0;

	for (int node = 0; node < 64; node++) {
		uint64_t gfx, simds, per_cu;

		snprintf(path, sizeof(path), "%s/%d/properties", base, node);
		if (access(path, R_OK))
			break;
		gfx = sysfs_key(path, "gfx_target_version");
		if (!gfx || seen++ != nth)
			continue;
		snprintf(d->version, sizeof(d->version), "gfx%u%x%x",
			 (unsigned int)(gfx / 10000),
			 (unsigned int)((gfx / 100) % 100 & 0xf),
			 (unsigned int)(gfx % 100 & 0xf));
		simds = sysfs_key(path, "simd_count");
		per_cu = sysfs_key(path, "simd_per_cu");
		if (per_cu)
			d->units = (uint32_t)(simds / per_cu);
		snprintf(path, sizeof(path), "%s/%d/mem_banks/0/properties",
			 base, node);
		d->memory = sysfs_key(path, "size_in_bytes");
		return;
	}
}

static void gpu_row(const struct agile_gpu_info *g, unsigned int nth_amd,
		    struct agile_rt_device_info *d)
{
	memset(d, 0, sizeof(*d));
	d->type = AGILE_RT_DEVICE_GPU;
	snprintf(d->vendor, sizeof(d->vendor), "%s",
		 g->vendor == AGILE_GPU_VENDOR_AMD ? "amd" : "nvidia");
	snprintf(d->name, sizeof(d->name), "%s", g->name);
	if (g->vendor == AGILE_GPU_VENDOR_AMD)
		kfd_fill(nth_amd, d);
	/* Device 0 of its runtime (where GPU EUs run): the probe's ISA. */
	if (!d->version[0] && g->flags & AGILE_GPU_USABLE && !g->index)
		agile__gpu_arch(g->vendor, d->version, sizeof(d->version));
	d->lanes = d->units * AGILE_MAX_LANES;
	/*
	 * What GPU EUs need of any device they run on: doubles (the
	 * built-in kernels), system-scope atomics and coherent access to
	 * host-registered pages (the doorbells).
	 */
	d->fp64 = 1;
	d->atomic_scope = AGILE_RT_ATOMIC_SYSTEM;
	d->coherent_host = 1;
	d->usable = !!(g->flags & AGILE_GPU_USABLE);
	snprintf(d->extensions, sizeof(d->extensions), "%s", gpu_extensions);
}

/* Builds the table if needed.  Caller holds table_lock. */
static void table_build(void)
{
	struct agile_gpu_info gpus[AGILE_RT_MAX_DEVICES - 1];
	unsigned int nr_gpus = 0, amd = 0;

	if (table_built)
		return;
	cpu_row(&table[0]);
	table_nr = 1;
	if (agile_gpu_probe(gpus, AGILE_RT_MAX_DEVICES - 1, &nr_gpus))
		nr_gpus = 0;
	if (nr_gpus > AGILE_RT_MAX_DEVICES - 1)
		nr_gpus = AGILE_RT_MAX_DEVICES - 1;
	for (unsigned int i = 0; i < nr_gpus; i++) {
		gpu_row(&gpus[i], amd, &table[table_nr]);
		amd += gpus[i].vendor == AGILE_GPU_VENDOR_AMD;
		table_nr++;
	}
	for (uint32_t i = 0; i < table_nr; i++)
		table[i].id = i;
	table_built = true;
}

int agile__rt_devices_set(const struct agile_rt_device_info *rows, uint32_t nr)
{
	if (nr > AGILE_RT_MAX_DEVICES || (nr && !rows))
		return -EINVAL;
	pthread_mutex_lock(&table_lock);
	for (uint32_t i = 0; i < nr; i++) {
		table[i] = rows[i];
		table[i].id = i;
	}
	table_nr = nr;
	table_built = nr > 0;
	pthread_mutex_unlock(&table_lock);
	return 0;
}

int agile__rt_device_row(uint32_t id, struct agile_rt_device_info *info)
{
	int err = -ENODEV;

	pthread_mutex_lock(&table_lock);
	table_build();
	if (id < table_nr) {
		*info = table[id];
		err = 0;
	}
	pthread_mutex_unlock(&table_lock);
	return err;
}

int agile_rt_device_count(uint32_t *nr)
{
	if (!nr)
		return -EINVAL;
	pthread_mutex_lock(&table_lock);
	table_build();
	*nr = table_nr;
	pthread_mutex_unlock(&table_lock);
	return 0;
}

int agile_rt_device_info(uint32_t id, struct agile_rt_device_info *info)
{
	if (!info)
		return -EINVAL;
	return agile__rt_device_row(id, info);
}

static bool key_is_string(uint32_t key)
{
	return key == AGILE_RT_KEY_VENDOR || key == AGILE_RT_KEY_NAME ||
	       key == AGILE_RT_KEY_VERSION || key == AGILE_RT_KEY_EXTENSION;
}

static int req_check(const struct agile_rt_req *r)
{
	if (r->key < AGILE_RT_KEY_TYPE || r->key > AGILE_RT_KEY_EXTENSION ||
	    r->cmp < AGILE_RT_CMP_EQ || r->cmp > AGILE_RT_CMP_CONTAINS ||
	    r->flags & ~AGILE_RT_REQ_MUST)
		return -EINVAL;
	if (key_is_string(r->key))
		return r->str && (r->cmp == AGILE_RT_CMP_EQ ||
				  r->cmp == AGILE_RT_CMP_NE ||
				  r->cmp == AGILE_RT_CMP_CONTAINS) ?
			       0 :
			       -EINVAL;
	return r->cmp == AGILE_RT_CMP_CONTAINS ? -EINVAL : 0;
}

/* Whether @words (space-separated) holds the word @w. */
static bool has_word(const char *words, const char *w)
{
	size_t wlen = strlen(w);

	while (*words) {
		size_t len = strcspn(words, " ");

		if (len == wlen && !strncmp(words, w, len))
			return true;
		words += len;
		words += strspn(words, " ");
	}
	return false;
}

static bool str_meets(const char *field, const struct agile_rt_req *r)
{
	switch (r->cmp) {
	case AGILE_RT_CMP_EQ:
		return !strcmp(field, r->str);
	case AGILE_RT_CMP_NE:
		return strcmp(field, r->str) != 0;
	default:
		return strstr(field, r->str) != NULL;
	}
}

static bool num_meets(uint64_t v, const struct agile_rt_req *r)
{
	switch (r->cmp) {
	case AGILE_RT_CMP_EQ:
		return v == r->value;
	case AGILE_RT_CMP_NE:
		return v != r->value;
	case AGILE_RT_CMP_GE:
		return v >= r->value;
	case AGILE_RT_CMP_LE:
		return v <= r->value;
	case AGILE_RT_CMP_GT:
		return v > r->value;
	default:
		return v < r->value;
	}
}

static bool meets(const struct agile_rt_device_info *d,
		  const struct agile_rt_req *r)
{
	switch (r->key) {
	case AGILE_RT_KEY_TYPE:
		return num_meets(d->type, r);
	case AGILE_RT_KEY_VENDOR:
		return str_meets(d->vendor, r);
	case AGILE_RT_KEY_NAME:
		return str_meets(d->name, r);
	case AGILE_RT_KEY_VERSION:
		return str_meets(d->version, r);
	case AGILE_RT_KEY_LANES:
		return num_meets(d->lanes, r);
	case AGILE_RT_KEY_UNITS:
		return num_meets(d->units, r);
	case AGILE_RT_KEY_MEMORY:
		return num_meets(d->memory, r);
	case AGILE_RT_KEY_FP64:
		return num_meets(d->fp64, r);
	case AGILE_RT_KEY_ATOMIC_SCOPE:
		return num_meets(d->atomic_scope, r);
	case AGILE_RT_KEY_COHERENT_HOST:
		return num_meets(d->coherent_host, r);
	case AGILE_RT_KEY_USABLE:
		return num_meets(d->usable, r);
	default: /* AGILE_RT_KEY_EXTENSION */
		if (r->cmp == AGILE_RT_CMP_NE)
			return !has_word(d->extensions, r->str);
		return has_word(d->extensions, r->str);
	}
}

struct scored {
	uint32_t id;
	uint32_t type;
	uint64_t score;
};

/* Best score first, then GPUs before the CPU, then by id. */
static int by_score(const void *a, const void *b)
{
	const struct scored *x = a, *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->type != y->type)
		return x->type == AGILE_RT_DEVICE_GPU ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

int agile_rt_device_match(const struct agile_rt_req *reqs, uint32_t nr_reqs,
			  uint32_t mode, uint32_t *ids, uint32_t max,
			  uint32_t *nr)
{
	struct scored found[AGILE_RT_MAX_DEVICES];
	uint32_t nr_found = 0;

	if (!nr || (max && !ids) || (nr_reqs && !reqs) ||
	    (mode != AGILE_RT_MATCH_ALL && mode != AGILE_RT_MATCH_SCORE))
		return -EINVAL;
	for (uint32_t i = 0; i < nr_reqs; i++)
		if (req_check(&reqs[i]))
			return -EINVAL;
	pthread_mutex_lock(&table_lock);
	table_build();
	for (uint32_t d = 0; d < table_nr; d++) {
		uint64_t score = 0;
		bool all = true, out = false;

		for (uint32_t i = 0; i < nr_reqs; i++) {
			if (meets(&table[d], &reqs[i])) {
				score += reqs[i].weight ? reqs[i].weight : 1;
				continue;
			}
			all = false;
			out |= !!(reqs[i].flags & AGILE_RT_REQ_MUST);
		}
		if (mode == AGILE_RT_MATCH_ALL ? !all :
						 out || (nr_reqs && !score))
			continue;
		found[nr_found].id = d;
		found[nr_found].type = table[d].type;
		found[nr_found].score = score;
		nr_found++;
	}
	pthread_mutex_unlock(&table_lock);
	if (mode == AGILE_RT_MATCH_SCORE)
		qsort(found, nr_found, sizeof(found[0]), by_score);
	for (uint32_t i = 0; i < nr_found && i < max; i++)
		ids[i] = found[i].id;
	*nr = nr_found;
	return 0;
}
