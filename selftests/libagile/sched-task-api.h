/* SPDX-License-Identifier: MIT */
/*
 * sched-task-api.h - a task declared in a header (AGILE_TASK_DECL) and
 * defined once, in sched-task-api-tasks.c, for sched-task-api.c.
 */
#ifndef AGILE_SCHED_TASK_API_H
#define AGILE_SCHED_TASK_API_H

#include <agile/sched.h>

/* fib(n) + k, every call a spawn: defined in another file. */
AGILE_TASK_DECL(int64_t, shared_fib, int, int64_t);
/* Adds @n to *@counter, then spawns itself for n - 1 and n - 2. */
AGILE_VOID_TASK_DECL(shared_touch, _Atomic int64_t *, int);

#endif /* AGILE_SCHED_TASK_API_H */
