/* SPDX-License-Identifier: MIT */
/*
 * tasks.h - agile tasks more than one benchmark runs, declared once
 * (AGILE_TASK_DECL) and defined in one file.
 */
#ifndef AGILE_BENCH_TASKS_H
#define AGILE_BENCH_TASKS_H

#include <agile/sched.h>
#include <stdint.h>

/* fib(n), every call a spawn: defined in fib.c, run by interference.c too. */
AGILE_TASK_DECL(int64_t, fib, int);

#endif /* AGILE_BENCH_TASKS_H */
