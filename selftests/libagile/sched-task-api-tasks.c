// SPDX-License-Identifier: MIT
/*
 * sched-task-api-tasks.c - the tasks sched-task-api.h declares, defined
 * here once (AGILE_TASK_IMPL) and spawned from sched-task-api.c.
 */
#include <stdatomic.h>

#include "sched-task-api.h"

AGILE_TASK_IMPL(int64_t, shared_fib, w, int, n, int64_t, k)
{
	int64_t a;

	if (n < 2)
		return n + k;
	AGILE_SPAWN(w, shared_fib, n - 1, 0);
	a = AGILE_CALL(w, shared_fib, n - 2, 0);
	return AGILE_SYNC(w, shared_fib) + a + k;
}

AGILE_VOID_TASK_IMPL(shared_touch, w, _Atomic int64_t *, counter, int, n)
{
	atomic_fetch_add(counter, n);
	if (n < 2)
		return;
	AGILE_SPAWN(w, shared_touch, counter, n - 1);
	AGILE_SPAWN(w, shared_touch, counter, n - 2);
	AGILE_SYNC_ALL(w);
}
