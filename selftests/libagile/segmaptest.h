/* SPDX-License-Identifier: MIT */
/*
 * segmaptest.h - what the segmap selftests share: rank-2 grids, extents
 * and indices in one line, and the check that a call failed with an
 * errno and a reason that names the fault.  Include tap.h first.
 */
#ifndef AGILE_SEGMAPTEST_H
#define AGILE_SEGMAPTEST_H

#include <agile/segmap.h>
#include <errno.h>
#include <string.h>

static inline struct agile_extent ext2(uint64_t n0, uint64_t n1)
{
	return (struct agile_extent){ .rank = 2, .n = { n0, n1 } };
}

static inline struct agile_index idx2(int64_t i0, int64_t i1)
{
	return (struct agile_index){ .rank = 2, .i = { i0, i1 } };
}

static inline struct agile_grid grid2(int64_t o0, int64_t o1, uint64_t n0,
				      uint64_t n1)
{
	return (struct agile_grid){ .extent = ext2(n0, n1),
				    .offset = idx2(o0, o1) };
}

static inline struct agile_proto proto(uint32_t kind, uint32_t nr_nodes)
{
	return (struct agile_proto){ .proto = kind, .nr_nodes = nr_nodes };
}

/* @err is @want and agile_segmap_why() says @word. */
static inline int failed_with(int err, int want, const char *word,
			      const char *what)
{
	const char *why = agile_segmap_why();

	return tap_ok(err == want && strstr(why, word), "%s: %d (want %d): %s",
		      what, err, want, why);
}

#endif /* AGILE_SEGMAPTEST_H */
