// SPDX-License-Identifier: MIT
/*
 * coll-procs-heap - the heap of agile_coll_alloc, on each backend: a group of
 * one gets 2 x max_bytes of 64-byte aligned blocks, then NULL; freed
 * memory is used again and freed neighbours merge.
 */
#define _GNU_SOURCE

#include "colltest.h"
#include "tap.h"
#include "collprocs.h"

/* One member: the heap of agile_coll_alloc in the exchange area. */
static void heap(void)
{
	struct agile_coll_opts o;
	struct agile_coll *coll;
	void *a, *b, *c, *a2;
	int err;

	opts_for(&o, 2, 0, 4096);
	err = agile_coll_procs_join(ct_random_key(), 1, &o, JOIN_NS, &coll);
	if (!tap_ok(!err, "%s: a group of one (%s)", be, agile_strerror(err)))
		return;
	a = agile_coll_alloc(coll, 4096);
	b = agile_coll_alloc(coll, 4096);
	c = agile_coll_alloc(coll, 64);
	tap_ok(a && b && !c && ((uintptr_t)a & 63) == 0,
	       "%s: agile_coll_alloc: 2 x max_bytes, then NULL", be);
	agile_coll_free(coll, a);
	a2 = agile_coll_alloc(coll, 1000);
	c = agile_coll_alloc(coll, 3000);
	tap_ok(a2 == a && c && (char *)c == (char *)a + 1024,
	       "%s: freed heap memory is used again", be);
	agile_coll_free(coll, a2);
	agile_coll_free(coll, c);
	agile_coll_free(coll, b);
	a = agile_coll_alloc(coll, 8192);
	tap_ok(a != NULL, "%s: freed blocks merge", be);
	agile_coll_free(coll, a);
	tap_ok(agile_coll_destroy(coll) == 0, "%s: destroy", be);
}

static void run_backend(bool quick)
{
	(void)quick;
	heap();
}

int main(void)
{
	return cp_main(run_backend);
}
