// SPDX-License-Identifier: MIT
/*
 * scope_threads.c - the threads scope of scope.h: every node lives in
 * this process, a node's home memory is heap, a get or put is a memcpy,
 * and there is one process to agree with.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "segmap/segmap_impl.h"

struct segmap_home {
	uint32_t nr_nodes;
	unsigned char *mem[];
};

static int threads_home_alloc(struct segmap_scope *sc, const uint64_t *bytes,
			      struct segmap_home **out)
{
	struct segmap_home *h;

	h = calloc(1, sizeof(*h) + sc->nr_nodes * sizeof(h->mem[0]));
	if (!h)
		return -ENOMEM;
	h->nr_nodes = sc->nr_nodes;
	for (uint32_t q = 0; q < sc->nr_nodes; q++) {
		/* at least a byte: NULL means "not addressable here" */
		h->mem[q] = bytes[q] <= SIZE_MAX ?
				    calloc(1, bytes[q] ? (size_t)bytes[q] : 1) :
				    NULL;
		if (!h->mem[q]) {
			while (q--)
				free(h->mem[q]);
			free(h);
			return -ENOMEM;
		}
	}
	*out = h;
	return 0;
}

static void threads_home_free(struct segmap_scope *sc, struct segmap_home *h)
{
	(void)sc;
	for (uint32_t q = 0; q < h->nr_nodes; q++)
		free(h->mem[q]);
	free(h);
}

static void *threads_home_addr(struct segmap_home *h, uint32_t node)
{
	return node < h->nr_nodes ? h->mem[node] : NULL;
}

static int threads_home_get(struct segmap_home *h, uint32_t node, uint64_t off,
			    void *dst, size_t bytes)
{
	memcpy(dst, h->mem[node] + off, bytes);
	return 0;
}

static int threads_home_put(struct segmap_home *h, uint32_t node, uint64_t off,
			    const void *src, size_t bytes)
{
	memcpy(h->mem[node] + off, src, bytes);
	return 0;
}

static int threads_barrier(struct segmap_scope *sc)
{
	(void)sc;
	return 0;
}

static int threads_agree(struct segmap_scope *sc, int err)
{
	(void)sc;
	return err;
}

static int threads_allreduce(struct segmap_scope *sc, const void *send,
			     void *recv, size_t count,
			     enum agile_coll_type type, enum agile_coll_op op)
{
	size_t size = agile_coll_type_size(type);

	(void)sc;
	(void)op;
	if (!size)
		return -EINVAL;
	if (send != recv)
		memmove(recv, send, count * size);
	return 0;
}

static void threads_destroy(struct segmap_scope *sc)
{
	free(sc);
}

static const struct segmap_scope_ops threads_ops = {
	.name = "threads",
	.home_alloc = threads_home_alloc,
	.home_free = threads_home_free,
	.home_addr = threads_home_addr,
	.home_get = threads_home_get,
	.home_put = threads_home_put,
	.barrier = threads_barrier,
	.agree = threads_agree,
	.allreduce = threads_allreduce,
	.destroy = threads_destroy,
};

int segmap_scope_threads(uint32_t nr_nodes, struct segmap_scope **out)
{
	struct segmap_scope *sc;

	if (!out || nr_nodes < 1 || nr_nodes > AGILE_SEGMAP_MAX_NODES)
		return -EINVAL;
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	sc->ops = &threads_ops;
	sc->kind = AGILE_NODE_CPU;
	sc->nr_nodes = nr_nodes;
	sc->self = UINT32_MAX;
	*out = sc;
	return 0;
}
