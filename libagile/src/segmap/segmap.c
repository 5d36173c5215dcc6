// SPDX-License-Identifier: MIT
/*
 * segmap.c - the segment map handle: a scope's Q compute nodes and the
 * pool their kernels run on.
 */
#include <errno.h>
#include <stdlib.h>

#include "segmap/segmap_impl.h"

int agile__segmap_create(struct segmap_scope *scope, struct agile_sched *pool,
			 struct agile_segmap **out)
{
	struct agile_segmap *sm;

	if (!scope)
		return -EINVAL;
	if (!out) {
		scope->ops->destroy(scope);
		return -EINVAL;
	}
	sm = calloc(1, sizeof(*sm));
	if (!sm) {
		scope->ops->destroy(scope);
		return -ENOMEM;
	}
	sm->scope = scope;
	sm->pool = pool;
	atomic_init(&sm->nr_fields, 0);
	*out = sm;
	return 0;
}

int agile_segmap_threads(uint32_t nr_nodes, struct agile_sched *pool,
			 struct agile_segmap **out)
{
	struct segmap_scope *scope;
	int err;

	segmap_why_clear();
	if (!out)
		return segmap_fail(-EINVAL, "segmap: NULL result");
	if (nr_nodes < 1 || nr_nodes > AGILE_SEGMAP_MAX_NODES)
		return segmap_fail(-EINVAL, "segmap: %u nodes is not 1..%u",
				   nr_nodes, AGILE_SEGMAP_MAX_NODES);
	err = segmap_scope_threads(nr_nodes, &scope);
	if (err)
		return err;
	return agile__segmap_create(scope, pool, out);
}

int agile_segmap_destroy(struct agile_segmap *sm)
{
	if (!sm)
		return -EINVAL;
	if (atomic_load_explicit(&sm->nr_fields, memory_order_relaxed))
		return -EBUSY;
	if (sm->queues)
		sm->scope->ops->home_free(sm->scope, sm->queues);
	sm->scope->ops->destroy(sm->scope);
	free(sm);
	return 0;
}

int agile_segmap_nr_nodes(const struct agile_segmap *sm)
{
	if (!sm)
		return -EINVAL;
	return (int)sm->scope->nr_nodes;
}

int agile_segmap_self(const struct agile_segmap *sm, uint32_t *node)
{
	if (!sm || !node)
		return -EINVAL;
	*node = sm->scope->self;
	return 0;
}

int agile_segmap_kind(const struct agile_segmap *sm)
{
	if (!sm)
		return -EINVAL;
	return sm->scope->kind;
}
