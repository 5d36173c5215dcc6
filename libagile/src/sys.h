/* SPDX-License-Identifier: MIT */
/*
 * sys.h - the machine-level primitives the library's layers share: a
 * spin-loop hint, the private futex system call, the monotonic clock and
 * the number of CPUs the process may use (sys.c).  Private header.
 */
#ifndef AGILE_SRC_SYS_H
#define AGILE_SRC_SYS_H

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Tell the core we are spinning (x86 PAUSE, arm64 YIELD). */
static inline void agile_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

/*
 * futex(2) on a 32-bit word of this process (FUTEX_PRIVATE_FLAG is
 * added).  @word may point at an _Atomic uint32_t or a plain one.
 */
static inline long agile_futex(void *word, int op, uint32_t val,
			       const struct timespec *timeout, uint32_t val3)
{
	return syscall(SYS_futex, (uint32_t *)word, op | FUTEX_PRIVATE_FLAG,
		       val, timeout, NULL, val3);
}

/* CLOCK_MONOTONIC in nanoseconds: deadlines and spin budgets. */
static inline uint64_t agile_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * The CPUs this process may use: those of its affinity mask, at most the
 * CPU quota of its cgroup or of any ancestor (rounded up: 1.5 CPUs' time
 * is 2); at least 1.  Read anew at each call: what sizes a pool.
 */
uint32_t agile_sys_cpus(void);

/*
 * The quota part alone, from the given mountinfo and cgroup files (the
 * formats of /proc/self/mountinfo and /proc/self/cgroup): the fewest
 * whole CPUs any cgroup of this process or its ancestors may use, cgroup
 * v2 (cpu.max) or v1 (cpu.cfs_quota_us); 0 where none is limited.
 */
uint32_t agile_sys_cpu_quota_at(const char *mountinfo, const char *cgroup_file);

#endif /* AGILE_SRC_SYS_H */
