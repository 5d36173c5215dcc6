// SPDX-License-Identifier: MIT
/*
 * gpu-probe - finding GPUs and falling back to CPU EUs: the probe's
 * argument checks and its answer (no usable GPU on the test machines and
 * in the guests: skipped where one is found); a pool asked for GPU EUs
 * (AGILE_EU_POOL_GPU, AGILE_EU_POOL_AUTO) starts CPU EUs, records why,
 * and says so on stderr once per process, not at all with AGILE_QUIET=1.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <agile/eu.h>
#include <agile/gpu.h>
#include <agile/kernels.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

#define MAX_GPUS 16

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
	if (usable)
		tap_skip("no usable GPU here", "a usable GPU was found");
	else
		tap_ok(1, "no usable GPU here");

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
