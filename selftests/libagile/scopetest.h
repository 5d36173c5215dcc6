/* SPDX-License-Identifier: MIT */
/*
 * scopetest.h - the checks the cross-process segmap scopes share
 * (segmap-procs-scope, segmap-mpi-scope): run by every process of a scope
 * (one node each), in the same order, through the scope's ops alone
 * (libagile/src/segmap/scope.h).  Each check returns 0 or a negative
 * errno (-EBADMSG for wrong bytes) and says what failed in @why.
 */
#ifndef AGILE_SCOPETEST_H
#define AGILE_SCOPETEST_H

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "segmap/scope.h"

#define ST_WHY 200
#define ST_THREADS 4
#define ST_LOOPS 150 /* alloc/free pairs: more than the 64 segments */

static inline __attribute__((format(printf, 3, 4))) int
st_fail(char *why, int err, const char *fmt, ...)
{
	va_list ap;
	int used;

	used = snprintf(why, ST_WHY, "err %d: ", err);
	va_start(ap, fmt);
	vsnprintf(why + used, ST_WHY - (size_t)used, fmt, ap);
	va_end(ap);
	return err ? err : -EBADMSG;
}

/* Byte @i of node @q's home in round @round. */
static inline uint8_t st_byte(uint32_t q, uint64_t i, uint32_t round)
{
	return (uint8_t)(q * 37 + i * 7 + round * 11 + 1);
}

/* Home sizes: uneven, not whole pages, one node (of 3 or more) empty. */
static inline void st_sizes(uint32_t n, uint32_t round, uint64_t *bytes)
{
	for (uint32_t q = 0; q < n; q++)
		bytes[q] = n > 2 && q == 1 ?
				   0 :
				   3000 + q * 5003 + (round % 3) * 4099;
}

/* Can this process address node @q's home directly? */
static inline bool st_addressable(const struct segmap_scope *sc, uint32_t q)
{
	return sc->kind == AGILE_NODE_PROC || q == sc->self;
}

/* Fill this node's own home with round @round's bytes, as its owner. */
static inline int st_fill_own(struct segmap_scope *sc, struct segmap_home *h,
			      const uint64_t *bytes, uint32_t round, char *why)
{
	uint8_t *own = sc->ops->home_addr(h, sc->self);

	if (!own)
		return st_fail(why, 0, "home_addr(self) is NULL");
	for (uint64_t i = 0; i < bytes[sc->self]; i++) {
		if (own[i])
			return st_fail(why, 0, "own home not zeroed at %llu",
				       (unsigned long long)i);
		own[i] = st_byte(sc->self, i, round);
	}
	return 0;
}

/* home_get node @q's whole home and check round @round's bytes. */
static inline int st_check_node(struct segmap_scope *sc, struct segmap_home *h,
				const uint64_t *bytes, uint32_t q,
				uint32_t round, uint8_t *buf, char *why)
{
	int err = sc->ops->home_get(h, q, 0, buf, bytes[q]);

	if (err)
		return st_fail(why, err, "home_get of node %u", q);
	for (uint64_t i = 0; i < bytes[q]; i++)
		if (buf[i] != st_byte(q, i, round))
			return st_fail(why, 0, "node %u byte %llu: %u", q,
				       (unsigned long long)i, buf[i]);
	return 0;
}

struct st_getter {
	struct segmap_scope *sc;
	struct segmap_home *h;
	const uint64_t *bytes;
	uint32_t first;
	int err;
	char why[ST_WHY];
};

/* A worker's gets of every node's home, from @first on, twice around. */
static inline void *st_getter_main(void *p)
{
	struct st_getter *g = p;
	uint32_t n = g->sc->nr_nodes;
	uint8_t *buf = malloc(64 << 10);

	g->err = buf ? 0 : -ENOMEM;
	for (uint32_t k = 0; !g->err && k < 2 * n; k++)
		g->err = st_check_node(g->sc, g->h, g->bytes,
				       (g->first + k) % n, 0, buf, g->why);
	free(buf);
	return NULL;
}

/* Every node's home read back, in part, and by several threads at once. */
static inline int st_check_all(struct segmap_scope *sc, struct segmap_home *h,
			       const uint64_t *bytes, uint8_t *buf, char *why)
{
	uint32_t n = sc->nr_nodes, next = (sc->self + 1) % n;
	struct st_getter g[ST_THREADS];
	pthread_t tid[ST_THREADS];
	uint8_t got[16];
	int err = 0, t;

	for (uint32_t q = 0; !err && q < n; q++) {
		err = st_check_node(sc, h, bytes, q, 0, buf, why);
		if (!err && !st_addressable(sc, q) != !sc->ops->home_addr(h, q))
			err = st_fail(why, 0, "home_addr of node %u", q);
	}
	/* Part of a home, and a span past its end. */
	if (!err && bytes[next] > 100) {
		err = sc->ops->home_get(h, next, 50, got, sizeof(got));
		for (uint64_t i = 0; !err && i < sizeof(got); i++)
			if (got[i] != st_byte(next, 50 + i, 0))
				err = st_fail(why, 0, "part of node %u", next);
		if (!err && sc->ops->home_get(h, next, bytes[next] - 8, got,
					      sizeof(got)) != -EINVAL)
			err = st_fail(why, 0,
				      "a get past the end is not EINVAL");
	}
	if (err)
		return err;
	for (t = 0; t < ST_THREADS; t++) {
		g[t] = (struct st_getter){ sc, h, bytes, (uint32_t)t, 0, "" };
		if (pthread_create(&tid[t], NULL, st_getter_main, &g[t])) {
			err = st_fail(why, -EAGAIN, "pthread_create");
			break;
		}
	}
	while (t--) {
		pthread_join(tid[t], NULL);
		if (g[t].err && !err) {
			err = g[t].err;
			memcpy(why, g[t].why, ST_WHY);
		}
	}
	return err;
}

/*
 * Homes of uneven sizes: own writes, gets by every node, from threads;
 * puts into the next node.  A node whose check fails still makes every
 * collective, so that the others' end (MPI has no -EPIPE).
 */
static inline int st_homes(struct segmap_scope *sc, char *why)
{
	uint32_t n = sc->nr_nodes, self = sc->self;
	uint32_t next = (self + 1) % n, prev = (self + n - 1) % n;
	uint64_t bytes[AGILE_SEGMAP_MAX_NODES];
	struct segmap_home *h;
	uint8_t *buf = malloc(64 << 10);
	uint8_t stamp[16], got[16];
	int err, bad;

	if (!buf)
		return -ENOMEM;
	st_sizes(n, 0, bytes);
	err = sc->ops->home_alloc(sc, bytes, &h);
	if (err) {
		free(buf);
		return st_fail(why, err, "home_alloc");
	}
	bad = st_fill_own(sc, h, bytes, 0, why);
	err = sc->ops->barrier(sc);
	if (!err && !bad)
		bad = st_check_all(sc, h, bytes, buf, why);
	if (!err)
		err = sc->ops->barrier(sc);
	/* A put into the next node's home; the barrier; it checks. */
	for (uint32_t i = 0; i < sizeof(stamp); i++)
		stamp[i] = (uint8_t)(0xa0 + self + i);
	if (!err && !bad && bytes[next] >= 32) {
		bad = sc->ops->home_put(h, next, 16, stamp, sizeof(stamp));
		if (bad)
			st_fail(why, bad, "home_put into node %u", next);
	}
	if (!err)
		err = sc->ops->barrier(sc);
	if (!err && !bad && bytes[self] >= 32 && bytes[prev]) {
		bad = sc->ops->home_get(h, self, 16, got, sizeof(got));
		for (uint32_t i = 0; !bad && i < sizeof(got); i++)
			if (got[i] != (uint8_t)(0xa0 + prev + i))
				bad = st_fail(why, 0, "node %u's put", prev);
	}
	if (err && !why[0])
		st_fail(why, err, "barrier");
	sc->ops->home_free(sc, h);
	free(buf);
	return err ? err : bad;
}

/* agree: everyone gets the most negative error, 0 when none. */
static inline int st_agree(struct segmap_scope *sc, char *why)
{
	uint32_t n = sc->nr_nodes, self = sc->self;
	int none, one, worst, err = 0;

	none = sc->ops->agree(sc, 0);
	one = sc->ops->agree(sc, self == n - 1 ? -ENOSPC : 0);
	worst = sc->ops->agree(sc, self == 0	 ? -EINVAL :
				   self == n - 1 ? -ENOSPC :
						   0);
	if (none)
		err = st_fail(why, none, "agree(0)");
	else if (one != -ENOSPC)
		err = st_fail(why, one, "agree: the last node's -ENOSPC");
	else if (worst != (n > 1 ? -ENOSPC : -EINVAL))
		err = st_fail(why, worst, "agree: the most negative");
	return err;
}

/* allreduce of a vector: sums; of a double: the maximum. */
static inline int st_allreduce(struct segmap_scope *sc, char *why)
{
	enum { COUNT = 3000 };
	uint32_t n = sc->nr_nodes, self = sc->self;
	int64_t v[COUNT], sum[COUNT];
	double dv = self * 1.5, dmax = 0;
	int err, err2;

	for (int i = 0; i < COUNT; i++)
		v[i] = (int64_t)self * 1000 + i;
	err = sc->ops->allreduce(sc, v, sum, COUNT, AGILE_COLL_INT64,
				 AGILE_COLL_SUM);
	err2 = sc->ops->allreduce(sc, &dv, &dmax, 1, AGILE_COLL_DOUBLE,
				  AGILE_COLL_MAX);
	if (err)
		return st_fail(why, err, "allreduce sum");
	for (int i = 0; i < COUNT; i++)
		if (sum[i] != (int64_t)n * i + 1000 * (int64_t)n * (n - 1) / 2)
			return st_fail(why, 0, "allreduce sum [%d]: %lld", i,
				       (long long)sum[i]);
	if (err2 || dmax != (n - 1) * 1.5)
		return st_fail(why, err2, "allreduce max: %g", dmax);
	return 0;
}

/*
 * Fields made and freed ST_LOOPS times, with one more alive throughout:
 * each zeroed, filled and read back by the next node.  Past 64 segments
 * in the group a scope that kept none would fail.  The nodes agree on
 * each round's result, so that all stop at a failure.
 */
static inline int st_loops(struct segmap_scope *sc, char *why)
{
	uint32_t n = sc->nr_nodes, next = (sc->self + 1) % n;
	uint64_t bytes[AGILE_SEGMAP_MAX_NODES];
	struct segmap_home *keep, *h;
	uint8_t *buf = malloc(64 << 10);
	int err, bad;

	if (!buf)
		return -ENOMEM;
	st_sizes(n, 1, bytes);
	err = sc->ops->home_alloc(sc, bytes, &keep);
	if (err) {
		free(buf);
		return st_fail(why, err, "home_alloc (kept)");
	}
	for (uint32_t r = 0; !err && r < ST_LOOPS; r++) {
		st_sizes(n, r, bytes);
		err = sc->ops->home_alloc(sc, bytes, &h);
		if (err) {
			st_fail(why, err, "home_alloc, round %u", r);
			break;
		}
		bad = st_fill_own(sc, h, bytes, r, why);
		err = sc->ops->barrier(sc);
		if (!err && !bad)
			bad = st_check_node(sc, h, bytes, next, r, buf, why);
		sc->ops->home_free(sc, h);
		if (!err)
			err = sc->ops->agree(sc, bad);
		if (err && !why[0])
			st_fail(why, err, "round %u", r);
	}
	sc->ops->home_free(sc, keep);
	free(buf);
	return err;
}

/* Every check, in order; every node stops after one's failure. */
static inline int st_all(struct segmap_scope *sc, char *why)
{
	int (*const step[])(struct segmap_scope *,
			    char *) = { st_homes, st_agree, st_allreduce,
					st_loops };
	int err = 0;

	for (size_t k = 0; !err && k < sizeof(step) / sizeof(*step); k++) {
		int mine = step[k](sc, why), all = sc->ops->agree(sc, mine);

		err = mine ? mine : all;
		if (err && !why[0])
			st_fail(why, err, "another node failed");
	}
	return err;
}

#endif /* AGILE_SCOPETEST_H */
