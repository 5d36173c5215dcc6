// SPDX-License-Identifier: MIT
/*
 * create_stub.c - TEMPORARY, deleted at the merge with the segmap core:
 * stands in for the core's segmap_create (scope.h), so that the scopes'
 * public constructors link before the core exists.  Keeping both would
 * fail libagile.so's link (two definitions), so it cannot be forgotten.
 */
#include <errno.h>

#include "segmap/scope.h"

int segmap_create(struct segmap_scope *scope, struct agile_sched *pool,
		  struct agile_segmap **out)
{
	(void)pool;
	(void)out;
	if (scope)
		scope->ops->destroy(scope);
	return -ENOSYS;
}
