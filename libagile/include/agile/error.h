/* SPDX-License-Identifier: MIT */
/*
 * agile/error.h - libagile's error codes and agile_strerror
 *
 * Every libagile call returns 0 or a negative number: a negative errno
 * (-EINVAL, -ETIMEDOUT, ...), or one of the library's own codes below,
 * negated, for conditions no errno names.  The codes start above every
 * errno the kernel defines (4095 is the largest), so the two never clash;
 * an execution unit stores them in agile_task_reg.error like any errno.
 */
#ifndef AGILE_ERROR_H
#define AGILE_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* The first library-specific code. */
#define AGILE_ERRNO_BASE 4096

/*
 * AGILE_E_ABI:    /dev/agile speaks another ABI version than the one this
 *                 library was built against (<agile/uapi.h>)
 * AGILE_E_OPCODE: an execution unit has no kernel for the task's opcode
 * AGILE_E_STATUS: a task finished with a lane's completion bit clear and no
 *                 error code (the execution unit broke the protocol)
 * AGILE_E_SYNC:   a fork/join task misused spawn and sync (agile/sched.h):
 *                 it synced another task than its newest spawn, synced
 *                 with no spawn left, or returned with spawns unsynced
 * AGILE_E_GPU:    the GPU execution units' persistent kernel died (the
 *                 device reported an error, e.g. a task's bad pointer) or
 *                 ended: agile_eu_pool_info's reason has the device's
 *                 error
 * AGILE_E_INVALID_CONTEXT: a runtime context handle that is not a live
 *                 context: released to zero, never created, or garbage
 *                 (agile/runtime.h)
 * AGILE_E_DEPENDENCY: a runtime queue entry did not run because an event
 *                 it depended on failed (agile/runtime.h)
 */
#define AGILE_E_ABI (AGILE_ERRNO_BASE + 0)
#define AGILE_E_OPCODE (AGILE_ERRNO_BASE + 1)
#define AGILE_E_STATUS (AGILE_ERRNO_BASE + 2)
#define AGILE_E_SYNC (AGILE_ERRNO_BASE + 3)
#define AGILE_E_GPU (AGILE_ERRNO_BASE + 4)
#define AGILE_E_INVALID_CONTEXT (AGILE_ERRNO_BASE + 5)
#define AGILE_E_DEPENDENCY (AGILE_ERRNO_BASE + 6)
#define AGILE_E_LAST AGILE_E_DEPENDENCY

/**
 * agile_strerror - a short English description of a libagile result
 * @err: a return value of a libagile call (negative), or its absolute value
 *
 * Thread safety: thread safe (no shared buffer).
 *
 * Return: a constant string, never NULL: "Success" for 0, the C library's
 * description for an errno, the library's own for AGILE_E_*, "Unknown
 * error" otherwise.
 */
const char *agile_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* AGILE_ERROR_H */
