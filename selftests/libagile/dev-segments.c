// SPDX-License-Identifier: MIT
/*
 * dev-segments - data segments of a context (agile_dev_seg_create and
 * agile_dev_seg_map), on each backend: ids from 0 in creation order,
 * page-aligned zeroed pages, a second map returns the same address,
 * another size or an unknown id is -EINVAL, a 65th segment and an
 * oversized one -ENOSPC; threads creating and mapping at once get
 * distinct ids and one address per id; in a group, a segment made by one
 * process is mapped by another with the same id and the same bytes.
 *
 * Backends: $AGILE_BACKEND alone when it is set, else user and, where
 * /dev/agile exists, kmod.
 */
#define _GNU_SOURCE
#include <agile/dev.h>
#include <agile/error.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "testutil.h"

#define LONG_NS (20ULL * 1000 * 1000 * 1000)
#define NR_THREADS 4
#define SEGS_PER_THREAD 6

static const char *be;
static int backend;
static size_t page;

static int open_dev(struct agile_dev **dev)
{
	struct agile_dev_opts o;

	agile_dev_opts_init(&o);
	o.nr_slots = 2;
	o.backend = (uint32_t)backend;
	return agile_dev_open(&o, dev);
}

static int all_zero(const unsigned char *p, size_t bytes)
{
	for (size_t i = 0; i < bytes; i++)
		if (p[i])
			return 0;
	return 1;
}

/* Returns 0 if the backend has no segments (a SKIP was printed). */
static int test_context(struct agile_dev *dev)
{
	static const size_t sizes[] = { 1, 4096, 10000, 1 << 20 };
	void *addr[4], *again;
	uint32_t id;
	int err, ok = 1;

	for (uint32_t i = 0; i < 4; i++) {
		err = agile_dev_seg_create(dev, sizes[i], &id, &addr[i]);
		if (err == -EOPNOTSUPP && i == 0) {
			tap_skip("segments", "%s: no SEG_CREATE", be);
			return 0;
		}
		ok &= !err && id == i && !((uintptr_t)addr[i] % page) &&
		      all_zero(addr[i], sizes[i]);
		if (!err)
			memset(addr[i], 0x5a, sizes[i]);
	}
	tap_ok(ok, "%s: 4 segments: ids 0..3, page aligned, zeroed, writable",
	       be);
	ok = 1;
	for (uint32_t i = 0; i < 4; i++) {
		err = agile_dev_seg_map(dev, i, sizes[i], &again);
		ok &= !err && again == addr[i];
	}
	tap_ok(ok, "%s: mapping them again gives the same addresses", be);
	tap_ok(agile_dev_seg_map(dev, 2, 10000 + 2 * page, &again) == -EINVAL &&
		       agile_dev_seg_map(dev, 3, 4096, &again) == -EINVAL,
	       "%s: another size: -EINVAL", be);
	tap_ok(agile_dev_seg_map(dev, 4, 4096, &again) == -EINVAL &&
		       agile_dev_seg_map(dev, AGILE_MAX_SEGMENTS, 4096,
					 &again) == -EINVAL &&
		       agile_dev_seg_map(dev, UINT32_MAX, 4096, &again) ==
			       -EINVAL,
	       "%s: unknown ids: -EINVAL", be);
	tap_ok(agile_dev_seg_create(dev, 0, &id, &again) == -EINVAL &&
		       agile_dev_seg_create(dev, 1, NULL, &again) == -EINVAL &&
		       agile_dev_seg_create(dev, 1, &id, NULL) == -EINVAL &&
		       agile_dev_seg_create(NULL, 1, &id, &again) == -EINVAL &&
		       agile_dev_seg_map(dev, 0, 0, &again) == -EINVAL &&
		       agile_dev_seg_map(dev, 0, 1, NULL) == -EINVAL &&
		       agile_dev_seg_map(NULL, 0, 1, &again) == -EINVAL,
	       "%s: 0 bytes, NULL arguments: -EINVAL", be);
	err = agile_dev_seg_create(dev, (size_t)1 << 40, &id, &again);
	tap_ok(err == -ENOSPC, "%s: a 1 TiB segment: -ENOSPC (%s)", be,
	       agile_strerror(err));
	ok = 1;
	for (uint32_t i = 4; i < AGILE_MAX_SEGMENTS; i++) {
		err = agile_dev_seg_create(dev, page, &id, &again);
		ok &= !err && id == i;
	}
	tap_ok(ok, "%s: segments up to %d", be, AGILE_MAX_SEGMENTS);
	err = agile_dev_seg_create(dev, page, &id, &again);
	tap_ok(err == -ENOSPC, "%s: segment %d: -ENOSPC (%s)", be,
	       AGILE_MAX_SEGMENTS + 1, agile_strerror(err));
	ok = 1;
	for (uint32_t i = 0; i < 4; i++)
		for (size_t b = 0; b < sizes[i]; b++)
			ok &= ((unsigned char *)addr[i])[b] == 0x5a;
	tap_ok(ok, "%s: the first segments kept their bytes", be);
	return 1;
}

struct thread_arg {
	struct agile_dev *dev;
	uint32_t ids[SEGS_PER_THREAD];
	void *addrs[SEGS_PER_THREAD];
	int err;
	int mismatches;
};

/* Create segments, and map every id so far, in parallel with others. */
static void *thread_main(void *p)
{
	struct thread_arg *a = p;
	void *addr;

	for (int i = 0; i < SEGS_PER_THREAD && !a->err; i++) {
		a->err = agile_dev_seg_create(a->dev, page, &a->ids[i],
					      &a->addrs[i]);
		for (uint32_t id = 0; id < NR_THREADS * SEGS_PER_THREAD; id++) {
			if (agile_dev_seg_map(a->dev, id, page, &addr))
				continue; /* not made yet */
			/* Our own segments come back at our address. */
			for (int j = 0; j <= i; j++)
				if (id == a->ids[j] && addr != a->addrs[j])
					a->mismatches++;
			/* Touch it: a racy second mapping would be unmapped. */
			__atomic_fetch_add((unsigned char *)addr + 1, 1,
					   __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void test_threads(void)
{
	struct thread_arg args[NR_THREADS];
	pthread_t threads[NR_THREADS];
	uint64_t seen = 0;
	struct agile_dev *dev;
	int bad = 0;

	if (open_dev(&dev))
		return;
	for (int t = 0; t < NR_THREADS; t++) {
		memset(&args[t], 0, sizeof(args[t]));
		args[t].dev = dev;
		pthread_create(&threads[t], NULL, thread_main, &args[t]);
	}
	for (int t = 0; t < NR_THREADS; t++) {
		pthread_join(threads[t], NULL);
		bad += args[t].err != 0 || args[t].mismatches;
		for (int i = 0; i < SEGS_PER_THREAD; i++) {
			if (args[t].ids[i] >= 64 || seen >> args[t].ids[i] & 1)
				bad++;
			seen |= 1ULL << (args[t].ids[i] & 63);
		}
	}
	tap_ok(!bad && seen == (1ULL << (NR_THREADS * SEGS_PER_THREAD)) - 1,
	       "%s: %d threads create and map at once: ids 0..%d, each once, one address each",
	       be, NR_THREADS, NR_THREADS * SEGS_PER_THREAD - 1);
	agile_dev_close(dev);
}

/* ---- a group: segments across processes ---- */

#define SEG0_BYTES (3 * 4096 + 5)
#define SEG1_BYTES 70000

static int join(uint64_t key, uint32_t flags, struct agile_dev **dev)
{
	struct agile_dev_group_opts o;

	agile_dev_group_opts_init(&o);
	o.dev.nr_slots = 2;
	o.dev.backend = (uint32_t)backend;
	o.key = key;
	o.max_members = 2;
	o.flags = flags;
	return agile_dev_group_join(&o, dev);
}

static int fill_check(const unsigned char *p, size_t bytes, unsigned char v)
{
	for (size_t i = 0; i < bytes; i++)
		if (p[i] != (unsigned char)(v + i))
			return 0;
	return 1;
}

static void fill(unsigned char *p, size_t bytes, unsigned char v)
{
	for (size_t i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v + i);
}

/*
 * The other member: map segment 0 and check it, make segment 1, tell
 * the creator on slot 0, stay until slot 1 says done.
 */
static int member_main(uint64_t key)
{
	struct agile_dev *dev;
	void *seg0, *again, *seg1;
	uint32_t id;
	int err;

	err = join(key, 0, &dev);
	if (err)
		return err;
	err = agile_dev_seg_map(dev, 0, SEG0_BYTES, &seg0);
	if (!err && !fill_check(seg0, SEG0_BYTES, 1))
		err = -EBADMSG;
	if (!err &&
	    (agile_dev_seg_map(dev, 0, SEG0_BYTES, &again) || again != seg0))
		err = -EADDRINUSE;
	if (!err &&
	    agile_dev_seg_map(dev, 0, SEG0_BYTES + 2 * 4096, &again) != -EINVAL)
		err = -EPROTO;
	if (!err && agile_dev_seg_map(dev, 1, SEG1_BYTES, &again) != -EINVAL)
		err = -ENOTUNIQ; /* segment 1 does not exist yet */
	if (!err)
		err = agile_dev_seg_create(dev, SEG1_BYTES, &id, &seg1);
	if (!err && id != 1)
		err = -EBADSLT;
	if (!err) {
		fill(seg1, SEG1_BYTES, 2);
		/* Release: the bytes before the doorbell. */
		err = agile_dev_signal(dev, 0, 1);
	}
	if (!err)
		err = agile_dev_wait_spin(dev, 1, AGILE_CMP_EQ, 1, 0, LONG_NS,
					  NULL);
	agile_dev_close(dev);
	return err;
}

static void test_group(void)
{
	uint64_t key = 0x5e6000000000000ULL ^ ((uint64_t)getpid() << 8);
	struct agile_dev *dev;
	void *seg0, *seg1;
	int err, status;
	uint32_t id;
	pid_t pid;

	err = join(key, AGILE_DEV_GROUP_CREATE | AGILE_DEV_GROUP_EXCL, &dev);
	if (err == -EOPNOTSUPP) {
		tap_skip("group segments", "%s: the module has no groups", be);
		return;
	}
	if (!tap_ok(!err, "%s: create a group of 2: %s", be,
		    agile_strerror(err)))
		return;
	err = agile_dev_seg_create(dev, SEG0_BYTES, &id, &seg0);
	if (!tap_ok(!err && id == 0, "%s: group segment 0: %s", be,
		    agile_strerror(err))) {
		agile_dev_close(dev);
		return;
	}
	fill(seg0, SEG0_BYTES, 1);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		alarm(60);
		_exit(-member_main(key) & 0xff);
	}
	/* Acquire of 1 pairs with the member's release. */
	err = agile_dev_wait_spin(dev, 0, AGILE_CMP_EQ, 1, 0, LONG_NS, NULL);
	tap_ok(!err, "%s: the other process mapped segment 0 and made 1: %s",
	       be, agile_strerror(err));
	if (!err) {
		err = agile_dev_seg_map(dev, 1, SEG1_BYTES, &seg1);
		tap_ok(!err && fill_check(seg1, SEG1_BYTES, 2),
		       "%s: segment 1, made by the other process, mapped here with its bytes: %s",
		       be, agile_strerror(err));
	}
	agile_dev_signal(dev, 1, 1);
	status = -1;
	if (waitpid(pid, &status, 0) == pid && WIFEXITED(status))
		status = WEXITSTATUS(status);
	tap_ok(status == 0, "%s: the other member's checks (%d: %s)", be,
	       status, status > 0 ? strerror(status) : "");
	agile_dev_close(dev);
}

static void test_backend(int which)
{
	struct agile_dev *dev;
	int err;

	backend = which;
	be = agile_dev_backend_name(which);
	err = open_dev(&dev);
	if (!tap_ok(!err, "%s: open a context: %s", be, agile_strerror(err)))
		return;
	err = test_context(dev);
	agile_dev_close(dev);
	if (!err)
		return;
	test_threads();
	test_group();
}

int main(void)
{
	alarm(240);
	page = (size_t)sysconf(_SC_PAGESIZE);
	run_backends(test_backend);
	return tap_done();
}
